"""The words of the screens: plain names for strategies, methods and sources, and the glossary.

Short codes (BEST, Analyzer5, mad, ibm, …) stay what the CLI, the store and exports use; a
screen shows the title next to or instead of the code. Definitions that the engines already
state (the Grice questions, the component label definitions, the opponent levels, each task's
variant names) are read from there, never restated: a task in the registry is in the glossary.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from engines.components.prompts import LABEL_DEFINITIONS
from engines.components.types import LABELS
from engines.debate.levels import LEVELS
from engines.grice.questions import METRICS, QUESTIONS
from engines.judging import task as registry
from engines.judging.task import Task, UnknownTask, VariantName
from engines.judging.verdict import JudgeId


SOURCE_TITLES: dict[str, str] = {
    "ibm": "IBM ArgQ-30k topics (bundled)",
    "webis": "Webis-ArgQuality-20 topics (bundled)",
    "touche-cmv": "Touché RAD ChangeMyView claims",
}


def variant_name(task: str, code: str) -> VariantName:
    """The names a task declares for its variant; the code itself for a variant (or task) it does not name."""
    try:
        found = registry.task(task)
    except UnknownTask:
        found = None
    return found.variant_name(code) if found is not None else VariantName(code, code, "")


def variant_title(task: str, code: str) -> str:
    return variant_name(task, code).title


def variant_short(task: str, code: str) -> str:
    return variant_name(task, code).short


def titled_variant(task: str, code: str) -> str:
    """`Zero-shot (ZSL)`: the plain name with the code the CLI uses; the code alone when it has no title."""
    title = variant_title(task, code)
    return code if title == code else f"{title} ({code})"


def grice_strategy_title(code: str) -> str:
    return variant_title("grice", code)


def component_method_title(code: str) -> str:
    return variant_title("components", code)


@dataclass(frozen=True)
class JudgeName:
    """How a stored judge is shown, from its structured identity: `model@profile variant [pool] [#digest]`.
    The variant is its code, perhaps qualified ("few/runs3@t1": the pairwise mode, "mad/seed2"); its
    named params (a Grice example pool) and the digest tell judges of one code apart."""

    task: str
    judge: JudgeId

    @property
    def backend(self) -> str:
        return f"{self.judge.model}@{self.judge.profile}"

    @property
    def variant(self) -> str:
        """The code with its qualifier, without the named params."""
        return self.judge.variant_parts.qualified

    @property
    def rest(self) -> str:
        digest = f"#{self.judge.digest}" if self.judge.digest else ""
        return " ".join(part for part in (self.judge.variant_parts.named, digest) if part)

    @property
    def code(self) -> str:
        return self.judge.variant_parts.code

    @property
    def title(self) -> str:
        """The whole name with the variant's plain name beside it: `m@p Zero-shot (zero/runs3@t1) #ab12`."""
        title = variant_title(self.task, self.code)
        variant = self.variant if title == self.code else f"{title} ({self.variant})"
        return " ".join(part for part in (self.backend, variant, self.rest) if part)

    @property
    def short_variant(self) -> str:
        """The variant's short form and what tells judges of one variant apart: `Zero-shot runs3@t1 #ab12`."""
        qualifier = self.judge.variant_parts.qualifier
        return " ".join(part for part in (variant_short(self.task, self.code), qualifier, self.rest) if part)


def judge_title(task: str, judge: JudgeId) -> str:
    """A stored judge's full name with its variant's plain name beside the code."""
    return JudgeName(task, judge).title


def source_title(code: str) -> str:
    return SOURCE_TITLES.get(code, code)


def maxim_title(metric: str) -> str:
    """A maxim with the quality it asks of a reply, e.g. "Quantity (informative)"."""
    question = QUESTIONS[metric]
    return f"{question.dimension} ({question.maxim})"


def component_label_definitions() -> dict[str, str]:
    """The label definitions as the classifier's prompt states them."""
    return {label: LABEL_DEFINITIONS[label] for label in LABELS}


@dataclass(frozen=True)
class GlossaryEntry:
    section: str
    term: str
    definition: str


def variant_entries(task: Task) -> list[GlossaryEntry]:
    """A task's variants as the glossary lists them, under the heading the task gives them."""
    section = task.variant_section
    entries = []
    for code in task.variants():
        name = variant_name(task.name, code)
        term = code if name.title == code else f"{name.title} — {code}"
        entries.append(GlossaryEntry(section, term, name.definition or f"a {task.variant_flag} of this task"))
    return entries


def glossary() -> list[GlossaryEntry]:
    entries = [
        GlossaryEntry("Grice maxims (judged on every bot reply)", maxim_title(metric), QUESTIONS[metric].question)
        for metric in METRICS
    ]
    entries.append(GlossaryEntry(
        "Grice maxims (judged on every bot reply)", "P(yes)",
        "how likely the judge answers yes (from its token probabilities or its votes); yes from 0.50",
    ))
    for task in registry.tasks():
        entries += variant_entries(task)
    entries += [
        GlossaryEntry("Argument component labels", label, definition)
        for label, definition in component_label_definitions().items()
    ]
    entries += [
        GlossaryEntry("Opponent levels", f"{level.number} {level.name}", level.description) for level in LEVELS
    ]
    entries += [
        GlossaryEntry("Claim sources (tags in the claim list)", code, title) for code, title in SOURCE_TITLES.items()
    ]
    return entries


def glossary_text() -> Text:
    text = Text()
    section = None
    for entry in glossary():
        if entry.section != section:
            section = entry.section
            text.append(f"\n{section}\n", style="bold underline")
        text.append(f"{entry.term}: ", style="bold")
        text.append(f"{entry.definition}\n")
    return text


class GlossaryScreen(Screen):
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back")]

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="glossary-scroll"):  # focused, so the arrow keys and PgUp/PgDn scroll it
            yield Static(glossary_text(), id="glossary")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Glossary"
        self.query_one("#glossary-scroll").focus()
