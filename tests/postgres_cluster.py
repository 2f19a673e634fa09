"""A PostgreSQL server of a test's own, which the test may kill and start again.

The shared server (`ARGTUI_TEST_POSTGRES_URL`, the `db_url` fixture) serves every test and
must stay up; a test about a database that dies mid-write needs one that is its alone. This
one is a throwaway cluster (initdb, then pg_ctl) in a folder of its own under the system's
temporary folder, on a free loopback port, run as the `postgres` user when the tests run as
root (PostgreSQL refuses to run as root, and that user cannot enter root's pytest folders),
as `.ci/run` starts the shared one.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from engines.llm.servers import free_loopback_port

SERVICE_USER = "postgres"


def postgres_binaries() -> Path | None:
    """The folder of initdb and pg_ctl (Debian's layout, else PATH), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda path: int(Path(path).parts[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb and shutil.which("pg_ctl") else None


def require_postgres_binaries() -> Path:
    """The server binaries' folder; a test without them fails on CI (which installs them) and is
    skipped elsewhere, saying how to install them."""
    found = postgres_binaries()
    if found is None:
        reason = "no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return found


class PostgresCluster:
    """`start()`, `kill()` (an immediate shutdown: no checkpoint, every connection cut, as a
    crash), `start()` again; `url` reaches it while it runs."""

    def __init__(self):
        binaries = postgres_binaries()
        if binaries is None:
            raise FileNotFoundError("no PostgreSQL server binaries (initdb, pg_ctl)")
        folder = Path(tempfile.mkdtemp(prefix="argtui-test-pg."))
        self.bin, self.folder, self.port = binaries, folder, free_loopback_port()
        self.url = f"postgresql://{SERVICE_USER}@127.0.0.1:{self.port}/postgres"
        if os.geteuid() == 0:
            if subprocess.run(["id", SERVICE_USER], capture_output=True).returncode != 0:
                subprocess.run(["useradd", "--system", "--no-create-home", SERVICE_USER], check=True)
            shutil.chown(folder, SERVICE_USER)
        self._run(str(self.bin / "initdb"), "-D", str(folder / "data"), "--auth=trust", "-U", SERVICE_USER,
                  "-E", "UTF8")

    def _run(self, *command: str) -> None:
        if os.geteuid() == 0:
            command = ("runuser", "-u", SERVICE_USER, "--", *command)
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"), "-l", str(self.folder / "server.log"),
                  "-o", f"-k {self.folder} -h 127.0.0.1 -p {self.port}", "-w", "start")

    def kill(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "immediate", "stop")

    @property
    def running(self) -> bool:
        return (self.folder / "data" / "postmaster.pid").exists()

    def remove(self) -> None:
        """Stop it if it runs, and delete its files (the end of the tests)."""
        if self.running:
            self.kill()
        shutil.rmtree(self.folder, ignore_errors=True)
