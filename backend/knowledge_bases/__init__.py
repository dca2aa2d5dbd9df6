"""Knowledge bases: their lifecycle (create, open, rename, delete, recover), their names (``kb_`` + hex),
the registry of their documents, and the reindex of data folders an older Milvus Lite made."""
