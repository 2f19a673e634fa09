"""The Steps tab of a bot turn: its steps with their state and time, the strategy card and the
search queries. Lines with short labels, wrapped, so nothing is cut at the side panel's 30 columns."""

from __future__ import annotations

import time
from typing import Sequence

from rich.console import Group, RenderableType
from rich.text import Text

from engines.debate.schemas import SearchPlan, StrategyAnalysis
from screens.debate_state import UNFINISHED, Message
from screens.widgets.transcript import spinner
from store.debates import TurnState


def strategy_fields(strategy: StrategyAnalysis) -> list[tuple[str, str, str]]:
    """(label, choice, justification) per field of step 1."""
    return [
        ("tone", strategy.tone, strategy.justification_tone),
        ("style", strategy.style, strategy.justification_style),
        ("approach", strategy.approach_strategy, strategy.justification_approach),
        ("arguments", strategy.type_of_arguments, strategy.justification_type),
        ("perspective", strategy.perspective, strategy.justification_perspective),
    ]


def strategy_card(strategy: StrategyAnalysis) -> Text:
    """`tone: Respectful` and its justification below, per field."""
    card = Text.assemble(("Strategy", "bold underline"))
    for label, choice, why in strategy_fields(strategy):
        card.append(f"\n{label}: ", style="bold")
        card.append(choice, style="bold")
        # a small model ends justifications mid-list ("Economical,"): the dangling separator goes
        why = why.strip().rstrip(",;:")
        if why:
            card.append(f"\n  {why}", style="italic")
    return card


def query_lines(plan: SearchPlan) -> Text:
    text = Text.assemble(("Queries", "bold underline"))
    for name, query in plan:  # SEARCH_1…SEARCH_3, unused ones None
        if query is not None:
            text.append(f"\n{name}: {query.field_to_look} ", style="bold")
            text.append(query.opponent_idea)
    return text


STEP_MARKS = {
    TurnState.DONE: ("✓", "green"), TurnState.FAILED: ("✗", "red"), TurnState.CANCELLED: ("■", "yellow"),
}


def steps_panel(message: Message, steps: Sequence[tuple[str, str]]) -> RenderableType:
    """The `steps` of the message's opponent level, then what they produced."""
    lines = Text()
    for step, title in steps:
        state = message.step_state.get(step, "")
        running = state == TurnState.RUNNING
        mark, style = (spinner(message.started), "yellow") if running else STEP_MARKS.get(state, ("·", "dim"))
        seconds = time.perf_counter() - message.step_started if running else message.step_seconds.get(step)
        lines.append(f"{mark} {title}", style=style)
        lines.append(f"  {seconds:.1f} s" if seconds is not None else "", style="dim")
        lines.append(f"  {state}\n" if state in UNFINISHED else "\n", style=style)
    parts: list[RenderableType] = [lines]
    if message.steps.strategy:
        parts.append(strategy_card(message.steps.strategy))
    if message.steps.queries:
        parts += [Text(""), query_lines(message.steps.queries)]
    return Group(*parts)
