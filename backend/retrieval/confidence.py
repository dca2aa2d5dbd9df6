"""Answer confidence: a logistic model over features of the ranked sources, calibrated on the bench sets.

``calibration.json`` beside this file holds the fitted coefficients (written by ``main.py eval
--calibrate``); the number shown to the user is the predicted chance, in percent, that one of the top
sources really contains the answer.
"""

from __future__ import annotations

import json
import logging
import math
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from backend.types import Source

log = logging.getLogger(__name__)

CALIBRATION_FILE = Path(__file__).with_name("calibration.json")
FEATURES = (
    "top_relevance",
    "top_keyword",
    "top_semantic",
    "margin",
    "top_entity",
    "agreement",
    "bridged",
    "bridged_relevance",
    "bridged_english",
    "bridged_english_relevance",
)
# Used only until a calibration is fitted: a cautious guess with the right direction.
_FALLBACK = {
    "bias": -4.0,
    "weights": {
        "top_relevance": 4.0,
        "top_keyword": 2.0,
        "top_semantic": 2.0,
        "margin": 1.0,
        "top_entity": 0.5,
        "agreement": 0.5,
        "bridged": 0.0,
        "bridged_relevance": 0.0,
        "bridged_english": 0.0,
        "bridged_english_relevance": 0.0,
    },
}


def features(sources: Sequence[Source], top: int = 5) -> dict[str, float]:
    """Numbers in 0..1 describing how convincing the top sources are."""
    head = list(sources[:top])
    if not head:
        return dict.fromkeys(FEATURES, 0.0)
    # Sources scored across languages without a translation run on another scale (no fuzzy match, words
    # through the term list): the best-signal features read only the sources scored like the top one, so in
    # a library of both languages the other language's passages below the top do not lend it their scores.
    scores = [s.scores for s in head if s.bridged == head[0].bridged]
    relevances = [s.relevance for s in head]
    english_top = head[0].bridged and head[0].lang == "en"
    both = sum(1 for s in head if s.dense_rank is not None and s.keyword_rank is not None)
    return {
        "top_relevance": relevances[0] / 100.0,
        "top_keyword": max(sc.get("keyword", 0.0) for sc in scores) / 100.0,
        "top_semantic": max(sc.get("semantic", 0.0) for sc in scores) / 100.0,
        "margin": (relevances[0] - relevances[1]) / 100.0 if len(relevances) > 1 else relevances[0] / 100.0,
        "top_entity": max(sc.get("entity", 0.0) for sc in scores) / 100.0,
        "agreement": both / len(head),  # found by both the dense and the keyword search
        # The fit gives a top source scored across languages its own offset and slope instead of reading
        # it as weak; a share of the top five would read a mixed library's same-language top as bridged.
        "bridged": 1.0 if head[0].bridged else 0.0,
        "bridged_relevance": relevances[0] / 100.0 if head[0].bridged else 0.0,
        # and one more per direction: the term list renders Chinese into English otherwise than back, so a
        # Chinese question's English top source and an English question's Chinese one run on scales of their own
        "bridged_english": 1.0 if english_top else 0.0,
        "bridged_english_relevance": relevances[0] / 100.0 if english_top else 0.0,
    }


@lru_cache(maxsize=1)
def load_calibration() -> dict:
    try:
        data = json.loads(CALIBRATION_FILE.read_text(encoding="utf-8"))
        if set(data.get("weights", {})) == set(FEATURES):
            return data
        log.warning("calibration file %s does not match the confidence features; using defaults", CALIBRATION_FILE)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        log.warning("cannot read %s (%s); using default confidence weights", CALIBRATION_FILE, exc)
    return _FALLBACK


def confidence(sources: Sequence[Source], calibration: dict | None = None) -> float:
    """0-100: the calibrated chance that the answer is among the top sources."""
    if not sources:
        return 0.0
    return confidence_from_features(features(sources), calibration)


def confidence_from_features(values: dict[str, float], calibration: dict | None = None) -> float:
    model = calibration or load_calibration()
    z = model["bias"] + sum(model["weights"][name] * values[name] for name in FEATURES)
    return 100.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
