"""The page shown while the app starts (ui/starting_page.py): at once, in the browser's language, and it
turns into the app by itself."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from backend.processes import free_port, stop
from tests.support.fake_openai import FakeOpenAI
from tests.ui.browser_support import skip_without_chromium
from tests.ui.conftest import CHROMIUM, CHROMIUM_ARGS, REPO_ROOT, app_environment
from ui.starting_page import STARTING_HEADER, StartingPage


def fetch(url: str, language: str = "en") -> tuple[int, dict, str]:
    request = urllib.request.Request(url, headers={"Accept-Language": language})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode("utf-8")


def test_the_placeholder_serves_one_page_in_the_browsers_language_and_frees_its_port() -> None:
    port = free_port()
    starting = StartingPage("127.0.0.1", port).start()
    try:
        status, headers, body = fetch(f"http://127.0.0.1:{port}/", "zh-CN,zh;q=0.9")
        assert status == 200 and headers.get(STARTING_HEADER) and "正在启动" in body
        status, _, body = fetch(f"http://127.0.0.1:{port}/")
        assert status == 200 and "Starting" in body
        for path in ("/config", "/gradio_api/info", "/../etc/passwd", "/file=/etc/passwd"):
            status, headers, _ = fetch(f"http://127.0.0.1:{port}{path}")
            assert status == 503 and headers.get("Retry-After"), path
    finally:
        starting.stop()
    starting.stop()  # twice is fine
    with socket.socket() as again:  # the app can bind it now
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))


def test_serve_on_a_taken_port_says_so_before_loading_anything(tmp_path: Path) -> None:
    with socket.socket() as taken, FakeOpenAI() as fake:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "main.py", "serve", "--port", str(port)],
            cwd=REPO_ROOT,
            env=app_environment(tmp_path / "data", fake),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode != 0
    assert f"cannot serve on 127.0.0.1:{port}" in done.stderr + done.stdout, done.stderr[-2000:]


@pytest.mark.slow
def test_a_browser_opened_at_start_gets_a_page_that_becomes_the_app(tmp_path: Path) -> None:
    """Issue 26 item 21: process start to page took 14 s of "connection refused"."""
    skip_without_chromium()
    from playwright.sync_api import sync_playwright

    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    with FakeOpenAI() as fake, sync_playwright() as playwright:
        app = subprocess.Popen(
            [sys.executable, "main.py", "serve", "--port", str(port)],
            cwd=REPO_ROOT,
            env=app_environment(tmp_path / "data", fake),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            first = first_answer(url, app)
            assert first[1].get(STARTING_HEADER) and "DocLens" in first[2], "the first page is the placeholder"
            page = browser.new_page()
            page.goto(url)
            page.get_by_role("tab", name="Knowledge base").wait_for(timeout=180_000)  # no goto: it came by itself
        finally:
            browser.close()
            stop(app)


def first_answer(url: str, app: subprocess.Popen) -> tuple[int, dict, str]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert app.poll() is None, "serve stopped"
        try:
            return fetch(url)
        except OSError:
            time.sleep(0.02)
    raise AssertionError("nothing answered on the port within 60 s")
