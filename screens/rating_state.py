"""What the Rating screen holds, without Textual: the positions and critiques, the rater's
confirmed ratings and unconfirmed drafts, the selected critique and dimension, undo, and
the ratings being saved or that the store refused (kept, with why, to confirm again).

Digits set tenths, arrows step; a yes/no dimension (single issue) takes 0 or 1 only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engines.critiques.rubric import RUBRIC
from store.critiques import DIMENSIONS, CritiqueView, PositionView, RatingView

COARSE_STEP, FINE_STEP = 0.05, 0.01
BINARY_THRESHOLD = 0.5  # on a yes/no dimension, digits from 5 up set 1, the others 0


def stepped(value: float | None, delta: float, binary: bool = False) -> float:
    """Value moved by delta, clamped to [0, 1], rounded to hundredths (a missing value starts at 0);
    on a yes/no dimension a step up is 1 and a step down 0."""
    if binary:
        return 1.0 if delta > 0 else 0.0
    return round(min(1.0, max(0.0, (value or 0.0) + delta)), 2)


def typed_value(value: float, binary: bool) -> float:
    """What a typed digit (in tenths) or `=` sets on a dimension."""
    if binary:
        return 1.0 if value >= BINARY_THRESHOLD else 0.0
    return round(value, 2)


@dataclass
class Draft:
    """What the rater has set for one critique but not confirmed yet."""

    values: dict[str, float | None]
    note: str | None = None
    changed: bool = False

    @classmethod
    def from_rating(cls, rating: RatingView | None) -> Draft:
        if rating is None:
            return cls(dict.fromkeys(DIMENSIONS))
        return cls(dict(rating.values), rating.note)

    @property
    def missing(self) -> list[str]:
        return [name for name in DIMENSIONS if self.values[name] is None]

    def copy(self) -> Draft:
        return Draft(dict(self.values), self.note, self.changed)

    def says_as(self, other: Draft) -> bool:
        """Whether both set the same values and note."""
        return self.values == other.values and self.note == other.note


@dataclass(frozen=True)
class Edit:
    """One value change, with what it replaced, so that it can be undone."""

    critique_id: int
    dimension: int
    before: float | None
    changed_before: bool
    selected_before: int  # the dimension selected before the change (a digit moves on to the next)


@dataclass
class RatingState:
    """Where the rater is and what they have set; the store's part is reloaded with `load`."""

    positions: list[PositionView] = field(default_factory=list)
    current: dict[int, RatingView] = field(default_factory=dict)  # critique id → the rater's latest rating
    revealed: set[int] = field(default_factory=set)  # critique ids whose source the rater has seen
    drafts: dict[int, Draft] = field(default_factory=dict)
    position_index: int = 0
    critique_index: int = 0
    dimension: int = 0  # index into DIMENSIONS
    edits: list[Edit] = field(default_factory=list)
    saving: set[int] = field(default_factory=set)  # critique ids whose rating is on its way to the store
    not_saved: dict[int, str] = field(default_factory=dict)  # critique id → why the store refused its rating
    reasons: dict[int, str] = field(default_factory=dict)  # critique id → the reason of a revision not saved

    def load(self, positions: list[PositionView], current: dict[int, RatingView], revealed: set[int]) -> None:
        self.positions, self.current, self.revealed = positions, current, revealed
        if self.position_index >= len(positions):
            self.position_index, self.critique_index = 0, 0

    def forget_drafts(self) -> None:
        """Another rater: nothing set so far is theirs."""
        self.drafts.clear()
        self.edits.clear()
        self.not_saved.clear()
        self.reasons.clear()

    # ------------------------------------------------------------------ where

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

    def select(self, position_index: int, critique_index: int) -> None:
        """Another critique, from its first dimension."""
        self.position_index, self.critique_index = position_index, critique_index
        self.dimension = 0

    def select_id(self, critique_id: int) -> None:
        for p_index, position in enumerate(self.positions):
            for c_index, critique in enumerate(position.critiques):
                if critique.id == critique_id:
                    self.select(p_index, c_index)
                    return

    def critique_after(self, delta: int) -> CritiqueView | None:
        """The critique `delta` places on in the flat list of all positions' critiques (wrapping)."""
        flat, critique = self.critiques, self.critique
        if critique is None:
            return None
        index = next(i for i, c in enumerate(flat) if c.id == critique.id)
        return flat[(index + delta) % len(flat)]

    def next_unrated(self, include_focused: bool = False) -> CritiqueView | None:
        """The next critique (after the selected one, wrapping) the rater has not confirmed."""
        flat, critique = self.critiques, self.critique
        if critique is None:
            return None
        start = next(i for i, c in enumerate(flat) if c.id == critique.id)
        for offset in range(0 if include_focused else 1, len(flat) + 1):
            candidate = flat[(start + offset) % len(flat)]
            if candidate.id not in self.current:
                return candidate
        return None

    def move_dimension(self, delta: int) -> None:
        self.dimension = (self.dimension + delta) % len(DIMENSIONS)

    # ------------------------------------------------------------------ values

    def draft(self, critique: CritiqueView) -> Draft:
        if critique.id not in self.drafts:
            self.drafts[critique.id] = Draft.from_rating(self.current.get(critique.id))
        return self.drafts[critique.id]

    @property
    def binary(self) -> bool:
        """Whether the selected dimension is yes/no."""
        return RUBRIC[self.dimension].binary

    def type_value(self, tenths: float) -> None:
        """A digit (or `=`) typed: set the selected dimension and move on to the next."""
        self._set(typed_value(tenths, self.binary), advance=True)

    def step(self, delta: float) -> None:
        critique = self.critique
        if critique is not None:
            self._set(stepped(self.draft(critique).values[DIMENSIONS[self.dimension]], delta, self.binary),
                      advance=False)

    def _set(self, value: float, *, advance: bool) -> None:
        critique = self.critique
        if critique is None:
            return
        draft = self.draft(critique)
        key = DIMENSIONS[self.dimension]
        self.edits.append(Edit(critique.id, self.dimension, draft.values[key], draft.changed, self.dimension))
        draft.values[key] = value
        draft.changed = True
        if advance and self.dimension < len(DIMENSIONS) - 1:
            self.dimension += 1

    def set_note(self, note: str) -> bool:
        """Whether the note differs from the draft's (and so the draft changed)."""
        critique = self.critique
        if critique is None:
            return False
        draft = self.draft(critique)
        if note == (draft.note or ""):
            return False
        draft.note = note or None
        draft.changed = True
        return True

    def undo(self) -> bool:
        """Take back the last value change of the selected critique since it was last saved; whether there was one."""
        critique = self.critique
        index = next((i for i in range(len(self.edits) - 1, -1, -1)
                      if critique is not None and self.edits[i].critique_id == critique.id), None)
        if index is None:
            return False
        edit = self.edits.pop(index)
        draft = self.draft(critique)
        draft.values[DIMENSIONS[edit.dimension]] = edit.before
        draft.changed = edit.changed_before
        self.dimension = edit.selected_before
        return True

    # ------------------------------------------------------------------ saved and unsaved

    def saving_started(self, critique_id: int) -> Draft:
        """A rating goes to the store: what it says, as sent."""
        self.saving.add(critique_id)
        return self.drafts[critique_id].copy()

    def saved(self, critique_id: int, rating: RatingView, sent: Draft | None = None) -> None:
        """The store has the rating: the draft starts again from it, and its edits can no longer be undone.
        Values changed while it was being saved (`sent` is what was sent) stay as a draft to confirm."""
        self.saving.discard(critique_id)
        self.not_saved.pop(critique_id, None)
        self.reasons.pop(critique_id, None)
        self.current[critique_id] = rating
        draft = self.drafts.get(critique_id)
        if sent is not None and draft is not None and not draft.says_as(sent):
            return
        self.drafts[critique_id] = Draft.from_rating(rating)
        self.edits = [edit for edit in self.edits if edit.critique_id != critique_id]

    def refused(self, critique_id: int, problem: str, reason: str | None = None) -> None:
        """The store did not take the rating: its values stay set, with why, to confirm again."""
        self.saving.discard(critique_id)
        self.not_saved[critique_id] = problem
        if reason:
            self.reasons[critique_id] = reason
        draft = self.drafts.get(critique_id)
        if draft is not None:
            draft.changed = True

    @property
    def unsaved(self) -> list[CritiqueView]:
        """Critiques with values or a note set but not confirmed."""
        return [c for c in self.critiques if c.id in self.drafts and self.drafts[c.id].changed]
