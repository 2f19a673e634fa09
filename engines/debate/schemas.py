"""JSON shapes of the five steps. Steps 3–5 constrain argument fields to the exact
retrieved texts (a JSON-schema enum), so every selected argument maps to an id."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model

# Bounds keep a small model from rambling; the paper asks for brief justifications.
JUSTIFICATION = Field(max_length=300)
SELECTED_PER_QUERY = 3  # step 3 "selects the top three" of what one query retrieved

Tone = Literal["Neutral", "Respectful", "Assertive/Critical", "Inquisitive"]
Style = Literal["Academic", "Colloquial", "Socratic", "Logical", "Rhetorical"]
Approach = Literal["Comprehensive", "Focused", "Principled", "Free"]
ArgumentType = Literal["Logical", "Ethical", "Emotional", "Analogical"]
Perspective = Literal["Economic", "Ethical/Moral", "Scientific", "Practical/pragmatic", "Historical", "Cultural"]


class StrategyAnalysis(BaseModel):
    """Step 1: how to answer."""

    model_config = ConfigDict(extra="forbid")
    tone: Tone
    justification_tone: str = JUSTIFICATION
    style: Style
    justification_style: str = JUSTIFICATION
    approach_strategy: Approach
    justification_approach: str = JUSTIFICATION
    type_of_arguments: ArgumentType
    justification_type: str = JUSTIFICATION
    perspective: Perspective
    justification_perspective: str = JUSTIFICATION


class SearchQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    opponent_idea: str = Field(min_length=3, max_length=300)
    field_to_look: Literal["SUPPORT", "ATTACK"]
    justification: str = JUSTIFICATION


class SearchPlan(BaseModel):
    """Step 2: up to three ideas to search for."""

    model_config = ConfigDict(extra="forbid")
    SEARCH_1: SearchQuery
    SEARCH_2: SearchQuery | None = None
    SEARCH_3: SearchQuery | None = None

    def queries(self) -> list[SearchQuery]:
        return [q for q in (self.SEARCH_1, self.SEARCH_2, self.SEARCH_3) if q is not None]


class QuerySelection(BaseModel):
    """Step 3 for one query: the best three retrieved arguments (all of them when fewer were retrieved)."""

    arguments: list[str]
    justification: str


class FinalSelection(BaseModel):
    """Step 4: up to three arguments overall, with the aspect each answers."""

    aspect_argument_1: str
    retrieved_argument_1: str
    justification_argument_1: str
    aspect_argument_2: str | None = None
    retrieved_argument_2: str | None = None
    justification_argument_2: str | None = None
    aspect_argument_3: str | None = None
    retrieved_argument_3: str | None = None
    justification_argument_3: str | None = None

    def selected(self) -> list[tuple[str, str, str]]:
        """(aspect, argument text, justification) for each selected argument."""
        rows = []
        for i in (1, 2, 3):
            text = getattr(self, f"retrieved_argument_{i}")
            if text:
                rows.append((getattr(self, f"aspect_argument_{i}") or "", text,
                             getattr(self, f"justification_argument_{i}") or ""))
        return rows


class Reply(BaseModel):
    """Step 5: the answer and the arguments it used."""

    response: str
    justification: str
    arguments: list[str]


def _one_of(texts: list[str]):
    return Literal[tuple(dict.fromkeys(texts))]  # type: ignore[valid-type]


def _distinct(texts: list[str]) -> list[str]:
    # A JSON-schema grammar cannot forbid a repeat (uniqueItems is not enforced), and a small
    # model repeats often enough that rejecting one failed its turns twice over: a repeat is dropped.
    return list(dict.fromkeys(texts))


def query_selection_model(texts: list[str]) -> type[QuerySelection]:
    """Exactly three arguments of `texts` (all of them when there are fewer); a repeat counts once."""
    choices = list(dict.fromkeys(texts))
    count = min(SELECTED_PER_QUERY, len(choices))
    return create_model(
        "QuerySelection",
        __base__=QuerySelection,
        arguments=(
            Annotated[list[_one_of(choices)], AfterValidator(_distinct)], Field(min_length=count, max_length=count)
        ),
        justification=(str, JUSTIFICATION),
    )


def final_selection_model(aspects: list[str], texts: list[str]) -> type[FinalSelection]:
    aspect, text = _one_of(aspects), _one_of(texts)
    fields = {}
    for i in (1, 2, 3):
        required = i == 1
        fields[f"aspect_argument_{i}"] = (aspect if required else aspect | None, ... if required else None)
        fields[f"retrieved_argument_{i}"] = (text if required else text | None, ... if required else None)
        fields[f"justification_argument_{i}"] = (
            str if required else str | None, JUSTIFICATION if required else Field(default=None, max_length=300)
        )
    return create_model("FinalSelection", __base__=FinalSelection, **fields)


def reply_model(texts: list[str]) -> type[Reply]:
    return create_model(
        "Reply",
        __base__=Reply,
        # About 60 words; longer replies are regenerated or trimmed by the pipeline.
        response=(str, Field(min_length=1, max_length=450)),
        justification=(str, JUSTIFICATION),
        arguments=(list[_one_of(texts)], Field(min_length=1, max_length=3)),
    )
