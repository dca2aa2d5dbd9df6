"""One DocLens web app process for all UI tests, talking to an in-process recording OpenAI fake."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import pytest

from backend.processes import free_port, stop
from tests.support.fake_openai import FakeOpenAI, default_reply

REPO_ROOT = Path(__file__).resolve().parents[2]
MODEL_CACHE = REPO_ROOT / ".cache" / "test-models"
SAMPLES = Path(os.environ.get("DOCLENS_SHARED_DIR", REPO_ROOT.parent / "shared")) / "samples"
SAMPLE_PDF = SAMPLES / "物理公式示例文档.pdf"
ARTIFACTS = REPO_ROOT / "test-artifacts" / "ui"
START_TIMEOUT = 180  # seconds: importing gradio alone takes ~10 s on a busy 2-core machine

log = logging.getLogger(__name__)


CURRENCY_AND_MATH = " It costs $5 and $10. Inline \\(a+b\\) and display \\[\\int_0^1 x\\,dx\\]."


def ui_reply(body: dict) -> str:
    """The fake's usual reply; answers that cite sources also get prices and the other two delimiters."""
    text = default_reply(body)
    return text + CURRENCY_AND_MATH if text.startswith("According to the sources") else text


@dataclass
class RunningApp:
    url: str
    fake: FakeOpenAI
    log_path: Path
    data_dir: Optional[Path] = None
    upload_dir: Optional[Path] = None  # the app's GRADIO_TEMP_DIR


def wait_until_serving(url: str, process: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the app exited with {process.returncode}:\n{log_path.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the app did not answer within {START_TIMEOUT} s:\n{log_path.read_text()[-4000:]}")


def upload_dir_for(data_dir: Path) -> Path:
    return data_dir.parent / f"{data_dir.name}-gradio"


def app_environment(data_dir: Path, fake: FakeOpenAI) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCLENS_")}
    env.update(
        {
            "DOCLENS_DATA_DIR": str(data_dir),
            "GRADIO_TEMP_DIR": str(upload_dir_for(data_dir)),  # one per app: uploads are checked and cleaned
            "DOCLENS_EMBEDDING_CACHE_DIR": str(MODEL_CACHE),
            "DOCLENS_LLM_BASE_URL": fake.base_url,
            "DOCLENS_LLM_MODEL": "fake-chat",
            "DOCLENS_LLM_VISION_MODEL": "fake-vision",
            "DOCLENS_LLM_API_KEY": "sk-test-ui",
            "GRADIO_ANALYTICS_ENABLED": "False",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


@contextmanager
def running_app(data_dir: Path, log_name: str, **env: str) -> Iterator[RunningApp]:
    """``python main.py serve`` on a free port with ``env`` on top of the usual; its log is kept under
    test-artifacts/ui/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log_path = ARTIFACTS / log_name
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    with FakeOpenAI(reply=ui_reply) as fake, open(log_path, "w", encoding="utf-8") as log_file:
        process = subprocess.Popen(
            [sys.executable, "main.py", "serve", "--port", str(port)],
            cwd=REPO_ROOT,
            env={**app_environment(data_dir, fake), **env},
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until_serving(url, process, log_path)
            yield RunningApp(url, fake, log_path, data_dir, upload_dir_for(data_dir))
        finally:
            stop(process, timeout=20)


@pytest.fixture(scope="session")
def doclens_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApp]:
    """The app all browser tests share."""
    with running_app(tmp_path_factory.mktemp("ui-data"), "app.log") as app:
        yield app
