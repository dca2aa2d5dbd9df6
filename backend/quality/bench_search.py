"""bench-search: speed, memory and document-filter recall of the question path on libraries of 1k-300k chunks.

Synthetic knowledge bases are made from real material: the native PDFs of ``dev-zh`` and ``dev-en`` are
ingested once (the real ingestor and model), then their chunks are replicated with small word edits and
their e5 vectors perturbed by noise calibrated to the real nearest-neighbour similarity. Every copy is
written through ``MilvusStore.insert`` and the registry as the ingestor writes it, then sealed the way an
upload is. Knowledge bases are built once per size and engine and cached. The question path measured is
``DocLens.search`` in its default mode (query embedding included, no LLM).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import resource
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from backend.errors import DocLensError
from backend.processes import free_port, stop
from backend.service import DocLens
from backend.settings import Settings
from backend.store import lite_server
from backend.store.base import ChunkRow, SearchFilter

log = logging.getLogger(__name__)

KB_NAME = "bench"
DOC_CHUNKS = 67  # chunks per synthetic paper: 100k chunks ~ 1,500 papers
EDIT_SHARE = 0.08  # share of word tokens of a copy replaced by words of other passages
QUESTIONS = 60
FILTERED_QUESTIONS = 20
WARMUP = 3
SEED = 15
STAGES = ("embed", "dense", "keyword", "vectors", "rerank")
_TOKEN = re.compile(r"[\u3400-\u9fff]|[A-Za-z0-9]+|[^\u3400-\u9fffA-Za-z0-9]+")


@dataclass
class Base:
    """Real chunks with their e5 vectors, and real questions about them."""

    texts: list[str]
    langs: list[str]
    kinds: list[str]
    vectors: np.ndarray
    questions: list[str]


# -- base material ------------------------------------------------------------------------------


def load_base(settings: Settings, sets: Sequence[Path], cache: Path) -> Base:
    """The native (not scanned) PDFs of the question sets (folders of qa.jsonl and docs/), ingested once
    through DocLens and kept as arrays, apart for each choice of sets."""
    key = hashlib.sha256("\n".join(sorted(str(Path(s).resolve()) for s in sets)).encode()).hexdigest()[:12]
    arrays, meta = cache / f"base-{key}.npz", cache / f"base-{key}.json"
    if not (arrays.exists() and meta.exists()):
        _ingest_base(_settings_for(settings, cache / f"base-{key}"), sets)
        _dump_base(_settings_for(settings, cache / f"base-{key}"), arrays, meta, sets)
    data = json.loads(meta.read_text(encoding="utf-8"))
    return Base(data["texts"], data["langs"], data["kinds"], np.load(arrays)["vectors"], data["questions"])


def _native_questions(sets: Sequence[Path]) -> list[dict[str, Any]]:
    rows = []
    for folder in sets:
        qa = Path(folder) / "qa.jsonl"
        if not qa.is_file():
            raise DocLensError(f"{folder}: not a question set (no qa.jsonl; give folders of qa.jsonl and docs/)")
        with open(qa, encoding="utf-8") as handle:
            rows += [q | {"set": str(folder)} for q in map(json.loads, handle) if not q.get("scanned")]
    return rows


def _ingest_base(settings: Settings, sets: Sequence[Path]) -> None:
    docs = sorted({(q["set"], q["doc"]) for q in _native_questions(sets)})
    with DocLens(settings) as service:
        if not any(kb.name == "base" for kb in service.list_kbs()):
            service.create_kb("base")
        log.info("bench-search: ingesting %d native PDFs once for the base material", len(docs))
        service.ingest("base", [Path(s) / "docs" / d for s, d in docs])


def _dump_base(settings: Settings, arrays: Path, meta: Path, sets: Sequence[Path]) -> None:
    with DocLens(settings) as service:
        kb = service.open_kb("base", check_model=False)
        rows = service.store.chunks(kb.collection)
        vectors: dict[str, np.ndarray] = {}
        for start in range(0, len(rows), 500):
            vectors.update(service.store.vectors(kb.collection, [r.id for r in rows[start : start + 500]]))
    rows = [r for r in rows if r.id in vectors]
    rng = np.random.default_rng(SEED)
    questions = [q["question"] for q in _native_questions(sets)]
    picked = [questions[i] for i in rng.choice(len(questions), size=min(len(questions), 400), replace=False)]
    np.save(arrays.with_suffix(".tmp.npy"), np.stack([vectors[r.id] for r in rows]).astype(np.float32))
    np.savez(arrays, vectors=np.load(arrays.with_suffix(".tmp.npy")))
    arrays.with_suffix(".tmp.npy").unlink()
    meta.write_text(
        json.dumps(
            {
                "texts": [r.content for r in rows],
                "langs": [r.lang for r in rows],
                "kinds": [r.kind for r in rows],
                "questions": picked,
            },
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )


# -- synthetic knowledge bases ------------------------------------------------------------------


def noise_scale(vectors: np.ndarray) -> float:
    """Noise whose copies sit as close to their source as real chunks sit to their nearest neighbour."""
    sample = vectors[: min(len(vectors), 2000)]
    sims = sample @ sample.T
    np.fill_diagonal(sims, -1.0)
    target = float(np.clip(np.median(sims.max(axis=1)), 0.5, 0.99))
    return float(np.sqrt(1.0 / target**2 - 1.0))


def synthetic_rows(
    base: Base, doc_index: int, vocabulary: list[str], sigma: float, rng: np.random.Generator
) -> list[ChunkRow]:
    """One synthetic paper: DOC_CHUNKS consecutive base chunks; copies after the first round are edited."""
    doc_id = f"synthetic{doc_index:06d}"
    rows = []
    dim = base.vectors.shape[1]
    for j in range(DOC_CHUNKS):
        position = doc_index * DOC_CHUNKS + j
        source, copy = position % len(base.texts), position // len(base.texts)
        text, vector = base.texts[source], base.vectors[source]
        if copy:
            text = edit_text(text, vocabulary, rng)
            vector = vector + rng.normal(scale=sigma / np.sqrt(dim), size=dim).astype(np.float32)
            vector = vector / np.linalg.norm(vector)
        rows.append(
            ChunkRow(
                id=f"{doc_id}:{j}",
                doc_id=doc_id,
                filename=f"{doc_id}.pdf",
                page=j // 4 + 1,
                page_end=j // 4 + 1,
                chunk_index=j,
                content=text,
                vector=vector.astype(np.float32),
                lang=base.langs[source],
                kind=base.kinds[source],
            )
        )
    return rows


def edit_text(text: str, vocabulary: list[str], rng: np.random.Generator) -> str:
    tokens = _TOKEN.findall(text)
    words = [i for i, t in enumerate(tokens) if t.strip() and (t.isalnum() or "\u3400" <= t <= "\u9fff")]
    for i in rng.choice(words, size=max(1, int(len(words) * EDIT_SHARE)), replace=False) if words else []:
        tokens[i] = vocabulary[int(rng.integers(len(vocabulary)))]
    return "".join(tokens)


def kb_names(kbs: int) -> list[str]:
    """The benchmark's knowledge bases: one, or the same chunks dealt out to ``kbs`` of them."""
    return [KB_NAME] if kbs <= 1 else [f"{KB_NAME} {i}" for i in range(1, kbs + 1)]


