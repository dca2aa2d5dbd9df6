"""MilvusStore against a real Milvus Lite file and a real `milvus-lite server` on 127.0.0.1 (one code path)."""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import pytest

from backend.errors import StoreError
from backend.processes import free_port
from backend.store.base import ChunkRow, SearchFilter
from backend.store.filters import filter_expression, quote
from backend.store.milvus import MilvusStore
from backend.store.schema import chunk_schema, index_params

DIM = 8


@pytest.fixture(params=["lite", "server"])
def store(request, tmp_path):
    uri = str(tmp_path / "milvus.db") if request.param == "lite" else request.getfixturevalue("milvus_server")
    s = MilvusStore(uri)
    yield s
    for info in s.list_collections():
        s.drop_collection(info.name)
    s.close()


def vec(*hot: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    for i in hot:
        v[i] = 1.0
    return v / np.linalg.norm(v)


def rows(doc_id: str, texts: list[str], filename: str = "a.pdf") -> list[ChunkRow]:
    return [
        ChunkRow(
            id=f"{doc_id}:{i}",
            doc_id=doc_id,
            filename=filename,
            page=i + 1,
            page_end=i + 1,
            chunk_index=i,
            content=t,
            vector=vec(i % DIM),
        )
        for i, t in enumerate(texts)
    ]


def test_create_list_insert_search_delete(store):
    store.create_collection("kb_6869", DIM, "test-model")
    [info] = [i for i in store.list_collections() if i.name == "kb_6869"]
    assert (info.dim, info.embedding_model) == (DIM, "test-model")
    store.insert("kb_6869", rows("d1", ["能量守恒定律 energy conservation", "商业分析 revenue growth"]))
    store.insert("kb_6869", rows('d"2', ["另一个文档 another document about energy"], filename='q"uote.pdf'))
    assert store.count("kb_6869") == 3

    dense = store.dense_search("kb_6869", vec(0), 3)  # d1:0 and d"2:0 share a vector: either may come first
    assert {h.row.id for h in dense[:2]} == {"d1:0", 'd"2:0'} and dense[0].score == pytest.approx(1.0, abs=1e-3)
    keyword = store.keyword_search("kb_6869", "能量守恒", 3)
    assert keyword and keyword[0].row.id == "d1:0"
    english = store.keyword_search("kb_6869", "revenue", 3)
    assert [h.row.id for h in english] == ["d1:1"]

    only_d2 = store.dense_search("kb_6869", vec(0), 3, SearchFilter(include_doc_ids=['d"2']))
    assert {h.row.doc_id for h in only_d2} == {'d"2'}
    without_d2 = store.keyword_search("kb_6869", "energy", 3, SearchFilter(exclude_doc_ids=['d"2']))
    assert {h.row.doc_id for h in without_d2} == {"d1"}

    vectors = store.vectors("kb_6869", ["d1:1"])
    assert np.allclose(vectors["d1:1"], vec(1), atol=1e-5)
    assert [c.chunk_index for c in store.chunks("kb_6869", doc_id="d1")] == [0, 1]

    store.delete_documents("kb_6869", ['d"2'])
    assert store.count("kb_6869") == 2


def test_chunks_are_counted_by_language(store):
    """What the retriever asks before translating a question (backend/retrieval/languages.py)."""
    store.create_collection("kb_6c", DIM, "m")
    chinese, english = rows("d1", ["能量守恒定律", "商业分析"]), rows("d2", ["energy conservation"])
    store.insert("kb_6c", [replace(r, lang="zh") for r in chinese] + [replace(r, lang="en") for r in english])
    assert (store.count("kb_6c", "zh"), store.count("kb_6c", "en"), store.count("kb_6c")) == (2, 1, 3)
    assert store.count("kb_6c", 'en" or lang != "') == 0, "the language is quoted, never raw syntax"


def test_rename_keeps_rows_and_drop_removes(store, caplog):
    store.create_collection("kb_61", DIM, "m")
    store.insert("kb_61", rows("d1", ["hello world"]))
    caplog.clear()
    with caplog.at_level(logging.INFO):
        store.rename_collection("kb_61", "kb_62")
    # Lite has no rename (UNIMPLEMENTED) and copies instead: a success, not an ERROR with a traceback
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert not store.has_collection("kb_61") and store.has_collection("kb_62")
    assert store.count("kb_62") == 1
    [hit] = store.dense_search("kb_62", vec(0), 1)  # rows, vectors and the BM25 index came along
    assert hit.row.content == "hello world" and store.keyword_search("kb_62", "hello", 1)[0].row.id == "d1:0"
    store.drop_collection("kb_62")
    assert not store.has_collection("kb_62")


def test_foreign_collections_are_not_listed(store):
    # Collections some other tool made in the same Milvus: ours only when the schema and properties match.
    client = store._client
    client.create_collection("kb_6f74686572", dimension=4)  # a name that decodes, but not our schema
    client.create_collection("notes", dimension=DIM)
    store.create_collection("kb_6d696e65", DIM, "m")
    assert [i.name for i in store.list_collections()] == ["kb_6d696e65"]
    for name in ("kb_6f74686572", "notes"):
        client.drop_collection(name)


def test_collections_come_back_released_and_are_loaded(tmp_path):
    uri = str(tmp_path / "milvus.db")
    first = MilvusStore(uri)
    first.create_collection("kb_61", DIM, "m")
    first.insert("kb_61", rows("d1", ["persisted text"]))
    first.close()
    second = MilvusStore(uri)
    assert [h.row.id for h in second.keyword_search("kb_61", "persisted", 5)] == ["d1:0"]
    second.close()


def test_filter_values_are_escaped():
    assert quote('a"b\\c') == '"a\\"b\\\\c"'
    assert quote("x\ny") == '"x\\ny"'
    expr = filter_expression(SearchFilter(include_doc_ids=['" or 1==1 or "'], exclude_doc_ids=["z"]))
    assert expr == 'doc_id in ["\\" or 1==1 or \\""] and doc_id not in ["z"]'


def test_unreachable_server_is_one_clear_line():
    uri = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(StoreError, match=f"cannot reach Milvus at {uri}"):
        MilvusStore(uri)


def test_language_and_kind_are_stored(store):
    store.create_collection("kb_6c", DIM, "m")
    stored = rows("d1", ["参考文献 [1] 张三", "energy conservation"])
    stored[0].lang, stored[0].kind = "zh", "references"
    stored[1].lang = "en"
    store.insert("kb_6c", stored)
    found = {h.row.id: (h.row.lang, h.row.kind) for h in store.dense_search("kb_6c", vec(0), 5)}
    assert found == {"d1:0": ("zh", "references"), "d1:1": ("en", "text")}


def test_schema_1_collections_still_open_and_take_new_rows(tmp_path):
    # Knowledge bases made before lang/kind existed: listed, searchable, writable; read as unknown language.
    uri = str(tmp_path / "milvus.db")
    old = MilvusStore(uri)
    legacy = {"doclens.schema": "1", "doclens.embedding_model": "m", "doclens.dim": str(DIM)}
    schema = chunk_schema(old._client, DIM, legacy)
    schema.fields[:] = [f for f in schema.fields if f.name not in ("lang", "kind")]
    index = index_params(old._client, old.index_type)
    old._client.create_collection("kb_6f6c64", schema=schema, index_params=index, properties=legacy)
    old.close()
    reopened = MilvusStore(uri)
    assert [i.name for i in reopened.list_collections()] == ["kb_6f6c64"]
    reopened.insert("kb_6f6c64", rows("d1", ["legacy energy text"]))
    [hit] = reopened.keyword_search("kb_6f6c64", "legacy", 5)
    assert (hit.row.id, hit.row.lang, hit.row.kind) == ("d1:0", "", "text")
    with pytest.raises(StoreError, match="keeps no language"):  # the retriever then translates, as before
        reopened.count("kb_6f6c64", "en")
    reopened.close()


def reload_with_indexes(uri: str, name: str) -> None:
    """Release and load through a second client: loading builds every sealed segment's index at once
    (a background build could still be running otherwise, and brute force would hide the defect)."""
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri)
    client.flush(name)
    client.release_collection(name)
    client.load_collection(name)


