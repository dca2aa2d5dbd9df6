"""Document summaries and the no-model fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.answering.summaries import fallback_summary, sample_text, summarize_document
from backend.errors import LLMError
from tests.backend.answering.support import make_client
from tests.support.fake_openai import FakeOpenAI


def test_summarize_document_samples_start_middle_and_end(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    chunks = [f"Chunk {i:03d} " + "text " * 100 for i in range(100)]  # about 51k characters
    fake.queue_reply("## Summary\n\n- Key point with $$E=mc^2$$ and $\\beta$.")
    summary = summarize_document(client, "long.pdf", chunks)
    assert summary == "## Summary\n\n- Key point with $$E=mc^2$$ and $\\beta$."
    prompt = fake.last_chat().text()
    assert "long.pdf" in prompt and "LaTeX" in prompt
    assert "Chunk 000" in prompt and "Chunk 050" in prompt and "Chunk 099" in prompt
    assert len(sample_text(chunks)) <= 12100
    assert sample_text(["short one", "short two"]) == "short one\n\nshort two"


def test_summary_without_a_model(tmp_path: Path) -> None:
    with pytest.raises(LLMError):
        summarize_document(make_client(tmp_path, None), "a.pdf", ["text"])
    summary = fallback_summary("a.pdf", ["First passage with $x^2$.", "Second passage."])
    assert summary.startswith("**a.pdf**") and "No language model is configured" in summary
    assert "> First passage with $x^2$." in summary and "> Second passage." in summary
