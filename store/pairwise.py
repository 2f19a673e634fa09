"""Pairwise judgments of schema 1 (`pairwise_judgment`: one row per judge, variant, dimension
and pair) carried into the one `judgment` table.

The mapping follows the pairwise task: the judge's name is "model@profile
variant", the item key "dimension/a uid~b uid", the reference the expert
label, and the verdict the JSON object of the engine's `Verdict` (an invalid
output, label NULL, gets the reason the task gives it).
"""

from __future__ import annotations

import json

from sqlalchemy.engine import Connection

from store.identity import judge_name
from store.judgments import upsert
from store.migrations import has_tables, judge_options_before_v4, judgments_from_v1, v1_time, v1_usage

TASK = "pairwise"
INVALID_REASON = "not one of A, B, Tie"
OLD_COLUMNS = (
    "judge", "variant", "dimension", "a_uid", "b_uid", "expert", "label", "run_labels_json",
    "distribution_json", "raw", "prompt_tokens", "completion_tokens", "run_id", "created_at",
)


@judgments_from_v1
def copy_v1(conn: Connection) -> int:
    """Copy every old pairwise judgment into `judgment` (inside the caller's transaction; judgments
    already there are kept, the old table is left in place). Returns how many rows were read."""
    if not has_tables(conn, "pairwise_judgment"):
        return 0
    rows = conn.exec_driver_sql(f"SELECT {', '.join(OLD_COLUMNS)} FROM pairwise_judgment ORDER BY id").mappings().all()
    upsert(conn, [_judgment(row) for row in rows])
    return len(rows)


def _judgment(row) -> dict:
    model, _, profile = row["judge"].rpartition("@")  # schema 1 kept the backend in one column, model@profile
    run_labels = json.loads(row["run_labels_json"])
    verdict = {
        "label": row["label"],
        "value": None,
        "data": {"run_labels": run_labels},
        "distribution": json.loads(row["distribution_json"]),
        "raw": row["raw"],
        "invalid_reason": None if row["label"] is not None else INVALID_REASON,
        "detail": "",
        # One answer per run label: the runs, one logprob call, or both orders.
        "usage": v1_usage(row["prompt_tokens"], row["completion_tokens"], len(run_labels)),
        "seconds": 0.0,
    }
    return {
        "task": TASK,
        "judge": judge_name(profile, model, row["variant"]),
        "profile": profile,
        "model": model,
        "variant": row["variant"],
        "item": f"{row['dimension']}/{row['a_uid']}~{row['b_uid']}",
        "reference": row["expert"],
        "valid": row["label"] is not None,
        "verdict": verdict,
        "run_id": row["run_id"],
        "created_at": v1_time(row["created_at"]),
    }


@judge_options_before_v4("pairwise")
def _pairwise_judges_before_v4(variant: str) -> dict:
    """Few-shot examples were the largest score gaps over all comparisons."""
    return {"fewshot_rule": "literal"} if variant.startswith("few") else {}
