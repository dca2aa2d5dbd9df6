"""What runs rapidocr's bundled PP-OCR models, and on how many threads.

OpenVINO (installed for the embedder) reads the same ONNX files about three times as fast as ONNX Runtime on
these CPUs, with the same text: 1.24 s against 4.06 s a scanned dev-en page on one thread, 0.9999 of the
characters alike (difflib ratio over the pages). ONNX Runtime stays where OpenVINO is missing, or when
``ocr.runtime`` asks for it.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any, Optional

from backend.cpu import usable_cpus
from backend.errors import DocumentError

MAX_OCR_WORKERS = 4


def ocr_workers() -> int:
    """Pages OCR'd at once: one per usable core, at most MAX_OCR_WORKERS (memory: a rendered page each)."""
    return max(1, min(MAX_OCR_WORKERS, usable_cpus()))


def runtime_params(runtime: str) -> dict[str, Any]:
    """rapidocr's parameters for ``runtime`` ("auto": OpenVINO where it can run the bundled models)."""
    if runtime == "onnxruntime":
        return {}
    models = _bundled_models()
    if models is None or importlib.util.find_spec("openvino") is None:
        if runtime == "openvino":
            raise DocumentError("ocr.runtime openvino: the openvino package or rapidocr's bundled models are missing")
        return {}
    from rapidocr.utils.typings import EngineType

    detector, recognizer = models
    return {
        "Det.engine_type": EngineType.OPENVINO,
        "Det.model_path": str(detector),
        "Rec.engine_type": EngineType.OPENVINO,
        "Rec.model_path": str(recognizer),
    }


def _bundled_models() -> Optional[tuple[Path, Path]]:
    """The detection and recognition models inside the rapidocr package (what ONNX Runtime loads too)."""
    spec = importlib.util.find_spec("rapidocr")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "models"
    detectors, recognizers = sorted(folder.glob("*_det_*.onnx")), sorted(folder.glob("*_rec_*.onnx"))
    return (detectors[-1], recognizers[-1]) if detectors and recognizers else None


def requests_per_thread(session: Any, workers: int) -> None:
    """rapidocr's OpenVINO session holds one inference request, which runs one inference at a time, while
    OCR threads read pages side by side (ocr.ahead): each thread gets a request of its own, on a stream of
    one thread each. ONNX Runtime sessions are left alone (they take calls from several threads)."""
    compiled = _recompiled(session, {"NUM_STREAMS": str(workers), "INFERENCE_NUM_THREADS": str(workers)})
    if compiled is not None:
        session.session = PerThreadRequests(compiled)


def one_request(session: Any) -> None:
    """The same for a model its caller runs one call at a time (detection: ocr.OneAtATime), on every core."""
    compiled = _recompiled(session, {})
    if compiled is not None:
        session.session = compiled.create_infer_request()


def _recompiled(session: Any, config: dict[str, str]) -> Any:
    """An OpenVINO session's model compiled again with ``config``; None for an ONNX Runtime session."""
    if not hasattr(getattr(session, "session", None), "get_compiled_model") or not hasattr(session, "model"):
        return None
    from openvino import Core

    # No cache of kernels per input shape: each page size and line width is a shape of its own (with it,
    # and a detection request per thread, bench-ingest of the dev sets peaked at 2.9 GB; 2.1 GB without).
    return Core().compile_model(session.model, "CPU", {**config, "CPU_RUNTIME_CACHE_CAPACITY": "0"})


class PerThreadRequests:
    """What rapidocr calls on its request (``infer``, ``get_output_tensor``), on the calling thread's own."""

    def __init__(self, compiled: Any) -> None:
        self._compiled = compiled
        self._local = threading.local()

    def infer(self, *args: Any, **kwargs: Any) -> Any:
        return self._request().infer(*args, **kwargs)

    def get_output_tensor(self, *args: Any) -> Any:
        return self._request().get_output_tensor(*args)

    def _request(self) -> Any:
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self._compiled.create_infer_request()
        return request
