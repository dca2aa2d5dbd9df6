"""The split of a question set by paper."""

import json

from backend.quality.paper_split import HELD_OUT, TUNE, paper_half, split_questions
from tests.conftest import BENCH


def test_a_paper_keeps_its_half_wherever_it_lies_and_whatever_else_the_set_holds():
    name = "1301.0676v5 - Strong Consistency of Factorial K-means Clustering.pdf"
    assert paper_half(name) == paper_half(f"/elsewhere/{name}") in (TUNE, HELD_OUT)
    alone = split_questions([{"doc": name}])
    among = split_questions([{"doc": name}, {"doc": "other.pdf"}, {"doc": "third.pdf"}])
    half = paper_half(name)
    assert alone[half] == [{"doc": name}] and {"doc": name} in among[half]


def test_arxiv_dev_splits_by_paper_into_two_halves_with_questions():
    questions = [json.loads(line) for line in (BENCH / "arxiv-dev" / "qa.jsonl").read_text().splitlines()]
    halves = split_questions(questions)
    assert sum(map(len, halves.values())) == len(questions)
    papers = {half: {q["doc"] for q in qs} for half, qs in halves.items()}
    assert papers[TUNE].isdisjoint(papers[HELD_OUT])  # papers, not questions
    assert min(len(p) for p in papers.values()) >= 3 and min(len(q) for q in halves.values()) >= 50