def build_kb(settings: Settings, base: Base, chunks: int, kbs: int = 1) -> None:
    """Write ``chunks`` synthetic chunks the way the ingestor does (pending entry, rows, pages, complete);
    ``kbs``: the same chunks, paper by paper in turn, into that many knowledge bases."""
    rng = np.random.default_rng(SEED + chunks)
    vocabulary = [t for text in base.texts[:500] for t in _TOKEN.findall(text) if t.strip() and t.isalnum()]
    sigma = noise_scale(base.vectors)
    docs = (chunks + DOC_CHUNKS - 1) // DOC_CHUNKS
    with DocLens(settings) as service:
        opened = [service.open_kb(service.create_kb(name).name, check_model=False) for name in kb_names(kbs)]
        started = time.perf_counter()
        for d in range(docs):
            kb = opened[d % len(opened)]
            rows = synthetic_rows(base, d, vocabulary, sigma, rng)[: chunks - d * DOC_CHUNKS]
            doc_id = rows[0].doc_id
            kb.registry.add_pending(doc_id, rows[0].filename, f"{doc_id:0<64}")
            for start in range(0, len(rows), 256):
                service.store.insert(kb.collection, rows[start : start + 256])
            pages = sorted({r.page for r in rows})
            kb.registry.add_pages(doc_id, [(p, " ".join(r.content for r in rows if r.page == p), False) for p in pages])
            kb.registry.mark_complete(doc_id, pages=len(pages), ocr_pages=0, chunks=len(rows), figures=0)
            if d % 100 == 99:
                log.info(
                    "bench-search: %d chunks: %d of %d documents written (%.0f s)",
                    chunks,
                    d + 1,
                    docs,
                    time.perf_counter() - started,
                )
        for kb in opened:
            service.store.seal(kb.collection)  # what DocLens.ingest does after an upload


