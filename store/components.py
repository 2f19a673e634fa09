"""The texts argument components are labelled in, and carrying old component predictions forward.

Labels themselves are judgments of the task "components" (`store/judgments.py`);
a text is kept here once (by source, name and digest), so that the Components
view can show stored components in their document.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone

from sqlalchemy import UniqueConstraint
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel, select

from store.db import Database
from store.identity import judge_name, options_digest
from store.judgments import upsert
from store.migrations import has_tables, judge_options_before_v4, judgments_from_v1, v1_time, v1_usage

ESSAYS_SOURCE = "ukp-essays"
TYPED_SOURCE = "typed"
TEXT_KEY_PREFIX = "text:"  # item keys of typed texts: text:<digest>/<start>-<end>


def _now() -> datetime:
    return datetime.now(timezone.utc)


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class ComponentDocument(SQLModel, table=True):
    __tablename__ = "component_document"
    __table_args__ = (UniqueConstraint("source", "name", "digest"),)

    id: int | None = Field(default=None, primary_key=True)
    source: str = Field(description="e.g. ukp-essays, typed")
    name: str = Field(description="e.g. essay004, or the first words of a typed text")
    digest: str = Field(index=True, description="sha256 of the text")
    text: str
    created_at: datetime = Field(default_factory=_now)


class ComponentRepository:
    def __init__(self, db: Database):
        self._db = db

    def document(self, source: str, name: str, text: str) -> ComponentDocument:
        """The stored document with this source, name and text; created if new."""
        digest = text_digest(text)
        with self._db.session() as session:
            found = session.exec(
                select(ComponentDocument).where(
                    ComponentDocument.source == source,
                    ComponentDocument.name == name,
                    ComponentDocument.digest == digest,
                )
            ).first()
            if found is None:
                found = ComponentDocument(source=source, name=name, digest=digest, text=text)
                session.add(found)
                session.flush()
                session.refresh(found)
            return found

    def documents(self) -> list[ComponentDocument]:
        """Every stored document, newest first."""
        with self._db.read() as session:
            newest = ComponentDocument.id.desc()  # type: ignore[union-attr]
            return list(session.exec(select(ComponentDocument).order_by(newest)))


# ---------------------------------------------------------------------- schema 1 -> judgments

JUDGMENT_TASK = "components"  # the task these judgments belong to
# What a judge's name leaves out (the task's defaults): votes, debater turn, judge reason, chain of thought.
DEFAULT_VOTES, DEFAULT_TURN_TOKENS, DEFAULT_JUDGE_TOKENS, DEFAULT_REASONING_TOKENS = 1, 2048, 4096, 2048
V1_TOKENS, V1_REASONING_TOKENS = 96, 128  # the limits before schema 4 (where a schema-1 run name does not give them)
MAD_SETTINGS = re.compile(r":seed(\d+):rounds\d+:votes(\d+):turn(\d+):judge(\d+)(?::skip([^:]+))?$")


def _judge_variant_and_options(run: str, method: str) -> tuple[str, dict]:
    """The task's variant and judge options of an old run name (`ukp-essays:mad:…:seed0:rounds2:…`).

    Live runs (`live:<method>:<profile>`) did not record their settings: they ran with schema 1's limits.
    """
    if method == "cot":
        return method, {"reasoning_tokens": V1_REASONING_TOKENS}
    if method != "mad":
        return method, {}
    settings = MAD_SETTINGS.search(run)
    seed, votes, turn, judge, skip = settings.groups() if settings else ("0", "1", V1_TOKENS, V1_TOKENS, None)
    options = {
        "votes": int(votes) if int(votes) != DEFAULT_VOTES else None,
        "turn_tokens": int(turn) if int(turn) != DEFAULT_TURN_TOKENS else None,
        "judge_tokens": int(judge) if int(judge) != DEFAULT_JUDGE_TOKENS else None,
        "skip_threshold": float(skip) if skip is not None else None,
    }
    variant = f"mad/seed{seed}" if int(seed) else "mad"
    return variant, {name: value for name, value in options.items() if value is not None}


@judgments_from_v1
def copy_v1(conn: Connection) -> int:
    """Copy schema 1's `component_prediction` rows, with their `component_turn` transcripts, into
    `judgment` (task "components"); returns how many. The old tables stay as they were.

    Judges are named as the task names them (`<model>@<profile> <method>`, mad's seed and
    settings read from the old run name); item keys are `<essay id>/<component id>` for the
    UKP essays and `text:<sha256>/<start>-<end>` for typed texts. A migrated verdict's
    `detail` is the stored reason. Rows are copied oldest first, so when two old runs map
    to the same judge the newer label wins.
    """
    if not has_tables(conn, "component_prediction", "component_turn", "component_document"):
        return 0
    turns: dict[int, list[dict]] = {}
    for prediction_id, role, label, text in conn.exec_driver_sql(
        "SELECT prediction_id, role, label, text FROM component_turn ORDER BY prediction_id, position"
    ):
        turns.setdefault(prediction_id, []).append({"role": role, "text": text, "label": label})
    rows = conn.exec_driver_sql(
        'SELECT p.id, p.run, p.component, p.start, p."end", p.gold, p.method, p.judge, p.model, p.label, p.raw, '
        "p.distribution_json, p.distribution_source, p.judge_distribution_json, p.proponent_label, "
        "p.opponent_label, p.skipped, p.reason, p.calls, p.cached_calls, p.seconds, p.prompt_tokens, "
        "p.completion_tokens, p.created_at, d.source, d.name, d.digest, d.text "
        "FROM component_prediction p JOIN component_document d ON d.id = p.document_id "
        "ORDER BY p.created_at, p.id"
    ).mappings()
    judgments = []
    for row in rows:
        variant, options = _judge_variant_and_options(row["run"], row["method"])
        if row["source"] == TYPED_SOURCE:
            item = f"{TEXT_KEY_PREFIX}{row['digest']}/{row['start']}-{row['end']}"
        else:
            item = f"{row['name']}/{row['component']}"
        verdict = {
            "label": row["label"],
            "value": None,
            "data": {
                "transcript": turns.get(row["id"], []),
                "reason": row["reason"],
                "proponent_label": row["proponent_label"],
                "opponent_label": row["opponent_label"],
                "judge_distribution": json.loads(row["judge_distribution_json"] or "{}"),
                "distribution_source": row["distribution_source"],
                "skipped": bool(row["skipped"]),
                "span": {"start": row["start"], "end": row["end"], "text": row["text"][row["start"] : row["end"]]},
            },
            "distribution": json.loads(row["distribution_json"] or "{}"),
            "raw": row["raw"],
            "invalid_reason": None if row["label"] is not None else "the output was not a label",
            "detail": row["reason"],
            "usage": v1_usage(row["prompt_tokens"], row["completion_tokens"], row["calls"], row["cached_calls"]),
            "seconds": row["seconds"],
        }
        judgments.append(dict(
            task=JUDGMENT_TASK, judge=judge_name(row["judge"], row["model"], variant, options_digest(options)),
            profile=row["judge"], model=row["model"], variant=variant, options=options_digest(options), item=item,
            reference=row["gold"], valid=row["label"] is not None, verdict=verdict, run_id=None, created_at=v1_time(row["created_at"]),
        ))
    for judgment in judgments:  # one at a time: a later row must replace an earlier one of the same item
        upsert(conn, [judgment])
    return len(judgments)


@judge_options_before_v4("components")
def _component_judges_before_v4(variant: str) -> dict:
    """MAD-ACC's debaters and judge answered within 96 tokens, the chain of thought within 128."""
    if variant.startswith("mad"):
        return {"turn_tokens": V1_TOKENS, "judge_tokens": V1_TOKENS}
    return {"reasoning_tokens": V1_REASONING_TOKENS} if variant.startswith("cot") else {}
