"""Rating: an expert rates critiques of a position on seven dimensions, keyboard first.

The position and all its critiques are shown together; the selected critique
is rated dimension by dimension (digits set tenths, arrows fine steps; a
yes/no dimension such as single issue takes 0 or 1: digits 0–4 set 0, 5–9 set 1), Enter
confirms and commits at once; Backspace undoes the last value. Re-confirming a rated
critique is a revision and asks for a reason; the original rating stays. The source is
hidden unless the rater reveals it, and the reveal is recorded. Leaving (or quitting the
app) with values set but not confirmed asks first.

Every write to the store runs off the UI thread (`asyncio.to_thread` in a worker), so a
database that waits for a lock, or for a server, never freezes the keys. A write the store
refuses (the disk is full, the database is locked or gone) leaves what was typed on screen
with the reason, to confirm again with Enter.

The screen lays out and wires: the values live in `screens.rating_state`, the panes'
drawing in `screens.widgets.rubric`.
"""

from __future__ import annotations

import asyncio
import os

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from engines.critiques.demo import DEMO_PATH
from engines.critiques.files import import_critiques
from engines.errors import ArgtuiError
from screens.choice import Answer, ChoiceDialog
from screens.modes import Mode
from screens.rating_state import COARSE_STEP, FINE_STEP, Draft, RatingState
from screens.services import services
from screens.widgets.rating_dialogs import HistoryView, TextPrompt
from screens.widgets.rubric import RubricEditor, critique_list_text, editor_text, rubric_text, source_text
from store import StoreError
from store.critiques import DIMENSIONS, CritiqueRepository, CritiqueView, RatingView

RATER_ENV = "ARGTUI_RATER"
KEYS_HINT = (
    "0–9 tenths · = 1.0 · ←→ ±0.05\n"
    "single issue: 0–4 → 0, 5–9 → 1\n"
    "⇧←→ ±0.01 · ↑↓ dimension · ⌫ undo\n"
    "[ ] critique · { } position\n"
    "p position · PgUp/PgDn scroll\n"
    "h history · u rater · esc back"
)
KEPT = "your rating is kept — press Enter to retry"


