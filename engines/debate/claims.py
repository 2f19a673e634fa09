"""Claims a student can debate: the bundled topics, and the Touché CMV claims when the
`touche-rad` dataset is found (`Runtime.dataset_path`: the config, else $ARGTUI_SHARED_DATA)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engines.datasets.ibm import load_ibm
from engines.datasets.rad import read_rad_debates
from engines.datasets.webis import load_webis

CMV_FILE = "touche25-rad-cmv-debates.jsonl.gz"


@dataclass(frozen=True)
class Claim:
    text: str
    source: str  # ibm | webis | touche-cmv


def bundled_claims() -> list[Claim]:
    topics = sorted({argument.topic for argument in load_ibm()})
    claims = [Claim(topic, "ibm") for topic in topics]
    claims += [Claim(topic.long_query, "webis") for topic in load_webis(dimensions=()).topics.values()]
    return claims


def cmv_claims(path: Path) -> list[Claim]:
    """The ChangeMyView claims of the Touché RAD debates (a file, or the folder holding it)."""
    path = path / CMV_FILE if path.is_dir() else path
    return [Claim(debate.claim, "touche-cmv") for debate in read_rad_debates(path)]
