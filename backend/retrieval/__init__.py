"""Search without a model: the retriever and its stages (candidates -> fusion -> rerank -> confidence),
the scope of a question, the question's plan across languages, the term list and the hubness correction."""