# -- measuring ----------------------------------------------------------------------------------


class _StageClock:
    """Wraps the store and the embedder the retriever uses and adds up the time spent in each call."""

    def __init__(self):
        self.spent: dict[str, float] = {}

    def wrap(self, target, methods: dict[str, str]):
        clock = self

        class Timed:
            def __getattr__(self, name):
                value = getattr(target, name)
                if name not in methods:
                    return value

                def timed(*args, **kwargs):
                    started = time.perf_counter()
                    try:
                        return value(*args, **kwargs)
                    finally:
                        stage = methods[name]
                        clock.spent[stage] = clock.spent.get(stage, 0.0) + time.perf_counter() - started

                return timed

        return Timed()


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": round(float(np.percentile(values, 50)) * 1000, 1),
        "p95_ms": round(float(np.percentile(values, 95)) * 1000, 1),
    }


def measure_questions(
    service, questions: Sequence[str], doc: Optional[str] = None, kbs: Sequence[str] = (KB_NAME,)
) -> dict[str, Any]:
    """p50/p95 of ``DocLens.search`` (default mode, over ``kbs``) and of each stage; rerank = what is left."""
    from backend.retrieval.retriever import Retriever

    clock = _StageClock()
    searches = {f"{stage}_{call}": stage for stage in ("dense", "keyword") for call in ("search", "searches")}
    store = clock.wrap(service.store, {**searches, "vectors": "vectors"})
    embedder = clock.wrap(service.embedder, {"embed_queries": "embed"})
    service._retriever = Retriever(service.settings, store, lambda: embedder)
    totals: list[float] = []
    stages: dict[str, list[float]] = {s: [] for s in STAGES}
    for i, question in enumerate(questions):
        clock.spent.clear()
        started = time.perf_counter()
        service.search(list(kbs), question, doc=doc)
        total = time.perf_counter() - started
        if i < WARMUP:
            continue
        totals.append(total)
        for stage in STAGES[:-1]:
            stages[stage].append(clock.spent.get(stage, 0.0))
        stages["rerank"].append(max(0.0, total - sum(clock.spent.values())))
    service._retriever = None
    return {**_percentiles(totals), "stages": {s: _percentiles(v) for s, v in stages.items()}}


