"""The bundled argument corpus: IBM-ArgQ-Rank-30kArgs and the Webis-ArgQuality-20 arguments.

Both ship with the package (see engines/datasets/data/ATTRIBUTION.md); the
index built from them carries the same licenses. Ids are stable across builds:
`ibm-<row>` and `webis-<topic>/<discussion>/<argument>`.
"""

from __future__ import annotations

from typing import Iterator

from engines.datasets.ibm import load_ibm
from engines.datasets.webis import load_webis
from engines.retrieval.types import Argument, Relation

IBM_SOURCE = "ibm-argq-30k"
WEBIS_SOURCE = "webis-argquality-20"
BUNDLED_SOURCES = (IBM_SOURCE, WEBIS_SOURCE)


# source -> (dataset, license), for status displays; the full attribution is in ATTRIBUTION.md.
BUNDLED_DATASETS = {
    IBM_SOURCE: ("IBM-ArgQ-Rank-30kArgs", "CC BY-SA 3.0"),
    WEBIS_SOURCE: ("Webis-ArgQuality-20", "CC BY 4.0"),
}


def _with_relation(relation: Relation | None, claim: str) -> dict:
    if relation is None:
        return {}
    return {relation: claim, "relation": relation}


def ibm_arguments() -> Iterator[Argument]:
    """Stance +1 supports the topic, -1 attacks it, 0 neither."""
    for row in load_ibm():
        relation: Relation | None = {1: "supports", -1: "attacks"}.get(row.stance)  # type: ignore[assignment]
        yield Argument(
            id=f"ibm-{row.row}",
            text=row.text,
            topic=row.topic,
            source=IBM_SOURCE,
            **_with_relation(relation, row.topic),
        )


def webis_arguments() -> Iterator[Argument]:
    """Only items the annotators judged to be arguments; Stance True supports the topic's question."""
    corpus = load_webis(dimensions=())
    for argument in corpus.arguments.values():
        if not argument.is_argument:
            continue
        topic = corpus.topics[argument.topic_id]
        yield Argument(
            id=f"webis-{argument.uid}",
            text=argument.text,
            topic=topic.long_query,
            tags=(topic.category,),
            source=WEBIS_SOURCE,
            **_with_relation("supports" if argument.stance else "attacks", topic.long_query),
        )


def bundled_arguments() -> list[Argument]:
    return [*ibm_arguments(), *webis_arguments()]
