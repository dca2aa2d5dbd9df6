"""Streamed text goes out at most every DELTA_EVERY_S, nothing lost or reordered (a clock the test turns)."""

from __future__ import annotations

from backend.answering.pacing import paced
from backend.types import Answer, AnswerUpdate


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def words_every(clock: Clock, seconds: float, words: list[str]):
    """The sources, then a word each ``seconds``, then the final answer, as a model's stream comes."""
    yield AnswerUpdate(text="", sources=[], confidence=80.0)
    text = ""
    for word in words:
        clock.now += seconds
        text += word
        yield AnswerUpdate(text=text, delta=word)
    yield AnswerUpdate(text=text, done=True, answer=Answer(text, "llm", 80.0, []))


def test_deltas_of_a_tenth_of_a_second_go_out_as_one():
    clock = Clock()
    words = [f"w{i} " for i in range(20)]
    out = list(paced(words_every(clock, 0.03, words), every=0.1, clock=clock))
    deltas = [u for u in out if u.delta]
    assert out[0].sources == [] and out[-1].done  # the sources first, the answer last, as they came
    assert deltas[0].delta == "w0 "  # the first word at once
    assert 5 <= len(deltas) <= 8  # 20 words in 0.6 s: about one message a tenth of a second
    assert "".join(u.delta for u in deltas) == "".join(words)  # nothing lost, nothing reordered
    assert deltas[-1].text == "".join(words)  # each merged update carries the text so far


def test_slow_words_go_out_one_by_one():
    clock = Clock()
    words = ["a ", "b ", "c "]
    deltas = [u.delta for u in paced(words_every(clock, 0.5, words), every=0.1, clock=clock) if u.delta]
    assert deltas == words


def test_what_is_held_goes_out_before_the_final_update():
    clock = Clock()
    out = list(paced(words_every(clock, 0.0, ["x", "y", "z"]), every=0.1, clock=clock))
    assert [u.delta for u in out if u.delta] == ["x", "yz"]
    assert out[-1].done and out[-2].delta == "yz"
