"""The CC-CEDICT term list: proper names explained after a comma are rendered by the name."""

from backend.retrieval import bilingual
from backend.retrieval.bilingual import term_list


def test_a_dictionary_name_with_an_explanation_is_rendered_by_the_name():
    # "Temujin, birth name of Genghis Khan 成吉思汗[...]" was longer than a translation and was dropped.
    assert "temujin" in term_list().english("铁木真")
    assert "铁木真" in term_list().chinese("temujin")


def test_only_a_capitalised_name_before_the_comma_is_kept():
    terms = bilingual.build(
        [
            "鐵木真 铁木真 [Tie3 mu4 zhen1] /Temujin, birth name of Genghis Khan 成吉思汗[Cheng2 ji2 si1 han2]/",
            "做好 做好 [zuo4 hao3] /to do well, as expected/",
        ]
    )
    assert terms.english("铁木真") == ("temujin",)
    assert "temujin" not in terms.english("做好") and "birth" not in terms.english("铁木真")
