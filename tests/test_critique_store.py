"""Ratings are append-only with revision chains; reveals are recorded; agreement tables from stored ratings."""

from __future__ import annotations

import math
import sqlite3

import pytest
from sqlalchemy.exc import DatabaseError

from engines.critiques.agreement import MEAN_OF_OTHERS, AgreementError, agreement_report
from store.critiques import DIMENSIONS, JUDGE, CritiqueError, CritiqueRepository, NewCritique, NewPosition

VALUES = dict(centrality=0.8, strength=0.6, correctness=0.9, clarity=0.7, dead_weight=0.1, single_issue=1.0, overall=0.5)


@pytest.fixture
def repo(db) -> CritiqueRepository:
    repo = CritiqueRepository(db)
    repo.import_items(
        [NewPosition("p1", "Utilitarianism is true."), NewPosition("p2", "We have free will.")],
        [NewCritique("c1", "p1", "It ignores rights.", source="human expert"),
         NewCritique("c2", "p1", "Utility cannot be measured."),
         NewCritique("c3", "p2", "Determinism.")],
        [],
    )
    return repo


def critique_id(repo: CritiqueRepository, uid: str) -> int:
    return next(c.id for p in repo.positions() for c in p.critiques if c.uid == uid)


def test_a_revision_keeps_the_original_and_points_at_it(repo):
    c1 = critique_id(repo, "c1")
    first = repo.add_rating(c1, "ann", VALUES, note="first look")
    revised = repo.add_rating(c1, "ann", {**VALUES, "overall": 0.8}, revises_id=first.id, reason="missed a reading")
    assert revised.revises_uid == first.uid and revised.reason == "missed a reading"
    assert [r.values["overall"] for r in repo.history(c1, "ann")] == [0.5, 0.8]
    assert [r.uid for r in repo.ratings("ann")] == [revised.uid]
    assert [r.uid for r in repo.ratings("ann", which="first")] == [first.uid]
    assert len(repo.ratings(which="all")) == 2
    assert repo.progress("ann") == (1, 3)


def test_rules_for_revisions_are_enforced(repo):
    c1 = critique_id(repo, "c1")
    first = repo.add_rating(c1, "ann", VALUES)
    with pytest.raises(CritiqueError, match="already rated"):
        repo.add_rating(c1, "ann", VALUES)
    with pytest.raises(CritiqueError, match="needs a reason"):
        repo.add_rating(c1, "ann", VALUES, revises_id=first.id, reason="  ")
    second = repo.add_rating(c1, "ann", VALUES, revises_id=first.id, reason="typo")
    with pytest.raises(CritiqueError, match="latest rating"):
        repo.add_rating(c1, "ann", VALUES, revises_id=first.id, reason="branching")
    repo.add_rating(c1, "bob", VALUES)  # another rater rates independently
    assert [r.uid for r in repo.history(c1, "ann")] == [first.uid, second.uid]


def test_the_database_itself_refuses_changes_and_deletions_of_ratings(repo, db):
    rating = repo.add_rating(critique_id(repo, "c1"), "ann", VALUES)
    for statement in (f"UPDATE critique_rating SET overall = 0.1 WHERE id = {rating.id}",
                      f"DELETE FROM critique_rating WHERE id = {rating.id}",
                      "INSERT INTO critique_rating (uid, critique_id, rater_id, overall, source_seen, valid, created_at) "
                      f"VALUES ('x', {rating.critique_id}, 1, 1.5, 0, 1, '2025-01-01')"):
        with pytest.raises(DatabaseError):
            with db.engine.begin() as conn:
                conn.exec_driver_sql(statement)
    assert repo.ratings(which="all")[0].values["overall"] == 0.5
    # Also through a plain sqlite3 connection (another program).
    with sqlite3.connect(db.path) as conn, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM critique_rating")


def test_source_reveals_are_recorded_and_travel_with_the_rating(repo):
    c1, c2 = critique_id(repo, "c1"), critique_id(repo, "c2")
    assert repo.reveal_source(c1, "ann") == "human expert"
    assert repo.revealed_critique_ids("ann") == {c1} and repo.revealed_critique_ids("bob") == set()
    rating = repo.add_rating(c1, "ann", VALUES, source_seen=True)
    assert rating.source_seen and not repo.add_rating(c2, "ann", VALUES).source_seen
    assert [(uid, rater) for uid, rater, _ in repo.reveals()] == [("c1", "ann")]


def test_the_rater_who_rated_last_is_the_default(repo):
    assert repo.last_active_rater() is None
    repo.add_rating(critique_id(repo, "c1"), "ann", VALUES)
    repo.add_rating(critique_id(repo, "c2"), "judge-x", VALUES, rater_kind=JUDGE)
    assert repo.last_active_rater() == "ann"  # judges are never the app's rater
    repo.ensure_rater("bob", active=True)
    assert repo.last_active_rater() == "bob"


def rate(repo: CritiqueRepository, rater: str, overall: dict[str, float], **kwargs) -> None:
    for uid, value in overall.items():
        repo.add_rating(critique_id(repo, uid), rater, {**VALUES, "overall": value}, **kwargs)


def report_for(repo: CritiqueRepository, reference: str, **kwargs):
    position_of = {c.uid: p.uid for p in repo.positions() for c in p.critiques}
    return agreement_report(repo.ratings(), position_of, 3, reference, resamples=200, random_draws=200, **kwargs)


def test_agreement_tables_from_stored_ratings(repo):
    rate(repo, "ann", {"c1": 0.9, "c2": 0.1, "c3": 0.5})
    rate(repo, "bob", {"c1": 0.2, "c2": 0.6})  # reverses ann's only ordered pair
    rate(repo, "cyd", {"c1": 0.8, "c2": 0.3, "c3": 0.5})
    repo.add_rating(critique_id(repo, "c1"), "smol:rubric", dict.fromkeys(DIMENSIONS), rater_kind=JUDGE,
                    valid=False, raw="{not json", error="output: invalid JSON")
    report = report_for(repo, "ann")
    rows = {row.compared: row for row in report.versus_reference}
    assert list(rows) == ["bob", "cyd", "smol:rubric", "random"]
    assert rows["bob"].ranking.value == pytest.approx(0.8) and rows["cyd"].ranking.value == 0
    assert rows["bob"].ranking.units == 1 and rows["bob"].skipped_single == 0
    assert rows["cyd"].skipped_single == 1  # p2 has a single critique
    assert rows["bob"].custom.value == pytest.approx((0.5 * 0.7 + 0.5 * 0.5) / 2)  # only overall differs
    judge = rows["smol:rubric"]
    assert (judge.invalid, judge.missing, judge.shared) == (1, 2, 0) and math.isnan(judge.custom.value)
    assert rows["random"].kind == "random" and 0 < rows["random"].ranking.value < 0.8
    others = {row.compared: row for row in report.versus_others}
    assert set(others) == {"ann", "bob", "cyd"} and all(r.reference == MEAN_OF_OTHERS for r in others.values())
    # ann against mean(bob, cyd): c1 0.5, c2 0.45 -> ann's order agrees.
    assert others["ann"].ranking.value == 0
    assert {(p.rater, p.rated) for p in report.progress} >= {("ann", 3), ("bob", 2), ("smol:rubric", 1)}
    with pytest.raises(AgreementError, match="no ratings by 'nobody'"):
        report_for(repo, "nobody")
    only = report_for(repo, "ann", compared=["cyd"])
    assert [row.compared for row in only.versus_reference] == ["cyd"]