def filter_recall(service, questions: Sequence[str], rng: np.random.Generator) -> tuple[float, list[str]]:
    """Dense hits of a one-document search against the exact top-k over that document's chunks."""
    kb = service.open_kb(KB_NAME, check_model=False)
    docs = kb.registry.documents()
    picked = [docs[int(i)] for i in rng.choice(len(docs), size=min(len(docs), len(questions)), replace=False)]
    limit = service.settings.retrieval.dense_top_n
    found = expected = 0
    for question, doc in zip(questions, picked):
        query = service.embedder.embed_queries([question])[0]
        hits = service.store.dense_search(kb.collection, query, limit, SearchFilter(include_doc_ids=[doc.doc_id]))
        ids = [r.id for r in service.store.chunks(kb.collection, doc_id=doc.doc_id)]
        stored = service.store.vectors(kb.collection, ids)
        exact = sorted(ids, key=lambda cid: -float(stored[cid] @ query))[:limit]
        found += len(set(exact) & {h.row.id for h in hits})
        expected += len(exact)
    return (found / expected if expected else 1.0), [d.file for d in picked]


def measure_size(settings: Settings, base: Base, chunks: int, server_pid: Optional[int] = None) -> dict[str, Any]:
    rng = np.random.default_rng(SEED)
    questions = list(base.questions[: QUESTIONS + WARMUP])
    started = time.perf_counter()
    service = DocLens(settings)
    service.load_all()
    open_s = time.perf_counter() - started
    try:
        service.prepare_models_in_background().join()  # as the app does at start: not the first question's
        started = time.perf_counter()
        service.search(KB_NAME, base.questions[-1])
        first_query_s = time.perf_counter() - started
        figures = measure_questions(service, questions)
        recall, files = filter_recall(service, base.questions[-FILTERED_QUESTIONS:], rng)
        filtered = [measure_questions(service, questions[: WARMUP + 1], doc=f)["p95_ms"] for f in files[:10]]
        after_upload = _after_upload(service, base, chunks, questions)
        rss_mb = _rss_mb(exclude=server_pid)  # before closing: Lite 2.x runs its engine as a child process
    finally:
        service.close()
    return {
        "chunks": chunks,
        **figures,
        "filtered_p95_ms": round(float(np.percentile(filtered, 95)), 1),
        "filter_recall": round(recall, 4),
        "open_s": round(open_s, 2),
        "first_query_s": round(first_query_s, 2),
        "after_upload_p95_ms": after_upload,
        "rss_mb": rss_mb,
        "peak_rss_mb": _peak_rss_mb(),
        "server_rss_mb": _rss_mb(server_pid) if server_pid else None,
        "disk_mb": _disk_mb(settings),
        "load_average": round(os.getloadavg()[0], 1),
    }


def _after_upload(service, base: Base, chunks: int, questions: Sequence[str]) -> float:
    """Add one paper as an upload does, search at once (no restart), then take it out again."""
    kb = service.open_kb(KB_NAME, check_model=False)
    rng = np.random.default_rng(SEED)
    rows = synthetic_rows(base, 10**6 - 1, [t for t in base.texts[0].split() if t.isalnum()] or ["x"], 0.1, rng)
    doc_id = rows[0].doc_id
    kb.registry.add_pending(doc_id, rows[0].filename, f"{doc_id:0<64}")
    service.store.insert(kb.collection, rows)
    kb.registry.mark_complete(doc_id, pages=1, ocr_pages=0, chunks=len(rows), figures=0)
    service.store.seal(kb.collection)
    try:
        return measure_questions(service, questions[: WARMUP + 20])["p95_ms"]
    finally:
        kb.remove_document(doc_id)
        service.store.seal(kb.collection)


def _rss_mb(pid: Optional[int] = None, exclude: Optional[int] = None) -> float:
    """RSS of a process and its children (Lite 2.x's engine), without the server process we started."""
    import psutil

    process = psutil.Process(pid) if pid else psutil.Process()
    tree = [process, *(p for p in process.children(recursive=True) if p.pid != exclude)]
    return round(sum(p.memory_info().rss for p in tree) / 2**20, 0)


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0)


def _disk_mb(settings: Settings) -> float:
    root = Path(settings.milvus_uri) if settings.is_milvus_lite else settings.data_dir / "server-store"
    files = (
        [root, *root.parent.glob(f".{root.name}*")] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
    )
    return round(sum(p.stat().st_size for p in files) / 2**20, 1)


