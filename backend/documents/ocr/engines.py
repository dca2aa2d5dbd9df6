"""OCR engines: turn a page image into text lines (``page_text`` puts them in reading order).

``rapidocr`` (bundled PP-OCR ONNX models, offline) is the default and the only engine tested for real.
``paddleocr`` works only when it is installed *and* its models are already on disk (it cannot download
here). ``ppstructure_api`` posts the page image to a PP-StructureV3 layout-parsing HTTP endpoint.
"""

from __future__ import annotations

import base64
import io
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Protocol

from PIL import Image

from backend.documents import ppstructure
from backend.documents.ocr.page_text import MarkFormula, OCRBox, page_text
from backend.documents.ocr.runtime import ocr_workers, one_request, requests_per_thread, runtime_params
from backend.errors import DocumentError
from backend.memory import bound_native_heap, return_free_memory
from backend.settings import Settings
from backend.stage_times import stage

log = logging.getLogger(__name__)

# Text line image columns (48 px high each) one recognition run may take: see RecognitionRuns.
REC_RUN_COLUMNS = 3200


class OCREngine(Protocol):
    """Anything that reads a page image. ``recognize`` returns paragraphs separated by blank lines."""

    name: str

    def recognize(self, image: Image.Image) -> str: ...


class RapidOCREngine:
    """rapidocr 3.x with its bundled PP-OCR small models; the ONNX sessions load once, on first use.

    ``recognize`` may run on several threads at once (one page each): rapidocr keeps no per-call state.
    """

    name = "rapidocr"

    def __init__(self, det_limit_side_len: int = 1280, runtime: str = "auto") -> None:
        self._params = {
            "Global.use_cls": False,  # the classifier flipped long English lines
            # it logs every model load at INFO, and at WARNING each region without text (blank formula
            # boxes, empty scans: expected, and said once per document by the ingest's own notes)
            "Global.log_level": "error",
            "Det.limit_type": "max",
            "Det.limit_side_len": det_limit_side_len,
            # one thread per model run: pages run in parallel instead (see ocr.ahead.OCRAhead);
            # ORT's own threads cost ~35 % more CPU on these small convolutions
            "EngineConfig.onnxruntime.intra_op_num_threads": 1,
            **runtime_params(runtime),  # OpenVINO where it is installed: about 3x as fast
        }
        self._engine: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._engine is None:
                try:
                    from rapidocr import RapidOCR
                except ImportError as exc:
                    raise DocumentError(f"OCR engine rapidocr is not installed ({exc})") from None
                bound_native_heap()  # ORT runs without its arena here: freed activations must go back
                engine = RapidOCR(params=self._params)
                _logs_through_ours(logging.getLogger("RapidOCR"))
                # each loads once; rapidocr offers no other way to reach the sessions
                detector, recognizer = engine._load_det_model(), engine._load_rec_model()
                one_request(detector.session)  # one page at a time (OneAtATime, below)
                requests_per_thread(recognizer.session, ocr_workers())
                detector.session = OneAtATime(detector.session)
                recognizer.session = RecognitionRuns(recognizer.session)
                self._engine = engine
            return self._engine

    def recognize(self, image: Image.Image) -> str:
        return page_text(self.lines(image), image)

    def recognize_marking(self, image: Image.Image, mark: MarkFormula) -> str:
        """``recognize``, each display equation's paragraph replaced by ``mark`` (see ``page_text``)."""
        return page_text(self.lines(image), image, mark=mark)

    @stage("ocr_other")
    def lines(self, image: Image.Image) -> list[OCRBox]:
        """The recognised lines with their boxes (page previews frame a cited passage with them)."""
        import numpy as np

        engine = self._load()
        try:
            result = engine(np.asarray(image if image.mode == "RGB" else image.convert("RGB")))
            if result is None or result.boxes is None or result.txts is None:
                return []
            return [
                OCRBox(
                    text,
                    float(min(p[0] for p in quad)),
                    float(min(p[1] for p in quad)),
                    float(max(p[0] for p in quad)),
                    float(max(p[1] for p in quad)),
                )
                for quad, text in zip(result.boxes, result.txts)
                if text and text.strip()
            ]
        finally:
            return_free_memory()  # what this page's model runs freed, before the next page renders


def _logs_through_ours(logger: logging.Logger) -> None:
    """rapidocr prints to stderr through a handler of its own, in colour, past the app's logging settings."""
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    logger.propagate = True


