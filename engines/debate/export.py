"""Stored debates as files: the Touché RAD / GenIRSim run shape (what the official
subtask-2 evaluators read) and a full JSON record of everything argtui stored."""

from __future__ import annotations

from store.debates import Debate, DebateRepository, DebateTurn

SYSTEM_CLASS = "argtui-sinai"


def rad_argument(row: dict) -> dict:
    """An evidence row in the RAD argument shape."""
    argument = {
        "id": row["id"],
        "topic": row.get("topic", ""),
        "tags": list(row.get("tags") or []),
        "attacks": row.get("attacks"),
        "supports": row.get("supports"),
        "text": row["text"],
        "references": [],
    }
    if row.get("relation"):
        argument["original"] = row["relation"]
    argument["score"] = row.get("score", 0.0)
    return argument


def exchanges(turns: list[DebateTurn]) -> list[tuple[DebateTurn, DebateTurn]]:
    """(user message, the bot reply that answered it); failed bot turns are left out."""
    pairs = []
    pending: DebateTurn | None = None
    for turn in turns:
        if turn.role == "user":
            pending = turn
        elif pending is not None and turn.error is None:
            pairs.append((pending, turn))
            pending = None
    return pairs


def rad_run(debate: Debate, turns: list[DebateTurn], model: str = "") -> dict:
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
                    "arguments": [rad_argument(row) for row in bot.evidence if row.get("used")],
                },
                "milliseconds": milliseconds,
            },
        })
    return {
        "simulation": {
            "configuration": {
                "topic": {"description": debate.claim},
                "user": {"class": "argtui-student", "side": debate.user_side},
                "system": {"class": SYSTEM_CLASS, "backend": debate.backend, "model": model},
                "maxTurns": len(user_turns),
            },
            "userTurns": user_turns,
            "milliseconds": total_ms,
        }
    }


def full_record(repository: DebateRepository, debate: Debate) -> dict:
    """Everything stored about a debate: turns, step outputs, evidence, judgments, labels."""
    turns = repository.turns(debate.id)
    analyses = repository.analyses([t.id for t in turns])
    return {
        "id": debate.id,
        "claim": debate.claim,
        "user_side": debate.user_side,
        "backend": debate.backend,
        "created_at": debate.created_at.isoformat(),
        "turns": [
            {
                "position": turn.position,
                "role": turn.role,
                "content": turn.content,
                "error": turn.error,
                "length_action": turn.length_action,
                "seconds": turn.seconds,
                "steps": turn.steps,
                "evidence": turn.evidence,
                "analyses": [
                    {"kind": a.kind, "method": a.method, "judge": a.judge, "result": a.result}
                    for a in analyses if a.turn_id == turn.id
                ],
            }
            for turn in turns
        ],
    }
