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

from backend.documents.ocr import PPStructureAPIEngine, RapidOCREngine, get_ocr_engine
from backend.documents.pdf import iter_pages, parse_pdf
from backend.errors import DocumentError
from tests.conftest import BENCH, SAMPLES, make_settings
from tests.support.text_pdf import write_scanned_pdf

LAYOUT = SAMPLES / "layout"
GROUND_TRUTH = json.loads((LAYOUT / "native_zh_en_20p.gt.json").read_text(encoding="utf-8"))


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    return make_settings(tmp_path_factory.mktemp("data"))


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


@pytest.mark.slow
def test_a_scanned_page_of_one_line_keeps_it_though_every_page_starts_alike(tmp_path, settings):
    """A line repeated at the top of each page is a running header, unless it is all the page says."""
    log = [[f"Page {n} of the harbour log: the ferry left at noon."] for n in (1, 2, 3)]
    pages = parse_pdf(write_scanned_pdf(tmp_path / "harbour-log.pdf", log), settings)
    assert [p.page for p in pages if p.empty_ocr] == []
    assert all("harbourlog" in squash(p.text).lower() for p in pages), [p.text for p in pages]


def test_ocr_engine_is_created_once(settings):
    engine = get_ocr_engine(settings)
    assert isinstance(engine, RapidOCREngine) and get_ocr_engine(settings) is engine


def test_paddleocr_without_models_says_so(tmp_path):
    settings = make_settings(tmp_path, DOCLENS_OCR_ENGINE="paddleocr")
    with pytest.raises(DocumentError, match="paddleocr .*(not installed|no offline models).*rapidocr"):
        get_ocr_engine(settings)


_LATEX = r"E_{n}=\hbar\omega\left(n+\frac{1}{2}\right),\quad n=0,1,2,\ldots"


def _layout_parsing_answer(width: int, height: int, with_markdown: bool) -> dict:
    """What a PP-StructureV3 serving endpoint (PaddleX layout-parsing) answers for one image: the pruned
    pipeline result with its blocks in reading order, and the page as Markdown (pretty: text in centring
    divs, a formula block as $$<LaTeX>$$, pictures as <img> links to files sent alongside)."""
    blocks = [
        {"block_label": "doc_title", "block_content": "能级公式", "block_bbox": [60, 40, 300, 80]},
        {
            "block_label": "text",
            "block_content": "求解定态薛定谔方程得到能级 $E_{n}$，即",
            "block_bbox": [60, 100, 700, 130],
        },
        {"block_label": "formula", "block_content": _LATEX, "block_bbox": [200, 150, 600, 200]},
        {"block_label": "formula_number", "block_content": "(2)", "block_bbox": [700, 160, 730, 190]},
        {"block_label": "image", "block_content": "", "block_bbox": [60, 220, 400, 500]},
        {"block_label": "text", "block_content": "基态能量不为零。", "block_bbox": [60, 520, 400, 550]},
        {"block_label": "number", "block_content": "3", "block_bbox": [390, 1000, 410, 1020]},
    ]
    for order, block in enumerate(blocks, 1):
        block.update(block_id=order - 1, block_order=order if block["block_label"] != "number" else None)
    markdown = (
        '# 能级公式\n\n<div style="text-align: center;">求解定态薛定谔方程得到能级 $E_{n}$，即</div>\n\n'
        f'$${_LATEX}$$\n\n<div style="text-align: center;"><img src="imgs/img_in_image_box_60_220_400_500.jpg" '
        'alt="Image" width="42%" /></div>\n\n基态能量不为零。'
    )
    page = {
        "prunedResult": {
            "width": width,
            "height": height,
            "model_settings": {
                "use_doc_preprocessor": False,
                "use_formula_recognition": True,
                "use_table_recognition": True,
                "use_seal_recognition": False,
            },
            "parsing_res_list": blocks,
        },
        "outputImages": None,
        "inputImage": None,
    }
    if with_markdown:
        page["markdown"] = {
            "text": markdown,
            "images": {"imgs/img_in_image_box_60_220_400_500.jpg": "aGk="},
            "isStart": True,
            "isEnd": True,
        }
    return {
        "logId": "5b7c0e6f",
        "errorCode": 0,
        "errorMsg": "Success",
        "result": {"layoutParsingResults": [page], "dataInfo": {"type": "image", "width": width, "height": height}},
    }


