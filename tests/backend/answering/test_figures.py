"""Questions about one figure: context, image type, vision model and fallbacks."""

from __future__ import annotations

from pathlib import Path

from backend.answering.extractive import NO_MODEL_NOTICE
from backend.answering.figures import answer_about_figure, detect_image_mime, figure_context
from backend.types import Figure
from tests.backend.answering.support import (
    DOCUMENT_TEXT,
    FIGURE,
    JPEG,
    PAGE_TEXT,
    PNG,
    SOURCES,
    WEBP,
    make_client,
)
from tests.support.fake_openai import FakeOpenAI, images_in


def test_figure_context_gathers_caption_page_and_references() -> None:
    context = figure_context(FIGURE, PAGE_TEXT, DOCUMENT_TEXT, max_chars=3000)
    assert "Caption: Figure 3: Training loss" in context
    assert "Text of page 3:" in context and "flattens after epoch 40" in context
    for mention in ("As Figure 3 shows", "如图3所示", "见图 3 的右侧", "Compare with Fig. 3", "See Fig 3"):
        assert mention in context
    assert "Figure 30" not in context and "图3.1" not in context
    short = figure_context(FIGURE, PAGE_TEXT * 50, DOCUMENT_TEXT * 20, max_chars=600)
    assert len(short) <= 600 and short.startswith("Caption: Figure 3")


def test_detect_image_mime() -> None:
    assert detect_image_mime(PNG) == "image/png"
    assert detect_image_mime(JPEG) == "image/jpeg"
    assert detect_image_mime(WEBP) == "image/webp"
    assert detect_image_mime(b"unknown", default="image/png") == "image/png"


def test_answer_about_figure_sends_image_and_context_to_vision_model(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_VISION_MODEL="fake-vision")
    context = figure_context(FIGURE, PAGE_TEXT, DOCUMENT_TEXT)
    # The stored MIME type is wrong on purpose: the bytes are JPEG and that is what must be sent.
    answer = answer_about_figure(client, "What does the loss do?", FIGURE, JPEG, "image/png", context, SOURCES, 77.0)
    assert answer.mode == "vision" and answer.figure == FIGURE and answer.confidence == 77.0
    assert answer.answer.startswith("About figure p3 of paper.pdf (Figure 3: Training loss")
    request = fake.vision_requests()[-1]
    assert request.body["model"] == "fake-vision"
    assert images_in(request) == [("image/jpeg", JPEG)]
    text = request.text()
    assert "paper.pdf, page 3" in text and "Figure 3: Training loss of the model" in text
    assert "flattens after epoch 40" in text and "What does the loss do?" in text


def test_vision_400_falls_back_to_a_text_answer(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    fake.fail_next(
        400, body={"error": {"message": "This model does not support image input"}}, match=lambda r: r.is_vision
    )
    context = figure_context(FIGURE, PAGE_TEXT, DOCUMENT_TEXT)
    answer = answer_about_figure(client, "What does the loss do?", FIGURE, PNG, "image/png", context, SOURCES, 60.0)
    assert answer.mode == "vision-fallback"
    assert "does not accept images" in answer.notice
    assert answer.answer.startswith("About figure p3 of paper.pdf")
    chats = fake.chat_requests()
    assert len(chats) == 2 and chats[0].is_vision and not chats[1].is_vision
    assert "flattens after epoch 40" in chats[1].text()


def test_figure_question_without_a_model_quotes_the_context(tmp_path: Path) -> None:
    client = make_client(tmp_path, None)
    context = figure_context(FIGURE, PAGE_TEXT, DOCUMENT_TEXT)
    answer = answer_about_figure(
        client, "When does the loss flatten?", FIGURE, PNG, "image/png", context, SOURCES, 30.0
    )
    assert answer.mode == "extractive" and answer.notice == NO_MODEL_NOTICE
    assert answer.answer.startswith("About figure p3 of paper.pdf")
    assert "flattens after epoch 40" in answer.answer


def test_a_figure_atop_a_page_goes_to_the_model_with_the_lines_that_introduce_it(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    """Issue 29 item 5: the chart of 商业分析示例文档.pdf is alone on page 2; page 1 ends with its heading
    and "从下图中可以看出…". Both are kept with the figure at ingest and reach the vision model."""
    from backend.documents.figures import save_figure
    from backend.documents.pdf import parse_pdf
    from backend.knowledge_bases.registry import Registry
    from tests.conftest import SAMPLES, make_settings

    name = "商业分析示例文档.pdf"
    pages = parse_pdf(SAMPLES / name, make_settings(tmp_path / "data"))
    [parsed] = [f for p in pages for f in p.figures]
    assert parsed.page == 2 and pages[1].text == ""
    registry = Registry(tmp_path / "kb")
    registry.add_pending("d1", name, "sha")
    registry.mark_complete("d1", 2, 0, 3, 1)
    path = save_figure(parsed, tmp_path / "kb" / "figures" / "d1")
    registry.add_figure(Figure("d1/p2_fig1", "d1", name, 2, str(path), parsed.caption, parsed.text, parsed.context))
    [figure] = registry.figures()
    assert figure.caption == "市场份额趋势"
    assert figure.context == "从下图中可以看出，尽管面临竞争，我们的市场份额仍在稳步扩大："

    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_VISION_MODEL="fake-vision")
    context = figure_context(figure, pages[1].text, "\n\n".join(p.text for p in pages))
    answer = answer_about_figure(client, "这张图展示了什么？", figure, path.read_bytes(), None, context)
    assert answer.mode == "vision"
    text = fake.vision_requests()[-1].text()
    assert "Figure caption: 市场份额趋势" in text and "(none)" not in text
    assert "从下图中可以看出，尽管面临竞争，我们的市场份额仍在稳步扩大" in text
