"""The application log: `logs/argtui.log` in the data directory, never the terminal."""

from __future__ import annotations

import logging
from pathlib import Path

LOG_NAME = "argtui.log"


class _LogFile(logging.FileHandler):
    """A line that cannot be written (the disk is full) is dropped: logging would print a traceback."""

    def handleError(self, record: logging.LogRecord) -> None:
        pass


def log_to_file(data_dir: Path) -> Path | None:
    """Send the `argtui` loggers to the log file (once per process); returns its path, or
    None when the data directory cannot hold one (opening the database then says why)."""
    path = data_dir / "logs" / LOG_NAME
    logger = logging.getLogger("argtui")
    if not any(isinstance(h, logging.FileHandler) and Path(h.baseFilename) == path for h in logger.handlers):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handler = _LogFile(path, encoding="utf-8")
        except OSError:
            return None
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    return path
