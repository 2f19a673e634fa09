"""The typed judgment store: `Verdict`s in and out, keyed by (`JudgeId`, item, the item's content)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

from pydantic import TypeAdapter

from engines.judging.task import TaskItem
from engines.judging.verdict import JudgeId, Verdict
from store.db import Database
from store.judgments import JudgeColumns, JudgmentRepository, NewJudgment

# An item judged in the Arena is stored under its judge like a batch item, keyed apart so
# that a batch run still judges it itself and the two never overwrite each other.
ARENA_PREFIX = "arena:"


def arena_key(key: str) -> str:
    return ARENA_PREFIX + key


def is_arena_key(key: str) -> bool:
    return key.startswith(ARENA_PREFIX)


# Stored verdicts by item key, validated in one call: a rerun of a batch run reads thousands.
_VERDICTS_BY_KEY = TypeAdapter(dict[str, Verdict])


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

    def save(self, judge: JudgeId, verdicts: Iterable[tuple[TaskItem, Verdict]], run_id: int | None = None) -> None:
        """(item, verdict) pairs, in one transaction: each under the item's key, content digest and reference."""
        self._repo.save(
            self.task, JudgeColumns(**judge.model_dump()),
            (
                NewJudgment(item.key, verdict.model_dump(mode="json"), verdict.valid, item.reference, item.digest)
                for item, verdict in verdicts
            ),
            run_id,
        )

    def load(self, judge: JudgeId, items: Sequence[TaskItem]) -> dict[str, Verdict]:
        """item key -> verdict, of the items judged with the content they have now."""
        stored = self._repo.matching(self.task, judge.name, {item.key: item.digest for item in items})
        return _VERDICTS_BY_KEY.validate_python(stored)

    def latest(self, judge: JudgeId, keys: Iterable[str] | None = None) -> dict[str, Verdict]:
        """item key -> the latest verdict of each of the judge's items (or of `keys`), whatever content it had:
        for listings, which show what was judged."""
        stored = self._repo.verdicts(self.task, judge.name, keys)
        return _VERDICTS_BY_KEY.validate_python(stored)

    def labelled(self, judge: JudgeId) -> list[tuple[str, str, Verdict]]:
        """(item, reference, verdict) of the judge's judgments of items with a known reference."""
        return [
            (item, reference, Verdict.model_validate(data))
            for item, reference, data in self._repo.labelled(self.task, judge.name)
            if reference is not None
        ]

    def judged(self, judge: JudgeId) -> set[str]:
        return self._repo.items(self.task, judge.name)

    def arena_items(self, judge: JudgeId) -> int:
        """How many of the judge's items were judged in the Arena."""
        return sum(is_arena_key(key) for key in self.judged(judge))

    def judges(self) -> list[StoredJudge]:
        return [
            StoredJudge(JudgeId(**asdict(row.judge)), row.judgments, row.invalid)
            for row in self._repo.judges(self.task)
        ]
