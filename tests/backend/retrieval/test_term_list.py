"""The CC-CEDICT term list: proper names explained after a comma are rendered by the name."""

import os
import subprocess
import sys

from backend.retrieval import term_list as terms_module
from backend.retrieval.term_list import term_list
from tests.conftest import REPO_ROOT


def test_a_dictionary_name_with_an_explanation_is_rendered_by_the_name():
    # "Temujin, birth name of Genghis Khan 成吉思汗[...]" was longer than a translation and was dropped.
    assert "temujin" in term_list().english("铁木真")
    assert "铁木真" in term_list().chinese("temujin")


def test_only_a_capitalised_name_before_the_comma_is_kept():
    terms = terms_module.build(
        [
            "鐵木真 铁木真 [Tie3 mu4 zhen1] /Temujin, birth name of Genghis Khan 成吉思汗[Cheng2 ji2 si1 han2]/",
            "做好 做好 [zuo4 hao3] /to do well, as expected/",
        ]
    )
    assert terms.english("铁木真") == ("temujin",)
    assert "temujin" not in terms.english("做好") and "birth" not in terms.english("铁木真")


def test_the_term_list_is_kept_in_the_cache_folder_and_read_back_the_same(tmp_path, monkeypatch):
    """Parsing CC-CEDICT takes 2.5 s of every start (beside the store's load, the start's longest step):
    the result is kept once in the cache folder, and later starts read it back."""
    import json

    parsed = term_list()
    monkeypatch.setattr(terms_module, "_terms", None)
    first = terms_module.term_list(cache_dir=tmp_path)
    assert first.zh_to_en == parsed.zh_to_en and first.en_to_zh == parsed.en_to_zh
    [cached] = tmp_path.glob("term-list-*.json")
    kept = json.loads(cached.read_text(encoding="utf-8"))
    kept["zh_to_en"]["试金石词"] = ["touchstone"]  # only a read of the cache can know this word
    cached.write_text(json.dumps(kept, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setattr(terms_module, "_terms", None)
    again = terms_module.term_list(cache_dir=tmp_path)
    assert again.english("试金石词") == ("touchstone",)
    assert again.english("铁木真") == parsed.english("铁木真") and again.chinese("temujin") == parsed.chinese("temujin")


def test_the_term_list_is_the_same_in_every_process():
    """Chinese words of equal frequency were ranked in set order, which each process's hash seed changes: two
    processes kept different words for "sewer", and the list one process cached was not what another parsed."""
    script = (
        "import hashlib, json; from backend.retrieval.term_list import _parsed; t = _parsed(); "
        "print(hashlib.sha256(json.dumps(sorted(t.en_to_zh.items()), ensure_ascii=False).encode()).hexdigest())"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO_ROOT,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(digests) == 1
