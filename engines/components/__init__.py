"""Argument component classification (MajorClaim / Claim / Premise) by multi-agent debate (MAD-ACC).

`segment(text)` splits free text into candidate components with exact
character spans; `label_components(client, text)` labels them (methods
`vanilla`, `cot`, `smart`, `mad`); `classify_component` labels one component of a
document whose components are known (the UKP essays evaluation).
"""

from engines.components.classifier import (
    LIVE_SETTINGS,
    ClassifierSettings,
    assign_debaters,
    classify_component,
    component_rng,
    label_components,
    top_two,
)
from engines.components.formatting import mark_document
from engines.components.segmentation import segment
from engines.components.types import LABELS, METHODS, ComponentResult, Span, Turn

__all__ = [
    "LABELS",
    "LIVE_SETTINGS",
    "METHODS",
    "ClassifierSettings",
    "ComponentResult",
    "Span",
    "Turn",
    "assign_debaters",
    "classify_component",
    "component_rng",
    "label_components",
    "mark_document",
    "segment",
    "top_two",
]
