"""The words of the screens: plain names for strategies, methods and sources, and the glossary.

Short codes (BEST, Analyzer5, mad, ibm, …) stay what the CLI, the store and exports use; a
screen shows the title next to or instead of the code. Definitions that the engines already
state (the Grice questions, the component label definitions, the opponent levels) are read
from there, never restated.
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


@dataclass(frozen=True)
class VariantName:
    """A judge variant's plain names: `title` wherever a name is shown in full, `short` (at most
    SHORT_CHARS) on a narrow card or table cell, beside the profile."""

    title: str
    short: str
    definition: str


SHORT_CHARS = 10
# Per task: one code can mean different things in two tasks (pairwise `cot` is not components `cot`).
VARIANT_NAMES: dict[str, dict[str, VariantName]] = {
    "pairwise": {
        "zero": VariantName("Zero-shot", "Zero-shot", "the judge compares the two arguments with no example"),
        "few": VariantName("Few-shot", "Few-shot", "judged example pairs come before the pair"),
        "cot": VariantName("Chain of thought", "Reasoning", "the judge reasons step by step, then picks A, B or Tie"),
    },
    "grice": {
        "ZSL": VariantName("Zero-shot", "Zero-shot", "the judge answers each maxim's question with no example"),
        "FSL1": VariantName("Few-shot (yes first)", "Few, yes 1", "one example answered yes, then one answered "
                            "no, before the question"),
        "FSL2": VariantName("Few-shot (no first)", "Few, no 1", "one example answered no, then one answered yes, "
                            "before the question"),
        "Analyzer1": VariantName("Analyzer (1 example)", "Analyzer 1", "the judge first derives reasons for yes "
                                 "and for no from 1 example of each, then answers"),
        "Analyzer3": VariantName("Analyzer (3 examples)", "Analyzer 3",
                                 "as Analyzer (1 example), from 3 examples of each answer"),
        "Analyzer5": VariantName("Analyzer (5 examples)", "Analyzer 5",
                                 "as Analyzer (1 example), from 5 examples of each answer"),
        "BEST": VariantName("Best per maxim", "Best mix", "the best method of each maxim: Zero-shot for relation, "
                            "Analyzer (5 examples) for quality, Analyzer (1 example) for manner and quantity"),
    },
    "components": {
        "vanilla": VariantName("Direct", "Direct", "one constrained call picks the label"),
        "cot": VariantName("Chain of thought", "Reasoning", "the model reasons step by step, then picks the label"),
        "smart": VariantName("Judge's rules", "Rules", "the judge's definitions and criterion without a debate"),
        "mad": VariantName("Multi-agent debate", "Debate", "a manager proposes two labels, a proponent and an "
                           "opponent debate them for two rounds, a judge decides (MAD-ACC)"),
    },
    "critiques": {
        "simple": VariantName("Simple prompt", "Simple", "the judge rates the critique overall only"),
        "rubric": VariantName("Full rubric", "Rubric", "the judge rates all seven dimensions from their definitions"),
    },
    "inspire": {
        "inspire": VariantName("InspireScore", "Inspire", "six dimensions of a debate turn, logic and facts checked"),
    },
}
VARIANT_SECTIONS = {  # the glossary's section of each task's variants
    "pairwise": "Pairwise prompts (judge names)",
    "grice": "Grice strategies (judge names)",
    "components": "Component methods",
    "critiques": "Critique prompts (judge names)",
    "inspire": "InspireScore (judge names)",
}
SOURCE_TITLES: dict[str, str] = {
    "ibm": "IBM ArgQ-30k topics (bundled)",
    "webis": "Webis-ArgQuality-20 topics (bundled)",
    "touche-cmv": "Touché RAD ChangeMyView claims",
}


def variant_name(task: str, code: str) -> VariantName:
    """The names of a task's variant; the code itself for a variant the glossary does not know."""
    return VARIANT_NAMES.get(task, {}).get(code) or VariantName(code, code, "")


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
    """A stored judge's name (`model@profile variant [options] [#digest]`) in its parts; its variant
    is the code, perhaps qualified ("few/runs3@t1": the pairwise mode, "mad/seed2")."""

    task: str
    backend: str  # model@profile
    variant: str
    rest: str = ""  # what follows the variant: a Grice example pool, an options digest

    @classmethod
    def parse(cls, task: str, name: str) -> JudgeName:
        backend, _, after = name.partition(" ")
        variant, _, rest = after.partition(" ")
        return cls(task, backend, variant, rest)

    @property
    def code(self) -> str:
        return self.variant.partition("/")[0]

    @property
    def title(self) -> str:
        """The whole name with the variant's plain name beside it: `m@p Zero-shot (zero/runs3@t1) #ab12`."""
        title = variant_title(self.task, self.code)
        variant = self.variant if title == self.code else f"{title} ({self.variant})"
        return " ".join(part for part in (self.backend, variant, self.rest) if part)

    @property
    def short_variant(self) -> str:
        """The variant's short form and what tells judges of one variant apart: `Zero-shot runs3@t1 #ab12`."""
        qualifier = self.variant.partition("/")[2]
        return " ".join(part for part in (variant_short(self.task, self.code), qualifier, self.rest) if part)


def judge_title(task: str, name: str) -> str:
    """A stored judge's full name with its variant's plain name beside the code."""
    return JudgeName.parse(task, name).title


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


def glossary() -> list[GlossaryEntry]:
    entries = [
        GlossaryEntry("Grice maxims (judged on every bot reply)", maxim_title(metric), QUESTIONS[metric].question)
        for metric in METRICS
    ]
    entries.append(GlossaryEntry(
        "Grice maxims (judged on every bot reply)", "P(yes)",
        "how likely the judge answers yes (from its token probabilities or its votes); yes from 0.50",
    ))
    entries += [
        GlossaryEntry(VARIANT_SECTIONS[task], f"{name.title} — {code}", name.definition)
        for task, names in VARIANT_NAMES.items() for code, name in names.items()
    ]
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
