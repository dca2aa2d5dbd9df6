"""What the int8 model is calibrated on: the calibration texts, and the activation statistics NNCF collects
on them, shipped beside them.

Collecting the statistics runs the float model over the 160 calibration texts: about 30 s of two cores, most
of a first start. They depend only on the model, the texts, the prompts and the layers kept in float, so they
ship in ``assets/embedding-calibration-statistics.npz`` and a first start applies them without running the
model: the same int8 model, byte for byte (its weights file compared with a build that collected them).
Statistics written for another model, other texts or prompts are not used: that build collects its own.

Written again with ``python -m backend.embedding.int8`` after changing any of those.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Optional

import numpy as np

log = logging.getLogger(__name__)

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
CALIBRATION_FILE = Path(__file__).resolve().parents[2] / "assets" / "embedding-calibration.jsonl"
# How many calibration passages also go in as (shortened) questions, so query activations are covered.
CALIBRATION_QUERIES = 32
# The feed-forward output of layers 4 and 5 is where int8 activations lose the most: keeping those two
# products in float moves the mean cosine to float32 from 0.996 to 0.998 for ~3 % of the speed-up.
FLOAT_LAYERS_PATTERN = r".*encoder\.layer\.(4|5)\.output\.dense/.*"

STATISTICS_FILE = CALIBRATION_FILE.with_name("embedding-calibration-statistics.npz")
FINGERPRINT = "fingerprint"  # the entry of the file that says what its statistics were collected for
SUBSET_SIZE = "subset_size"  # and the entry with how many calibration texts they were collected on
_SEPARATOR = "|"  # between a statistic's key and its field in the file's entry names


def fingerprint(model_dir: Path, prompts: tuple[str, str]) -> str:
    """What the statistics depend on: the model (its folder's name carries its weights' digest), the
    calibration texts, the prompts and the layers left in float."""
    digest = hashlib.sha256(model_dir.name.encode())
    digest.update(CALIBRATION_FILE.read_bytes())
    digest.update(json.dumps([list(prompts), CALIBRATION_QUERIES, FLOAT_LAYERS_PATTERN]).encode())
    return digest.hexdigest()


def quantized(model: Any, model_dir: Path, prompts: tuple[str, str], statistics: Path = STATISTICS_FILE) -> Any:
    """``model`` quantized to int8: with the shipped statistics when they were collected for this model and
    these texts, else with statistics collected on the calibration texts (``calibration_feeds``)."""
    stored = stored_statistics(statistics, fingerprint(model_dir, prompts))
    if stored is not None:
        try:
            return _quantize(model, stored)
        except KeyError as exc:  # a layer they do not cover: another converter named the layers otherwise
            log.warning("the shipped calibration statistics do not fit this model (%s); collecting them", exc)
    return _quantize(model, calibration_feeds(model_dir, prompts))


class StoredStatistics(dict):
    """The stored statistics, by key and field, and how many calibration texts they were collected on."""

    def __init__(self, subset_size: int) -> None:
        super().__init__()
        self.subset_size = subset_size


def stored_statistics(path: Path, expected: str) -> Optional[StoredStatistics]:
    """The statistics in ``path`` by key and field, if they were collected for ``expected``; else None."""
    try:
        with np.load(path) as stored:
            if str(stored[FINGERPRINT]) != expected:
                log.info("the shipped calibration statistics are for another model or other texts")
                return None
            entries = {name: stored[name] for name in stored.files if name not in (FINGERPRINT, SUBSET_SIZE)}
            subset_size = int(stored[SUBSET_SIZE])
    except (OSError, KeyError, ValueError) as exc:
        log.info("no shipped calibration statistics (%s)", exc)
        return None
    statistics = StoredStatistics(subset_size)
    for name, values in entries.items():
        key, _, field = name.rpartition(_SEPARATOR)
        statistics.setdefault(key, {})[field] = values
    return statistics


def _quantize(model: Any, data: list[dict[str, np.ndarray]] | StoredStatistics) -> Any:
    """NNCF's post-training quantization as ``nncf.quantize`` runs it on an OpenVINO model, with its
    statistics collected on ``data`` (calibration feeds) or read from it (stored statistics)."""
    import nncf
    from nncf.openvino.quantization.backend_parameters import is_weight_compression_needed
    from openvino._offline_transformations import compress_quantize_weights_transformation

    subset_size = data.subset_size if isinstance(data, StoredStatistics) else len(data)
    model, algorithm, parameters, graph, points = _prepared(model, subset_size)
    if isinstance(data, StoredStatistics):
        _load_into(points, model, data)
        result = algorithm.apply(model, graph, statistic_points=points)
    else:
        result = algorithm.apply(model, graph, dataset=nncf.Dataset(data))
    if is_weight_compression_needed(parameters):
        compress_quantize_weights_transformation(result)  # int8 weights on disk, as nncf.quantize stores them
    return result


def _prepared(model: Any, subset_size: int) -> tuple[Any, Any, Any, Any, Any]:
    """What quantizing and collecting share: the model with unique layer names, the algorithm and its
    parameters, the model's NNCF graph and the statistic points the algorithm needs."""
    from nncf.openvino.graph.model_utils import remove_friendly_name_duplicates
    from nncf.openvino.graph.nncf_graph_builder import GraphConverter

    model = remove_friendly_name_duplicates(model)
    algorithm, parameters = _algorithm(subset_size)
    graph = GraphConverter.create_nncf_graph(model)
    return model, algorithm, parameters, graph, algorithm.get_statistic_points(model, graph)


