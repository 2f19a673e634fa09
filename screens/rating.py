"""Rating: an expert rates critiques of a position on seven dimensions, keyboard first.

The position and all its critiques are shown together; the focused critique
is rated dimension by dimension (digits set tenths, arrows fine steps), Enter
confirms and commits at once. Re-confirming a rated critique is a revision and
asks for a reason; the original rating stays. The source is hidden unless the
rater reveals it, and the reveal is recorded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Header, Input, Label, Static

from engines.critiques.demo import DEMO_PATH
from engines.critiques.files import import_critiques
from engines.critiques.rubric import READING_RULES, RUBRIC
from screens.modes import Mode
from screens.services import services
from store import StoreError
from store.critiques import DIMENSIONS, CritiqueRepository, CritiqueView, PositionView, RatingView

RATER_ENV = "ARGTUI_RATER"
COARSE_STEP, FINE_STEP = 0.05, 0.01
BAR_WIDTH = 10
KEYS_HINT = (
    "0–9 tenths · = 1.0 · ←→ ±0.05\n"
    "⇧←→ ±0.01 · ↑↓ dimension\n"
    "[ ] critique · { } position\n"
    "p position · PgUp/PgDn scroll\n"
    "h history · u rater · esc back"
)


def stepped(value: float | None, delta: float) -> float:
    """Value moved by delta, clamped to [0, 1], rounded to hundredths (a missing value starts at 0)."""
    return round(min(1.0, max(0.0, (value or 0.0) + delta)), 2)


def value_bar(value: float | None) -> Text:
    if value is None:
        return Text("·" * BAR_WIDTH, style="dim")
    filled = round(value * BAR_WIDTH)
    return Text("█" * filled, style="green") + Text("·" * (BAR_WIDTH - filled), style="dim")


@dataclass
class Draft:
    """What the rater has set for one critique but not confirmed yet."""

    values: dict[str, float | None]
    note: str | None = None
    changed: bool = False

    @classmethod
    def from_rating(cls, rating: RatingView | None) -> "Draft":
        if rating is None:
            return cls(dict.fromkeys(DIMENSIONS))
        return cls(dict(rating.values), rating.note)

    @property
    def missing(self) -> list[str]:
        return [name for name in DIMENSIONS if self.values[name] is None]


class TextPrompt(ModalScreen[str | None]):
    """One line of text (a rater name, a reason, a note); Enter submits, Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    TextPrompt { align: center middle; }
    TextPrompt > Vertical { width: 70; max-width: 95%; height: auto; border: thick $accent; padding: 1 2; background: $surface; }
    TextPrompt Label { width: 100%; margin-bottom: 1; }
    """

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


class HistoryView(ModalScreen[None]):
    """The rater's ratings of one critique: the first, then each revision with its reason."""

    BINDINGS = [Binding("escape,h,enter", "dismiss_view", "Close")]
    DEFAULT_CSS = """
    HistoryView { align: center middle; }
    HistoryView > VerticalScroll { width: 76; max-width: 98%; height: auto; max-height: 90%; border: thick $accent; padding: 0 1; background: $surface; }
    """

    def __init__(self, history: list[RatingView]) -> None:
        super().__init__()
        self.history = history

    def compose(self) -> ComposeResult:
        text = Text()
        for number, rating in enumerate(self.history):
            title = "first rating" if number == 0 else f"revision {number}"
            text.append(f"{title}  {rating.created_at:%Y-%m-%d %H:%M} UTC\n", style="bold")
            if rating.reason:
                text.append(f"reason: {rating.reason}\n", style="italic")
            text.append("  ".join(f"{name} {rating.values[name]:.2f}" for name in DIMENSIONS
                                  if rating.values[name] is not None) + "\n")
            if rating.note:
                text.append(f"note: {rating.note}\n", style="dim")
            text.append("\n")
        with VerticalScroll():
            yield Static(text or "Not rated yet.")

    def action_dismiss_view(self) -> None:
        self.dismiss(None)


@dataclass
class RatingState:
    """Where the rater is and what they have rated; rebuilt from the store when it changes."""

    positions: list[PositionView] = field(default_factory=list)
    current: dict[int, RatingView] = field(default_factory=dict)  # critique id → the rater's latest rating
    position_index: int = 0
    critique_index: int = 0

    @property
    def critiques(self) -> list[CritiqueView]:
        return [c for p in self.positions for c in p.critiques]

    @property
    def position(self) -> PositionView | None:
        return self.positions[self.position_index] if self.positions else None

    @property
    def critique(self) -> CritiqueView | None:
        position = self.position
        return position.critiques[self.critique_index] if position and position.critiques else None


