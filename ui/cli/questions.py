"""The question commands of ``main.py``: search, ask, summary, and the quality checks (eval, calibrate,
selftest). Each calls backend.service only."""

from __future__ import annotations

from pathlib import Path

from backend.settings import Settings
from backend.types import SEARCH_MODES, SearchMode
from ui.cli.output import emit_json, open_service, write_json


def add_question_commands(sub, common) -> None:
    p = sub.add_parser("search", parents=[common], help="ranked sources for a question (no LLM)")
    _add_scope(p)
    p.add_argument("question")
    p.add_argument("--mode", choices=SEARCH_MODES, default=SearchMode.RERANK.value)
    p.add_argument("--top", type=int, default=None)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_search)
    p = sub.add_parser("ask", parents=[common], help="answer a question from knowledge bases")
    _add_scope(p)
    p.add_argument("question")
    p.add_argument("--figure", metavar="FIGURE_ID")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_ask)
    p = sub.add_parser("summary", parents=[common], help="a document's summary (cached)")
    p.add_argument("--kb", required=True)
    p.add_argument("file")
    p.add_argument("--refresh", action="store_true")
    p.set_defaults(handler=cmd_summary)
    _add_eval_command(sub, common)
    p = sub.add_parser(
        "calibrate", parents=[common], help="fit the confidence calibration from eval reports made with --details"
    )
    p.add_argument("reports", nargs="+", metavar="REPORT.json")
    p.add_argument("--mode", default="rerank", help="which mode's results to fit on (default rerank)")
    p.add_argument(
        "--hold-out",
        action="store_true",
        help="fit on one half of the documents (paper_split) and check on the other, which the fit never saw",
    )
    p.set_defaults(handler=cmd_calibrate)
    p = sub.add_parser("selftest", parents=[common], help="recall of stored chunks asked back as questions")
    p.add_argument("--kb", required=True)
    p.add_argument("--samples", type=int, default=50)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_selftest)


def _add_eval_command(sub, common) -> None:
    p = sub.add_parser("eval", parents=[common], help="retrieval metrics on a qa.jsonl set")
    p.add_argument("--qa", required=True, metavar="FILE.jsonl")
    p.add_argument("--docs", required=True, metavar="DIR")
    p.add_argument("--kb", help="use this knowledge base (or several: a,b) instead of a temporary one")
    p.add_argument("--kbs", type=int, default=1, help="split the temporary library into N knowledge bases")
    p.add_argument("--modes", default=",".join(SEARCH_MODES))
    p.add_argument("--limit", type=int, default=0, help="a fixed-seed sample of N questions")
    p.add_argument("--json", metavar="OUT")
    p.add_argument(
        "--details", action="store_true", help="keep per-question results in the JSON (input for `calibrate`)"
    )
    p.add_argument(
        "--unanswerable",
        action="store_true",
        help="also ask each question with its own document left out (checks the confidence on "
        "questions the library cannot answer)",
    )
    p.add_argument("--halves", action="store_true", help="metrics of each half of the papers too (paper_split)")
    p.add_argument(
        "--name-document",
        action="store_true",
        help="ask each question as naming its document ('... as described in the document \"<file>\"?')",
    )
    p.add_argument(
        "--picked",
        action="store_true",
        help="ask each question with its document picked, as in the chat's filter (with --unanswerable: "
        "another document picked instead)",
    )
    p.set_defaults(handler=cmd_eval)


def _add_scope(p) -> None:
    """Which knowledge bases and documents a question searches."""
    kbs = p.add_mutually_exclusive_group(required=True)
    kbs.add_argument("--kb", help="a knowledge base, or several separated by commas (a,b)")
    kbs.add_argument("--all-kbs", action="store_true", help="every knowledge base")
    p.add_argument(
        "--doc", metavar="FILE", action="append", help="only this document (repeat for several; KB/FILE names its KB)"
    )


def kbs_asked(args, service) -> list[str]:
    """``--all-kbs``, or ``--kb``: one name (a name holding a comma is taken whole when it exists) or a,b."""
    names = [kb.name for kb in service.list_kbs()]
    if args.all_kbs:
        from ui.common import is_temporary_kb  # gradio: only here

        return [name for name in names if not is_temporary_kb(name)]
    if args.kb.strip() in names:
        return [args.kb.strip()]
    return [name.strip() for name in args.kb.split(",") if name.strip()]


