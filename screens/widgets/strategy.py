"""The Steps tab of a bot turn (`StepsPanel`): its steps with their state and time, the strategy card and
the search queries. Lines with short labels, wrapped, so nothing is cut at the side panel's 30 columns."""

from __future__ import annotations

import time
from typing import Sequence

from rich.console import Group, RenderableType
from rich.text import Text
from textual.message import Message as PanelMessage
from textual.reactive import reactive
from textual.widgets import Static

from engines.debate.opponent import FALLBACK_STEP
from engines.debate.prompts import STRATEGY_ANALYSIS
from engines.debate.schemas import SearchPlan, StrategyAnalysis
from engines.judging.shown_text import shown
from screens.debate_state import UNFINISHED, Message
from screens.widgets.transcript import TICK_S, spinner
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
    """`tone: Respectful` and its justification below, per field, unless the model did not mean it
    (its prompt's list of choices read back)."""
    card = Text.assemble(("Strategy", "bold underline"))
    for label, choice, why in strategy_fields(strategy):
        card.append(f"\n{label}: ", style="bold")
        card.append(choice, style="bold")
        # a small model ends justifications mid-list ("Economical,"): the dangling separator goes
        why = shown(why.strip().rstrip(",;:"), STRATEGY_ANALYSIS)
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
    for step, title in ([*steps, FALLBACK_STEP] if message.fell_back else steps):
        state = message.step_state.get(step, "")
        running = state == TurnState.RUNNING
        mark, style = (spinner(message.started), "yellow") if running else STEP_MARKS.get(state, ("·", "dim"))
        seconds = time.perf_counter() - message.step_started if running else message.step_seconds.get(step)
        lines.append(f"{mark} {title}", style=style)
        lines.append(f"  {seconds:.1f} s" if seconds is not None else "", style="dim")
        lines.append(f"  {state.value}\n" if state in UNFINISHED else "\n", style=style)  # "failed", "cancelled"
    parts: list[RenderableType] = [lines]
    if message.steps.strategy:
        parts.append(strategy_card(message.steps.strategy))
    if message.steps.queries:
        parts += [Text(""), query_lines(message.steps.queries)]
    return Group(*parts)


class StepsPanel(Static):
    """The Steps tab: the bot reply in view, told by its typed message; its clocks move while a step runs."""

    class Show(PanelMessage, bubble=False):
        """Show this bot reply, whose opponent level has these `steps` (key, title)."""

        def __init__(self, reply: Message, steps: Sequence[tuple[str, str]]) -> None:
            super().__init__()
            self.reply, self.steps = reply, tuple(steps)

    # The reply changes in place as its steps run: every Show draws it again.
    reply: reactive[Message | None] = reactive(None, init=False, always_update=True)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.steps: tuple[tuple[str, str], ...] = ()

    def on_mount(self) -> None:
        self.set_interval(TICK_S, self._tick)

    def on_steps_panel_show(self, message: Show) -> None:
        self.steps = message.steps
        self.reply = message.reply

    def watch_reply(self) -> None:
        self._render_panel()

    def _tick(self) -> None:
        if self.reply is not None and self.reply.state == TurnState.RUNNING:
            self._render_panel()

    def _render_panel(self) -> None:
        self.update(steps_panel(self.reply, self.steps) if self.reply is not None else Text(""))
