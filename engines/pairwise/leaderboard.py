"""What the Leaderboard shows for one dimension and topic scope: the experts' own BT fit
and every stored pairwise judge against the experts, judge-vs-judge agreement, and the
argument texts for the rankings."""

from __future__ import annotations

from dataclasses import dataclass, field

from engines.datasets.webis import WebisCorpus
from engines.judging.store import JudgmentStore, arena_key
from engines.judging.verdict import JudgeId
from engines.metrics.agreement import JudgeComparison, compare_judges
from engines.pairwise.evaluation import ArgumentId, DimensionResult, evaluate_dimension, expert_judgments, judged_pair
from engines.pairwise.judge import mode_of_variant
from engines.pairwise.run import TASK_NAME, select_items
from store.db import Database

EXPERTS = "experts (own comparisons)"


@dataclass
class Board:
    """Everything the tabs show for one dimension and topic scope."""

    results: dict[str, DimensionResult] = field(default_factory=dict)  # judge name -> vs experts
    comparisons: list[JudgeComparison] = field(default_factory=list)
    texts: dict[ArgumentId, str] = field(default_factory=dict)
    stored_judges: int = 0  # pairwise judges in the store, in any scope
    arena_items: dict[str, int] = field(default_factory=dict)  # judge name -> pairs judged only in the Arena
    judge_ids: dict[str, JudgeId] = field(default_factory=dict)  # judge name -> who it is, for showing it

    @property
    def judges(self) -> list[str]:
        """The stored judges with judgments in this scope, most judgments first."""
        return [name for name in self.results if name != EXPERTS]


def build_board(db: Database, corpus: WebisCorpus, dimension: str, topic: int | None) -> Board:
    """Evaluate the experts' own BT fit and every stored judge on one dimension and scope."""
    pairs = select_items(corpus, [dimension], None if topic is None else [topic])
    by_key = {pair.key: pair for pair in pairs}
    board = Board()
    board.results[EXPERTS] = evaluate_dimension(corpus, dimension, expert_judgments(pairs))
    store = JudgmentStore(db, TASK_NAME)
    stored = store.judges()
    board.stored_judges = len(stored)
    labels = {}
    for judge in stored:
        board.judge_ids[judge.name] = judge.judge
        verdicts = store.latest(judge.judge, by_key)
        in_arena = store.latest(judge.judge, [arena_key(key) for key in by_key])
        arena_only = {  # a pair judged in a batch run counts once, with the batch verdict
            key: verdict for key in by_key
            if key not in verdicts and (verdict := in_arena.get(arena_key(key))) is not None
        }
        verdicts.update(arena_only)
        if arena_only:
            board.arena_items[judge.name] = len(arena_only)
        if not verdicts:
            continue
        judged = [judged_pair(by_key[key], verdict) for key, verdict in verdicts.items()]
        board.results[judge.name] = evaluate_dimension(
            corpus, dimension, judged, mode=mode_of_variant(judge.judge.variant)
        )
        labels[judge.name] = {j.item.key: j.label for j in judged}
    board.comparisons = compare_judges(labels, {name: board.results[name].judge_scores for name in labels})
    board.texts = {arg_id: corpus.argument(*arg_id).text for arg_id in board.results[EXPERTS].judge_scores}
    return board
