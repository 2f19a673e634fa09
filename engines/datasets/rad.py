"""Touché 2025 Retrieval-Augmented Debating (RAD): debates, GenIRSim runs and Grice labels.

Three shapes are read (see the data README, touche25-rad section):

* debates (`touche25-rad-cmv-debates.jsonl.gz`, `...-submissions-annotations.jsonl.gz`):
  one JSON object per line, `{id, claim, description, simulated_debate: [{role,
  content, arguments}]}` with user and assistant messages alternating;
* GenIRSim runs (`toy-simulation.genirsim.jsonl.gz`): one `{simulation: {configuration,
  userTurns: [{utterance, systemResponse: {utterance, response: {content, arguments}}}]}}`
  per line;
* labels in the official `*-labels.jsonl` shape: one JSON list per debate, one
  object per user turn, `{quantity, quality, relation, manner}` each 0, 1 or null.

A "user turn" is what the official Sub-Task 2 evaluator scores: a user message
and the system reply to it. Debates and labels are aligned by position, as
the evaluator aligns them. The data is research-only: read it from where the
user keeps it, never bundle it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from engines.datasets import DataFormatError, json_lines

GRICE_METRICS = ("quantity", "quality", "relation", "manner")
Role = Literal["user", "assistant"]
TurnLabels = dict[str, int | None]  # metric -> 1 (yes), 0 (no) or None (unlabelled)


@dataclass(frozen=True)
class RadArgument:
    id: str
    text: str
    original: str | None = None  # "attacks" | "supports": the argument's real relation to its parent


@dataclass(frozen=True)
class RadMessage:
    role: Role
    content: str
    arguments: tuple[RadArgument, ...] = ()


@dataclass(frozen=True)
class RadUserTurn:
    """A user message and the system reply to it, with everything said before."""

    debate_id: str
    index: int  # 0-based user turn within the debate
    history: tuple[RadMessage, ...]  # messages before the user message
    user: str
    reply: str
    arguments: tuple[RadArgument, ...]  # what the system retrieved for the reply

    @property
    def dialogue(self) -> list[tuple[str, str]]:
        """(role, text) of every message up to and including the user message."""
        return [(m.role, m.content) for m in self.history] + [("user", self.user)]


@dataclass(frozen=True)
class RadDebate:
    id: str
    claim: str
    messages: tuple[RadMessage, ...]
    line: int  # where the debate is in its file

    def user_turns(self) -> list[RadUserTurn]:
        """Each user message with its reply; a trailing unanswered user message is not a turn."""
        turns = []
        for position in range(1, len(self.messages), 2):
            user, reply = self.messages[position - 1], self.messages[position]
            turns.append(
                RadUserTurn(
                    debate_id=self.id,
                    index=len(turns),
                    history=self.messages[: position - 1],
                    user=user.content,
                    reply=reply.content,
                    arguments=reply.arguments,
                )
            )
        return turns


class _Line:
    """Field access into one JSON line that names the file, line and field path on failure."""

    def __init__(self, path: Path, number: int):
        self.path, self.number = path, number

    def fail(self, field: str, problem: str) -> DataFormatError:
        return DataFormatError(self.path, self.number, field, problem)

    def get(self, obj: Any, key: str, where: str, kind: type | tuple[type, ...], *, nullable: bool = False) -> Any:
        field = f"{where}.{key}" if where else key
        if not isinstance(obj, dict):
            raise self.fail(where or "(line)", f"expected an object, got {type(obj).__name__}")
        if key not in obj:
            raise self.fail(field, "missing")
        value = obj[key]
        if value is None and nullable:
            return None
        if not isinstance(value, kind):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise self.fail(field, f"expected {names}, got {type(value).__name__}")
        return value

    def arguments(self, obj: dict, key: str, where: str) -> tuple[RadArgument, ...]:
        items = self.get(obj, key, where, list, nullable=True) or []
        parsed = []
        for index, item in enumerate(items):
            at = f"{where}.{key}[{index}]" if where else f"{key}[{index}]"
            original = item.get("original") if isinstance(item, dict) else None
            parsed.append(
                RadArgument(
                    id=str(self.get(item, "id", at, (str, int))),
                    text=self.get(item, "text", at, str),
                    original=original if isinstance(original, str) else None,
                )
            )
        return tuple(parsed)


def _debate_from_line(line: _Line, record: Any) -> RadDebate:
    if isinstance(record, dict) and "simulation" in record:
        return _genirsim_debate(line, record)
    debate_id = str(line.get(record, "id", "", (str, int)))
    claim = line.get(record, "claim", "", str)
    messages = []
    for index, item in enumerate(line.get(record, "simulated_debate", "", list)):
        at = f"simulated_debate[{index}]"
        role = line.get(item, "role", at, str)
        expected = "user" if index % 2 == 0 else "assistant"
        if role != expected:
            raise line.fail(f"{at}.role", f"expected {expected!r} (user and assistant alternate), got {role!r}")
        content = line.get(item, "content", at, str)
        arguments = line.arguments(item, "arguments", at) if role == "assistant" else ()
        messages.append(RadMessage(role, content, arguments))
    return RadDebate(debate_id, claim, tuple(messages), line.number)


def _genirsim_debate(line: _Line, record: dict) -> RadDebate:
    simulation = line.get(record, "simulation", "", dict)
    configuration = simulation.get("configuration") if isinstance(simulation.get("configuration"), dict) else {}
    topic = configuration.get("topic") if isinstance(configuration.get("topic"), dict) else {}
    claim = topic.get("description") if isinstance(topic.get("description"), str) else ""
    messages = []
    for index, turn in enumerate(line.get(simulation, "userTurns", "simulation", list)):
        at = f"simulation.userTurns[{index}]"
        messages.append(RadMessage("user", line.get(turn, "utterance", at, str)))
        system = line.get(turn, "systemResponse", at, dict)
        reply = line.get(system, "utterance", f"{at}.systemResponse", str)
        response = line.get(system, "response", f"{at}.systemResponse", dict)
        arguments = line.arguments(response, "arguments", f"{at}.systemResponse.response")
        messages.append(RadMessage("assistant", reply, arguments))
    # GenIRSim records carry no id: the line number identifies the simulation in its file.
    return RadDebate(f"{line.path.name.split('.')[0]}:{line.number}", claim, tuple(messages), line.number)


def read_rad_debates(path: Path | str, limit: int | None = None) -> list[RadDebate]:
    """Debates of a debates file or a GenIRSim run file (plain or .gz), in file order."""
    path = Path(path)
    debates: list[RadDebate] = []
    seen: dict[str, int] = {}
    for number, record in json_lines(path):
        if limit is not None and len(debates) >= limit:
            break
        debate = _debate_from_line(_Line(path, number), record)
        if debate.id in seen:
            raise DataFormatError(path, number, "id", f"{debate.id!r} already on line {seen[debate.id]}")
        seen[debate.id] = number
        debates.append(debate)
    if not debates:
        raise DataFormatError(path, None, None, "no debates in the file")
    return debates


def read_rad_labels(path: Path | str) -> list[tuple[int, list[TurnLabels]]]:
    """(line number, per-turn labels) for each debate; a missing metric is unlabelled (None)."""
    path = Path(path)
    debates = []
    for number, record in json_lines(path):
        if not isinstance(record, list):
            raise DataFormatError(path, number, None, f"expected a list of turns, got {type(record).__name__}")
        turns = []
        for index, turn in enumerate(record):
            if not isinstance(turn, dict):
                raise DataFormatError(path, number, f"[{index}]", f"expected an object, got {type(turn).__name__}")
            labels: TurnLabels = {}
            for metric in GRICE_METRICS:
                value = turn.get(metric)
                if value is not None and (isinstance(value, bool) or value not in (0, 1)):
                    raise DataFormatError(path, number, f"[{index}].{metric}", f"expected 0, 1 or null, got {value!r}")
                labels[metric] = value
            turns.append(labels)
        debates.append((number, turns))
    if not debates:
        raise DataFormatError(path, None, None, "no labelled debates in the file")
    return debates


def align_labels(
    debates: list[RadDebate], labels: list[tuple[int, list[TurnLabels]]], labels_path: Path | str
) -> dict[tuple[str, int], TurnLabels]:
    """Labels per (debate id, user turn), matched by position like the official evaluator.

    Extra label lines (e.g. with a limited run) are ignored; too few lines or a
    turn count that differs is an error naming the labels line.
    """
    if len(labels) < len(debates):
        raise DataFormatError(
            labels_path, None, None, f"{len(labels)} labelled debates for {len(debates)} debates"
        )
    aligned = {}
    for debate, (number, turns) in zip(debates, labels):
        expected = len(debate.user_turns())
        if len(turns) != expected:
            raise DataFormatError(
                labels_path, number, None,
                f"{len(turns)} labelled turns, but debate {debate.id!r} has {expected} user turns",
            )
        for index, turn in enumerate(turns):
            aligned[(debate.id, index)] = turn
    return aligned
