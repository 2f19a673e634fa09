"""Stored debates as files: the Touché RAD / GenIRSim run shape (what the official
subtask-2 evaluators read) and a full JSON record of everything argtui stored."""

from __future__ import annotations

from engines.debate.records import DebateRecords, EvidenceRow, StoredTurn
from store.debates import Debate, DebateRepository

SYSTEM_CLASS = "argtui-sinai"


def rad_argument(row: EvidenceRow) -> dict:
    """An evidence row in the RAD argument shape."""
    argument = {
        "id": row.id,
        "topic": row.topic,
        "tags": list(row.tags),
        "attacks": row.attacks,
        "supports": row.supports,
        "text": row.text,
        "references": [],
    }
    if row.relation:
        argument["original"] = row.relation
    argument["score"] = row.score
    return argument


def exchanges(turns: list[StoredTurn]) -> list[tuple[StoredTurn, StoredTurn]]:
    """(user message, the bot reply that answered it); failed, cancelled and running bot turns are left out."""
    pairs = []
    pending: StoredTurn | None = None
    for turn in turns:
        if turn.role == "user":
            pending = turn
        elif pending is not None and turn.in_dialogue:
            pairs.append((pending, turn))
            pending = None
    return pairs


def rad_run(debate: Debate, turns: list[StoredTurn], model: str = "") -> dict:
    """One GenIRSim run record (`{"simulation": {...}}`) for the debate."""
    user_turns = []
    total_ms = 0.0
    for user, bot in exchanges(turns):
        milliseconds = (bot.seconds or 0.0) * 1000
        total_ms += milliseconds
        user_turns.append({
            "utterance": user.content,
            "systemResponse": {
                "utterance": bot.content,
                "response": {
                    "content": bot.content,
                    "arguments": [rad_argument(row) for row in bot.used_arguments],
                },
                "milliseconds": milliseconds,
            },
        })
    return {
        "simulation": {
            "configuration": {
                "topic": {"description": debate.claim},
                "user": {"class": "argtui-student", "side": debate.user_side},
                "system": {"class": SYSTEM_CLASS, "level": debate.level, "backend": debate.backend, "model": model},
                "maxTurns": len(user_turns),
            },
            "userTurns": user_turns,
            "milliseconds": total_ms,
        }
    }


def full_record(repository: DebateRepository, debate: Debate) -> dict:
    """Everything stored about a debate: turns, step outputs, evidence, judgments, labels."""
    return {
        "id": debate.id,
        "claim": debate.claim,
        "user_side": debate.user_side,
        "backend": debate.backend,
        "level": debate.level,
        "created_at": debate.created_at.isoformat(),
        "turns": [
            {
                "position": turn.position,
                "role": turn.role,
                "content": turn.content,
                "error": turn.error,
                "state": turn.state.value,
                "length_action": turn.length_action,
                "seconds": turn.seconds,
                "steps": turn.steps.model_dump(mode="json", exclude_none=True) if turn.steps else {},
                "evidence": [row.model_dump(mode="json") for row in turn.evidence],
                "analyses": [
                    {"kind": a.kind, "method": a.method, "judge": a.judge, "result": a.result.model_dump(mode="json"),
                     # where the judgment store keeps it, as every batch judgment (rows of earlier releases: none)
                     **({"stored": a.link.model_dump()} if a.link else {})}
                    for a in turn.analyses
                ],
            }
            for turn in DebateRecords(repository).turns(debate.id)
        ],
    }
