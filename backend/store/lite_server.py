"""Serve a Milvus Lite store over TCP on 127.0.0.1, so several processes share it with the client code
they use for a Milvus server. Milvus Lite 3.x has ``milvus-lite server``; Lite 2.x runs its C++ engine
binary with a TCP address instead of a socket. ``python -m backend.store.lite_server --store S --port P``, where
S is the store path DocLens uses (``<data_dir>/milvus.db``: a folder for Lite 3.x, a file for Lite 2.x).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

START_TIMEOUT_S = 120


def server_command(store: Path, port: int) -> tuple[list[str], Optional[dict[str, str]]]:
    try:
        from milvus_lite.server import Server  # Lite 2.x: the C++ engine
    except ImportError:
        exe = Path(sys.executable).parent / "milvus-lite"
        return [str(exe), "server", "--data-dir", str(store), "--host", "127.0.0.1", "--port", str(port)], None
    store.parent.mkdir(parents=True, exist_ok=True)
    binary = Server(str(store), f"127.0.0.1:{port}")
    env = {**os.environ, "LD_LIBRARY_PATH": str(Path(binary.milvus_bin).parent)}
    return [str(a) for a in binary.args], env


def start(store: Path, port: int) -> subprocess.Popen:
    """Start the server and wait until it accepts connections (``http://127.0.0.1:<port>``)."""
    store.parent.mkdir(parents=True, exist_ok=True)
    args, env = server_command(store, port)
    proc = subprocess.Popen(args, env=env, cwd=str(store.parent), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + START_TIMEOUT_S
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the Milvus Lite server for {store} exited with code {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"the Milvus Lite server for {store} did not start in {START_TIMEOUT_S} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True, type=Path, help="the store path, e.g. data/milvus.db")
    parser.add_argument("--port", type=int, default=19530)
    args = parser.parse_args()
    command, env = server_command(args.store.resolve(), args.port)
    return subprocess.call(command, env=env, cwd=str(args.store.resolve().parent))


if __name__ == "__main__":
    sys.exit(main())
