"""The Rating screen's dialogs: one line of text, and the history of a critique's ratings."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from store.critiques import DIMENSIONS, RatingView


class TextPrompt(ModalScreen[str | None]):
    """One line of text (a rater name, a reason, a note); Enter submits, Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question: str, value: str = "", *, required: bool = True, placeholder: str = "") -> None:
        super().__init__()
        self.question, self.value, self.required, self.placeholder = question, value, required, placeholder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question, markup=False)
            yield Input(self.value, placeholder=self.placeholder, id="prompt-input")

    @on(Input.Submitted)
    def submit(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if self.required and not text:
            self.notify("This cannot be empty.", severity="warning")
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)


def history_text(history: list[RatingView]) -> Text:
    text = Text()
    for number, rating in enumerate(history):
        title = "first rating" if number == 0 else f"revision {number}"
        text.append(f"{title}  {rating.created_at:%Y-%m-%d %H:%M} UTC\n", style="bold")
        if rating.reason:
            text.append(f"reason: {rating.reason}\n", style="italic")
        text.append("  ".join(f"{name} {rating.values[name]:.2f}" for name in DIMENSIONS
                              if rating.values[name] is not None) + "\n")
        if rating.note:
            text.append(f"note: {rating.note}\n", style="dim")
        text.append("\n")
    return text


class HistoryView(ModalScreen[None]):
    """The rater's ratings of one critique: the first, then each revision with its reason."""

    BINDINGS = [Binding("escape,h,enter", "dismiss_view", "Close")]

    def __init__(self, history: list[RatingView]) -> None:
        super().__init__()
        self.history = history

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(history_text(self.history) or "Not rated yet.")

    def action_dismiss_view(self) -> None:
        self.dismiss(None)
