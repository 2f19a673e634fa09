"""What the inspire task keeps of a scored turn (or a scored argument), and its options: the
data both the debate turns' scoring (`engines.tasks.inspire`) and the expert-rated arguments'
(`engines.tasks.inspire_against`) build on."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, Mapping, Sequence

from pydantic import BaseModel

from engines.debate.records import StoredTurn, TurnSteps
from engines.inspire.score import TASK_NAME, InspireScore, ScoreComparison, compare, stored_turn_key
from engines.judging.options import OptionInfo, PositiveCount, TaskOptions
from engines.judging.store import JudgmentStore
from engines.judging.verdict import Verdict
from engines.llm.types import Usage
from store.db import Database

Role = Literal["user", "assistant"]


class InspireOptions(TaskOptions):
    debates: Annotated[Path | None, OptionInfo(
        "debates file: RAD debates, a GenIRSim run or `argtui export debate --format jsonl`", metavar="FILE")] = None
    debate: Annotated[int | None, OptionInfo("a stored debate (argtui debate --list shows them)", metavar="ID")] = None
    candidates: Annotated[PositiveCount | None, OptionInfo(
        "also sample K alternative replies per bot turn (needs its stored step outputs) and score each",
        label="candidate replies", metavar="K", role="judge")] = None
    facts: Annotated[str | None, OptionInfo(
        "check claims against SOURCE: a JSONL of reference statements ({\"id\", \"text\"} per line), an "
        "Elasticsearch index (http://HOST:9200/INDEX) or `base` (default: the config's [inspire] facts, else the "
        "argument base)", label="fact source", metavar="SOURCE", role="judge")] = None
    against: Annotated[Literal["ibm-argq", "webis", "ukpconvarg1"] | None, OptionInfo(
        "score expert-rated arguments instead and correlate with the experts: IBM-ArgQ-Rank-30k, "
        "Webis-ArgQuality-20 or UKPConvArg1 (--limit N: a seeded sample of N across topics; default 50, "
        "minutes on the embedded model)", label="expert ratings")] = None
    data: Annotated[Path | None, OptionInfo(
        "--against's data: the IBM CSV, the Webis or UKPConvArg1 release folder (default: the bundled copy; "
        "UKPConvArg1: the config's [datasets] ukpconvarg1)", metavar="PATH")] = None


class Candidate(BaseModel):
    """An alternative bot reply and its score; `score` None when the reply did not parse."""

    text: str
    score: InspireScore | None = None
    error: str | None = None


class TurnJudgment(BaseModel):
    """What the judgment store keeps of a turn (the verdict's `data`)."""

    debate: str
    position: int
    role: Role
    topic: str
    user_side: Literal["pro", "con"] | None = None
    dialogue: list[tuple[Role, str]]  # the messages before the turn
    text: str
    score: InspireScore
    candidates: list[Candidate] = []

    def scored_replies(self) -> list[tuple[str, InspireScore]]:
        """(reply, score) of the turn's reply and every scored candidate, for preference pairs."""
        return [(self.text, self.score)] + [(c.text, c.score) for c in self.candidates if c.score is not None]

    def preferred_pair(self) -> tuple[tuple[str, InspireScore], tuple[str, InspireScore], ScoreComparison] | None:
        """(chosen, rejected, their comparison): of the ordered pairs of scored replies, the one
        `compare` puts furthest apart (the first of equals); None when no reply beats another."""
        found = [
            (chosen, rejected, comparison)
            for chosen, rejected in itertools.permutations(self.scored_replies(), 2)
            if (comparison := compare(chosen[1], rejected[1])).margin is not None and comparison.margin > 0
        ]
        return max(found, key=lambda pair: pair[2].margin or 0.0) if found else None


@dataclass(frozen=True)
class InspireItem:
    debate: str
    position: int
    role: Role
    topic: str
    text: str
    dialogue: tuple[tuple[Role, str], ...]
    user_side: Literal["pro", "con"] | None = None
    steps: TurnSteps | None = None  # a bot turn's step outputs, when known: what candidates need
    evidence: tuple[str, ...] = ()  # ids of the arguments the turn retrieved or quoted: never its evidence


def turn_judgment(verdict: Verdict) -> TurnJudgment:
    return TurnJudgment.model_validate(verdict.data)


def per_turn_cost(judgments: Sequence[TurnJudgment]) -> dict[str, float]:
    """Calls, prompt tokens and seconds of one turn's InspireScore, on average (candidates left out)."""
    usage = Usage.total(j.score.usage for j in judgments)
    count = max(1, len(judgments))
    return {
        "calls": usage.calls / count, "prompt_tokens": usage.prompt_tokens / count,
        "completion_tokens": usage.completion_tokens / count,
        "seconds": sum(j.score.seconds for j in judgments) / count,
    }


def stored_message_scores(
    db: Database, dialogues: Mapping[int, Sequence[StoredTurn]]
) -> dict[tuple[int, int], InspireScore]:
    """(debate id, stored position) -> the InspireScore stored of that student message, for the
    dialogues given (a debate's turns `in_dialogue`, in order). The task keys a stored turn by its
    index in the dialogue; a score counts only where its text is the message's, since a reply run
    again after a failure moves the indices. Where several judges scored a message, the judge
    that scored the most of them counts, so the debates are compared on one judge where they can be."""
    wanted = {
        stored_turn_key(debate_id, index): (debate_id, turn)
        for debate_id, dialogue in dialogues.items()
        for index, turn in enumerate(dialogue) if turn.role == "user"
    }
    store = JudgmentStore(db, TASK_NAME)
    found: dict[tuple[int, int], InspireScore] = {}
    for stored in store.judges():
        missing = [key for key, (debate_id, turn) in wanted.items() if (debate_id, turn.position) not in found]
        if not missing:
            break
        for key, verdict in store.latest(stored.judge, missing).items():
            debate_id, turn = wanted[key]
            judged = turn_judgment(verdict) if verdict.data is not None else None
            if judged is not None and judged.role == "user" and judged.text == turn.content:
                found[(debate_id, turn.position)] = judged.score
    return found
