"""The agreement report from what is stored: people's ratings from the critique store, LLM judges'
verdicts from the judgment store (under their judge names), and the report's tables.

Judge verdicts live only in the judgment store; the ratings `argtui eval critiques` wrote into
the critique store before that (`carried_judge`) are read from their copies there, so no judge
is counted twice. Judge ratings imported from a critique file stay ordinary raters.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engines.critiques.agreement import (
    TABLE_COLUMNS,
    TABLE_LEGEND,
    AgreementError,
    AgreementReport,
    agreement_report,
    report_as_dict,
    table_rows,
)
from engines.critiques.judges import TASK_NAME, rating_values
from engines.judging.store import JudgmentStore
from engines.judging.task import ReportTable, TaskReport
from engines.llm.profile import EMBEDDED_PROFILE
from store.critiques import HUMAN, JUDGE, CritiqueRepository, RatingVersion, RatingView, carried_judge
from store.db import Database

DEMO_JUDGE_NOTE = (
    "Judges on the embedded SmolLM2-135M backend are for demonstration only: their ratings are near random."
)


@dataclass(frozen=True)
class JudgeRating:
    """A judge's verdict on one critique, as the losses read a rating."""

    rater: str  # the judge's name (JudgeId.name)
    critique_uid: str
    values: dict[str, float | None]
    valid: bool
    rater_kind: str = JUDGE


def judge_ratings(db: Database) -> list[JudgeRating]:
    """Every stored judge verdict of the critique task."""
    store = JudgmentStore(db, TASK_NAME)
    return [
        JudgeRating(stored.name, item, rating_values(verdict), verdict.valid)
        for stored in store.judges()
        for item, verdict in store.latest(stored.judge).items()
    ]


def _rater_ratings(repo: CritiqueRepository, which: RatingVersion) -> list[RatingView]:
    carried = {rater.name for rater in repo.raters() if carried_judge(rater)}
    return [rating for rating in repo.ratings(which=which) if rating.rater not in carried]


def rater_names(db: Database) -> list[str]:
    """Everyone with a rating, people first (the usual references), then judges, by name."""
    repo = CritiqueRepository(db)
    kinds = {r.name: r.kind for r in repo.raters() if r.rated and not carried_judge(r)}
    kinds.update((stored.name, JUDGE) for stored in JudgmentStore(db, TASK_NAME).judges())
    return sorted(kinds, key=lambda name: (kinds[name] != HUMAN, name))


def check_rater(db: Database, name: str) -> None:
    """Fail early, before any judging, on a reference nobody goes by."""
    names = rater_names(db)
    if name not in names:
        raise AgreementError(f"no ratings by {name!r} (raters: {', '.join(names) or 'none yet'})")


def build_report(
    db: Database,
    reference: str,
    compared: list[str] | None = None,
    which: RatingVersion = "current",
    resamples: int = 1000,
) -> AgreementReport:
    """Raters' ratings (`which` of each revision chain) and judges' verdicts against `reference`."""
    repo = CritiqueRepository(db)
    position_of = {c.uid: p.uid for p in repo.positions() for c in p.critiques}
    judged = [rating for rating in judge_ratings(db) if rating.critique_uid in position_of]
    ratings = [*_rater_ratings(repo, which), *judged]
    report = agreement_report(ratings, position_of, len(position_of), reference, compared, resamples=resamples)
    return replace(report, judges={stored.name: stored.judge for stored in JudgmentStore(db, TASK_NAME).judges()})


def demo_judged(report: AgreementReport) -> bool:
    """Whether a judge in the report ran on the embedded demo model."""
    return any(
        row.kind == JUDGE and (judge := report.judges.get(row.compared)) is not None
        and judge.profile == EMBEDDED_PROFILE
        for row in report.versus_reference
    )


def task_report(report: AgreementReport, which: RatingVersion = "current") -> TaskReport:
    """The loss tables, the progress table and the legend, for any printer of task reports."""
    version = "first ratings" if which == "first" else "latest revisions"
    tables = [ReportTable(f"Against {report.reference} ({version})", TABLE_COLUMNS,
                          tuple(table_rows(report.versus_reference)))]
    if report.versus_others:
        tables.append(ReportTable("Each rater against the mean of the other raters", TABLE_COLUMNS,
                                  tuple(table_rows(report.versus_others))))
    tables.append(ReportTable("Progress", ("rater", "kind", "rated", "of"),
                              tuple((p.rater, p.kind, p.rated, p.total) for p in report.progress)))
    notes = (TABLE_LEGEND, *((DEMO_JUDGE_NOTE,) if demo_judged(report) else ()))
    return TaskReport(f"Agreement with {report.reference}", tuple(tables), notes, {"report": report_as_dict(report)})
