"""The Parts tab: the argument components of the student message in view, each openable to its
debate transcript, or why there are none (yet)."""

from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from engines.debate.records import ComponentRecord
from screens.widgets.chips import label_chip
from store.debates import TurnState

WAITING = {TurnState.RUNNING: "labelling…", TurnState.FAILED: "labelling failed"}  # else: cancelled


class ComponentList(OptionList):
    """One option per component (its label's chip and its text), told what to list by its typed message."""

    class Show(Message, bubble=False):
        """List these components (None: not labelled), the message's labelling `state`, and why it is not
        labelled at all (`judging_off`)."""

        def __init__(
            self, components: Sequence[ComponentRecord] | None, state: TurnState, judging_off: str = ""
        ) -> None:
            super().__init__()
            self.components = None if components is None else tuple(components)
            self.state, self.judging_off = state, judging_off

    components: reactive[tuple[ComponentRecord, ...] | None] = reactive(None, init=False)
    labelling: reactive[TurnState] = reactive(TurnState.RUNNING, init=False)
    judging_off: reactive[str] = reactive("", init=False)

    def on_component_list_show(self, message: Show) -> None:
        self.components, self.labelling, self.judging_off = message.components, message.state, message.judging_off

    def watch_components(self) -> None:
        self._list()

    def watch_labelling(self) -> None:
        self._list()

    def watch_judging_off(self) -> None:
        self._list()

    def _list(self) -> None:
        self.clear_options()
        for index, component in enumerate(self.components or ()):
            self.add_option(Option(Text.assemble(label_chip(component.label), " ", component.span.text), id=str(index)))
        if self.judging_off:
            self.add_option(Option(f"no labels: {self.judging_off}", disabled=True))
        elif self.components is None:
            self.add_option(Option(WAITING.get(self.labelling, "labelling cancelled"), disabled=True))
