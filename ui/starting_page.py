"""The page a browser gets while the app starts: the web framework alone takes seconds to import.

``serve`` binds its port with this small stdlib server first, before anything heavy is imported, so a
browser opened at once sees DocLens starting (in its own language) instead of "connection refused"; the
page asks again five times a second and loads the app as soon as it answers. The port is handed over to the
app just before it binds (``stop``). Nothing but this one static page is served: every other path is 503.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

log = logging.getLogger(__name__)

# Every answer of the placeholder carries STARTING_HEADER: a page without it is the app (or its login).
STARTING_HEADER = "X-DocLens-Starting"
PAGE = """<!doctype html>
<html lang="{lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>DocLens</title>
<style>
body {{ font-family: system-ui, "PingFang SC", "Microsoft YaHei", sans-serif; margin: 0; display: flex;
  min-height: 100vh; align-items: center; justify-content: center; background: #f8fafc; color: #1e293b; }}
.box {{ text-align: center; }} h1 {{ font-size: 28px; margin: 0 0 8px; }} p {{ color: #475569; }}
.bar {{ width: 240px; height: 6px; margin: 16px auto; border-radius: 3px; background: #e2e8f0; overflow: hidden; }}
.bar span {{ display: block; width: 40%; height: 100%; background: #6366f1; animation: go 1.2s infinite; }}
@keyframes go {{ from {{ margin-left: -40%; }} to {{ margin-left: 100%; }} }}
</style></head>
<body><div class="box" id="doclens-starting"><h1>DocLens</h1><p>{line}</p><div class="bar"><span></span></div></div>
<script>
const ask = () => fetch('/', {{ cache: 'no-store' }})
  .then((r) => (r.headers.get('{header}') ? setTimeout(ask, 200) : window.location.reload()))
  .catch(() => setTimeout(ask, 200));
setTimeout(ask, 200);
</script></body></html>
"""
LINES = {
    "en": "Starting… the page opens by itself in a few seconds.",
    "zh": "正在启动……几秒后页面会自动打开。",
}


class _StartingHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        if self.path.split("?")[0] not in ("/", ""):
            self._send(503, b"starting", "text/plain; charset=utf-8")
            return
        lang = "zh" if (self.headers.get("Accept-Language") or "").lower().startswith("zh") else "en"
        self._send(
            200,
            PAGE.format(lang=lang, line=LINES[lang], header=STARTING_HEADER).encode("utf-8"),
            "text/html; charset=utf-8",
        )

    def do_POST(self) -> None:  # noqa: N802
        self._send(503, b"starting", "text/plain; charset=utf-8")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header(STARTING_HEADER, "1")
        if status == 503:
            self.send_header("Retry-After", "1")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the stdlib's signature)
        pass  # a poll five times a second is not worth a log line


class StartingPage:
    """The placeholder on ``host:port`` until ``stop``."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self._server: Optional[ThreadingHTTPServer] = None

    def start(self) -> StartingPage:
        """Binds the port (an OSError if it is taken: said before seconds of loading, not after)."""
        self._server = ThreadingHTTPServer((self.host, self.port), _StartingHandler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="doclens-starting-page", daemon=True).start()
        return self

    def stop(self) -> None:
        """Free the port for the app (idempotent)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
