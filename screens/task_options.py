"""A task's options as controls: the dialog in which the Arena sets what its judges answer with.

The controls are generated from the task's options model (`engines.judging.options`), as the
flags of `argtui eval <task>` are: a switch for an on/off option, a select for one of fixed
choices, a selection list for several, a text field for the rest (read back by the option
itself, so a bad entry is the same error as a bad flag).
"""

from __future__ import annotations

import argparse
from typing import Any, Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Select, SelectionList, Static, Switch

from engines.errors import ArgtuiError
from engines.judging.options import Option, TaskOptions


def option_control(option: Option, value: Any) -> Widget:
    """The control of `option`, showing `value`."""
    name = f"option-{option.name}"
    if option.control == "switch":
        return Switch(value=bool(value), id=name)
    if option.control == "select":
        return Select([(Text(choice), choice) for choice in option.choices or ()], value=value,
                      allow_blank=option.optional, compact=True, id=name)
    if option.control == "choices":
        return SelectionList[str](*((Text(c), c, c in (value or ())) for c in option.choices or ()), id=name)
    return Input(value=option.shown(value), placeholder=option.metavar or "unset", compact=True, id=name)


def control_value(option: Option, control: Widget) -> Any:
    """What the control holds, as the option's value; ArgumentTypeError for text it cannot read."""
    if isinstance(control, Switch):
        return control.value
    if isinstance(control, Select):
        return None if control.value is Select.NULL else control.value
    if isinstance(control, SelectionList):
        return list(control.selected)
    text = control.value.strip() if isinstance(control, Input) else ""
    if not text:
        return None if option.optional else option.default
    if option.kind == "many":
        return [option.parse(word) for word in text.split()]
    return option.parse(text)


class OptionsDialog(ModalScreen[TaskOptions | None]):
    """The options of `values` that change answers, as controls; dismissed with the new options
    (checked by the task's model) or None."""

    DEFAULT_CSS = """
    OptionsDialog { align: center middle; }
    OptionsDialog #dialog {
        width: 76; max-width: 100%; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    OptionsDialog #option-controls { height: auto; max-height: 16; }
    OptionsDialog SelectionList { height: auto; max-height: 5; }
    OptionsDialog .option-help { margin-bottom: 1; }
    OptionsDialog #options-error { height: auto; }
    OptionsDialog #option-buttons { height: 1; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("f10", "confirm", "Use these options")]

    def __init__(self, title: str, options: Sequence[Option], values: TaskOptions) -> None:
        super().__init__()
        self.dialog_title = title
        self.shown_options = tuple(options)
        self.values = values

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(f"Options of {self.dialog_title}: what the judges answer with"), classes="title")
            with VerticalScroll(id="option-controls"):
                if not self.shown_options:
                    yield Static("This task has no option that changes its answers.")
                for option in self.shown_options:
                    yield Label(Text(option.label, style="bold"))
                    yield option_control(option, getattr(self.values, option.name))
                    yield Static(Text(option.help, style="dim"), classes="option-help")
            yield Static(id="options-error")
            with Horizontal(id="option-buttons"):
                yield Button("Use (F10)", id="use", variant="primary", compact=True)
                yield Button("Cancel (esc)", id="cancel", compact=True)

    def chosen(self) -> TaskOptions:
        """The options the controls hold; ArgtuiError naming the first one that is not right."""
        changed = {}
        for option in self.shown_options:
            try:
                changed[option.name] = control_value(option, self.query_one(f"#option-{option.name}"))
            except argparse.ArgumentTypeError as exc:
                raise ArgtuiError(f"{option.label}: {exc}") from None
        return type(self.values).from_values({**self.values.model_dump(), **changed})

    def action_confirm(self) -> None:
        try:
            chosen = self.chosen()
        except ArgtuiError as exc:
            self.query_one("#options-error", Static).update(Text(str(exc), style="bold red"))
            return
        self.dismiss(chosen)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_confirm()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "use":
            self.action_confirm()
        else:
            self.action_cancel()
