"""A task's options as one typed model, and what every front end generates from it.

A task declares its options as a pydantic model deriving `TaskOptions`; each field carries an
`OptionInfo` (`Annotated[int, OptionInfo("…")]`): what it is for, its label, and what it changes.
From the model come the flags of `argtui eval <task>` (`Option.add_to`), the Arena's option
controls (`Option.control` names the kind; screens render it) and the options a task is handed:
an instance of the model, checked once (`TaskOptions.from_values`), never a parsed namespace.
"""

from __future__ import annotations

import argparse
import types
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, Mapping, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from engines.errors import ArgtuiError

PositiveCount = Annotated[int, Field(ge=1)]
"""A count of at least 1 (--limit, --votes, --candidates, …)."""

# items: which items a run judges; judge: changes the answers, a digest in the judge's identity when
# not at its default; named: changes the answers and the task's `judge_variant` names it; report:
# changes only the report; run: the options every batch run has.
Role = Literal["items", "judge", "named", "report", "run"]


@dataclass(frozen=True)
class OptionInfo:
    """What a model field is as an option, beside its name, type and default."""

    help: str
    label: str = ""  # a control's label (default: the name in words)
    metavar: str | None = None
    role: Role = "items"
    required: bool = False  # a batch run needs it (the Arena does not)


def _error_text(error: Any) -> str:
    kind, context = error["type"], error.get("ctx") or {}
    if kind == "greater_than_equal":
        return f"must be at least {context['ge']}"
    if kind == "less_than_equal":
        return f"must be at most {context['le']}"
    return str(error["msg"]).removeprefix("Value error, ")


def _without_none(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        kept = [arg for arg in get_args(annotation) if arg is not type(None)]
        return kept[0] if len(kept) == 1 else Union[tuple(kept)]
    return annotation


def _bare(annotation: Any) -> Any:
    return _bare(get_args(annotation)[0]) if get_origin(annotation) is Annotated else annotation


@dataclass(frozen=True)
class Option:
    """One option of a task's model: its flag, its control, how text becomes its value."""

    name: str
    info: OptionInfo
    annotation: Any  # the field's type, None and constraints included
    default: Any

    @property
    def help(self) -> str:
        return self.info.help

    @property
    def label(self) -> str:
        return self.info.label or self.name.replace("_", " ")

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def metavar(self) -> str | None:
        return self.info.metavar

    @property
    def required(self) -> bool:
        return self.info.required

    @property
    def judge_option(self) -> bool:
        """Changes the answers and `judge_variant` does not name it: a digest in the judge's identity."""
        return self.info.role == "judge"

    @property
    def report_option(self) -> bool:
        """Changes only the report: part of neither the judge nor the run."""
        return self.info.role == "report"

    @property
    def answers(self) -> bool:
        """Changes what a judge answers: the Arena offers it as a control."""
        return self.info.role in ("judge", "named")

    @cached_property
    def _element(self) -> Any:
        """The type of one value: the list's item for a `many` option, None left out."""
        bare = _without_none(self.annotation)
        return get_args(bare)[0] if get_origin(_bare(bare)) is list else bare

    @property
    def kind(self) -> str:
        """flag (on/off), many (one or more values) or value."""
        bare = _bare(_without_none(self.annotation))
        if bare is bool:
            return "flag"
        return "many" if get_origin(bare) is list else "value"

    @property
    def choices(self) -> tuple[str, ...] | None:
        element = _bare(self._element)
        return tuple(get_args(element)) if get_origin(element) is Literal else None

    @property
    def optional(self) -> bool:
        """None is a value: the option may be left unset."""
        return self.default is None

    @property
    def control(self) -> str:
        """How a screen shows it: switch (a flag), select (one choice), choices (several), text."""
        if self.kind == "flag":
            return "switch"
        if self.choices is not None:
            return "choices" if self.kind == "many" else "select"
        return "text"

    def parse(self, text: str) -> Any:
        """One value from its text (a flag's argument, a control's entry); ArgumentTypeError when it is
        none. Its constraints (at least 1, a probability) are the model's to check, as bad input."""
        return flag_type(_bare(self._element))(text)

    def shown(self, value: Any) -> str:
        """A value as its text: what `parse` reads back ("" for unset)."""
        if value is None:
            return ""
        if isinstance(value, (list, tuple)):
            return " ".join(self.shown(v) for v in value)
        return str(value)

    def add_to(self, parser: argparse.ArgumentParser, help: str | None = None) -> None:
        """The option as a flag of `parser`."""
        kwargs: dict[str, Any] = {"help": help or self.help, "dest": self.name}
        if self.kind == "flag":
            kwargs["action"] = "store_true"
        else:
            kwargs.update(default=self.default, required=self.required)
            if self.choices is not None:
                kwargs["choices"] = self.choices
            else:
                kwargs["type"] = self.parse
            if self.metavar:
                kwargs["metavar"] = self.metavar
            if self.kind == "many":
                kwargs["nargs"] = "+"
        parser.add_argument(self.flag, **kwargs)


class TaskOptions(BaseModel):
    """The options every batch run has; a task's own model derives from it and adds its own."""

    model_config = ConfigDict(extra="forbid")

    judge: Annotated[str | None, OptionInfo(
        "backend profile of the judge (default: the default profile)", metavar="NAME", role="run")] = None
    limit: Annotated[PositiveCount | None, OptionInfo("only the first N items", metavar="N", role="run")] = None
    seed: Annotated[int, OptionInfo("seed of sampling and item selection (default 0)", role="run")] = 0
    concurrency: Annotated[PositiveCount | None, OptionInfo(
        "items judged at once (default: what keeps the backend's slots busy)", metavar="N", role="run")] = None
    output: Annotated[Path | None, OptionInfo("write the reports as JSON", metavar="PATH", role="run")] = None
    variant: list[str] | None = None  # `argtui eval`: the variants the command runs, as given

    @classmethod
    def described(cls) -> tuple[Option, ...]:
        """Every field that is an option, the run's first."""
        found = []
        for name, field in cls.model_fields.items():
            info = next((m for m in field.metadata if isinstance(m, OptionInfo)), None)
            if info is not None:
                constraints = [m for m in field.metadata if not isinstance(m, OptionInfo)]
                annotation = Annotated[(field.annotation, *constraints)] if constraints else field.annotation
                found.append(Option(name, info, annotation, field.get_default(call_default_factory=True)))
        return tuple(found)

    @classmethod
    def task_options(cls) -> tuple[Option, ...]:
        """The task's own options (those of every run left out)."""
        return tuple(option for option in cls.described() if option.info.role != "run")

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> TaskOptions:
        """The options from values by field name, checked: a bad one is an error naming its flag."""
        try:
            return cls.model_validate(dict(values))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = "--" + str(error["loc"][0]).replace("_", "-") + " " if error["loc"] else ""
            raise ArgtuiError(f"{where}{_error_text(error)}") from None


def flag_type(annotation: Any) -> Callable[[str], Any]:
    """An argparse `type` reading a command's own flag as `annotation` (e.g. `PositiveCount` for
    `argtui index search --k`), its constraints checked, with the messages task options give."""
    adapter = TypeAdapter(annotation)

    def parse(text: str) -> Any:
        try:
            return adapter.validate_python(text)
        except ValidationError as exc:
            raise argparse.ArgumentTypeError(_error_text(exc.errors()[0])) from None

    return parse
