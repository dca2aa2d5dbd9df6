"""Command line: ``python main.py <command>``. Every command calls backend.service only."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from backend.errors import DocLensError
from backend.settings import CONFIG_ENV, Settings, load_settings
from ui.cli.bench_load import add_bench_load_command
from ui.cli.bench_page import add_bench_page_command
from ui.cli.output import CLI_USER, emit_json, open_service, show_rows, write_json
from ui.cli.questions import add_question_commands
from ui.cli.sharing import add_share_command
from ui.cli.sync import add_sync_command
from ui.cli.trash import add_trash_command, moved_line

log = logging.getLogger(__name__)
COMMANDS = set(  # every command's name: anything else is an argument of the default one, serve
    "serve kb ingest sync docs rm trash share figures bench-ingest migrate bench-search bench-start bench-load"
    " bench-page bench-embed bench-layout bench-formulas bench-corpus search ask summary eval calibrate selftest".split()
)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    argv = list(argv) if argv is not None else sys.argv[1:]
    if not any(arg in COMMANDS or arg in ("-h", "--help") for arg in argv):
        argv = ["serve", *argv]  # serving is the default command
    args = parser.parse_args(argv)
    args.config = getattr(args, "config", None)
    args.debug = getattr(args, "debug", False)
    if args.config:  # the app a bench starts (`main.py serve`) reads the same file
        os.environ[CONFIG_ENV] = str(Path(args.config).resolve())
    try:
        settings = load_settings(args.config)
        setup_logging(settings, args.debug)
        return run_with_model_bar(args, settings)
    except DocLensError as exc:
        return fail(str(exc), args.debug)
    except KeyboardInterrupt:
        return fail("interrupted", args.debug, code=130)
    except Exception as exc:  # the last line of defence: one line unless --debug
        return fail(f"unexpected {exc.__class__.__name__}: {exc} (run with --debug for details)", args.debug, code=2)


def run_with_model_bar(args, settings: Settings) -> int:
    """The command, with a bar while it builds the embedding model (only a first start does)."""
    from backend.service import watch_model_preparation
    from ui.cli.progress import ModelPreparationBar

    bar = ModelPreparationBar(enabled=not getattr(args, "json", False))
    try:
        with watch_model_preparation(settings, bar):
            return int(args.handler(args, settings) or 0)
    finally:
        bar.close()


def fail(message: str, debug: bool, code: int = 1) -> int:
    if debug:
        log.error(message, exc_info=True)  # noqa: LOG014 - called from the except blocks of main()
    print(f"error: {message}", file=sys.stderr)
    return code


def setup_logging(settings: Settings, debug: bool) -> None:
    level = logging.DEBUG if debug else getattr(logging, settings.logging.level)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    # milvus-lite logs unimplemented gRPC calls and a traceback when its store is locked; we say it in one line
    for chatty in ("grpc._server", "milvus_lite"):
        logging.getLogger(chatty).setLevel(logging.CRITICAL)
    for noisy in (
        "httpx",
        "urllib3",
        "jieba",
        "pymilvus",
        "sentence_transformers",
        "matplotlib",
        "PIL",
        "faiss",
        "RapidOCR",
        "pdfminer",
        "filelock",
        "huggingface_hub",
    ):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


# -- parser ------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: a subcommand must not reset what was given before it (``main.py --debug kb list``).
    common.add_argument(
        "--config",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="settings file (default: config.yaml beside main.py)",
    )
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show full tracebacks and debug logs"
    )
    parser = argparse.ArgumentParser(
        prog="main.py", parents=[common], description="DocLens: ask questions across your PDF libraries."
    )
    parser.set_defaults(handler=None)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    serve = sub.add_parser("serve", parents=[common], help="start the web app (default)")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1; 0.0.0.0 must be explicit)")
    serve.add_argument("--port", type=int, help="port (default 7860)")
    serve.add_argument(
        "--auth", metavar="USER:PASS", help="require a login (or set DOCLENS_AUTH); several logins separated by spaces"
    )
    serve.add_argument(
        "--admin",
        metavar="USER",
        help="the login that may change server-wide settings from the page (default ui.admin; nobody)",
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --host without a login (anyone reaching it can use DocLens)",
    )
    serve.set_defaults(handler=cmd_serve)

    _add_kb_commands(sub, common)
    _add_document_commands(sub, common)
    _add_bench_commands(sub, common)
    add_sync_command(sub, common)
    add_bench_load_command(sub, common)
    add_bench_page_command(sub, common)
    add_trash_command(sub, common)
    add_share_command(sub, common)
    add_question_commands(sub, common)
    return parser


def _add_kb_commands(sub, common) -> None:
    kb = sub.add_parser("kb", parents=[common], help="manage knowledge bases")
    kb.set_defaults(handler=lambda args, settings: kb.print_help() or 1)
    kb_sub = kb.add_subparsers(title="kb commands", metavar="ACTION")
    p = kb_sub.add_parser("list", parents=[common], help="list knowledge bases")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_kb_list)
    p = kb_sub.add_parser("create", parents=[common], help="create a knowledge base")
    p.add_argument("name")
    p.set_defaults(handler=cmd_kb_create)
    p = kb_sub.add_parser("rename", parents=[common], help="rename a knowledge base (keeps its data)")
    p.add_argument("old")
    p.add_argument("new")
    p.set_defaults(handler=cmd_kb_rename)
    p = kb_sub.add_parser("delete", parents=[common], help="move a knowledge base to the trash (see `trash`)")
    p.add_argument("name")
    p.add_argument("--yes", action="store_true", help="confirm the deletion")
    p.set_defaults(handler=cmd_kb_delete)


def _add_document_commands(sub, common) -> None:
    p = sub.add_parser("ingest", parents=[common], help="add PDFs (files or folders) to a knowledge base")
    p.add_argument("--kb", required=True, help="knowledge base name")
    p.add_argument("paths", nargs="*", metavar="PATH")
    p.add_argument("--json", action="store_true", help="print per-file results as JSON")
    p.add_argument(
        "--resume", action="store_true", help="first finish the uploads into it that a kill or a shutdown cut short"
    )
    p.set_defaults(handler=cmd_ingest)
    p = sub.add_parser("docs", parents=[common], help="list the documents of a knowledge base")
    p.add_argument("--kb", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_docs)
    p = sub.add_parser("rm", parents=[common], help="move one document to the trash (see `trash`)")
    p.add_argument("--kb", required=True)
    p.add_argument("file")
    p.set_defaults(handler=cmd_rm)
    p = sub.add_parser("figures", parents=[common], help="list figures")
    p.add_argument("--kb", required=True)
    p.add_argument("--doc", metavar="FILE")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_figures)
    p = sub.add_parser(
        "migrate",
        parents=[common],
        help="index the knowledge bases of a Milvus Lite 3.x data folder again from their PDFs",
    )
    p.set_defaults(handler=cmd_migrate)


def _add_bench_commands(sub, common) -> None:
    """The benchmarks: each prints its figures (and writes them as JSON with --json)."""
    p = sub.add_parser("bench-ingest", parents=[common], help="ingest speed: pages/s, peak memory, stage times")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    p.add_argument("--stages", action="store_true", help="each stage's seconds against its ceiling, OCR error rate")
    p.add_argument("--twin", action="append", default=[], metavar="SCAN=NATIVE", help="a scan's native twin")
    p.set_defaults(handler=cmd_bench_ingest)
    p = sub.add_parser("bench-search", parents=[common], help="search speed, memory and filter recall, 1k-300k chunks")
    p.add_argument(
        "--docs",
        required=True,
        nargs="+",
        metavar="SET",
        help="question sets (folders of qa.jsonl and docs/) whose native PDFs the libraries are made from",
    )
    p.add_argument("--chunks", default="1000,10000,100000", help="comma-separated knowledge base sizes")
    p.add_argument("--server", action="store_true", help="through a `milvus-lite server` process on 127.0.0.1")
    p.add_argument("--kbs", type=int, default=1, help="also the same chunks in N knowledge bases, asked together")
    p.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    p.set_defaults(handler=cmd_bench_search)
    p = sub.add_parser("bench-start", parents=[common], help="app start to the page and the first answer")
    p.add_argument("--chunks", type=int, default=100_000, help="the bench-search library to start on")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    p.set_defaults(handler=cmd_bench_start)
    p = sub.add_parser(
        "bench-embed", parents=[common], help="the embedder alone per runtime: chunks/s, query ms, quality"
    )
    p.add_argument("--docs", required=True, nargs="+", metavar="SET", help="question sets (qa.jsonl and docs/)")
    p.add_argument("--files", type=int, default=20, help="native documents read per set")
    p.add_argument("--questions", type=int, default=100, help="questions ranked per set")
    p.add_argument("--runtimes", default="float32,openvino-int8,onnxruntime-int8", help="comma-separated")
    p.add_argument("--reference", default="float32", help="the runtime cosines are taken to")
    p.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    p.set_defaults(handler=cmd_bench_embed)
    p = sub.add_parser("bench-layout", parents=[common], help="reading order on generated 2- and 3-column pages")
    p.add_argument("--en", metavar="DIR", type=Path, help="English PDFs whose text the pages are laid out from")
    p.add_argument("--zh", metavar="DIR", type=Path, help="Chinese PDFs whose text the pages are laid out from")
    p.add_argument("--native-only", action="store_true", help="skip the scanned copies (OCR)")
    p.set_defaults(handler=cmd_bench_layout)
    p = sub.add_parser("bench-formulas", parents=[common], help="formulas as LaTeX from generated pages, per kind")
    p.add_argument("--kinds", default="text,drawn,scanned", help="comma-separated: text, drawn, scanned")
    p.add_argument("--langs", default="en,zh", help="comma-separated context languages")
    p.add_argument("--show", action="store_true", help="also print each formula as stored")
    p.set_defaults(handler=cmd_bench_formulas)
    p = sub.add_parser(
        "bench-corpus", parents=[common], help="ingest PDFs: count indexed, named and unexpected failures"
    )
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.set_defaults(handler=cmd_bench_corpus)


# -- handlers ----------------------------------------------------------------------------------


def cmd_serve(args, settings: Settings) -> int:
    from backend.service import DocLens
    from ui.access import checked_access

    access = checked_access(settings, args.host, args.port, args.auth, args.admin, args.insecure)
    starting = starting_page(access.host, access.port)  # a page at once; the app takes seconds to import
    # The knowledge bases load (in the store's own process, on one core) while the web framework imports on
    # the other; the models are prepared once the first page is drawn (ui.app.serve), not on top of both.
    service = DocLens(settings)
    service.load_all_in_background()
    from ui.app import serve

    serve(settings, access, service, starting)
    return 0


def starting_page(host: str, port: int):
    from ui.starting_page import StartingPage

    try:
        return StartingPage(host, port).start()
    except OSError as exc:
        raise DocLensError(
            f"cannot serve on {host}:{port}: {exc.strerror or exc} (is DocLens already running?)"
        ) from None


def cmd_kb_list(args, settings: Settings) -> int:
    with open_service(settings) as service:
        kbs = [kb.to_dict() for kb in service.list_kbs()]
    show_rows(kbs, args.json, ["name", "documents", "chunks", "embedding_model", "dim", "collection"])
    return 0


def cmd_kb_create(args, settings: Settings) -> int:
    with open_service(settings) as service:
        kb = service.create_kb(args.name)
    print(f"created knowledge base '{kb.name}' ({kb.collection})")
    return 0


def cmd_kb_rename(args, settings: Settings) -> int:
    with open_service(settings) as service:
        kb = service.rename_kb(args.old, args.new, who=CLI_USER)
    print(f"renamed knowledge base '{args.old.strip()}' to '{kb.name}'")
    return 0


def cmd_kb_delete(args, settings: Settings) -> int:
    if not args.yes:
        raise DocLensError(
            f"deleting knowledge base '{args.name.strip()}' removes all its documents: add --yes to confirm"
        )
    with open_service(settings) as service:
        entry = service.delete_kb(args.name, who=CLI_USER)
    assert entry is not None
    print(f"deleted knowledge base '{entry.kb}'; " + moved_line(entry, "it"))
    return 0


def cmd_ingest(args, settings: Settings) -> int:
    from ui.cli.progress import TerminalProgress

    if not args.paths and not args.resume:
        raise DocLensError("ingest: name the PDFs or folders to add (or --resume)")
    with open_service(settings) as service, TerminalProgress(enabled=not args.json) as progress:
        results = service.resume_interrupted(progress, args.kb) if args.resume else []
        if args.paths:
            results += service.ingest(args.kb, [Path(p) for p in args.paths], progress=progress)
    if args.json:
        emit_json([r.to_dict() for r in results])
    else:
        for r in results:
            detail = r.error or f"{r.pages} pages ({r.ocr_pages} OCR), {r.chunks} chunks, {r.figures} figures"
            print(f"{r.status:9} {r.file}: {detail}")
        if args.resume and not results:
            print(f"no interrupted upload to resume in '{args.kb}'")
    return 0 if all(r.ok for r in results) and (results or not args.paths) else 1


def cmd_docs(args, settings: Settings) -> int:
    with open_service(settings) as service:
        docs = [d.to_dict() for d in service.documents(args.kb)]
    show_rows(docs, args.json, ["file", "pages", "ocr_pages", "chunks", "figures", "status"])
    return 0


def cmd_rm(args, settings: Settings) -> int:
    with open_service(settings) as service:
        entry = service.delete_document(args.kb, args.file, who=CLI_USER)
    print(f"deleted {entry.file} from '{entry.kb}'; " + moved_line(entry, "it"))
    return 0


def cmd_figures(args, settings: Settings) -> int:
    with open_service(settings) as service:
        figures = [f.to_dict() for f in service.figures(args.kb, args.doc)]
    show_rows(figures, args.json, ["id", "file", "page", "caption", "path"])
    return 0


def cmd_migrate(args, settings: Settings) -> int:
    from ui.cli.progress import TerminalProgress

    with open_service(settings) as service, TerminalProgress() as progress:
        results = service.migrate(progress=progress)
    for r in results:
        print(
            f"{'done' if r.complete else 'partly':7} '{r.name}': {r.indexed} of {r.documents} documents indexed again"
            + "".join(f"\n        {failure}" for failure in r.failures)
        )
    if not results:
        print("nothing to migrate")
    return 0 if all(r.complete for r in results) else 1


def cmd_bench_ingest(args, settings: Settings) -> int:
    from backend.quality.bench_ingest import benchmark_ingest, format_figures

    with open_service(settings) as service:
        report = benchmark_ingest(service, [Path(p) for p in args.paths], args.stages, args.twin)
    print(format_figures(report))
    write_json(args.json, report)
    return 0


def cmd_bench_search(args, settings: Settings) -> int:
    from backend.quality.bench_search import run, table

    sets = [Path(p) for p in args.docs]
    sizes = [int(c) for c in args.chunks.split(",")]
    if args.kbs > 1:
        from backend.quality import bench_search_kbs

        report = bench_search_kbs.run_kbs(settings, sizes, args.kbs, sets)
        print(bench_search_kbs.table(report))
        write_json(args.json, report)
        return 0
    report = run(settings, sizes, sets, server=args.server)
    print(table(report))
    write_json(args.json, report)
    return 0


def cmd_bench_start(args, settings: Settings) -> int:
    from backend.quality.bench_start import run, table

    report = run(settings, args.chunks, args.runs)
    print(table(report))
    write_json(args.json, report)
    return 0


def cmd_bench_embed(args, settings: Settings) -> int:
    from backend.quality.bench_embed import format_report, run

    runtimes = [name.strip() for name in args.runtimes.split(",") if name.strip()]
    report = run(settings, [Path(p) for p in args.docs], args.files, args.questions, runtimes, args.reference)
    print(format_report(report))
    write_json(args.json, report)
    return 0


def cmd_bench_layout(args, settings: Settings) -> int:
    from backend.quality.bench_layout import format_report, run_layout_bench

    docs = {lang: folder for lang, folder in (("en", args.en), ("zh", args.zh)) if folder}
    if not docs:
        raise DocLensError("bench-layout needs --en DIR and/or --zh DIR: PDFs whose text it lays out")
    print(format_report(run_layout_bench(settings, docs, scanned=not args.native_only)))
    return 0


def cmd_bench_formulas(args, settings: Settings) -> int:
    from backend.quality.bench_formulas import format_formula_report, run_formula_bench

    report = run_formula_bench(settings, langs=args.langs.split(","), kinds=args.kinds.split(","))
    print(format_formula_report(report, show=args.show))
    return 0


def cmd_bench_corpus(args, settings: Settings) -> int:
    from backend.quality.bench_ingest import format_figures, ingest_corpus

    print(format_figures(ingest_corpus(settings, [Path(p) for p in args.paths])))
    return 0
