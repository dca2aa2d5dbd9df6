"""Words, terms and names of a question, for Chinese and English alike (jieba + a small English tokenizer)."""

from __future__ import annotations

import logging
import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Optional

from backend.text import compact_math, fold_math, math_terms

log = logging.getLogger(__name__)

_jieba_lock = threading.Lock()
_jieba = None
_cache_dir: Optional[Path] = None

CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_ENGLISH_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’\-]*[A-Za-z0-9]|[A-Za-z]")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*%?")
_CJK_RUN = re.compile(f"[{CJK}]+")
_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9&\-]{1,}\b")
_CAPITALISED = re.compile(r"\b[A-Z][a-z][A-Za-z\-]+\b")

ENGLISH_STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
him his how i if in into is it its itself just me more most my no nor not of off on once only or other our out
over own same she should so some such than that the their them then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you your yours
called name named did does many much kind type one also used use known
""".split())
CHINESE_STOPWORDS = frozenset("""
什么 哪些 哪个 哪里 哪儿 哪 多少 几 几个 几年 谁 为什么 为何 怎么 怎样 如何 是否 是 的 了 在 有 和 与 及 或 吗 呢 吧
啊 被 把 对 于 以 而 之 其 这 那 这个 那个 这些 那些 一个 一种 什么样 哪一 哪种 哪家 哪位 多久 多长 多大 何时 何地
何人 请问 请 问 称为 叫做 叫 称 名为 属于 由 从 到 为 将 也 都 就 还 又 所 得 地 着 过 给 让 向 会 能 可以 要
""".split())
_MAX_TERMS = 64


def configure(cache_dir: Path) -> None:
    """jieba writes its dictionary cache to a temp folder by default; keep it inside data_dir.

    Done at start-up, before the first keyword search: Milvus Lite's analyzer uses the same jieba."""
    global _cache_dir
    _cache_dir = cache_dir
    import jieba
    jieba.setLogLevel(logging.WARNING)  # jieba sets its own logger to DEBUG on import
    cache_dir.mkdir(parents=True, exist_ok=True)
    jieba.dt.tmp_dir = str(cache_dir)


def _tokenizer():
    global _jieba
    with _jieba_lock:
        if _jieba is None:
            import jieba
            jieba.setLogLevel(logging.WARNING)
            if _cache_dir is not None:
                _cache_dir.mkdir(parents=True, exist_ok=True)
                jieba.dt.tmp_dir = str(_cache_dir)
            jieba.initialize()
            _jieba = jieba
    return _jieba


def normalize(text: str) -> str:
    """NFKC and lower case, with LaTeX and Unicode math folded to one form (backend.text.fold_math)."""
    return fold_math(text).lower()


def searchable(text: str) -> str:
    """A chunk's text as the lexical signals look words up in it (formulas also without their spaces)."""
    return compact_math(normalize(text))


@lru_cache(maxsize=4096)
def query_terms(question: str) -> tuple[str, ...]:
    """Content words of a question: jieba words of 2+ characters and English words, without stop words.

    Single Chinese characters are left out (they match almost any chunk)."""
    text = normalize(question)
    terms: list[str] = []
    for run in _CJK_RUN.findall(text):
        for word in _tokenizer().lcut(run):
            if len(word) >= 2 and word not in CHINESE_STOPWORDS:
                terms.append(word)
    for word in _ENGLISH_WORD.findall(text):
        if word not in ENGLISH_STOPWORDS and len(word) >= 2:
            terms.append(word)
    terms.extend(_NUMBER.findall(text))
    terms.extend(math_terms(text))
    return tuple(dict.fromkeys(terms))[:_MAX_TERMS]


@lru_cache(maxsize=4096)
def query_entities(question: str) -> tuple[str, ...]:
    """Likely proper nouns: acronyms, capitalised words (not the first word), numbers, Chinese terms of 3+ chars
    or quoted/bracketed Chinese runs — the words that pin a passage down."""
    text = fold_math(question)
    found: list[str] = []
    found += [m.lower() for m in _ACRONYM.findall(text)]
    words = text.split()
    for m in _CAPITALISED.finditer(text):
        first_word = words and text.find(m.group()) == text.find(words[0])
        if not first_word and m.group().lower() not in ENGLISH_STOPWORDS:
            found.append(m.group().lower())
    found += _NUMBER.findall(text)
    for quoted in re.findall(r"[《“\"「『]([^》”\"」』]{2,30})[》”\"」』]", text):
        found.append(quoted.lower())
    for run in _CJK_RUN.findall(text):
        for word in _tokenizer().lcut(run):
            if len(word) >= 3 and word not in CHINESE_STOPWORDS:
                found.append(word)
    return tuple(dict.fromkeys(found))


def is_chinese(text: str) -> bool:
    cjk = len(_CJK_RUN.findall(text) and "".join(_CJK_RUN.findall(text)))
    letters = sum(1 for ch in text if ch.isalpha())
    return letters > 0 and cjk / letters >= 0.3