class RatingScreen(Screen):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", show=False),
        Binding("up,k", "dimension(-1)", "Dim ↑", show=False),
        Binding("down,j", "dimension(1)", "Dim ↓", show=False),
        *(Binding(str(d), f"set_value({d / 10})", f"{d / 10:.1f}", show=False) for d in range(10)),
        Binding("equals_sign", "set_value(1.0)", "1.0", show=False),
        Binding("left", f"step({-COARSE_STEP})", "−0.05", show=False),
        Binding("right", f"step({COARSE_STEP})", "+0.05", show=False),
        Binding("shift+left", f"step({-FINE_STEP})", "−0.01", show=False),
        Binding("shift+right", f"step({FINE_STEP})", "+0.01", show=False),
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
    DEFAULT_CSS = """
    RatingScreen #status { height: 1; padding: 0 1; background: $boost; }
    RatingScreen #body { height: 1fr; }
    RatingScreen #reading { width: 1fr; }
    RatingScreen #position { height: auto; max-height: 8; border: round $primary; padding: 0 1; }
    RatingScreen.-position #position { height: 1fr; max-height: 100%; }
    RatingScreen.-position #critiques, RatingScreen.-position #critique { display: none; }
    RatingScreen #critiques { height: auto; max-height: 8; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    RatingScreen #critique { height: 1fr; border: round $accent; padding: 0 1; }
    RatingScreen #side { width: 36; }
    RatingScreen #editor { height: auto; border: round $secondary; padding: 0 1; }
    RatingScreen #source { height: auto; padding: 0 1; color: $text-muted; }
    RatingScreen #keys { height: auto; padding: 0 1; color: $text-muted; }
    RatingScreen #rubric { height: 1fr; padding: 0 1; display: none; }
    RatingScreen #rubric.-shown { display: block; }
    RatingScreen.-rubric #keys, RatingScreen.-rubric #source { display: none; }
    RatingScreen #empty { padding: 1 2; }
    """

    def __init__(self, rater: str | None = None) -> None:
        super().__init__()
        self.rater = rater
        self.state = RatingState()
        self.drafts: dict[int, Draft] = {}
        self.dimension = 0
        self.revealed: set[int] = set()

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="status")
        with Horizontal(id="body"):
            with Vertical(id="reading"):
                with VerticalScroll(id="position", can_focus=False):
                    yield Static(id="position-text")
                yield Static(id="critiques")
                with VerticalScroll(id="critique", can_focus=False):
                    yield Static(id="critique-text")
            with Vertical(id="side"):
                yield Static(id="editor")
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
        self.rater = self.rater or os.environ.get(RATER_ENV) or self.repo.last_active_rater()
        self.reload()
        if not self.rater:
            self.action_switch_rater()
        elif self.state.positions:
            self.action_next_unrated(quiet=True, include_focused=True)

    # -------------------------------------------------------------- state

    def reload(self) -> None:
        state = self.state
        state.positions = self.repo.positions()
        state.current = (
            {r.critique_id: r for r in self.repo.ratings(self.rater)} if self.rater else {}
        )
        if state.position_index >= len(state.positions):
            state.position_index, state.critique_index = 0, 0
        self.revealed = self.repo.revealed_critique_ids(self.rater) if self.rater else set()
        self.refresh_view()

    def draft(self, critique: CritiqueView) -> Draft:
        if critique.id not in self.drafts:
            self.drafts[critique.id] = Draft.from_rating(self.state.current.get(critique.id))
        return self.drafts[critique.id]

    def go_to(self, critique_id: int) -> None:
        for p_index, position in enumerate(self.state.positions):
            for c_index, critique in enumerate(position.critiques):
                if critique.id == critique_id:
                    self._focus(p_index, c_index)
                    return

    def _focus(self, position_index: int, critique_index: int) -> None:
        """Show another critique from its first dimension and the top of its text."""
        if position_index != self.state.position_index:
            self.query_one("#position", VerticalScroll).scroll_home(animate=False)
        self.state.position_index, self.state.critique_index = position_index, critique_index
        self.query_one("#critique", VerticalScroll).scroll_home(animate=False)
        self.dimension = 0
        self.refresh_view()

    # -------------------------------------------------------------- drawing

    def refresh_view(self) -> None:
        state = self.state
        critique = state.critique
        empty = critique is None
        for widget_id in ("#position", "#critiques", "#critique", "#side"):
            self.query_one(widget_id).display = not empty
        status = self.query_one("#status", Static)
        if empty:
            status.update("")
            self.query_one("#rubric-text", Static).update("")
            self.query_one("#critique-text", Static).update("")
            self.query_one("#position-text", Static).update("")
            self._show_empty()
            return
        for old in self.query("#empty"):
            old.remove()
        rated = len(state.current)
        total = len(state.critiques)
        position = state.position
        status.update(
            Text.assemble(
                ("rater ", "dim"), (self.rater or "?", "bold"),
                ("  ·  rated ", "dim"), (f"{rated}/{total}", "bold"),
                ("  ·  position ", "dim"), f"{position.uid} ({state.position_index + 1}/{len(state.positions)})",
            )
        )
        self.query_one("#position", VerticalScroll).border_title = Text(f"Position {position.uid}")
        self.query_one("#position-text", Static).update(Text(position.text))
        self.query_one("#critiques", Static).update(self._critique_list())
        self.query_one("#critique", VerticalScroll).border_title = Text(f"Critique {critique.uid}")
        self.query_one("#critique-text", Static).update(Text(critique.text))
        self.query_one("#editor", Static).update(self._editor(critique))
        self.query_one("#source", Static).update(self._source(critique))
        self.query_one("#rubric-text", Static).update(self._rubric())
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

    def _critique_list(self) -> Text:
        lines = []
        for index, critique in enumerate(self.state.position.critiques):
            focused = index == self.state.critique_index
            rating = self.state.current.get(critique.id)
            draft = self.drafts.get(critique.id)
            marks = ("●" if rating else "○") + ("↻" if rating and rating.revises_uid else " ")
            marks += "*" if draft and draft.changed else " "
            line = Text(f"{'▶' if focused else ' '} {marks}{index + 1:>2}  ", style="bold" if focused else "")
            line.append(critique.text.replace("\n", " "), style="" if focused else "dim")
            lines.append(line)
        return Text("\n").join(lines)

    def _editor(self, critique: CritiqueView) -> Text:
        draft = self.draft(critique)
        current = self.state.current.get(critique.id)
        text = Text()
        for index, dimension in enumerate(RUBRIC):
            focused = index == self.dimension
            value = draft.values[dimension.key]
            text.append("▸ " if focused else "  ", style="bold yellow")
            text.append(f"{dimension.label:<13}", style="bold" if focused else "")
            text.append(f"{value:4.2f} " if value is not None else "  —  ")
            text.append_text(value_bar(value))
            text.append("\n")
        if current is None:
            state = "not rated yet" if not draft.changed else "draft: Enter confirms"
        elif draft.changed:
            state = "changed: Enter revises (asks why)"
        else:
            state = "confirmed" + (" (revised)" if current.revises_uid else "")
        text.append(state, style="italic")
        if draft.note:
            text.append(f"\nnote: {draft.note}", style="dim")
        return text

    def _source(self, critique: CritiqueView) -> Text:
        if critique.id in self.revealed:
            return Text(f"Source: {critique.source or 'none given'}")
        return Text("Source hidden (s reveals it; recorded)", style="dim")

    def _rubric(self) -> Text:
        dimension = RUBRIC[self.dimension]
        text = Text.assemble((dimension.label + "\n", "bold"), dimension.definition + "\n\n", ("Reading rules\n", "bold"))
        for rule in READING_RULES:
            text.append(f"• {rule}\n")
        return text

    # -------------------------------------------------------------- actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "import_demo":
            return not self.state.positions
        if action in ("app.pop_screen", "switch_rater"):
            return True
        return bool(self.state.positions)

    def action_dimension(self, delta: int) -> None:
        self.dimension = (self.dimension + delta) % len(DIMENSIONS)
        self.refresh_view()

    def _set(self, value: float, *, advance: bool) -> None:
        critique = self.state.critique
        if critique is None:
            return
        draft = self.draft(critique)
        draft.values[DIMENSIONS[self.dimension]] = value
        draft.changed = True
        if advance and self.dimension < len(DIMENSIONS) - 1:
            self.dimension += 1
        self.refresh_view()

    def action_set_value(self, value: float) -> None:
        self._set(round(value, 2), advance=True)

    def action_step(self, delta: float) -> None:
        critique = self.state.critique
        if critique is not None:
            self._set(stepped(self.draft(critique).values[DIMENSIONS[self.dimension]], delta), advance=False)

    def action_critique(self, delta: int) -> None:
        flat = self.state.critiques
        critique = self.state.critique
        if critique is None:
            return
        index = next(i for i, c in enumerate(flat) if c.id == critique.id)
        self.go_to(flat[(index + delta) % len(flat)].id)

    def action_position(self, delta: int) -> None:
        self._focus((self.state.position_index + delta) % len(self.state.positions), 0)

    def action_next_unrated(self, quiet: bool = False, include_focused: bool = False) -> None:
        """The next critique (after the focused one, wrapping) the rater has not confirmed."""
        flat = self.state.critiques
        critique = self.state.critique
        if critique is None:
            return
        start = next(i for i, c in enumerate(flat) if c.id == critique.id)
        for offset in range(0 if include_focused else 1, len(flat) + 1):
            candidate = flat[(start + offset) % len(flat)]
            if candidate.id not in self.state.current:
                self.go_to(candidate.id)
                return
        if not quiet:
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
        if critique is None or critique.id in self.revealed or not self.rater:
            return
        try:
            self.repo.reveal_source(critique.id, self.rater)
        except StoreError as exc:
            self.notify(f"Source not revealed: {exc}", severity="error", timeout=30, markup=False)
            return
        self.revealed.add(critique.id)
        self.refresh_view()

    def action_confirm(self) -> None:
        critique = self.state.critique
        if critique is None or not self.rater:
            return
        draft = self.draft(critique)
        if draft.missing:
            self.notify(f"Set every dimension first; missing: {', '.join(draft.missing)}.", severity="warning")
            self.dimension = DIMENSIONS.index(draft.missing[0])
            self.refresh_view()
            return
        current = self.state.current.get(critique.id)
        if current is None:
            self.commit(critique, draft)
        elif not draft.changed:
            self.notify("Already confirmed; change a value or the note to revise it.")
        else:
            self.app.push_screen(
                TextPrompt(f"Why do you revise your rating of {critique.uid}? (kept with the revision)"),
                lambda reason: self.commit(critique, draft, current, reason) if reason else None,
            )

    def commit(
        self, critique: CritiqueView, draft: Draft, revises: RatingView | None = None, reason: str | None = None
    ) -> RatingView | None:
        """Store the rating in its own transaction, committed before this returns. If the store
        refuses it (locked too long, or a rule), the draft stays on screen to confirm again."""
        try:
            rating = self.repo.add_rating(
                critique.id, self.rater, draft.values, note=draft.note,
                revises_id=revises.id if revises else None, reason=reason,
                source_seen=critique.id in self.revealed,
            )
        except StoreError as exc:
            draft.changed = True
            self.notify(f"Not saved: {exc}. Your values are kept; press Enter to try again.",
                        title="Rating not saved", severity="error", timeout=30, markup=False)
            self.refresh_view()
            return None
        self.state.current[critique.id] = rating
        self.drafts[critique.id] = Draft.from_rating(rating)
        self.notify(f"{'Revised' if revises else 'Saved'} {critique.uid} (overall {rating.values['overall']:.2f}).", markup=False)
        self.refresh_view()
        return rating

    def action_note(self) -> None:
        critique = self.state.critique
        if critique is None:
            return
        draft = self.draft(critique)

        def keep(note: str | None) -> None:
            if note is not None and note != (draft.note or ""):
                draft.note = note or None
                draft.changed = True
                self.refresh_view()

        self.app.push_screen(TextPrompt("Note on this critique (optional; saved with the rating):",
                                        draft.note or "", required=False), keep)

    def action_history(self) -> None:
        critique = self.state.critique
        if critique is not None and self.rater:
            self.app.push_screen(HistoryView(self.repo.history(critique.id, self.rater)))

    def action_switch_rater(self) -> None:
        def use(name: str | None) -> None:
            if not name:
                if not self.rater:
                    self.app.pop_screen()
                return
            self.rater = name
            self.repo.ensure_rater(name, active=True)
            self.drafts.clear()
            self.reload()
            self.action_next_unrated(quiet=True, include_focused=True)

        self.app.push_screen(
            TextPrompt("Your rater name (ratings are stored under it):", self.rater or "", placeholder="e.g. alice"),
            use,
        )

    def action_import_demo(self) -> None:
        counts = import_critiques(self.repo, DEMO_PATH)
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
