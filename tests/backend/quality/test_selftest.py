"""The self-test's questions."""

from backend.quality.selftest import probe_sentence


def test_probe_sentence_is_a_real_sentence():
    text = "短句。这是一个比较长的句子，用来测试自检功能是否正常工作。结尾"
    assert probe_sentence(text) == "这是一个比较长的句子，用来测试自检功能是否正常工作。"
