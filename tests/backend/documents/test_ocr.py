"""Scanned pages through the real rapidocr models, and the HTTP OCR engine against a local server."""

from __future__ import annotations

import base64
import io
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from PIL import Image

from backend.documents.ocr import OCRBox, PPStructureAPIEngine, RapidOCREngine, boxes_to_text, get_ocr_engine
from backend.documents.pdf import has_scanned_pages, iter_pages, parse_pdf
from backend.errors import DocumentError
from tests.conftest import BENCH, SAMPLES, make_settings

LAYOUT = SAMPLES / "layout"
GROUND_TRUTH = json.loads((LAYOUT / "native_zh_en_20p.gt.json").read_text(encoding="utf-8"))


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    return make_settings(tmp_path_factory.mktemp("data"))


def test_has_scanned_pages_tells_without_ocr():
    assert has_scanned_pages(LAYOUT / "mixed_native_scanned_20p.pdf")  # pages 4 and 12 of 20
    assert has_scanned_pages(BENCH / "dev-zh" / "docs" / "zh_003.pdf")
    assert not has_scanned_pages(LAYOUT / "native_zh_en_20p.pdf")
    assert not has_scanned_pages(SAMPLES / "物理公式示例文档.pdf")  # figures, but text on every page


@pytest.mark.slow
def test_mixed_document_ocrs_only_scanned_pages(settings):
    pages = parse_pdf(LAYOUT / "mixed_native_scanned_20p.pdf", settings)
    assert [p.page for p in pages if p.ocr] == [4, 12]
    for page in (pages[3], pages[11]):
        assert not page.empty_ocr and not page.figures  # the scan is not saved as a figure
        text = squash(page.text)
        lines = [ln for ln in GROUND_TRUTH[str(page.page)]["lines"] if not re.fullmatch(r"- \d+ -", ln)]
        found = sum(squash(ln) in text for ln in lines)
        assert found / len(lines) >= 0.8, (page.page, found, len(lines))
        assert f"- {page.page} -" not in page.text
    assert pages[4].figures and pages[4].figures[0].caption.startswith("图")


@pytest.mark.slow
def test_scanned_bench_document_answers_are_in_the_ocr_text(settings):
    questions = [json.loads(line) for line in (BENCH / "dev-zh" / "qa.jsonl").read_text(encoding="utf-8").splitlines()]
    mine = [q for q in questions if q["doc"] == "zh_003.pdf"]
    assert mine and all(q["scanned"] for q in mine)
    wanted_pages = {p for q in mine[:8] for p in q["pages"]}
    pages = {}
    for page in iter_pages(BENCH / "dev-zh" / "docs" / "zh_003.pdf", settings):
        assert page.ocr and not page.figures
        pages[page.page] = squash(page.text)
        if set(pages) >= wanted_pages:
            break  # the caller may stop between pages: no need to OCR the rest
    found = sum(any(squash(a) in pages[p] for a in q["answers"] for p in q["pages"]) for q in mine[:8])
    assert found >= 6, found


def test_ocr_engine_is_created_once(settings):
    engine = get_ocr_engine(settings)
    assert isinstance(engine, RapidOCREngine) and get_ocr_engine(settings) is engine


def test_boxes_become_rows_and_paragraphs():
    boxes = [OCRBox("World", 120, 10, 200, 30), OCRBox("Hello", 10, 12, 100, 31), OCRBox("你好", 10, 40, 60, 60),
             OCRBox("世界", 70, 41, 120, 60), OCRBox("Next paragraph", 10, 110, 200, 130)]
    assert boxes_to_text(boxes) == "Hello World\n你好世界\n\nNext paragraph"


def test_paddleocr_without_models_says_so(tmp_path):
    settings = make_settings(tmp_path, DOCLENS_OCR_ENGINE="paddleocr")
    with pytest.raises(DocumentError, match="paddleocr .*(not installed|no offline models).*rapidocr"):
        get_ocr_engine(settings)


class _LayoutParsingHandler(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"body": body, "auth": self.headers.get("Authorization")})
        if self.headers.get("Authorization") != "token abc":
            self._send(403, {"errorCode": 403, "errorMsg": "Forbidden"})
            return
        answer = {"logId": "1", "errorCode": 0, "errorMsg": "Success", "result": {"layoutParsingResults": [
            {"markdown": {"text": "# 标题\n\n第一段文字。\n\n<div><img src=\"imgs/a.jpg\"></div>\n\n| a | b |",
                          "images": {"imgs/a.jpg": "aGk="}}}]}}
        self._send(200, answer)

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def layout_server():
    server = HTTPServer(("127.0.0.1", 0), _LayoutParsingHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _LayoutParsingHandler.requests = []
    yield f"http://127.0.0.1:{server.server_port}/layout-parsing"
    server.shutdown()
    server.server_close()


def test_ppstructure_api_engine(layout_server, tmp_path):
    settings = make_settings(tmp_path, DOCLENS_OCR_ENGINE="ppstructure_api", DOCLENS_OCR_API_URL=layout_server,
                             DOCLENS_OCR_API_TOKEN="abc")
    engine = get_ocr_engine(settings)
    image = Image.new("RGB", (40, 20), "white")
    text = engine.recognize(image)
    assert text == "# 标题\n\n第一段文字。\n\n| a | b |"
    sent = _LayoutParsingHandler.requests[0]
    assert sent["auth"] == "token abc" and sent["body"]["fileType"] == 1
    assert Image.open(io.BytesIO(base64.b64decode(sent["body"]["file"]))).size == (40, 20)
    with pytest.raises(DocumentError, match="access denied"):
        PPStructureAPIEngine(layout_server, token="wrong").recognize(image)


def test_ppstructure_api_unreachable():
    engine = PPStructureAPIEngine("http://127.0.0.1:9/layout-parsing", timeout=2)
    with pytest.raises(DocumentError, match="cannot connect"):
        engine.recognize(Image.new("RGB", (10, 10)))
