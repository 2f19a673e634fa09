"""Grice judgments of a bot reply: one line under the reply, and the Grice tab's panel (`GricePanel`),
told what to show by its typed message."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from engines.debate.records import GriceRecord
from engines.grice.questions import METRICS, QUESTIONS
from screens.glossary import grice_strategy_title, maxim_title

ANSWER_STYLES = {"yes": "green", "no": "red"}  # an invalid answer is yellow


def grice_line(result: GriceRecord | None) -> Text:
    """`Grice: informative? yes 0.80  truthful? no 0.30 …` (P(yes) dim), or that judging runs."""
    if result is None or not result.metrics:
        return Text("Grice: judging…", style="dim")
    text = Text("Grice: ", style="bold")
    for metric, judgment in result.metrics.items():
        text.append(f"{QUESTIONS[metric].maxim}? ", style="bold")
        text.append(judgment.answer or "invalid", style=ANSWER_STYLES.get(judgment.answer, "yellow"))
        if judgment.p_yes is not None:
            text.append(f" {judgment.p_yes:.2f}", style="dim")
        text.append("  ")
    return text


def grice_panel(result: GriceRecord | None, error: str | None, show_questions: bool, questions_key: str) -> RenderableType:
    """Per maxim: the answer, P(yes), the strategy and its rationale; with `show_questions`, the
    question asked, also of maxims not judged yet."""
    hint = Text(f"{questions_key} {'hides' if show_questions else 'shows'} the question behind each answer",
                style="dim")
    if error:
        return Text(f"No reply to judge: {error}", style="red")
    metrics = result.metrics if result is not None else {}
    if not metrics and not show_questions:
        return Group(Text("Judging starts when the reply is complete.", style="dim"), hint)
    parts: list[Text] = []
    for metric in METRICS:
        judgment = metrics.get(metric)
        if judgment is None and not show_questions:
            continue
        head = Text(maxim_title(metric), style="bold")
        if judgment is None:
            head.append("  not judged yet", style="dim")
        else:
            head.append(f"  {judgment.answer or 'invalid'}")
            head.append(f"  P(yes) {judgment.p_yes:.2f}" if judgment.p_yes is not None else "", style="dim")
            head.append(f"  by {grice_strategy_title(judgment.method)}", style="dim")
        parts.append(head)
        if show_questions:
            parts.append(Text(QUESTIONS[metric].question, style="cyan"))
        if judgment is not None:
            parts.append(Text(judgment.rationale or judgment.error or "", style="italic"))
        parts.append(Text(""))
    return Group(*parts, hint)


class GricePanel(Static):
    """The Grice tab: the judgment of the reply in view, with or without the questions behind it."""

    class Show(Message, bubble=False):
        """Show this reply's judgment (None while not judged), why it has no reply (`error`), or why it
        is not judged at all (`judging_off`)."""

        def __init__(self, result: GriceRecord | None, error: str | None, judging_off: str = "") -> None:
            super().__init__()
            self.result, self.error, self.judging_off = result, error, judging_off

    show_questions: reactive[bool] = reactive(False, init=False)

    def __init__(self, questions_key: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.questions_key = questions_key
        self._shown = GricePanel.Show(None, None)

    def on_grice_panel_show(self, message: Show) -> None:
        self._shown = message
        self._render_panel()

    def watch_show_questions(self) -> None:
        self._render_panel()

    def _render_panel(self) -> None:
        shown = self._shown
        self.update(
            Text(f"Not judged: {shown.judging_off}.", style="yellow") if shown.judging_off
            else grice_panel(shown.result, shown.error, self.show_questions, self.questions_key)
        )