def cmd_search(args, settings: Settings) -> int:
    with open_service(settings) as service:
        result = service.search(kbs_asked(args, service), args.question, doc=args.doc, mode=args.mode, top=args.top)
    if args.json:
        emit_json(result.to_dict())
        return 0
    print(f"confidence {result.confidence:.0f}%  ({result.mode}, {result.latency_ms:.0f} ms)")
    if result.searched_in:
        print(f"searched in: {result.searched_in}")
    for i, s in enumerate(result.sources, 1):
        snippet = " ".join(s.text.split())[:160]
        print(f"[{i}] {s.relevance:5.1f}  {s.kb}: {s.file} p{s.page}  {snippet}")
    return 0


def cmd_ask(args, settings: Settings) -> int:
    with open_service(settings) as service:
        kbs = kbs_asked(args, service)
        if args.json:
            emit_json(service.ask(kbs, args.question, doc=args.doc, figure_id=args.figure).to_dict())
            return 0
        answer, streamed = None, ""
        for update in service.ask_stream(kbs, args.question, doc=args.doc, figure_id=args.figure):
            if update.done:
                answer = update.answer
            else:
                streamed += update.delta
                print(update.delta, end="", flush=True)
    if answer is not None and answer.quotes_passages and answer.answer.strip() != streamed.strip():
        # no model, or it failed: the final answer quotes the passages (as the web page shows it)
        print(("\n\n" if streamed else "") + answer.answer, end="")
    print()
    if answer is not None:
        if answer.notice and answer.notice not in answer.answer:
            print(f"note: {answer.notice}")
        print(f"confidence {answer.confidence:.0f}% ({answer.mode})")
        if answer.searched_in:
            print(f"searched in: {answer.searched_in}")
        for i, s in enumerate(answer.sources, 1):
            print(f"[{i}] {s.kb}: {s.file} p{s.page}  relevance {s.relevance:.0f}%")
    return 0


def cmd_summary(args, settings: Settings) -> int:
    with open_service(settings) as service:
        print(service.summary(args.kb, args.file, refresh=args.refresh))
    return 0


def cmd_eval(args, settings: Settings) -> int:
    from backend.quality.evaluation import format_report, run_eval
    from ui.cli.progress import TerminalProgress

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    with open_service(settings) as service, TerminalProgress() as progress:
        report = run_eval(
            service,
            Path(args.qa),
            Path(args.docs),
            kb_name=args.kb.split(",") if args.kb else None,
            kbs=args.kbs,
            modes=modes,
            limit=args.limit,
            progress=progress,
            keep_details=args.details,
            unanswerable=args.unanswerable,
            halves=args.halves,
            name_document=args.name_document,
            picked=args.picked,
        )
    print(format_report(report))
    write_json(args.json, report)
    return 0


def cmd_calibrate(args, settings: Settings) -> int:
    from backend.quality.calibration import calibrate

    result = calibrate([Path(p) for p in args.reports], mode=args.mode, hold_out=args.hold_out)
    print(f"fitted on {result['questions']} questions; wrote {result['path']}; checked on {result['checked_on']}")
    print(f"ECE {result['reliability']['ece']}")
    for row in result["reliability"]["bins"]:
        print(f"  shown {row['confidence']:.2f}  correct {row['accuracy']:.2f}  n={row['n']}")
    for name, splits in result["per_report"].items():
        for split, check in splits.items():
            print(
                f"{name} {split}: n={check['n']} ECE {check['ece']}, worst band of 30+ questions "
                f"{check['worst_band']} off, AUROC {check['auroc']}"
            )
    return 0


def cmd_selftest(args, settings: Settings) -> int:
    from backend.quality.selftest import selftest

    with open_service(settings) as service:
        report = selftest(service, args.kb, samples=args.samples)
    if args.json:
        emit_json(report)
    else:
        for key, value in report.items():
            print(f"{key:16} {value}")
    return 0
