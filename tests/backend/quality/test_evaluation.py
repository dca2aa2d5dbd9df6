"""The qa file loader of the evaluation."""

import json

import pytest

from backend.errors import DocLensError
from backend.quality.evaluation import load_questions

QUESTION = {"question": "q", "answers": ["John Fox", "Fox"], "doc": "a.pdf", "pages": [2], "scanned": False}


def test_load_questions_samples_with_a_fixed_seed(tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text("\n".join(json.dumps({**QUESTION, "id": i}) for i in range(50)), encoding="utf-8")
    first, second = load_questions(path, 10), load_questions(path, 10)
    assert [q["id"] for q in first] == [q["id"] for q in second] and len(first) == 10
    (tmp_path / "bad.jsonl").write_text('{"question": "no answers"}\n', encoding="utf-8")
    with pytest.raises(DocLensError, match="bad.jsonl:1"):
        load_questions(tmp_path / "bad.jsonl")


def test_questions_can_be_asked_as_naming_their_document(tmp_path):
    path = tmp_path / "qa.jsonl"
    named = 'What is in "a.pdf"?'
    lines = [{**QUESTION, "question": "What is X?"}, {**QUESTION, "question": named}, {**QUESTION, "question": " "}]
    path.write_text("\n".join(map(json.dumps, lines)), encoding="utf-8")
    asked = [q["question"] for q in load_questions(path, name_document=True)]
    assert asked == ['What is X as described in the document "a.pdf"?', named, " "]
