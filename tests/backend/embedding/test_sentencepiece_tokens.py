"""The bundled tokenizer on sentencepiece: the ids ``tokenizers`` gives, from a model converted once."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from backend.embedding.bundled import bundled_folder
from backend.embedding.bundled_tokenizer import METASPACE, precompiled_charsmap
from backend.embedding.fast_tokens import FastTokenizer, tokenizer_for
from backend.embedding.sentencepiece_tokens import SentencePieceTokens, sentencepiece_model
from backend.settings import Settings

TEXTS = [
    "长城是中国古代的军事防御工程，全长约两万一千公里。",
    "At sea level, pure water boils at 100 degrees Celsius.",
    "  two  spaces \t and a tab\nand a line ",
    "ｆｕｌｌ　ｗｉｄｔｈ ＡＢＣ １２３ ﬁ ①",
    "a<s>b</s> <mask> <unk> x <mask>y <pad><pad>",
    "no special < here >",
    "x" * 3000,
    "",
]


def _tokenizers_json(rules: dict[int, str]) -> dict:
    """A small XLM-R-like unigram tokenizer, its normaliser built from ``rules`` as the bundled one is."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    pieces = ["<s>", "<pad>", "</s>", "<unk>", METASPACE, f"{METASPACE}a", "a", "b", f"{METASPACE}ab", "A", "c"]
    vocab = [(p, 0.0 if p.startswith("<") else -1.0 - i / 10) for i, p in enumerate(pieces)]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    tokenizer.normalizer = normalizers.Precompiled(precompiled_charsmap(rules))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="always")]
    )
    return json.loads(tokenizer.to_str())


def test_a_normaliser_with_a_rule_for_the_smallest_byte_loads_in_sentencepiece(tmp_path: Path) -> None:
    """A rule for U+0001 put the trie's root at offset 0, which sentencepiece refuses ("precompiled_charsmap is
    invalid") though tokenizers reads it."""
    import sentencepiece
    from tokenizers import Tokenizer

    data = _tokenizers_json({0x01: " ", ord("Ａ"): "A", ord("ｃ"): "c"})
    model = sentencepiece_model(data)
    assert model is not None
    processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    reference = Tokenizer.from_str(json.dumps(data))
    for text in ["ab", "a\x01b", "Ａ ｃ", "ab  ab ", " zz"]:
        assert processor.encode(text) == reference.encode(text).ids, text


def test_a_tokenizer_sentencepiece_cannot_run_stays_on_tokenizers(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    wordpiece = Tokenizer(models.WordPiece({"[UNK]": 0, "[PAD]": 1, "a": 2}, unk_token="[UNK]"))
    wordpiece.pre_tokenizer = pre_tokenizers.Whitespace()
    assert sentencepiece_model(json.loads(wordpiece.to_str())) is None
    folder = tmp_path / "wordpiece"
    folder.mkdir()
    wordpiece.save(str(folder / "tokenizer.json"))
    assert isinstance(tokenizer_for(folder, 16, 8), FastTokenizer)
    unigram = _tokenizers_json({0x01: " "})
    assert sentencepiece_model(unigram) is not None
    assert sentencepiece_model({**unigram, "normalizer": None}) is None
    assert sentencepiece_model({**unigram, "model": {**unigram["model"], "unk_id": None}}) is None
    assert sentencepiece_model({**unigram, "pre_tokenizer": unigram["pre_tokenizer"]["pretokenizers"][1]}) is None


def test_the_bundled_tokenizer_gives_the_ids_and_masks_tokenizers_gives(settings: Settings) -> None:
    folder = bundled_folder(settings)
    fast, reference = tokenizer_for(folder, 512, 8), FastTokenizer(folder, 512, 8)
    assert isinstance(fast, SentencePieceTokens)
    assert fast.token_counts(TEXTS) == reference.token_counts(TEXTS)
    (ids, mask), (expected_ids, expected_mask) = fast.tokenize(TEXTS), reference.tokenize(TEXTS)
    assert np.array_equal(ids, expected_ids) and np.array_equal(mask, expected_mask)
    assert ids.shape[1] == 512  # the long text cut to the model's length, <s> and </s> kept


def test_a_folder_whose_tokenizer_changed_is_converted_again(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    for rules, expected in (({ord("Ａ"): "A"}, "A"), ({ord("Ａ"): "c"}, "c")):
        (folder / "tokenizer.json").write_text(json.dumps(_tokenizers_json(rules)), encoding="utf-8")
        tokens = tokenizer_for(folder, 16, 8)
        assert isinstance(tokens, SentencePieceTokens)
        assert tokens.processor.id_to_piece(tokens.encode(["Ａ"])[0]) == [METASPACE, expected]
    assert len(list(tmp_path.glob("model-sentencepiece-*"))) == 1, "the first conversion was removed"
