"""Batch runs: what a long job is, how far it got, and with which configuration.

A running run names the process that runs it (host and pid) and carries its heartbeat,
which that process renews every `HEARTBEAT_S`. A process killed with kill -9, or one that
lost its database, cannot record that it stopped: the next listing or start sees that its
process is gone (on this host, at once) or that its heartbeat is older than `LEASE_S` (on
another host, or when the pid now belongs to another process) and shows the run as
interrupted. A heartbeat alone would also catch the first case, but a minute late; the
pid alone would miss runs of other hosts sharing a PostgreSQL database.

A process that stops a run while the database cannot take that write (its server gone)
notes why in a small file per run under the database's local folder (`Database.local_dir`),
named by the database and the run; a listing on this host then shows that cause for the
run its process left running, instead of only that the process is gone. The run's next
stored state makes the note void.
"""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path

from sqlalchemy import update
from sqlmodel import Field, SQLModel, select

from store.db import Database, StoreError
from store.holders import Holder

log = logging.getLogger("argtui.runs")

HEARTBEAT_S = 5.0  # how often a running process renews its run's heartbeat
LEASE_S = 60.0  # a heartbeat older than this: the process is gone (a renewal may wait out a 15 s lock)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _as_utc(moment: datetime) -> datetime:
    # SQLite keeps no zone; everything is written in UTC.
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, size in (("day", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if unit == 'day' and count > 1 else ''}"
    return f"{seconds} s"


class RunState(str, Enum):
    PENDING = "pending"
    RUNNING = "running"
    PAUSED = "paused"
    DONE = "done"
    FAILED = "failed"
    INTERRUPTED = "interrupted"  # never stored: a RUNNING run whose process is gone (`BatchRun.shown_state`)


class BatchRun(SQLModel, table=True):
    __tablename__ = "batch_run"

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(index=True, description="e.g. eval-pairwise, eval-grice")
    task: str = Field(default="", description="the task's registry name, when a task runs")
    judge: str = Field(default="", description="the judge's short name, when a judge runs")
    name: str = Field(index=True, description="stable name: same config resumes the same run")
    state: RunState = RunState.PENDING
    total: int = 0
    done: int = 0
    invalid: int = 0
    config_json: str = "{}"
    error: str | None = None
    created_at: datetime = Field(default_factory=_now)
    updated_at: datetime = Field(default_factory=_now)
    # The same server default as the migration gives older databases: rows written before it stay valid.
    host: str = Field(default="", sa_column_kwargs={"server_default": ""},
                      description="the host of the process that runs (or last ran) it")
    pid: int | None = Field(default=None, description="that process's id")
    heartbeat_at: datetime | None = Field(default=None, description="when that process last said it runs it")

    @property
    def config(self) -> dict:
        return json.loads(self.config_json)

    def interruption(self, now: datetime | None = None) -> str | None:
        """Why a run stored as running has no process any more, or None while one may still run it."""
        if self.state != RunState.RUNNING:
            return None
        age = ((now or _now()) - _as_utc(self.heartbeat_at or self.updated_at)).total_seconds()
        holder = Holder(self.host, self.pid) if self.pid is not None else None
        if self.error:  # a running run's cause is the one its process noted as it stopped it (`RunRepository`)
            why = f"its process ({holder or 'unknown'}) stopped it: {self.error}"
        elif holder is not None and holder.gone:
            why = f"its process ({holder}) is gone"
        elif age > LEASE_S:
            why = f"its process ({holder or 'unknown'}) stopped renewing its heartbeat"
        else:
            return None
        return f"interrupted: {why}; last heartbeat {_age(age)} ago; run the same command again to resume"

    @property
    def shown_state(self) -> RunState:
        """The state to show: INTERRUPTED for a running run whose process is gone."""
        return RunState.INTERRUPTED if self.interruption() else self.state

    @property
    def cause(self) -> str | None:
        """Why it stopped: the stored cause, or why it counts as interrupted."""
        return self.interruption() or self.error


class RunRepository:
    def __init__(self, db: Database):
        self._db = db
        database = hashlib.sha256(db.location.encode()).hexdigest()[:12]
        self._notes: Path | None = db.local_dir / "stopped-runs" / database if db.local_dir else None

    def open(
        self, kind: str, name: str, config: dict, total: int, *, task: str = "", judge: str = ""
    ) -> BatchRun:
        """The run with this kind and name, created if new; a finished run is reopened as is."""
        with self._db.session() as session:
            run = session.exec(
                select(BatchRun).where(BatchRun.kind == kind, BatchRun.name == name)
            ).first()
            if run is None:
                run = BatchRun(
                    kind=kind, name=name, task=task, judge=judge,
                    config_json=json.dumps(config, sort_keys=True), total=total,
                )
                session.add(run)
            elif run.state != RunState.DONE:
                run.total = total
            run.updated_at = _now()
            session.flush()
            session.refresh(run)
            return run

    def update(
        self,
        run_id: int,
        *,
        state: RunState | None = None,
        done: int | None = None,
        invalid: int | None = None,
        error: str | None = None,
    ) -> BatchRun:
        try:
            run = self._update(run_id, state, done, invalid, error)
        except StoreError as exc:
            if state not in (None, RunState.RUNNING):  # stopping it: the next listing says why
                self._note(run_id, error or str(exc))
            raise
        if state is not None and self._notes is not None:
            (self._notes / f"{run_id}.json").unlink(missing_ok=True)  # its state is stored: no note stands
        return run

    def _update(
        self, run_id: int, state: RunState | None, done: int | None, invalid: int | None, error: str | None
    ) -> BatchRun:
        with self._db.session() as session:
            run = session.get(BatchRun, run_id)
            if run is None:
                raise KeyError(f"no batch run with id {run_id}")
            if state is not None:
                run.state = state
            if state == RunState.RUNNING:  # this process runs it now
                holder = Holder.this_process()
                run.host, run.pid = holder.host, holder.pid
            if done is not None:
                run.done = done
            if invalid is not None:
                run.invalid = invalid
            if error is not None or state in (RunState.RUNNING, RunState.DONE):  # a fresh start has no cause
                run.error = error
            run.updated_at = run.heartbeat_at = _now()
            session.add(run)
            session.flush()
            session.refresh(run)
            return run

    def beat(self, run_id: int) -> bool:
        """Renew the heartbeat of a run this process runs; False if it is no longer running here."""
        holder = Holder.this_process()
        table = BatchRun.__table__
        with self._db.connection() as conn:
            renewed = conn.execute(
                update(table)
                .where(table.c.id == run_id, table.c.state == RunState.RUNNING,
                       table.c.host == holder.host, table.c.pid == holder.pid)
                .values(heartbeat_at=_now())
            ).rowcount
        return bool(renewed)

    def _note(self, run_id: int, cause: str) -> None:
        """Note why this process stopped the run, where the database could not store it."""
        if self._notes is None:
            return
        holder = Holder.this_process()
        try:
            self._notes.mkdir(parents=True, exist_ok=True)
            (self._notes / f"{run_id}.json").write_text(
                json.dumps({"host": holder.host, "pid": holder.pid, "cause": cause}), encoding="utf-8"
            )
        except OSError as exc:  # a full disk: the listing says the process is gone
            log.warning("run %s: why it stopped could not be noted in %s: %s", run_id, self._notes, exc)

    def _with_noted_cause(self, run: BatchRun) -> BatchRun:
        """The run, with the cause its process noted when it left the run running in the database
        (the row is detached: the cause is shown, never written back)."""
        if run.state != RunState.RUNNING or self._notes is None:
            return run
        try:
            note = json.loads((self._notes / f"{run.id}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):  # no note, or one cut short
            return run
        if isinstance(note, dict) and (note.get("host"), note.get("pid")) == (run.host, run.pid):
            run.error = str(note.get("cause") or "") or None
        return run

    def list(self, kind: str | None = None) -> list[BatchRun]:
        with self._db.read() as session:
            query = select(BatchRun).order_by(BatchRun.updated_at.desc())
            if kind:
                query = query.where(BatchRun.kind == kind)
            runs = list(session.exec(query))
        return [self._with_noted_cause(run) for run in runs]

    def get(self, run_id: int) -> BatchRun | None:
        with self._db.read() as session:
            run = session.get(BatchRun, run_id)
        return self._with_noted_cause(run) if run is not None else None
