"""Moved to backend.text, the one text module (issue 14). This re-export only keeps branches written in
parallel importing after the merge; delete it once nothing imports ``backend.retrieval.text``."""

from backend.text import CHINESE_STOPWORDS, ENGLISH_STOPWORDS, normalize, query_entities, query_terms, searchable
from backend.text import tokenizer as _tokenizer
from backend.text import use_cache_dir as configure

__all__ = ["CHINESE_STOPWORDS", "ENGLISH_STOPWORDS", "configure", "normalize", "query_entities", "query_terms",
           "searchable", "_tokenizer"]
