"""Gradio's HTTP protocols as a browser and gradio_client speak them (the ``/call`` API, the queue the page
uses, ``/upload``, ``/file=``), for the tests of the web app's boundary: tests/ui/test_security.py and
tests/ui/test_web_files.py."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, Optional, Sequence

import httpx

from tests.ui.conftest import RunningApp


class Web:
    """One browser session (own session hash, own cookies) talking Gradio's HTTP protocols."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.http = httpx.Client(timeout=120, trust_env=False)
        self.session_hash = uuid.uuid4().hex[:11]
        self._config: Optional[dict] = None

    def login(self, user: str, password: str) -> None:
        response = self.http.post(f"{self.url}/login", data={"username": user, "password": password})
        assert response.status_code == 200, response.text

    def call(self, api_name: str, *data: Any) -> tuple[str, Any]:
        """The ``/gradio_api/call`` API: ("complete", outputs) or ("error", message)."""
        started = self.http.post(f"{self.url}/gradio_api/call/{api_name}", json={"data": list(data)})
        assert started.status_code == 200, started.text
        event_id = started.json()["event_id"]
        with self.http.stream("GET", f"{self.url}/gradio_api/call/{api_name}/{event_id}") as stream:
            event = None
            for line in stream.iter_lines():
                if line.startswith("event:"):
                    event = line.split(":", 1)[1].strip()
                elif line.startswith("data:") and event in ("complete", "error"):
                    payload = json.loads(line.split(":", 1)[1].strip() or "null")
                    if event == "error":
                        return event, payload.get("error") if isinstance(payload, dict) else payload
                    return event, payload[0] if isinstance(payload, list) and len(payload) == 1 else payload
        raise AssertionError(f"{api_name}: the stream ended without a result")

    def queue(self, api_name: str, *data: Any) -> dict:
        """What the page does (also for private endpoints): join the queue, read the session's events."""
        fn_index = self.fn_index(api_name)
        joined = self.http.post(
            f"{self.url}/gradio_api/queue/join",
            json={
                "data": list(data),
                "fn_index": fn_index,
                "trigger_id": None,
                "session_hash": self.session_hash,
                "event_data": None,
            },
        )
        assert joined.status_code == 200, joined.text
        event_id = joined.json()["event_id"]
        with self.http.stream(
            "GET", f"{self.url}/gradio_api/queue/data", params={"session_hash": self.session_hash}
        ) as stream:
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("msg") == "process_completed" and message.get("event_id") == event_id:
                    return message
        raise AssertionError(f"{api_name}: the queue stream ended without a result")

    def fn_index(self, api_name: str) -> int:
        if self._config is None:
            self._config = self.http.get(f"{self.url}/config").json()
        return next(d["id"] for d in self._config["dependencies"] if d.get("api_name") == api_name)

    def upload(self, path: Path, name: Optional[str] = None) -> str:
        """Gradio's own upload route, as the page and gradio_client use it; returns the server path."""
        with open(path, "rb") as handle:
            response = self.http.post(
                f"{self.url}/gradio_api/upload", files={"files": (name or path.name, handle, "application/pdf")}
            )
        assert response.status_code == 200, response.text
        return response.json()[0]

    def upload_many(self, files: Sequence[tuple[Path, str]]) -> list[str]:
        """One upload of several files (the page's file box sends them together); their server paths."""
        parts = [("files", (name, path.read_bytes(), "application/pdf")) for path, name in files]
        response = self.http.post(f"{self.url}/gradio_api/upload", files=parts)
        assert response.status_code == 200, response.text
        return response.json()

    def file(self, path: str) -> httpx.Response:
        return self.http.get(f"{self.url}/gradio_api/file={path}")


def file_data(path: str, name: str = "d.pdf") -> dict:
    return {"path": path, "orig_name": name, "meta": {"_type": "gradio.FileData"}}


def outputs(message: dict) -> list:
    assert message["success"], message
    return message["output"]["data"]


def uploads_left(app: RunningApp, before: Sequence[Path] = ()) -> list[Path]:
    """Files in Gradio's upload folder, but those in ``before``: on the shared app a browser test may leave
    a file chosen in the upload box and never sent (kept until the server stops, as Gradio received it)."""
    if not app.upload_dir.exists():
        return []
    return [p for p in app.upload_dir.rglob("*") if p.is_file() and "doclens-shown" not in p.parts and p not in before]


def log_since(app: RunningApp, offset: int) -> str:
    return app.log_path.read_text(encoding="utf-8", errors="replace")[offset:]


def log_size(app: RunningApp) -> int:
    return len(app.log_path.read_text(encoding="utf-8", errors="replace"))
