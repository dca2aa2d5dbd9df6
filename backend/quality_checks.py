"""The quality checks of the facade (``DocLens`` inherits them): metrics on a question set, the self-test,
the ingest benchmark and the confidence calibration. ``backend.evaluation`` does the work, imported only
when a check is asked for, and calls the service back through its public methods only."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from backend.types import SEARCH_MODES, ProgressCallback


class QualityChecks:
    """Mixed into ``backend.service.DocLens``: every method passes the service itself to the evaluation."""

    def evaluate(
        self,
        qa_path: Path,
        docs_dir: Path,
        kb_name: Optional[str] = None,
        modes: Sequence[str] = SEARCH_MODES,
        limit: int = 0,
        progress: Optional[ProgressCallback] = None,
        keep_details: bool = False,
        unanswerable: bool = False,
    ) -> dict[str, Any]:
        """Metrics per search mode on a qa.jsonl set (see ``backend.evaluation.run_eval``)."""
        from backend.evaluation import run_eval

        return run_eval(
            self,
            Path(qa_path),
            Path(docs_dir),
            kb_name=kb_name,
            modes=modes,
            limit=limit,
            progress=progress,
            keep_details=keep_details,
            unanswerable=unanswerable,
        )

    def selftest(self, kb_name: str, samples: int = 50, progress: Optional[ProgressCallback] = None) -> dict[str, Any]:
        """Recall of stored chunks asked back as questions."""
        from backend.evaluation import selftest

        return selftest(self, kb_name, samples=samples, progress=progress)

    def benchmark_ingest(self, paths: Sequence[Path]) -> dict[str, Any]:
        """Ingest into a throwaway knowledge base: pages/s and peak memory."""
        from backend.evaluation import benchmark_ingest

        return benchmark_ingest(self, paths)

    @staticmethod
    def eval_report_text(report: dict[str, Any]) -> str:
        from backend.evaluation import format_report

        return format_report(report)

    @staticmethod
    def calibrate(reports: Sequence[Path], mode: str = "rerank") -> dict[str, Any]:
        """Fit the confidence on eval reports made with ``--details`` and save it; per report its
        reliability and ``worst_band`` (the largest gap in a band of 50+ questions)."""
        from backend.evaluation import calibrate_from_reports, worst_band

        result = calibrate_from_reports([Path(p) for p in reports], mode=mode)
        for check in result["per_report"].values():
            check["worst_band"] = worst_band(check)
        return result