# -- driver -------------------------------------------------------------------------------------


def engine_tag(settings: Settings) -> str:
    """Stores of different engines cannot read each other: cache them apart."""
    from importlib.metadata import version

    return f"pymilvus{version('pymilvus')}-lite{version('milvus-lite')}-{settings.milvus.index_type}"


def _settings_for(settings: Settings, data_dir: Path, uri: str = "") -> Settings:
    embedding = settings.embedding.model_copy(update={"cache_dir": str(settings.model_cache_dir)})
    milvus = settings.milvus.model_copy(update={"uri": uri})
    return settings.model_copy(update={"data_dir": data_dir, "embedding": embedding, "milvus": milvus})


def run(
    settings: Settings, sizes: Sequence[int], sets: Sequence[Path], cache: Optional[Path] = None, server: bool = False
) -> dict[str, Any]:
    """Build (once) and measure one knowledge base per size from the question sets ``sets`` (folders of
    qa.jsonl and docs/); ``server``: through `milvus-lite server`."""
    cache = cache or settings.data_dir / "bench-search"
    cache.mkdir(parents=True, exist_ok=True)
    base = load_base(settings, sets, cache)
    report: dict[str, Any] = {
        "engine": engine_tag(settings),
        "deployment": "server" if server else "embedded",
        "base_chunks": len(base.texts),
        "sizes": [],
    }
    for chunks in sizes:
        folder = cache / engine_tag(settings) / f"{'server' if server else 'lite'}-{chunks}"
        report["sizes"].append(_run_size(settings, base, chunks, folder, server))
        log.info("bench-search: %s", json.dumps(report["sizes"][-1]))
    return report


def _run_size(settings: Settings, base: Base, chunks: int, folder: Path, server: bool) -> dict[str, Any]:
    if not (folder / "complete").exists():
        shutil.rmtree(folder, ignore_errors=True)  # a build that did not finish
    proc, uri = _start_server(folder / "server-store") if server else (None, "")
    try:
        sized = _settings_for(settings, folder, uri)
        if not (folder / "complete").exists():
            log.info("bench-search: building a knowledge base of %d chunks (once) in %s", chunks, folder)
            started = time.perf_counter()
            build_kb(sized, base, chunks)
            (folder / "complete").write_text(f"{time.perf_counter() - started:.0f} s\n")
            if proc is not None:  # measure a restarted server, as after a reboot
                stop(proc)
                proc, uri = _start_server(folder / "server-store", uri)
        return measure_size(sized, base, chunks, server_pid=proc.pid if proc else None)
    finally:
        if proc is not None:
            stop(proc)


def _start_server(data_dir: Path, uri: str = "") -> tuple[subprocess.Popen, str]:
    port = int(uri.rsplit(":", 1)[1]) if uri else free_port()
    return lite_server.start(data_dir, port), f"http://127.0.0.1:{port}"


def table(report: dict[str, Any]) -> str:
    """The README table: one row per size."""
    lines = [
        "| chunks | full search p50 / p95 ms | embed p50 | dense p50 | BM25 p50 | filtered p95 | filter recall "
        "| open | first question after restart | after upload p95 | RSS (server) | disk |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in report["sizes"]:
        st = s["stages"]
        server = f" ({s['server_rss_mb']:.0f})" if s.get("server_rss_mb") else ""
        lines.append(
            f"| {s['chunks']:,} | {s['p50_ms']:.0f} / {s['p95_ms']:.0f} | {st['embed']['p50_ms']:.1f} "
            f"| {st['dense']['p50_ms']:.1f} | {st['keyword']['p50_ms']:.1f} | {s['filtered_p95_ms']:.0f} "
            f"| {s['filter_recall']:.2f} | {s['open_s']:.1f} s | {s['first_query_s']:.2f} s "
            f"| {s['after_upload_p95_ms']:.0f} | {s['rss_mb']:,.0f} MB{server} | {s['disk_mb']:,.0f} MB |"
        )
    return "\n".join(lines)
