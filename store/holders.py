"""Which process holds a run or an import, so that another one can tell a live holder from a dead one.

A holder is recorded as its host name and process id. Whether it is gone is certain only on the
same host (the process table says so); a holder on another host, or a pid that the system has
given to a new process, is judged by its heartbeat instead (see `store.runs`).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from functools import cache
from pathlib import Path


@cache
def host_name() -> str:
    return socket.gethostname()


@dataclass(frozen=True)
class Holder:
    host: str
    pid: int

    @classmethod
    def this_process(cls) -> "Holder":
        return cls(host_name(), os.getpid())

    @property
    def gone(self) -> bool:
        """True when this host's process table has no live process of this pid (a zombie counts as gone)."""
        if self.host != host_name():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # another user's process: alive
            return False
        try:
            # /proc/PID/stat: "pid (name) STATE …"; the name may hold spaces and parentheses.
            state = Path(f"/proc/{self.pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            return False
        return state == "Z"

    def __str__(self) -> str:
        return f"pid {self.pid} on {self.host}"