class OneAtATime:
    """rapidocr's detector session, one page at a time across the OCR threads.

    Detection reads the whole page (its longest side at det_limit_side_len) and holds ~0.2 GB of feature
    maps while it runs, where recognising a slice of lines holds a tenth of that. Pages still overlap:
    one is detected while the others' lines are recognised (detection is about a quarter of a page's time).
    """

    def __init__(self, session: Any) -> None:
        self.session = session
        self._lock = threading.Lock()

    def __call__(self, image: Any) -> Any:
        with self._lock, stage("ocr_detection"):
            # OpenVINO hands back a view of its one request's output, which the next page overwrites
            return self.session(image).copy()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


class RecognitionRuns:
    """rapidocr's recogniser session, run on slices of each batch of text lines, keeping of its output
    only what rapidocr's CTC decoder reads: the best character of each time step and its probability.

    rapidocr recognises six lines at a time, padded to the widest; the model's output is lines x width/8 x
    18,710 characters in float32: with its softmax, six page-wide lines took ~0.2 GB on each OCR thread.
    The model reads each line on its own (nothing mixes the lines of a batch), so slices of at most
    ``max_columns`` image columns, padded as rapidocr padded the whole batch, give the same text.
    """

    def __init__(self, session: Any, max_columns: int = REC_RUN_COLUMNS) -> None:
        self.session = session
        self.max_columns = max_columns

    @stage("ocr_recognition")
    def __call__(self, batch: Any) -> BestCharacters:
        import numpy as np

        per_run = max(1, self.max_columns // max(1, batch.shape[-1]))
        index, prob = [], []
        for start in range(0, len(batch), per_run):
            scores = self.session(batch[start : start + per_run])  # lines x steps x characters
            index.append(scores.argmax(axis=2))
            prob.append(scores.max(axis=2))
            del scores
        return BestCharacters(np.concatenate(index), np.concatenate(prob))

    def __getattr__(self, name: str) -> Any:  # the character list and the rest of rapidocr's session API
        return getattr(self.session, name)


@dataclass
class BestCharacters:
    """Stands for the recogniser's scores where rapidocr's decoder takes their argmax and max over the
    characters (axis 2); anything else it might ask is an error, not a silent wrong answer."""

    index: Any  # lines x steps
    prob: Any

    def argmax(self, axis: int) -> Any:
        self._check(axis)
        return self.index

    def max(self, axis: int) -> Any:
        self._check(axis)
        return self.prob

    @staticmethod
    def _check(axis: int) -> None:
        if axis not in (2, -1):
            raise TypeError(f"recogniser scores were reduced over the characters only, not axis {axis}")


class PaddleOCREngine:
    """PaddleOCR 3.x, only with models already on disk: it cannot download them here."""

    name = "paddleocr"
    _DET_NAMES = ("PP-OCRv5_server_det", "PP-OCRv5_mobile_det")
    _REC_NAMES = ("PP-OCRv5_server_rec", "PP-OCRv5_mobile_rec")

    def __init__(self) -> None:
        try:
            import paddleocr  # noqa: F401
        except ImportError:
            raise DocumentError(
                "OCR engine paddleocr is not installed (pip install paddleocr paddlepaddle); set ocr.engine to rapidocr"
            ) from None
        det_dir, rec_dir = self._find_model_dirs()
        os.environ.setdefault("PADDLE_PDX_DISABLE_MODEL_SOURCE_CHECK", "True")
        from paddleocr import PaddleOCR

        self._engine = PaddleOCR(
            text_detection_model_dir=str(det_dir),
            text_recognition_model_dir=str(rec_dir),
            text_detection_model_name=det_dir.name,
            text_recognition_model_name=rec_dir.name,
            use_doc_orientation_classify=False,
            use_doc_unwarping=False,
            use_textline_orientation=False,
            cpu_threads=2,
        )
        self._lock = threading.Lock()

    @classmethod
    def _find_model_dirs(cls) -> tuple[Path, Path]:
        home = Path(os.environ.get("PADDLE_PDX_CACHE_HOME", Path.home() / ".paddlex")) / "official_models"
        det = next((home / n for n in cls._DET_NAMES if (home / n).is_dir()), None)
        rec = next((home / n for n in cls._REC_NAMES if (home / n).is_dir()), None)
        if det is None or rec is None:
            raise DocumentError(
                f"OCR engine paddleocr has no offline models in {home} (it cannot download "
                "them here); set ocr.engine to rapidocr"
            )
        return det, rec

    def recognize(self, image: Image.Image) -> str:
        return page_text(self.lines(image), image)

    def recognize_marking(self, image: Image.Image, mark: MarkFormula) -> str:
        """``recognize``, each display equation's paragraph replaced by ``mark`` (see ``page_text``)."""
        return page_text(self.lines(image), image, mark=mark)

    def lines(self, image: Image.Image) -> list[OCRBox]:
        import numpy as np

        with self._lock:
            results = self._engine.predict(np.asarray(image.convert("RGB"))[:, :, ::-1])
        boxes: list[OCRBox] = []
        for res in results or []:
            for text, box in zip(res["rec_texts"], res["rec_boxes"]):
                if text and text.strip():
                    boxes.append(OCRBox(text, float(box[0]), float(box[1]), float(box[2]), float(box[3])))
        return boxes


class PPStructureAPIEngine:
    """A PP-StructureV3 layout-parsing endpoint: POST {"file": base64 PNG, "fileType": 1} per page."""

    name = "ppstructure_api"

    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 120.0) -> None:
        if not url:
            raise DocumentError("OCR engine ppstructure_api needs ocr.api_url (the layout-parsing endpoint)")
        self.url = url
        self._token = token
        self.timeout = timeout

    def recognize(self, image: Image.Image) -> str:
        import httpx

        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="PNG")
        payload = {"file": base64.b64encode(buffer.getvalue()).decode("ascii"), "fileType": 1}
        headers = {"Content-Type": "application/json"}
        if self._token:
            headers["Authorization"] = f"token {self._token}"
        try:
            response = httpx.post(self.url, json=payload, headers=headers, timeout=self.timeout)
        except httpx.TimeoutException:
            raise DocumentError(f"OCR service {self.url}: no answer within {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise DocumentError(f"OCR service {self.url}: cannot connect ({exc.__class__.__name__})") from None
        return self._markdown_of(response)

    def _markdown_of(self, response: Any) -> str:
        if response.status_code in (401, 403):
            raise DocumentError(
                f"OCR service {self.url}: access denied (HTTP {response.status_code}); check DOCLENS_OCR_API_TOKEN"
            )
        try:
            body = response.json()
        except ValueError:
            raise DocumentError(f"OCR service {self.url}: HTTP {response.status_code}, not a JSON answer") from None
        if response.status_code != 200 or body.get("errorCode", 0) not in (0, None):
            message = str(body.get("errorMsg") or body.get("detail") or "")[:200]
            raise DocumentError(f"OCR service {self.url}: HTTP {response.status_code} {message}".rstrip())
        result = body.get("result")
        results = result.get("layoutParsingResults") if isinstance(result, dict) else None
        texts = [ppstructure.page_text(r) for r in results] if isinstance(results, list) else [None]
        if any(t is None for t in texts):
            raise DocumentError(
                f"OCR service {self.url}: answer has no result.layoutParsingResults"
                "[].markdown.text nor prunedResult.parsing_res_list"
            )
        return "\n\n".join(t for t in texts if t).strip()


_ENGINES: dict[tuple[Any, ...], OCREngine] = {}
_ENGINES_LOCK = threading.Lock()


def get_ocr_engine(settings: Settings) -> OCREngine:
    """The engine ``settings.ocr.engine`` names, created once per process and configuration."""
    ocr = settings.ocr
    token = ocr.api_token.get_secret_value() if ocr.api_token else None
    key = (ocr.engine, ocr.det_limit_side_len, ocr.runtime, ocr.api_url, token, ocr.timeout)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            engine = _create_engine(settings, token)
            _ENGINES[key] = engine
        return engine


def _create_engine(settings: Settings, token: Optional[str]) -> OCREngine:
    ocr = settings.ocr
    if ocr.engine == "rapidocr":
        return RapidOCREngine(ocr.det_limit_side_len, ocr.runtime)
    if ocr.engine == "paddleocr":
        return PaddleOCREngine()
    if ocr.engine == "ppstructure_api":
        return PPStructureAPIEngine(ocr.api_url, token, ocr.timeout)
    raise DocumentError(f"unknown OCR engine {ocr.engine!r}; use rapidocr, paddleocr or ppstructure_api")