def test_one_document_filter_returns_the_full_top_k(store):
    """HNSW under a one-document filter stopped after ``ef`` candidates, almost all from other documents
    (106 of 311 chunks at 100k; here 0 of 20): the document's rows must all be reachable."""
    dim, rng = 16, np.random.default_rng(7)
    towards = np.zeros(dim, dtype=np.float32)
    towards[0] = 1.0

    def near(centre: np.ndarray) -> np.ndarray:
        v = centre + rng.normal(scale=0.3, size=dim).astype(np.float32)
        return v / np.linalg.norm(v)

    store.create_collection("kb_filter", dim, "test-model")
    batch = [
        ChunkRow(
            id=f"d{d}:{i}",
            doc_id=f"d{d}",
            filename=f"d{d}.pdf",
            page=1,
            page_end=1,
            chunk_index=i,
            content=f"chunk {i}",
            vector=near(-towards if d == 0 else towards),
        )
        for d in range(30)
        for i in range(100)
    ]
    store.insert("kb_filter", batch)
    store.seal("kb_filter")
    reload_with_indexes(store.uri, "kb_filter")
    query = near(towards)
    hits = store.dense_search("kb_filter", query, 20, SearchFilter(include_doc_ids=["d0"]))
    exact = sorted((r for r in batch if r.doc_id == "d0"), key=lambda r: -float(r.vector @ query))[:20]
    assert [h.row.id for h in hits] == [r.id for r in exact]
    assert hits[0].score == pytest.approx(float(exact[0].vector @ query), abs=1e-4)
    assert all(h.row.doc_id == "d0" and h.row.content for h in hits)
    others = store.dense_search("kb_filter", query, 20, SearchFilter(exclude_doc_ids=["d0"]))
    assert len(others) == 20 and all(h.row.doc_id != "d0" for h in others)


