"""The cached Analyzer stage-1 reasons of the Grice judges, the name a Grice judge is
stored under, and the carrying of schema-1 Grice judgments into the `judgment` table.

Judgments themselves live in the `judgment` table (task "grice", one row per
turn); the schema-1 table `grice_judgment` (one row per metric, scope
`run:<id>`) is only read by `copy_v1`.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

from sqlalchemy import UniqueConstraint
from sqlalchemy.engine import Connection
from sqlmodel import Field, Session, SQLModel, select

from store.db import Database
from store.identity import judge_name, options_digest
from store.judgments import upsert
from store.migrations import has_tables, judgments_from_v1, v1_time, v1_usage

TASK = "grice"


def _now() -> datetime:
    return datetime.now(timezone.utc)


class GriceReason(SQLModel, table=True):
    __tablename__ = "grice_reason"
    __table_args__ = (UniqueConstraint("metric", "k", "judge_model", "asked_digest"),)

    id: int | None = Field(default=None, primary_key=True)
    metric: str
    k: int
    judge_model: str
    asked_digest: str
    reasons_yes: str
    reasons_no: str
    raw: str = ""
    created_at: datetime = Field(default_factory=_now)


class GriceRepository:
    """Analyzer stage-1 reasons (the engine's ReasonStore protocol)."""

    def __init__(self, db: Database):
        self._db = db

    @staticmethod
    def _reason_row(session: Session, metric: str, k: int, judge_model: str, asked_digest: str) -> GriceReason | None:
        return session.exec(
            select(GriceReason).where(
                GriceReason.metric == metric, GriceReason.k == k,
                GriceReason.judge_model == judge_model, GriceReason.asked_digest == asked_digest,
            )
        ).first()

    def get_reasons(self, metric: str, k: int, judge_model: str, asked_digest: str) -> tuple[str, str] | None:
        with self._db.read() as session:
            row = self._reason_row(session, metric, k, judge_model, asked_digest)
            return (row.reasons_yes, row.reasons_no) if row else None

    def put_reasons(
        self, metric: str, k: int, judge_model: str, asked_digest: str, reasons_yes: str, reasons_no: str, raw: str
    ) -> None:
        with self._db.session() as session:
            row = self._reason_row(session, metric, k, judge_model, asked_digest) or GriceReason(
                metric=metric, k=k, judge_model=judge_model, asked_digest=asked_digest,
                reasons_yes=reasons_yes, reasons_no=reasons_no,
            )
            row.reasons_yes, row.reasons_no, row.raw = reasons_yes, reasons_no, raw
            session.add(row)

    def reasons_count(self) -> int:
        with self._db.read() as session:
            return len(session.exec(select(GriceReason.id)).all())


_UNSAFE = re.compile(r"[\s#]+")  # would split a stored judge name back wrongly


def grice_variant(strategy: str, pool_name: str, pool_digest: str) -> str:
    """A Grice judge's variant: its strategy and the example pool it learns from, so a
    different pool is a different judge (e.g. "BEST pool=builtin:a1d81efc")."""
    return f"{strategy} pool={_UNSAFE.sub('_', pool_name)}:{pool_digest[:8]}"


_V1_COLUMNS = ("scope", "debate_id", "turn_index", "metric", "method", "answer", "p_yes", "rationale", "raw",
               "source", "error", "calls", "seconds", "prompt_tokens", "completion_tokens", "created_at")


@judgments_from_v1
def copy_v1(conn: Connection) -> int:
    """Carry schema-1 `grice_judgment` rows of batch runs into `judgment`, one verdict per turn,
    judged by the name `argtui eval grice` gives that run's configuration; returns the turns
    copied. The old table stays as it was; copying again replaces the same rows."""
    if not has_tables(conn, "grice_judgment"):
        return 0
    configs = {
        run_id: json.loads(config)
        for run_id, config in conn.exec_driver_sql("SELECT id, config_json FROM batch_run WHERE kind = 'eval-grice'")
    }
    turns: dict[tuple[int, str, int], list[dict]] = {}
    rows = conn.exec_driver_sql(f"SELECT {', '.join(_V1_COLUMNS)} FROM grice_judgment ORDER BY id")
    for values in rows:
        row = dict(zip(_V1_COLUMNS, values))
        scope = row.pop("scope")
        run_id = int(scope.removeprefix("run:")) if re.fullmatch(r"run:\d+", scope) else None
        if run_id in configs:
            turns.setdefault((run_id, row["debate_id"], row["turn_index"]), []).append(row)
    judgments = []
    for (run_id, debate_id, turn_index), metrics in turns.items():
        config = configs[run_id]
        variant = grice_variant(config["strategy"], config["pool"], config["pool_digest"])
        # The task's judge options, left out at their defaults as the engine does (one vote, rationale on).
        options = {"votes": config["votes"], "no_rationale": not config["rationale"]}
        options = {name: value for name, value in options.items() if value != {"votes": 1, "no_rationale": False}[name]}
        verdict = _v1_verdict(config["strategy"], metrics)
        judgments.append(dict(
            task=TASK, judge=judge_name(config["judge"], config["model"], variant, options_digest(options)),
            profile=config["judge"], model=config["model"], variant=variant, options=options_digest(options),
            item=f"{debate_id}/{turn_index}", reference=None, valid=verdict["invalid_reason"] is None,
            verdict=verdict, run_id=run_id, created_at=max(v1_time(m["created_at"]) for m in metrics),
        ))
    upsert(conn, judgments)
    return len(judgments)


def _v1_verdict(strategy: str, rows: list[dict]) -> dict:
    """The verdict JSON the Grice task gives a whole turn (engines/tasks/grice.py, `turn_verdict`)."""
    metrics = {
        row["metric"]: {
            "metric": row["metric"], "method": row["method"], "answer": row["answer"], "p_yes": row["p_yes"],
            "rationale": row["rationale"], "raw": row["raw"], "source": row["source"], "error": row["error"],
            "seconds": row["seconds"], "usage": v1_usage(row["prompt_tokens"], row["completion_tokens"], row["calls"]),
        }
        for row in rows
    }
    invalid = [m for m in metrics.values() if m["answer"] is None]
    return {
        "label": None, "value": None,
        "data": {"strategy": strategy, "metrics": metrics},
        "distribution": {},
        "raw": "\n".join(f"{m['metric']}: {m['raw']}" for m in invalid),
        "invalid_reason": "; ".join(f"{m['metric']}: {m['error']}" for m in invalid) or None,
        "detail": " · ".join(
            f"{m['metric']} {m['answer']} {m['p_yes']:.2f}" if m["answer"] else f"{m['metric']} invalid"
            for m in metrics.values()
        ),
        "usage": v1_usage(
            sum(row["prompt_tokens"] for row in rows), sum(row["completion_tokens"] for row in rows),
            sum(row["calls"] for row in rows),
        ),
        "seconds": max(row["seconds"] for row in rows),
    }
