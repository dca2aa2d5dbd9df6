"""Typed settings: defaults in config.yaml, overridden by DOCLENS_<SECTION>_<KEY> environment variables.

Secrets (API keys, tokens, the login password) are read only from the environment; they are never
accepted from a file and never serialised (``Settings.public_dict`` leaves them out).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Optional
from urllib.parse import urlsplit

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from backend.errors import SettingsError

ENV_PREFIX = "DOCLENS_"
DEFAULT_CONFIG_PATH = Path(__file__).resolve().parent.parent / "config.yaml"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _endpoint_url(value: str) -> str:
    """An endpoint is empty (not used) or an absolute http(s) URL with a host."""
    value = (value or "").strip()
    if value:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname or any(ch.isspace() for ch in value):
            raise ValueError("must be an http:// or https:// URL with a host, or empty")
    return value


EndpointURL = Annotated[str, AfterValidator(_endpoint_url)]


class MilvusSettings(_Section):
    uri: str = ""  # empty: a Milvus Lite store at <data_dir>/milvus.db
    index_type: Literal["HNSW", "FLAT", "IVF_FLAT", "AUTOINDEX"] = "HNSW"
    token: Optional[SecretStr] = Field(default=None, exclude=True)


class EmbeddingSettings(_Section):
    provider: Literal["sentence_transformers", "openai"] = "sentence_transformers"
    model: str = "bundled:multilingual-e5-small"
    dtype: Literal["auto", "float32", "bfloat16", "int8"] = "auto"
    # int8's runtime: auto is OpenVINO on CPUs with VNNI, onnxruntime-q4 on the others; onnxruntime is opt-in
    int8_runtime: Literal["auto", "onnxruntime-q4", "onnxruntime", "openvino", "none"] = "auto"
    batch_size: int = Field(default=8, ge=1, le=1024)
    max_seq_length: int = Field(default=512, ge=16, le=8192)
    base_url: EndpointURL = ""  # provider=openai: the embeddings endpoint; empty means llm.base_url
    dim: int = Field(default=0, ge=0)  # provider=openai: 0 means ask the endpoint once
    timeout: float = Field(default=60.0, gt=0)
    cache_dir: str = ""  # where the bundled model is rebuilt; empty means <data_dir>/models
    api_key: Optional[SecretStr] = Field(default=None, exclude=True)


class OCRSettings(_Section):
    engine: Literal["rapidocr", "paddleocr", "ppstructure_api"] = "rapidocr"
    dpi: int = Field(default=200, ge=72, le=600)
    det_limit_side_len: int = Field(default=1280, ge=320, le=4096)
    runtime: Literal["auto", "openvino", "onnxruntime"] = "auto"  # rapidocr's models: auto = OpenVINO if installed
    api_url: str = ""  # ppstructure_api: the layout-parsing endpoint
    timeout: float = Field(default=120.0, gt=0)
    api_token: Optional[SecretStr] = Field(default=None, exclude=True)


class IngestSettings(_Section):
    max_file_mb: float = Field(default=200.0, gt=0)
    max_pages: int = Field(default=2000, ge=1)
    chunk_size: int = Field(default=400, ge=50, le=8000)
    chunk_overlap: int = Field(default=80, ge=0, le=4000)
    min_figure_px: int = Field(default=64, ge=1)
    figure_dpi: int = Field(default=150, ge=50, le=600)
    figure_text_chars: int = Field(default=2000, ge=0)  # words of a plot drawn with words kept as its one chunk
    extract_tables: bool = True
    detect_vector_charts: bool = True
    layout_model_native: bool = True  # text-layer pages whose column test is unsure: the layout model joins in
    read_formulas: bool = True  # formulas without text (drawn, scanned) read as LaTeX by the vision model
    # What one file may cost (issue 11 item 8); each has a named error saying which setting it hit.
    max_page_mm: float = Field(default=1200.0, gt=0)  # longest page side; A0 is 1189 mm
    max_render_mpx: float = Field(default=16.0, gt=0)  # pixels of one page render (OCR, figures), in millions
    max_page_chars: int = Field(default=200_000, ge=1000)  # characters in the text layer of one page
    max_chunks: int = Field(default=20_000, ge=1)  # chunks of one document
    max_stream_mb: float = Field(default=100.0, gt=0)  # one compressed stream unpacked, in MB
    embed_group_chunks: int = Field(default=64, ge=1)  # small documents are embedded together up to this many chunks


class SyncSettings(_Section):
    poll_seconds: float = Field(default=2.0, gt=0)  # `sync --watch`: how often the folder is looked at


class TrashSettings(_Section):
    retention_days: float = Field(default=7.0, ge=0, le=3650)  # deleted knowledge bases and documents kept this long


class RetrievalSettings(_Section):
    dense_top_n: int = Field(default=30, ge=1, le=1000)
    keyword_top_n: int = Field(default=30, ge=1, le=1000)
    rrf_k: float = Field(default=60.0, gt=0)
    dense_weight: float = Field(default=4.0, ge=0)
    keyword_weight: float = Field(default=1.0, ge=0)
    top_k: int = Field(default=5, ge=1, le=100)
    rerank_candidates: int = Field(default=40, ge=1, le=1000)
    query_expansion: bool = True
    # weight of the hubness correction for passages in the other language (retrieval/hubness.py); 0 = off
    hub_correction: float = Field(default=0.6, ge=0, le=2)
    # RRF factor (x keyword_weight) of the question's keyword search for a passage in another language:
    # only its anchors (numbers, Latin names) can match there
    cross_keyword_factor: float = Field(default=0.5, ge=0)
    # RRF factor (x keyword_weight) of the bridge keyword search (the question's words rendered by the
    # term list), for passages in the other language only
    bridge_weight: float = Field(default=1.0, ge=0)


class RerankSettings(_Section):
    fuzzy: float = Field(default=0.30, ge=0)
    keyword: float = Field(default=0.12, ge=0)
    semantic: float = Field(default=0.30, ge=0)
    length: float = Field(default=0.12, ge=0)
    rank: float = Field(default=0.10, ge=0)
    entity: float = Field(default=0.05, ge=0)
    bm25: float = Field(default=0.15, ge=0)
    # the bm25 weight when the question names a document (and no page): the keyword search inside one paper
    # finds its rare terms' passage more surely than the cosine, which every passage of the paper shares
    bm25_named_document: float = Field(default=0.20, ge=0)
    document: float = Field(default=0.40, ge=0)
    # relevance kept by a reference-list chunk when the question does not ask for references
    references: float = Field(default=0.9, ge=0, le=1)
    # and its factor when the question asks for references or publications
    references_asked: float = Field(default=1.1, ge=1, le=2)


class CrossRerankSettings(_Section):
    """The reranker's weights for a passage in another language than the question, scored without a
    translation (backend/retrieval/rerank/crosslingual.py). The semantic weight is high because the cosine
    there is corrected for hubness."""

    fuzzy: float = Field(default=0.0, ge=0)
    keyword: float = Field(default=0.20, ge=0)
    semantic: float = Field(default=0.80, ge=0)
    length: float = Field(default=0.10, ge=0)
    rank: float = Field(default=0.10, ge=0)
    entity: float = Field(default=0.05, ge=0)
    bm25: float = Field(default=0.0, ge=0)  # the question's BM25 does not reach the other language
    semantic_shift: float = Field(default=0.04, ge=0, le=0.5)  # cosines across languages run lower


class ConfidenceSettings(_Section):
    warn_below: float = Field(default=50.0, ge=0, le=100)
    # Below this the answer abstains: "not in your documents", the closest passages, no model answer (0: never).
    abstain_below: float = Field(default=15.0, ge=0, le=100)


class LLMSettings(_Section):
    base_url: EndpointURL = ""  # empty: OPENAI_BASE_URL, else no model (extractive answers)
    model: str = ""
    vision_model: str = ""  # empty: the same as model
    timeout: float = Field(default=60.0, gt=0)
    qps: float = Field(default=2.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=20)
    temperature: float = Field(default=0.2, ge=0, le=2)
    max_tokens: int = Field(default=1024, ge=1)
    context_sources: int = Field(default=5, ge=1, le=50)
    api_key: Optional[SecretStr] = Field(default=None, exclude=True)

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)


class UISettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(default=7860, ge=1, le=65535)
    language: Literal["en", "zh"] = "en"
    admin: str = ""  # the logged-in user who may change server-wide settings from the page; empty: nobody
    eval_dir: str = ""  # the only folder web users may run evaluations from; empty: none (CLI only)
    concurrency: int = Field(default=16, ge=1, le=64)  # events run at once (Gradio's queue); bench-load chose it
    auth: Optional[SecretStr] = Field(default=None, exclude=True)  # "user:pass [user2:pass2 ...]" (DOCLENS_AUTH)


class LoggingSettings(_Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


class Settings(_Section):
    data_dir: Path = Path("./data")
    milvus: MilvusSettings = MilvusSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    ocr: OCRSettings = OCRSettings()
    ingest: IngestSettings = IngestSettings()
    sync: SyncSettings = SyncSettings()
    trash: TrashSettings = TrashSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    rerank: RerankSettings = RerankSettings()
    rerank_cross: CrossRerankSettings = CrossRerankSettings()
    confidence: ConfidenceSettings = ConfidenceSettings()
    llm: LLMSettings = LLMSettings()
    ui: UISettings = UISettings()
    logging: LoggingSettings = LoggingSettings()

    @field_validator("data_dir")
    @classmethod
    def _absolute_data_dir(cls, value: Path) -> Path:
        return Path(os.path.abspath(os.path.expanduser(str(value))))

    @property
    def milvus_uri(self) -> str:
        """The URI the store connects to: the configured one, or the Lite store in data_dir."""
        return self.milvus.uri or str(self.data_dir / "milvus.db")

    @property
    def model_cache_dir(self) -> Path:
        return (
            Path(self.embedding.cache_dir).expanduser().resolve()
            if self.embedding.cache_dir
            else self.data_dir / "models"
        )

    @property
    def is_milvus_lite(self) -> bool:
        uri = self.milvus_uri
        return not uri.startswith(("http://", "https://", "tcp://", "grpc://"))

    @property
    def vision_model(self) -> str:
        return self.llm.vision_model or self.llm.model

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm.base_url and self.llm.model)

    def public_dict(self) -> dict[str, Any]:
        """Everything but the secrets, safe to show or log."""
        return self.model_dump(mode="json")


# Secrets: (section, key) -> environment variables tried in order. Never read from a file.
SECRET_ENV: dict[tuple[str, str], tuple[str, ...]] = {
    ("milvus", "token"): ("DOCLENS_MILVUS_TOKEN",),
    ("embedding", "api_key"): ("DOCLENS_EMBEDDING_API_KEY", "DOCLENS_LLM_API_KEY", "OPENAI_API_KEY"),
    ("ocr", "api_token"): ("DOCLENS_OCR_API_TOKEN",),
    ("llm", "api_key"): ("DOCLENS_LLM_API_KEY", "OPENAI_API_KEY"),
    ("ui", "auth"): ("DOCLENS_AUTH",),
}
# The settings file when none is given (``--config`` sets it, so the processes a command starts read it too)
CONFIG_ENV = "DOCLENS_CONFIG"
# Plain values that fall back to a well-known variable when neither config nor DOCLENS_* sets them.
FALLBACK_ENV: dict[tuple[str, str], str] = {("llm", "base_url"): "OPENAI_BASE_URL"}

_SECRET_KEYS = {f"{section}.{key}" for section, key in SECRET_ENV}
_SECTIONS = {name for name, field in Settings.model_fields.items() if name != "data_dir"}


def load_settings(
    config_path: Optional[os.PathLike | str] = None, environ: Optional[Mapping[str, str]] = None
) -> Settings:
    """Read config.yaml (or ``config_path``, else the file DOCLENS_CONFIG names), apply the environment,
    validate, and return Settings."""
    env = os.environ if environ is None else environ
    config_path = config_path or env.get(CONFIG_ENV) or None
    path = Path(config_path) if config_path else DEFAULT_CONFIG_PATH
    raw = _read_yaml(path) if (config_path or path.exists()) else {}
    _reject_secrets_in_file(raw, path)
    _apply_env_overrides(raw, env)
    _apply_fallbacks(raw, env)
    _apply_secrets(raw, env)
    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        raise SettingsError(describe_validation_error(exc)) from None


def with_changes(settings: Settings, changes: Mapping[str, Mapping[str, Any]]) -> Settings:
    """A validated copy of ``settings`` with some section fields changed ({"llm": {"model": "x"}}).

    Invalid values raise SettingsError with the same one-line text a bad config file gives.
    Secret fields (excluded from dumps) are carried over unless changed.
    """
    raw: dict[str, Any] = {"data_dir": settings.data_dir}
    for name in _SECTIONS:
        section = getattr(settings, name)
        raw[name] = {field: getattr(section, field) for field in type(section).model_fields}
        raw[name].update(changes.get(name, {}))
    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        raise SettingsError(describe_validation_error(exc)) from None


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SettingsError(f"config file {path}: cannot be read ({exc.strerror or exc})") from None
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise SettingsError(f"config file {path}: not valid YAML ({exc.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise SettingsError(f"config file {path}: expected a mapping of sections at the top level")
    return data


def _reject_secrets_in_file(raw: dict[str, Any], path: Path) -> None:
    for (section, key), names in SECRET_ENV.items():
        block = raw.get(section)
        if isinstance(block, dict) and block.get(key) not in (None, ""):
            raise SettingsError(
                f"config file {path}: {section}.{key} is a secret; set it in the environment "
                f"({names[0]}), never in a file"
            )
        if isinstance(block, dict):
            block.pop(key, None)


def _apply_env_overrides(raw: dict[str, Any], env: Mapping[str, str]) -> None:
    secret_names = {name for names in SECRET_ENV.values() for name in names}
    for name, value in env.items():
        if not name.startswith(ENV_PREFIX) or name in secret_names:
            continue
        rest = name[len(ENV_PREFIX) :].lower()
        if rest == "data_dir":
            raw["data_dir"] = value
            continue
        section = next((s for s in sorted(_SECTIONS, key=len, reverse=True) if rest.startswith(s + "_")), None)
        if section is None:
            continue  # not a settings variable (e.g. DOCLENS_AUTH handled as a secret)
        key = rest[len(section) + 1 :]
        block = raw.setdefault(section, {})
        if not isinstance(block, dict):
            raise SettingsError(f"config: {section} must be a mapping")
        block[key] = _parse_env_value(value)


def _parse_env_value(value: str) -> Any:
    """Environment values are YAML scalars so that 'true', '3' and '0.5' keep their types."""
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        return value
    return value if isinstance(parsed, (dict, list)) or parsed is None else parsed


def _apply_fallbacks(raw: dict[str, Any], env: Mapping[str, str]) -> None:
    for (section, key), name in FALLBACK_ENV.items():
        block = raw.setdefault(section, {})
        if isinstance(block, dict) and not block.get(key) and env.get(name):
            block[key] = env[name]


def _apply_secrets(raw: dict[str, Any], env: Mapping[str, str]) -> None:
    for (section, key), names in SECRET_ENV.items():
        value = next((env[n] for n in names if env.get(n)), None)
        if value is not None:
            block = raw.setdefault(section, {})
            if isinstance(block, dict):
                block[key] = value


def describe_validation_error(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        key = ".".join(str(part) for part in err["loc"])
        if err["type"] == "extra_forbidden":
            problems.append(f"{key}: unknown setting")
        else:
            shown = err.get("input")
            hidden = isinstance(shown, (dict, list)) or key in _SECRET_KEYS
            shown = "" if hidden else f" (got {shown!r})"
            problems.append(f"{key}: {err['msg'].removeprefix('Value error, ')}{shown}")
    return "config: " + "; ".join(problems)
