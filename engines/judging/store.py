"""The typed judgment store: `Verdict`s in and out, keyed by (`JudgeId`, item)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from engines.judging.verdict import JudgeId, Verdict
from store.db import Database
from store.judgments import JudgmentRepository, NewJudgment

# An item judged in the Arena is stored under its judge like a batch item, keyed apart so
# that a batch run still judges it itself and the two never overwrite each other.
ARENA_PREFIX = "arena:"


def arena_key(key: str) -> str:
    return ARENA_PREFIX + key


def is_arena_key(key: str) -> bool:
    return key.startswith(ARENA_PREFIX)


@dataclass(frozen=True)
class StoredJudge:
    judge: JudgeId
    judgments: int
    invalid: int

    @property
    def name(self) -> str:
        return self.judge.name


class JudgmentStore:
    """One task's judgments."""

    def __init__(self, db: Database, task: str):
        self.task = task
        self._repo = JudgmentRepository(db)

    def save(
        self, judge: JudgeId, verdicts: Iterable[tuple[str, Verdict, str | None]], run_id: int | None = None
    ) -> None:
        """(item key, verdict, reference) triples, in one transaction."""
        self._repo.save(
            self.task, judge.name, judge.profile, judge.model, judge.variant,
            (
                NewJudgment(key, verdict.model_dump(mode="json"), verdict.valid, reference)
                for key, verdict, reference in verdicts
            ),
            run_id,
        )

    def load(self, judge: JudgeId, items: Iterable[str] | None = None) -> dict[str, Verdict]:
        return {
            key: Verdict.model_validate(data) for key, data in self._repo.verdicts(self.task, judge.name, items).items()
        }

    def labelled(self, judge: JudgeId) -> list[tuple[str, str, Verdict]]:
        """(item, reference, verdict) of the judge's items with a known reference."""
        return [
            (item, reference, Verdict.model_validate(data))
            for item, reference, data in self._repo.labelled(self.task, judge.name)
            if reference is not None
        ]

    def judged(self, judge: JudgeId) -> set[str]:
        return self._repo.items(self.task, judge.name)

    def arena_items(self, judge: JudgeId) -> int:
        """How many of the judge's judgments were made in the Arena."""
        return sum(is_arena_key(key) for key in self.judged(judge))

    def judges(self) -> list[StoredJudge]:
        return [
            StoredJudge(JudgeId.parse(row.judge), row.judgments, row.invalid)
            for row in self._repo.judges(self.task)
        ]
