"""Claims a student can debate: the bundled topics (each with how many arguments the argument
base holds on either side), and the Touché CMV claims when the `touche-rad` dataset is found
(`Runtime.dataset_path`: the config, else $ARGTUI_SHARED_DATA)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engines.datasets.rad import read_rad_debates
from engines.retrieval.corpus import IBM_SOURCE, WEBIS_SOURCE
from engines.retrieval.stance import LabelledTopic, labelled_topics

CMV_FILE = "touche25-rad-cmv-debates.jsonl.gz"
CLAIM_SOURCES = {IBM_SOURCE: "ibm", WEBIS_SOURCE: "webis"}  # the corpus's source -> how a claim names it


@dataclass(frozen=True)
class Claim:
    text: str
    source: str  # ibm | webis | touche-cmv
    topic: LabelledTopic | None = None  # a bundled topic: its arguments carry their stance on it


def bundled_claims() -> list[Claim]:
    """The IBM topics alphabetically, then the Webis topics as the corpus lists them."""
    topics = labelled_topics()
    ibm = sorted((topic for topic in topics if topic.source == IBM_SOURCE), key=lambda topic: topic.text)
    webis = [topic for topic in topics if topic.source == WEBIS_SOURCE]
    return [Claim(topic.text, CLAIM_SOURCES[topic.source], topic) for topic in (*ibm, *webis)]


def cmv_claims(path: Path) -> list[Claim]:
    """The ChangeMyView claims of the Touché RAD debates (a file, or the folder holding it)."""
    path = path / CMV_FILE if path.is_dir() else path
    return [Claim(debate.claim, "touche-cmv") for debate in read_rad_debates(path)]
