"""Esc one level back: out of a selector or text field first, then off the screen."""

from __future__ import annotations

from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input, Select, SelectionList, TextArea

FIELDS = (Select, Input, TextArea, SelectionList)  # widgets that take letters or open a list of their own
TEXT_FIELDS = (Input, TextArea)
LEAVE_FIELD, BACK = "leave_field", "back"


def in_field(screen: Screen) -> bool:
    """Whether the focus is in a field (an opened Select's list counts as its Select)."""
    node = screen.focused
    while node is not None and node is not screen:
        if isinstance(node, FIELDS):
            return True
        node = node.parent
    return False


def typing(screen: Screen) -> bool:
    """Whether the letter keys go to the focused widget: a text field, or an opened selector's list
    (it searches as one types). A closed selector leaves them to the screen."""
    node = screen.focused
    while node is not None and node is not screen:
        if isinstance(node, TEXT_FIELDS) or (isinstance(node, Select) and node.expanded):
            return True
        node = node.parent
    return False


def back(screen: Screen) -> None:
    """Leave the field the focus is in (the screen's letter keys work again), else the screen."""
    if in_field(screen):
        screen.set_focus(None)
    else:
        screen.app.pop_screen()


def escape_bindings(field: str) -> list[Binding]:
    """Esc as two bindings, one in force at a time (`StepsBack.check_action`), so the footer says
    what Esc does now: `Leave <field>` while the focus is in one, then `Back`."""
    return [Binding("escape", LEAVE_FIELD, f"Leave {field}"), Binding("escape", BACK, "Back")]


class StepsBack(Screen):
    """A screen with `escape_bindings`: Esc leaves the field, then the screen."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == LEAVE_FIELD:
            return in_field(self)
        if action == BACK:
            return not in_field(self)
        return True

    def action_leave_field(self) -> None:
        self.set_focus(None)

    def action_back(self) -> None:
        self.app.pop_screen()
