"""Backend messages in the Chinese UI (ui/i18n/messages.py): issue 26 item 8 found English left in the
upload results, the connection test and the answer about a figure."""

from __future__ import annotations

from backend.types import IngestResult
from ui.i18n.messages import translate_figure_lead, translate_result
from ui.knowledge_bases.view import results_markdown


def test_upload_results_are_in_chinese() -> None:
    results = [
        IngestResult("a.pdf", "cancelled", error="a.pdf: cancelled; nothing was stored"),
        IngestResult("b.pdf", "duplicate", error="b.pdf: the same content is already indexed; skipped"),
        IngestResult("c.pdf", "duplicate", error="c.pdf: the same content is already indexed as d.pdf; skipped"),
        IngestResult("readme.pdf", "failed", error="readme.pdf: not a PDF (it looks like plain text)"),
    ]
    shown = results_markdown(results, "zh")
    for english in ("cancelled;", "nothing was stored", "already indexed", "skipped", "not a PDF", "plain text"):
        assert english not in shown, (english, shown)
    assert "a.pdf：已取消；未存储任何内容" in shown and "c.pdf：相同内容已作为“d.pdf”索引；已跳过" in shown
    assert "readme.pdf：不是 PDF（看起来是纯文本）" in shown
    assert "nothing was stored" in results_markdown(results, "en"), "English stays English"


def test_a_connection_test_and_a_figure_answer_are_in_chinese() -> None:
    connected = "Connected to http://127.0.0.1:9/v1: model fake-chat answered in 5 ms."
    assert translate_result(connected, "zh") == "已连接 http://127.0.0.1:9/v1：模型 fake-chat 在 5 毫秒内应答。"
    assert translate_result(connected, "en") == connected
    assert translate_result("something new", "zh") == "something new", "a success never reads as an error"
    answer = "About figure p2 of 物理.pdf (Figure 1: energy levels):\n\nThe figure shows levels."
    assert translate_figure_lead(answer, "zh") == (
        "关于 物理.pdf (Figure 1: energy levels) 第 2 页的图表：\n\nThe figure shows levels."
    )
    assert translate_figure_lead(answer, "en") == answer