def test_keyword_search_ignores_the_case_of_latin_words(store):
    store.create_collection("kb_63", DIM, "m")
    store.insert("kb_63", rows("d1", ["The Transformer architecture 注意力机制", "recurrent networks"]))
    store.seal("kb_63")
    for question in ("transformer", "TRANSFORMER", "Transformer"):
        assert [h.row.id for h in store.keyword_search("kb_63", question, 2)] == ["d1:0"]
    assert [h.row.id for h in store.keyword_search("kb_63", "Recurrent Networks", 2)] == ["d1:1"]


def dense_index_type(store: MilvusStore, name: str) -> str:
    return store._client.describe_index(name, "dense")["index_type"]


def test_milvus_lite_2x_gets_a_dense_index_it_need_not_build_at_every_load(store):
    """Milvus Lite 2.x has no HNSW and builds its AUTOINDEX in memory each time a collection is loaded: 27 of
    the 28 s that opening a 100k-chunk knowledge base took. FLAT needs no build and is exact."""
    store.create_collection("kb_66", DIM, "m")
    store.insert("kb_66", rows("d1", ["flat text"]))
    assert dense_index_type(store, "kb_66") == "FLAT"
    assert [h.row.id for h in store.dense_search("kb_66", vec(0), 5)] == ["d1:0"]


