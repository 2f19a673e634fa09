"""The conversation's messages, and a component's debate transcript (why it got its label)."""

from __future__ import annotations

import time

from rich.console import Group, RenderableType
from rich.text import Text
from textual.widgets import Static

from engines.components.classifier import top_two
from engines.debate.records import ComponentRecord
from screens.debate_state import UNFINISHED, Message
from screens.glossary import component_method_title
from screens.widgets.chips import label_chip, labelled_text
from screens.widgets.distribution import distribution_bars
from screens.widgets.judgment import grice_line
from screens.widgets.labels import LABEL_COLOURS
from store.debates import TurnState

TICK_S = 0.125  # the spinner and the clocks of running work advance at this pace
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
RETRY_KEY = "Ctrl+R"
BAR_WIDTH = 10


def spinner(since: float) -> str:
    return SPINNER[int((time.perf_counter() - since) / TICK_S) % len(SPINNER)]


def components_text(content: str, components: list[ComponentRecord] | None) -> Text:
    """The message with each labelled component on its label's colour."""
    return labelled_text(content, [(c.span.start, c.span.end, c.label) for c in components or []])


class MessageView(Static, can_focus=True):
    """One message of the conversation. Focus it to see its details in the side panel."""

    def __init__(self, message: Message):
        super().__init__(classes=message.role)
        self.message = message
        self.changed()

    def changed(self) -> None:
        """Its message changed: its border tells a failed or cancelled turn, its text is redrawn."""
        for unfinished in UNFINISHED:
            self.set_class(self.message.role == "assistant" and self.message.state == unfinished, unfinished)
        self.refresh(layout=True)

    def render(self) -> RenderableType:
        m = self.message
        head = Text("You: " if m.role == "user" else "Bot: ", style="bold")
        if m.role == "user":
            body = components_text(m.content, m.components)
            tail = self._labelling_line()
            return Group(head + body, tail) if tail else head + body
        if m.state == TurnState.RUNNING:
            # A draft shows dimmed: the reply checks may still reject it.
            return Group(head + Text(m.content or "…", style="dim italic" if m.drafting else ""),
                         Text(f"{spinner(m.started)} {m.doing()} · turn {m.clock()} · Esc stops", style="dim"))
        if m.state == TurnState.FAILED:
            return head + Text(f"failed: {m.error} · {RETRY_KEY} runs the turn again", style="bold red")
        if m.state == TurnState.CANCELLED:
            took = f" after {m.turn.seconds:.0f} s" if m.turn is not None and m.turn.seconds else ""
            return head + Text(f"cancelled{took} · {RETRY_KEY} runs the turn again", style="yellow")
        parts = [head + Text(m.content)]
        fell_back = m.turn.fallback_from if m.turn is not None else None
        if fell_back is not None:
            parts.append(Text(f"(step {fell_back.step} failed: {fell_back.error}; "
                              "the best counter-argument from the base instead)", style="dim italic"))
        if m.turn is not None and m.turn.length_action:
            parts.append(Text(f"(reply over 60 words: {m.turn.length_action})", style="dim italic"))
        parts.append(Text(f"Grice: not judged, {m.judging_off}", style="dim") if m.judging_off
                     else grice_line(m.grice, m.grice_error, m.grice_seconds()))
        return Group(*parts)

    def _labelling_line(self) -> Text | None:
        m = self.message
        if m.judging_off:
            return Text(f"no labels: {m.judging_off}", style="dim")
        waits = m.labels_after_reply and m.reply is not None and m.reply.state == TurnState.RUNNING
        if m.state == TurnState.RUNNING and waits:
            return Text("components follow the reply", style="dim")
        if m.state == TurnState.RUNNING:
            done = len(m.components or [])
            return Text(f"{spinner(m.started)} Labels {done} of {m.components_total} · {m.clock()}", style="dim")
        if m.state == TurnState.FAILED:
            why = f": {m.status}" if m.status else ""
            return Text(f"labelling failed{why} · {RETRY_KEY} labels it again", style="yellow")
        if m.state == TurnState.CANCELLED:
            return Text(f"labelling cancelled · {RETRY_KEY} labels it again", style="yellow")
        return None


def label_origin(component: ComponentRecord) -> str | None:
    """How the final label came about, where its distribution puts another label first (None: it
    does not, or there is no label or distribution to compare)."""
    c = component
    if c.label is None or not c.distribution:
        return None
    first = top_two(c.distribution)[0]  # ties broken as the classifier breaks them
    if c.label == first:
        return None
    share = f"{c.distribution.get(first, 0.0):.0%}"
    if c.method != "mad":  # one classifier: its answer, the distribution read at the answer's first token
        return f"the model answered {c.label}, though its distribution put {first} first ({share})"
    origin = f"the Manager put {first} first ({share}); the final label is the Judge's verdict"
    argued = {turn.role: turn.label for turn in c.transcript if turn.label}
    if "proponent" not in argued or "opponent" not in argued:  # the debate is not stored
        return origin
    origin += f" after the Proponent argued for {argued['proponent']} and the Opponent for {argued['opponent']}"
    return origin if c.label in argued.values() else origin + ", a label neither argued for"


def component_transcript(component: ComponentRecord) -> list[Text]:
    """A component's label (and how it came about), its manager's distribution, the debate
    transcript and the judge's reason."""
    c = component
    origin = label_origin(c)
    lines = [
        Text.assemble(("Component: ", "bold"), c.span.text),
        Text.assemble(("Label: ", "bold"), label_chip(c.label), f" — {origin}" if origin else "",
                      f"  method: {component_method_title(c.method)}",
                      "  (the manager was sure: no debate)" if c.skipped else ""),
    ]
    if c.distribution:
        labels = sorted(c.distribution, key=lambda label: -c.distribution[label])
        title = "Manager distribution\n" if c.method == "mad" else "Distribution\n"  # one classifier's otherwise
        lines.append(Text.assemble((title, "bold"),
                                   distribution_bars(labels, c.distribution, BAR_WIDTH, LABEL_COLOURS)))
    for turn in c.transcript:
        role = turn.role.capitalize() + (f" ({turn.label})" if turn.label else "")
        lines.append(Text.assemble((f"{role}: ", "bold"), turn.text))
    if c.reason and all(turn.text != c.reason for turn in c.transcript):  # the judge's turn says it already
        lines.append(Text.assemble(("Why no debate: " if c.skipped else "Judge's reason: ", "bold"), c.reason))
    if c.raw and not c.label:
        lines.append(Text.assemble(("Raw output: ", "bold red"), c.raw))
    return lines