class _LayoutParsingHandler(BaseHTTPRequestHandler):
    requests: list[dict] = []
    with_markdown = True

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"body": body, "auth": self.headers.get("Authorization")})
        if self.headers.get("Authorization") != "token abc":
            self._send(403, {"errorCode": 403, "errorMsg": "Forbidden"})
            return
        image = Image.open(io.BytesIO(base64.b64decode(body["file"])))
        self._send(200, _layout_parsing_answer(image.width, image.height, type(self).with_markdown))

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
    _LayoutParsingHandler.with_markdown = True
    yield f"http://127.0.0.1:{server.server_port}/layout-parsing"
    server.shutdown()
    server.server_close()


def test_ppstructure_api_engine(layout_server, tmp_path):
    settings = make_settings(
        tmp_path, DOCLENS_OCR_ENGINE="ppstructure_api", DOCLENS_OCR_API_URL=layout_server, DOCLENS_OCR_API_TOKEN="abc"
    )
    engine = get_ocr_engine(settings)
    image = Image.new("RGB", (40, 20), "white")
    text = engine.recognize(image)
    # the formula's LaTeX is kept, as a display-math paragraph of its own; pictures and divs are dropped
    assert text == (f"# 能级公式\n\n求解定态薛定谔方程得到能级 $E_{{n}}$，即\n\n$$ {_LATEX} $$\n\n基态能量不为零。")
    sent = _LayoutParsingHandler.requests[0]
    assert sent["auth"] == "token abc" and sent["body"]["fileType"] == 1
    assert Image.open(io.BytesIO(base64.b64decode(sent["body"]["file"]))).size == (40, 20)
    with pytest.raises(DocumentError, match="access denied"):
        PPStructureAPIEngine(layout_server, token="wrong").recognize(image)


def test_ppstructure_api_blocks_without_markdown(layout_server):
    """An answer without Markdown is read from its blocks: formula LaTeX as $$…$$ with its number,
    pictures and page numbers left out."""
    _LayoutParsingHandler.with_markdown = False
    text = PPStructureAPIEngine(layout_server, token="abc").recognize(Image.new("RGB", (40, 20), "white"))
    assert text == (
        f"能级公式\n\n求解定态薛定谔方程得到能级 $E_{{n}}$，即\n\n$$ {_LATEX} \\tag{{2}} $$\n\n基态能量不为零。"
    )


def test_ppstructure_formula_stays_one_chunk_unit(layout_server, tmp_path):
    """A scanned page read by the endpoint: the formula's LaTeX reaches the chunks whole, as $$…$$."""
    from backend.documents.chunking import chunk_pages

    scan = tmp_path / "scan.pdf"
    Image.new("RGB", (1240, 1754), "white").save(scan, "PDF", resolution=150.0)
    settings = make_settings(
        tmp_path, DOCLENS_OCR_ENGINE="ppstructure_api", DOCLENS_OCR_API_URL=layout_server, DOCLENS_OCR_API_TOKEN="abc"
    )
    pages = parse_pdf(scan, settings)
    assert pages[0].ocr and f"$$ {_LATEX} $$" in pages[0].text
    chunks = chunk_pages([p.to_page_text() for p in pages], size=40, overlap=0)
    formula = [c.text for c in chunks if _LATEX in c.text]
    assert len(formula) == 1 and formula[0].count("$$") == 2
    assert not any("\\frac" in c.text for c in chunks if _LATEX not in c.text)


def test_ppstructure_api_unreachable():
    engine = PPStructureAPIEngine("http://127.0.0.1:9/layout-parsing", timeout=2)
    with pytest.raises(DocumentError, match="cannot connect"):
        engine.recognize(Image.new("RGB", (10, 10)))


def test_a_region_without_text_is_not_reported_on_the_console(capfd):
    """Each formula box or blank page without text printed a coloured "[WARNING] … The text detection result
    is empty" past the app's logging, between the CLI's progress lines."""
    import logging

    engine = RapidOCREngine()
    assert engine.lines(Image.new("RGB", (400, 200), "white")) == []
    captured = capfd.readouterr()
    assert "text detection result is empty" not in captured.err + captured.out
    rapidocr_log = logging.getLogger("RapidOCR")
    assert not rapidocr_log.handlers and rapidocr_log.propagate, "its errors go through the app's logging"