def test_a_collection_an_earlier_version_indexed_with_autoindex_opens_with_flat(tmp_path):
    uri = str(tmp_path / "milvus.db")
    earlier = MilvusStore(uri, index_type="AUTOINDEX")
    earlier.create_collection("kb_67", DIM, "m")
    earlier.insert("kb_67", rows("d1", ["kept text", "more text"]))
    earlier.close()
    now = MilvusStore(uri)
    assert [h.row.id for h in now.dense_search("kb_67", vec(1), 1)] == ["d1:1"]
    assert dense_index_type(now, "kb_67") == "FLAT"
    assert [h.row.id for h in now.keyword_search("kb_67", "kept", 5)] == ["d1:0"]
    now.close()


def test_while_a_collection_loads_listings_are_answered_from_the_last_one(store):
    """Milvus Lite answers one request at a time, so a listing during a load (10 s at 100k chunks) waited for
    it, and with it the web page, which lists the knowledge bases to draw itself."""
    store.create_collection("kb_71", DIM, "m")
    listed = store.list_collections()
    with store._known.loading():  # what MilvusStore.load holds around Milvus's load
        assert store.list_collections() == listed
        assert store.describe("kb_71") == listed[0] and store.has_collection("kb_71")
        assert store.describe("kb_72") is None  # not in the last listing: asked
        store.create_collection("kb_72", DIM, "m")  # this process changed the list: asked again
        assert {info.name for info in store.list_collections()} == {"kb_71", "kb_72"}
        store.drop_collection("kb_71")
        assert not store.has_collection("kb_71")
    assert [info.name for info in store.list_collections()] == ["kb_72"]


def test_upsert_rewrites_rows_in_place_keyword_index_included(store):
    """A renamed document's rows get their new file name over their ids, vectors as they were."""
    store.create_collection("kb_7570", DIM, "test-model")
    store.insert("kb_7570", rows("d1", ["basalt lava flows", "granite plutons"]))
    store.upsert("kb_7570", rows("d1", ["basalt lava flows", "granite plutons"], filename="renamed.pdf"))
    assert store.count("kb_7570") == 2
    assert {c.filename for c in store.chunks("kb_7570")} == {"renamed.pdf"}
    assert [h.row.filename for h in store.keyword_search("kb_7570", "granite", 3)] == ["renamed.pdf"]
    assert np.allclose(store.vectors("kb_7570", ["d1:1"])["d1:1"], vec(1), atol=1e-5)


def test_batched_searches_answer_each_query_with_the_rows_vectors(store):
    store.create_collection("kb_6261", DIM, "test-model")
    store.insert("kb_6261", rows("d1", ["alpha energy", "beta revenue", "gamma growth"]))
    dense = store.dense_searches("kb_6261", [vec(0), vec(2)], 2)
    assert [hits[0].row.id for hits in dense] == ["d1:0", "d1:2"]
    assert np.allclose(dense[1][0].row.vector, vec(2), atol=1e-5)  # no second read to score a hit
    keyword = store.keyword_searches("kb_6261", ["revenue", "  ", "growth"], 2)
    assert [[h.row.id for h in hits] for hits in keyword] == [["d1:1"], [], ["d1:2"]]
    assert np.allclose(keyword[2][0].row.vector, vec(2), atol=1e-5)
    within = store.dense_searches("kb_6261", [vec(0), vec(1)], 1, SearchFilter(include_doc_ids=["d1"]))
    assert [hits[0].row.id for hits in within] == ["d1:0", "d1:1"] and within[0][0].row.vector is not None


def test_a_remembered_description_goes_with_its_collection(store):
    store.create_collection("kb_6463", DIM, "model-a")
    assert store.describe("kb_6463").embedding_model == "model-a"
    store.drop_collection("kb_6463")
    assert store.describe("kb_6463") is None
    store.create_collection("kb_6463", DIM * 2, "model-b")
    assert (store.describe("kb_6463").embedding_model, store.describe("kb_6463").dim) == ("model-b", DIM * 2)
    store.rename_collection("kb_6463", "kb_6464")
    assert store.describe("kb_6463") is None and store.describe("kb_6464").embedding_model == "model-b"
