"""A child process killed with SIGKILL at a chosen point: what a crash or a kill -9 leaves behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Callable, Optional, Sequence

from tests.conftest import REPO_ROOT


def kill_when(
    command: Sequence[str],
    ready: Callable[[], bool],
    what: str,
    env: Optional[dict[str, str]] = None,
    timeout: float = 600,
) -> None:
    """Runs ``command`` in the repository and kills it (-9) as soon as ``ready()`` is true; fails with the
    child's last output if it ends first, or with ``what`` if it never gets there."""
    child = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert child.poll() is None, child.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, f"the child never got {what}"
            time.sleep(0.1)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stderr.close()
