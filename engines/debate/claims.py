"""Claims a student can debate: the bundled topics, and the Touché CMV claims when given
(the config's `touche-rad` dataset, else the RAD folder under $ARGTUI_SHARED_DATA)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from engines.datasets.ibm import load_ibm
from engines.datasets.rad import read_rad_debates
from engines.datasets.webis import load_webis

CMV_FILE = "touche25-rad-cmv-debates.jsonl.gz"
SHARED_DATA_ENV = "ARGTUI_SHARED_DATA"  # the folder holding the evaluation datasets, each in its release folder
RAD_FOLDER = "touche25-rad"


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


def cmv_location(configured: Path | None) -> Path | None:
    """Where the CMV claims are: the configured RAD path, else the shared data folder's RAD release
    when it holds the debates file; None: nowhere."""
    if configured is not None:
        return configured
    shared = os.environ.get(SHARED_DATA_ENV)
    folder = Path(shared).expanduser() / RAD_FOLDER if shared else None
    return folder if folder is not None and (folder / CMV_FILE).is_file() else None