class RatingScreen(Screen):
    AUTO_FOCUS = "#editor"
    BINDINGS = [
        Binding("escape", "back", "Back", show=False),
        Binding("up,k", "dimension(-1)", "Dim ↑", show=False),
        Binding("down,j", "dimension(1)", "Dim ↓", show=False),
        *(Binding(str(d), f"set_value({d / 10})", f"{d / 10:.1f}", show=False) for d in range(10)),
        Binding("equals_sign", "set_value(1.0)", "1.0", show=False),
        Binding("left", f"step({-COARSE_STEP})", "−0.05", show=False),
        Binding("right", f"step({COARSE_STEP})", "+0.05", show=False),
        Binding("shift+left", f"step({-FINE_STEP})", "−0.01", show=False),
        Binding("shift+right", f"step({FINE_STEP})", "+0.01", show=False),
        Binding("backspace", "undo", "Undo", show=False),
        Binding("enter", "confirm", "Confirm"),
        Binding("n", "next_unrated", "Unrated"),
        Binding("right_square_bracket", "critique(1)", "Next critique", show=False),
        Binding("left_square_bracket", "critique(-1)", "Previous critique", show=False),
        Binding("right_curly_bracket", "position(1)", "Next position", show=False),
        Binding("left_curly_bracket", "position(-1)", "Prev position", show=False),
        Binding("r", "toggle_rubric", "Rubric"),
        Binding("s", "reveal_source", "Source"),
        Binding("m", "note", "Note"),
        Binding("h", "history", "History", show=False),
        Binding("p", "toggle_position", "Position", show=False),
        Binding("pagedown", "scroll_text(1)", "Scroll down", show=False),
        Binding("pageup", "scroll_text(-1)", "Scroll up", show=False),
        Binding("u", "switch_rater", "Switch rater", show=False),
        Binding("d", "import_demo", "Import demo set"),
    ]

    def __init__(self, rater: str | None = None) -> None:
        super().__init__()
        self.rater = rater
        self.state = RatingState()

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="status")
        yield Static(id="not-saved")
        with Horizontal(id="body"):
            with Vertical(id="reading"):
                with VerticalScroll(id="position", can_focus=False):
                    yield Static(id="position-text")
                yield Static(id="critiques")
                with VerticalScroll(id="critique", can_focus=False):
                    yield Static(id="critique-text")
            with Vertical(id="side"):
                yield RubricEditor(id="editor")
                yield Static(id="source")
                yield Static(KEYS_HINT, id="keys")
                with VerticalScroll(id="rubric", can_focus=False):
                    yield Static(id="rubric-text")
        yield Footer(compact=True)

    @property
    def repo(self) -> CritiqueRepository:
        return CritiqueRepository(services(self).db)

    def on_mount(self) -> None:
        self.sub_title = "Rating"
        try:
            self.rater = self.rater or os.environ.get(RATER_ENV) or self.repo.last_active_rater()
        except StoreError as exc:
            self.notify(f"Cannot read the raters: {exc}", severity="error", timeout=30, markup=False)
        self.reload()
        if not self.rater:
            self.action_switch_rater()
        elif self.state.positions:
            self.action_next_unrated(quiet=True, include_focused=True)

    # -------------------------------------------------------------- state

    def reload(self) -> None:
        """Read the positions and the rater's ratings again (reads never wait for a writer)."""
        rater, repo = self.rater, self.repo
        try:
            self.state.load(
                repo.positions(),
                {r.critique_id: r for r in repo.ratings(rater)} if rater else {},
                repo.revealed_critique_ids(rater) if rater else set(),
            )
        except StoreError as exc:
            self.notify(f"Cannot read the critiques: {exc}", severity="error", timeout=30, markup=False)
        self.refresh_view()

    def go_to(self, critique_id: int) -> None:
        position_index = self.state.position_index
        self.state.select_id(critique_id)
        self._show_from_top(position_index)

    def _show_from_top(self, previous_position: int) -> None:
        """Another critique is selected: show it from the top of its text (and its position's, if that changed)."""
        if self.state.position_index != previous_position:
            self.query_one("#position", VerticalScroll).scroll_home(animate=False)
        self.query_one("#critique", VerticalScroll).scroll_home(animate=False)
        self.refresh_view()

    # -------------------------------------------------------------- drawing

    def refresh_view(self) -> None:
        state = self.state
        critique = state.critique
        empty = critique is None
        for widget_id in ("#position", "#critiques", "#critique", "#side"):
            self.query_one(widget_id).display = not empty
        status = self.query_one("#status", Static)
        problem = None if empty else state.not_saved.get(critique.id)
        not_saved = self.query_one("#not-saved", Static)
        not_saved.display = problem is not None
        if problem is not None:
            not_saved.update(Text.assemble(("Not saved: ", "bold"), problem, f"; {KEPT}."))
        if empty:
            status.update("")
            self.query_one("#rubric-text", Static).update("")
            self.query_one("#critique-text", Static).update("")
            self.query_one("#position-text", Static).update("")
            self._show_empty()
            return
        for old in self.query("#empty"):
            old.remove()
        position = state.position
        status.update(
            Text.assemble(
                ("rater ", "dim"), (self.rater or "?", "bold"),
                ("  ·  rated ", "dim"), (f"{len(state.current)}/{len(state.critiques)}", "bold"),
                ("  ·  position ", "dim"), f"{position.uid} ({state.position_index + 1}/{len(state.positions)})",
            )
        )
        self.query_one("#position", VerticalScroll).border_title = Text(f"Position {position.uid}")
        self.query_one("#position-text", Static).update(Text(position.text))
        self.query_one("#critiques", Static).update(critique_list_text(state))
        self.query_one("#critique", VerticalScroll).border_title = Text(f"Critique {critique.uid}")
        self.query_one("#critique-text", Static).update(Text(critique.text))
        self.query_one(RubricEditor).update(editor_text(state, critique))
        self.query_one("#source", Static).update(source_text(state, critique))
        self.query_one("#rubric-text", Static).update(rubric_text(state.dimension))
        self.refresh_bindings()

    def _show_empty(self) -> None:
        if not self.query("#empty"):
            self.query_one("#reading").mount(
                Static(
                    "No critiques to rate yet.\n\nPress d to import the demo set (IBM-ArgQ arguments, demo data), "
                    "or import your own: argtui import critiques FILE.jsonl",
                    id="empty",
                )
            )

    # -------------------------------------------------------------- actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "import_demo":
            return not self.state.positions
        if action in ("back", "switch_rater"):
            return True
        return bool(self.state.positions)

    def action_back(self) -> None:
        """Leave; with values set but not confirmed, ask first; with a rating on its way to the store, wait."""
        if self.state.saving:
            self.notify("A rating is being saved; leave once the store has it (or says why not).")
            return
        dialog = self.unconfirmed_question("Leave")
        if dialog is None:
            self.app.pop_screen()
            return

        def answered(answer: str | None) -> None:
            if answer == "leave":
                self.app.pop_screen()

        self.app.push_screen(dialog, answered)

    def unconfirmed_question(self, leaving: str) -> ChoiceDialog | None:
        """What leaving (`Leave` the screen, `Quit` the app) asks when values are set but not confirmed:
        stay, or leave (answered "leave") and drop them; None when there are none."""
        unsaved = self.state.unsaved
        if not unsaved:
            return None
        names = ", ".join(critique.uid for critique in unsaved)
        question = Text.assemble((f"{leaving} without confirming?\n", "bold"),
                                 f"Values set but not confirmed ({len(unsaved)}): {names}. They are not stored.")
        return ChoiceDialog(question, [Answer("stay", "Keep rating", "k"),
                                       Answer("leave", f"{leaving}, drop them", leaving[0].lower())])

    def action_dimension(self, delta: int) -> None:
        self.state.move_dimension(delta)
        self.refresh_view()

    def action_set_value(self, value: float) -> None:
        self.state.type_value(value)
        self.refresh_view()

    def action_step(self, delta: float) -> None:
        self.state.step(delta)
        self.refresh_view()

    def action_undo(self) -> None:
        if self.state.undo():
            self.refresh_view()
        else:
            self.notify("Nothing to undo on this critique since it was last saved.")

    def action_critique(self, delta: int) -> None:
        critique = self.state.critique_after(delta)
        if critique is not None:
            self.go_to(critique.id)

    def action_position(self, delta: int) -> None:
        previous = self.state.position_index
        self.state.select((previous + delta) % len(self.state.positions), 0)
        self._show_from_top(previous)

    def action_next_unrated(self, quiet: bool = False, include_focused: bool = False) -> None:
        """The next critique (after the selected one, wrapping) the rater has not confirmed."""
        if self.state.critique is None:
            return
        candidate = self.state.next_unrated(include_focused)
        if candidate is not None:
            self.go_to(candidate.id)
        elif not quiet:
            self.notify(f"{self.rater} has rated every critique. Revise any with Enter after changing it.", markup=False)

    def action_toggle_position(self) -> None:
        self.toggle_class("-position")

    def action_scroll_text(self, pages: int) -> None:
        pane = self.query_one("#position" if self.has_class("-position") else "#critique", VerticalScroll)
        pane.scroll_to(y=pane.scroll_y + pages * max(1, pane.scrollable_content_region.height - 1), animate=False)

    def action_toggle_rubric(self) -> None:
        self.query_one("#rubric").toggle_class("-shown")
        self.toggle_class("-rubric")

    def action_reveal_source(self) -> None:
        critique = self.state.critique
        if critique is None or critique.id in self.state.revealed or not self.rater:
            return
        self.run_worker(self._reveal(critique, self.rater), group="store")

    async def _reveal(self, critique: CritiqueView, rater: str) -> None:
        try:
            await asyncio.to_thread(self.repo.reveal_source, critique.id, rater)
        except StoreError as exc:
            self.notify(f"Source not revealed: {exc}", severity="error", timeout=30, markup=False)
            return
        if rater == self.rater:
            self.state.revealed.add(critique.id)
            self.refresh_view()

    def action_confirm(self) -> None:
        critique = self.state.critique
        if critique is None or not self.rater:
            return
        draft = self.state.draft(critique)
        if draft.missing:
            self.notify(f"Set every dimension first; missing: {', '.join(draft.missing)}.", severity="warning")
            self.state.dimension = DIMENSIONS.index(draft.missing[0])
            self.refresh_view()
            return
        if critique.id in self.state.saving:
            self.notify(f"{critique.uid} is being saved; a moment.", markup=False)
            return
        current = self.state.current.get(critique.id)
        if current is None:
            self.commit(critique)
        elif not draft.changed:
            self.notify("Already confirmed; change a value or the note to revise it.")
        else:
            self.app.push_screen(  # a reason typed for a revision that was not saved is offered again
                TextPrompt(f"Why do you revise your rating of {critique.uid}? (kept with the revision)",
                           self.state.reasons.get(critique.id, "")),
                lambda reason: self.commit(critique, current, reason) if reason else None,
            )

    def commit(self, critique: CritiqueView, revises: RatingView | None = None, reason: str | None = None) -> None:
        """Send the rating to the store, off the UI thread, in its own transaction."""
        sent = self.state.saving_started(critique.id)
        self.run_worker(self._save(critique, self.rater, sent, revises, reason), group="store")

    async def _save(
        self, critique: CritiqueView, rater: str, sent: Draft, revises: RatingView | None, reason: str | None
    ) -> None:
        """Committed when the store returns. If it refuses the rating (locked too long, the disk
        full, the server gone, or a rule), the values stay on screen with why, to confirm again."""
        try:
            rating = await asyncio.to_thread(
                self.repo.add_rating, critique.id, rater, sent.values, note=sent.note,
                revises_id=revises.id if revises else None, reason=reason,
                source_seen=critique.id in self.state.revealed,
            )
        except StoreError as exc:
            if rater != self.rater:  # another rater took over meanwhile: the drafts are gone with theirs
                self.state.saving.discard(critique.id)
                self.notify(f"{rater}'s rating of {critique.uid} was not saved: {exc}", severity="error",
                            timeout=30, markup=False)
                return
            self.state.refused(critique.id, str(exc), reason)
            self.notify(f"Not saved: {exc}; {KEPT}.", title="Rating not saved", severity="error", timeout=30,
                        markup=False)
            self.refresh_view()
            return
        if rater != self.rater:
            self.state.saving.discard(critique.id)
            return
        self.state.saved(critique.id, rating, sent)
        self.notify(f"{'Revised' if revises else 'Saved'} {critique.uid} (overall {rating.values['overall']:.2f}).", markup=False)
        self.refresh_view()

    def action_note(self) -> None:
        critique = self.state.critique
        if critique is None:
            return

        def keep(note: str | None) -> None:
            if note is not None and self.state.set_note(note):
                self.refresh_view()

        self.app.push_screen(TextPrompt("Note on this critique (optional; saved with the rating):",
                                        self.state.draft(critique).note or "", required=False), keep)

    def action_history(self) -> None:
        critique = self.state.critique
        if critique is None or not self.rater:
            return
        try:
            history = self.repo.history(critique.id, self.rater)
        except StoreError as exc:
            self.notify(f"Cannot read the history: {exc}", severity="error", timeout=30, markup=False)
            return
        self.app.push_screen(HistoryView(history))

    def action_switch_rater(self, name: str = "", problem: str | None = None) -> None:
        """Ask for the rater's name (again with the name typed and why, after the store refused it)."""
        question = "Your rater name (ratings are stored under it):"
        if problem:
            question = f"Not saved: {problem}; the name is kept — press Enter to retry.\n{question}"

        def use(answer: str | None) -> None:
            if answer:
                self.run_worker(self._store_rater(answer), group="store")
            elif not self.rater:
                self.app.pop_screen()

        self.app.push_screen(TextPrompt(question, name or self.rater or "", placeholder="e.g. alice"), use)

    async def _store_rater(self, name: str) -> None:
        try:
            await asyncio.to_thread(self.repo.ensure_rater, name, active=True)
        except StoreError as exc:
            self.action_switch_rater(name, str(exc))
            return
        self.rater = name
        self.state.forget_drafts()
        self.reload()
        self.action_next_unrated(quiet=True, include_focused=True)

    def action_import_demo(self) -> None:
        self.run_worker(self._import_demo(), group="import", exclusive=True)

    async def _import_demo(self) -> None:
        try:
            counts = await asyncio.to_thread(import_critiques, self.repo, DEMO_PATH)
        except (StoreError, ArgtuiError) as exc:
            self.notify(f"The demo set was not imported: {exc}", severity="error", timeout=30, markup=False)
            return
        self.notify(f"Imported the demo set: {counts.critiques} critiques of {counts.positions} positions.")
        self.reload()
        self.action_next_unrated(quiet=True, include_focused=True)


MODE = Mode(
    name="rating",
    title="Rating",
    description="Rate critiques of positions on seven dimensions, keyboard first, with the source hidden; "
    "revise with a reason, the original stays.",
    make_screen=RatingScreen,
    order=40,
)
