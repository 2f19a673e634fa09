"""A question with a few answers, each a button with its own key; Esc answers None."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.events import Key
from textual.screen import ModalScreen
from textual.widgets import Button, Static


@dataclass(frozen=True)
class Answer:
    id: str  # what the dialog is dismissed with
    label: str
    key: str  # a Textual key name, e.g. "s"


class ChoiceDialog(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "dismiss_none", "Close")]

    def __init__(self, question: Text, answers: Sequence[Answer]):
        super().__init__()
        self.question = question
        self.answers = list(answers)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, id="question")
            with Horizontal(id="answers"):
                for number, answer in enumerate(self.answers):
                    yield Button(Text(f"{answer.label} ({answer.key})"), id=f"answer-{answer.id}",
                                 variant="primary" if number == 0 else "default")
            yield Static(Text("Esc closes.", style="dim"))

    def on_mount(self) -> None:
        self.query_one(Button).focus()

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id.removeprefix("answer-"))

    def on_key(self, event: Key) -> None:
        chosen = next((answer.id for answer in self.answers if answer.key == event.key), None)
        if chosen is not None:
            event.stop()
            self.dismiss(chosen)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
