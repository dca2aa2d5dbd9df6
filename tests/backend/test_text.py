"""backend/text.py: the language of a piece of text."""

from backend.text import text_language


def test_text_language():
    assert text_language("能量守恒定律是物理学的基本定律之一。") == "zh"
    assert text_language("中文论文里引用 BERT 和 GPT 模型的名字") == "zh"
    assert text_language("Energy conservation is a basic law of physics.") == "en"
    assert text_language("An English sentence that names 北京 once.") == "en"
    assert text_language("E = mc^2  (1.1)") == "en"
    assert text_language("123 456 = 7") == ""
    assert text_language("") == ""
