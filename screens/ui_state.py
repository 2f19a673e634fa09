"""What the screens remember between launches (the Arena's last task): a small JSON file in
the data directory, next to the database of the same config.

It is the app's own memory, not user input: a file that cannot be read (or holds another
shape) counts as empty, is named in the log, and is replaced whole at the next write.
"""

from __future__ import annotations

import logging
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from engines.output import write_text_file

STATE_FILE = "ui-state.json"
log = logging.getLogger("argtui.ui_state")


class UiState(BaseModel):
    """Every remembered choice; a field of an older or newer app that this one lacks is dropped."""

    model_config = ConfigDict(extra="ignore")

    arena_task: str | None = None


def state_path(data_dir: Path) -> Path:
    return data_dir / STATE_FILE


def load_ui_state(data_dir: Path) -> UiState:
    path = state_path(data_dir)
    try:
        return UiState.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return UiState()
    except (OSError, ValidationError) as exc:
        log.warning("%s: unreadable, the screens start from their defaults (%s)", path, str(exc).splitlines()[0])
        return UiState()


def remember(data_dir: Path, **choices: str | None) -> UiState:
    """The stored state with `choices` changed, written atomically (an `OutputError` says why not)."""
    state = UiState.model_validate({**load_ui_state(data_dir).model_dump(), **choices})
    write_text_file(state_path(data_dir), state.model_dump_json(indent=2), make_parents=True)
    return state
