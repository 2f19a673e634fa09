"""Judge ratings of schema 1: carried into the judgment table, and the options the critique
judges ran with before schema 4."""

from __future__ import annotations

import json

from sqlalchemy.engine import Connection

from store.critiques.tables import DIMENSIONS, JUDGE, RaterView
from store.identity import judge_name
from store.judgments import upsert
from store.migrations import has_tables, judge_options_before_v4, judgments_from_v1, v1_time, v1_usage

JUDGMENT_TASK = "critiques"  # the critique task's name in the judgment table
_V1_JUDGE_DETAILS = ("profile", "model", "prompt")


def carried_judge(rater: RaterView) -> bool:
    """A judge rater written by `argtui eval critiques` before judge verdicts had their own table:
    `copy_v1` carries its ratings into `judgment`, where they are read from now on."""
    return rater.kind == JUDGE and all(rater.details.get(key) for key in _V1_JUDGE_DETAILS)


@judgments_from_v1
def copy_v1(conn: Connection) -> int:
    """Copy the current ratings of carried judge raters into `judgment`; returns how many.

    The judge is named as the judging core names it (`<model>@<profile> <prompt>`, read
    from the rater's details) and the item is the critique's uid. The verdict JSON has the
    engine's Verdict shape: `value` overall, `data` the seven dimensions and the reasoning
    (null when invalid), `raw`, `invalid_reason` the old error; `detail` is the reasoning.
    The old rows stay in place; copying again replaces the same judgments.
    """
    if not has_tables(conn, "critique_rating", "critique_rater", "critique"):
        return 0
    judges = {}
    for rater_id, kind, details_json in conn.exec_driver_sql("SELECT id, kind, details_json FROM critique_rater"):
        details = json.loads(details_json or "{}")
        if carried_judge(RaterView("", kind, details, 0)):
            judges[rater_id] = details
    if not judges:
        return 0
    rows = conn.exec_driver_sql(
        f"SELECT r.rater_id, c.uid, r.valid, r.raw, r.error, r.note, r.created_at, "
        f"{', '.join('r.' + name for name in DIMENSIONS)} "
        "FROM critique_rating r JOIN critique c ON c.id = r.critique_id "
        "WHERE r.id NOT IN (SELECT revises_id FROM critique_rating WHERE revises_id IS NOT NULL) "
        f"AND r.rater_id IN ({', '.join(str(rater_id) for rater_id in judges)}) ORDER BY r.id"
    ).mappings()
    judgments = []
    for row in rows:
        details = judges[row["rater_id"]]
        values = {name: row[name] for name in DIMENSIONS}
        valid = bool(row["valid"])
        verdict = {
            "label": None,
            "value": values["overall"] if valid else None,
            "data": {**values, "reasoning": row["note"] or ""} if valid else None,
            "distribution": {},
            "raw": row["raw"] or "",
            "invalid_reason": None if valid else (row["error"] or "invalid output"),
            "detail": row["note"] or "",
            "usage": v1_usage(),
            "seconds": 0.0,
        }
        judgments.append(dict(
            task=JUDGMENT_TASK, judge=judge_name(details["profile"], details["model"], details["prompt"]),
            profile=details["profile"], model=details["model"], variant=details["prompt"], item=row["uid"],
            reference=None, valid=valid, verdict=verdict, run_id=None, created_at=v1_time(row["created_at"]),
        ))
    for judgment in judgments:  # one at a time: two old raters of one judge, the later rating wins
        upsert(conn, [judgment])
    return len(judgments)


@judge_options_before_v4("critiques")
def _critique_judges_before_v4(variant: str) -> dict:
    """Both prompts answered within 320 tokens."""
    return {"max_tokens": 320}
