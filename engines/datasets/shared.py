"""The shared data folder ($ARGTUI_SHARED_DATA): the evaluation datasets, each in its release
folder. A dataset with no [datasets] entry in the config file is found there."""

from __future__ import annotations

import os
from pathlib import Path

SHARED_DATA_ENV = "ARGTUI_SHARED_DATA"
# A [datasets] key and the folder its release unpacks to.
RELEASE_FOLDERS = {
    "touche-rad": "touche25-rad",
    "ukp-essays": "ukp-argument-annotated-essays-v2",
    "ukpconvarg1": "ukpconvarg1",
}


def shared_release(dataset: str) -> Path | None:
    """The dataset's release folder under $ARGTUI_SHARED_DATA; None when the variable is unset or
    the folder is not there."""
    shared = os.environ.get(SHARED_DATA_ENV)
    if not shared or dataset not in RELEASE_FOLDERS:
        return None
    folder = Path(shared).expanduser() / RELEASE_FOLDERS[dataset]
    return folder if folder.is_dir() else None
