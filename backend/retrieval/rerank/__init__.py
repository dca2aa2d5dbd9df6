"""Stage 3 of a search: the composite reranker (signals in the question's language, signals across
languages, chunk kinds) and the ordering of each search mode."""
