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


def grice_line(result: GriceRecord | None, failure: str = "", seconds: float | None = None) -> Text:
    """`Grice: informative? yes 0.80  truthful? no 0.30 …` (P(yes) dim), each maxim as it is judged; while
    some are still judged, led by how many are done and the `seconds` the judging has taken so far
    (`Grice 2 of 4 · 40 s: …`; None: none is judged now); or why the judging failed."""
    if failure:
        return Text(f"Grice: judging failed: {failure}", style="red")
    judged = result.metrics if result is not None else {}
    done = sum(metric in judged for metric in METRICS)
    text = Text("Grice: ", style="bold") if done == len(METRICS) else Text.assemble(
        (f"Grice {done} of {len(METRICS)}", "bold"), (f" · {seconds:.0f} s" if seconds is not None else "", "dim"),
        ": " if done else "")
    for metric in METRICS:
        judgment = judged.get(metric)
        if judgment is None:
            continue
        text.append(f"{QUESTIONS[metric].maxim}? ", style="bold")
        text.append(judgment.answer or "invalid", style=ANSWER_STYLES.get(judgment.answer, "yellow"))
        if judgment.p_yes is not None:
            text.append(f" {judgment.p_yes:.2f}", style="dim")
        text.append("  ")
    return text


def grice_panel(
    result: GriceRecord | None, error: str | None, failure: str, show_questions: bool, questions_key: str
) -> RenderableType:
    """Per maxim: the answer, P(yes), the strategy and its rationale, as each is judged; with
    `show_questions`, the question asked, also of maxims not judged yet."""
    hint = Text(f"{questions_key} {'hides' if show_questions else 'shows'} the question behind each answer",
                style="dim")
    if error:
        return Text(f"No reply to judge: {error}", style="red")
    metrics = result.metrics if result is not None else {}
    judging = result is not None and not failure  # started, not failed: the maxims not judged yet are running
    if not metrics and not show_questions and not judging:
        return Group(Text(f"Judging failed: {failure}", style="red") if failure
                     else Text("Judging starts when the reply is complete.", style="dim"), hint)
    parts: list[Text] = [Text(f"Judging failed: {failure}", style="red"), Text("")] if failure else []
    for metric in METRICS:
        judgment = metrics.get(metric)
        if judgment is None and not show_questions and not judging:
            continue
        head = Text(maxim_title(metric), style="bold")
        if judgment is None:
            head.append("  judging…" if judging else "  not judged yet", style="dim")
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
    """The Grice tab: the judgment of the reply in view, maxim by maxim as they are judged, with or
    without the questions behind them."""

    class Show(Message, bubble=False):
        """Show this reply's judgment (None while not judged, some maxims while they are judged), why it has
        no reply (`error`), why its judging failed (`failure`), or why it is not judged at all (`judging_off`)."""

        def __init__(self, result: GriceRecord | None, error: str | None, failure: str = "",
                     judging_off: str = "") -> None:
            super().__init__()
            self.result, self.error, self.failure, self.judging_off = result, error, failure, judging_off

    result: reactive[GriceRecord | None] = reactive(None, init=False)
    error: reactive[str | None] = reactive(None, init=False)
    failure: reactive[str] = reactive("", init=False)
    judging_off: reactive[str] = reactive("", init=False)
    show_questions: reactive[bool] = reactive(False, init=False)

    def __init__(self, questions_key: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.questions_key = questions_key

    def on_mount(self) -> None:
        self._render_panel()

    def on_grice_panel_show(self, message: Show) -> None:
        self.result, self.error, self.failure, self.judging_off = (
            message.result, message.error, message.failure, message.judging_off)

    def watch_result(self) -> None:
        self._render_panel()

    def watch_error(self) -> None:
        self._render_panel()

    def watch_failure(self) -> None:
        self._render_panel()

    def watch_judging_off(self) -> None:
        self._render_panel()

    def watch_show_questions(self) -> None:
        self._render_panel()

    def _render_panel(self) -> None:
        self.update(
            Text(f"Not judged: {self.judging_off}.", style="yellow") if self.judging_off
            else grice_panel(self.result, self.error, self.failure, self.show_questions, self.questions_key)
        )