def _algorithm(subset_size: int) -> tuple[Any, Any]:
    import nncf
    from nncf.common.logging.logger import set_log_level
    from nncf.quantization.algorithms.post_training.algorithm import PostTrainingQuantization

    set_log_level(logging.WARNING)
    # SmoothQuant (on by default for transformers) cost accuracy on this model and bought no speed.
    parameters = nncf.AdvancedQuantizationParameters(smooth_quant_alphas=nncf.AdvancedSmoothQuantParameters(matmul=-1))
    algorithm = PostTrainingQuantization(
        model_type=nncf.ModelType.TRANSFORMER,
        subset_size=subset_size,
        advanced_parameters=parameters,
        ignored_scope=nncf.IgnoredScope(patterns=[FLOAT_LAYERS_PATTERN]),
    )
    if len(algorithm._pipeline.pipeline_steps) != 1:  # later steps would need statistics of the model in between
        raise RuntimeError("NNCF's post-training quantization is no longer one step; update int8_calibration")
    return algorithm, parameters


def _load_into(points: Any, model: Any, data: StoredStatistics) -> None:
    """Each of the algorithm's statistic points given its stored value (KeyError: one is not stored)."""
    from nncf.common.factory import StatisticsAggregatorFactory
    from nncf.tensor import Tensor

    aggregator = StatisticsAggregatorFactory.create(model, None)
    for _, point, collector in points.get_tensor_collectors():
        kind = collector._stat_container
        statistic = kind.__new__(kind)  # filled from the file instead of from the model's runs
        fields = data[aggregator._get_statistics_key(statistic, point.target_point)]
        statistic.load_data({name: Tensor(values) for name, values in fields.items()})
        collector.set_cache(statistic)


def collected_statistics(model: Any, feeds: list[dict[str, np.ndarray]]) -> dict[str, Any]:
    """The statistics the quantization collects on ``feeds``, as the file's entries."""
    import nncf
    from nncf.common.factory import StatisticsAggregatorFactory

    model, _, _, graph, points = _prepared(model, len(feeds))
    aggregator = StatisticsAggregatorFactory.create(model, nncf.Dataset(feeds))
    aggregator.register_statistic_points(points)
    aggregator.collect_statistics(model, graph)
    entries: dict[str, Any] = {}
    for _, point, collector in aggregator.statistic_points.get_tensor_collectors():
        statistic = collector.get_statistics()
        key = aggregator._get_statistics_key(statistic, point.target_point)
        for field, value in statistic.get_data(is_serialized=True).items():
            entries[f"{key}{_SEPARATOR}{field}"] = np.asarray(value.data)
    return entries


def write_statistics(model: Any, model_dir: Path, prompts: tuple[str, str], path: Path = STATISTICS_FILE) -> Path:
    """Collect the statistics on ``model`` (the bundled model converted) and write them with their fingerprint."""
    feeds = calibration_feeds(model_dir, prompts)
    entries = collected_statistics(model, feeds)
    arrays: dict[str, Any] = {FINGERPRINT: np.array(fingerprint(model_dir, prompts)), SUBSET_SIZE: np.array(len(feeds))}
    np.savez_compressed(path, **arrays, **entries)
    log.info("wrote %d calibration statistics to %s", len(entries), path)
    return path


def calibration_feeds(model_dir: Path, prompts: tuple[str, str]) -> list[dict[str, np.ndarray]]:
    """One model input per calibration text: every passage, and the opening of some as questions."""
    from transformers import AutoTokenizer

    query_prompt, passage_prompt = prompts
    passages = [
        json.loads(line)["text"] for line in CALIBRATION_FILE.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    texts = [passage_prompt + text for text in passages]
    texts += [query_prompt + _opening(text) for text in passages[:CALIBRATION_QUERIES]]
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    feeds = []
    for text in texts:
        ids = np.asarray([tokenizer(text, truncation=True, max_length=512)["input_ids"]], dtype=np.int64)
        feeds.append(model_inputs(ids, np.ones_like(ids)))
    return feeds


def model_inputs(input_ids: np.ndarray, attention_mask: np.ndarray) -> dict[str, np.ndarray]:
    """What the converted model reads (single-segment texts: token type 0 throughout)."""
    return dict(zip(INPUT_NAMES, (input_ids, attention_mask, np.zeros_like(input_ids))))


def _opening(text: str) -> str:
    """The first sentence or line of a passage, as short as a typed question."""
    for stop in ("\n", "。", ". ", "？", "? "):
        text = text.split(stop)[0]
    return text[:60]
