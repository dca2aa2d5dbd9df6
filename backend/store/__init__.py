"""Vector storage behind a small interface (base.VectorStore): Milvus Lite and a Milvus server by URI, one
code path (milvus), with escaped filter expressions (filters), the collection it writes (schema) and the rows
it stores (rows)."""
