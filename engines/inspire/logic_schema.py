"""What a model writes when it translates an argument into logic: derivations, each premises and
a conclusion in the formula syntax of `engines.inspire.logic`. Apart from the checker so that the
translation prompt can hold its examples as derivations without importing the solver."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, field_validator

from engines.judging.shown_text import without_labels
from engines.llm.budget import with_at_most
from engines.sentences import sentence_count

# Bounds on what the model writes: they cap the schema's longest answer, so max_tokens.
MAX_DERIVATIONS = 4
MAX_PREMISES = 4
FORMULA_MAX_CHARS = 160
TEXT_MAX_CHARS = 240

Formula = Annotated[str, Field(max_length=FORMULA_MAX_CHARS)]
# What a model writes before the step it quotes, after the schema's own field names.
STEP_LABELS = ("Premises", "Premise", "Conclusion", "Step", "Text")


class Derivation(BaseModel):
    """One step of an argument: what the model writes. `text` comes first in the schema so the
    model quotes the step before it formalises it."""

    text: str = Field("", max_length=TEXT_MAX_CHARS)  # the sentence(s) of the argument it formalises
    premises: list[Formula] = Field(max_length=MAX_PREMISES)
    conclusion: Formula

    @field_validator("text")
    @classmethod
    def _quoted(cls, text: str) -> str:
        """The step as the student wrote it: the Coach quotes it ("Premises: …" is not theirs)."""
        return without_labels(text, labels=STEP_LABELS)


class LogicTranslation(BaseModel):
    derivations: list[Derivation] = Field(max_length=MAX_DERIVATIONS)


def translation_schema(argument: str) -> type[LogicTranslation]:
    """The answer schema for translating `argument`: room for one derivation per sentence, up to
    `MAX_DERIVATIONS`. A step of an argument takes a sentence at least, and a small model fills
    what a schema allows: the embedded one wrote one derivation four times for a one-sentence
    message."""
    return with_at_most(LogicTranslation, "derivations", min(MAX_DERIVATIONS, sentence_count(argument)))
