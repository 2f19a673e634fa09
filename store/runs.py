"""Batch runs: what a long job is, how far it got, and with which configuration."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from enum import Enum

from sqlmodel import Field, SQLModel, select

from store.db import Database


def _now() -> datetime:
    return datetime.now(timezone.utc)


class RunState(str, Enum):
    PENDING = "pending"
    RUNNING = "running"
    PAUSED = "paused"
    DONE = "done"
    FAILED = "failed"


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

    @property
    def config(self) -> dict:
        return json.loads(self.config_json)


class RunRepository:
    def __init__(self, db: Database):
        self._db = db

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
        with self._db.session() as session:
            run = session.get(BatchRun, run_id)
            if run is None:
                raise KeyError(f"no batch run with id {run_id}")
            if state is not None:
                run.state = state
            if done is not None:
                run.done = done
            if invalid is not None:
                run.invalid = invalid
            if error is not None or state in (RunState.RUNNING, RunState.DONE):  # a fresh start has no cause
                run.error = error
            run.updated_at = _now()
            session.add(run)
            session.flush()
            session.refresh(run)
            return run

    def list(self, kind: str | None = None) -> list[BatchRun]:
        with self._db.read() as session:
            query = select(BatchRun).order_by(BatchRun.updated_at.desc())
            if kind:
                query = query.where(BatchRun.kind == kind)
            return list(session.exec(query))

    def get(self, run_id: int) -> BatchRun | None:
        with self._db.read() as session:
            return session.get(BatchRun, run_id)
