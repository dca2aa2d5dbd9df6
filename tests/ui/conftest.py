"""The UI tests' fixtures: one DocLens web app process for all browser tests, talking to an in-process
recording OpenAI fake, and the browsers (Debian chromium driven by Playwright); one service per handler
test module with a small knowledge base and the fake model (``fake_model``: each test starts on it)."""

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
from backend.service import DocLens
from backend.types import Figure
from tests.conftest import MODEL_CACHE, SAMPLES, make_settings
from tests.support.fake_openai import FakeOpenAI, default_reply
from tests.ui.handler_support import EMPTY_KB, KB, PHYSICS, model_env
from ui.starting_page import STARTING_HEADER

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_PDF = SAMPLES / "物理公式示例文档.pdf"
FIGURE_PDF = SAMPLES / "商业分析示例文档.pdf"  # a bar chart on page 1
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
                if response.status == 200 and not response.headers.get(STARTING_HEADER):
                    return  # the app, not the page shown while it starts
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


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def page(doclens_app: RunningApp, browser_page) -> Iterator:
    """A fresh browser on the shared app."""
    yield browser_page


@contextmanager
def open_browsers(profiles: Path) -> Iterator:
    """Opens fresh browsers, each with its own profile under ``profiles`` (its own local storage: another
    browser, not another tab); all are closed at the end."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        contexts = []

        def open_page():
            context = playwright.chromium.launch_persistent_context(
                str(profiles / f"profile-{len(contexts)}"),
                executable_path=str(CHROMIUM),
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": 1280, "height": 800},
            )
            context.set_default_timeout(30_000)
            contexts.append(context)
            return context.new_page()

        try:
            yield open_page
        finally:
            for context in contexts:
                context.close()


@pytest.fixture
def browsers(tmp_path: Path) -> Iterator:
    """Fresh browsers for one test (``open_browsers``)."""
    with open_browsers(tmp_path) as opener:
        yield opener


@pytest.fixture
def browser_page(browsers) -> Iterator:
    yield browsers()


# -- the handler tests -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def service_env(fake: FakeOpenAI) -> dict[str, str]:
    return model_env(fake.base_url)


@pytest.fixture(scope="module")
def service(service: DocLens) -> DocLens:
    """The handler tests' service: one small knowledge base built from one sample PDF, and an empty one."""
    service.create_kb(KB)
    results = service.ingest(KB, [SAMPLES / PHYSICS])
    assert [r.status for r in results] == ["indexed"], results
    service.create_kb(EMPTY_KB)
    return service


@pytest.fixture
def fake_model(service: DocLens, data_dir: Path, fake: FakeOpenAI) -> Iterator[None]:
    """Every test starts on the fake model with nothing recorded; the settings tests change them."""
    fake.reset()
    service.reconfigure(make_settings(data_dir, **model_env(fake.base_url)))
    yield
    fake.reset()  # faults a failed test left queued must not leak into the next one


@pytest.fixture
def figure(service: DocLens) -> Figure:
    figures = service.figures(KB, PHYSICS)
    assert figures, "the physics sample has a figure on page 2"
    return figures[0]
