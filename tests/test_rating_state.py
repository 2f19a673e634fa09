"""The Rating screen's state on its own (no Textual): digits and steps on every dimension, the
yes/no one included, moving between critiques, unsaved drafts, saving and undo — over the demo
set stored in a real SQLite file."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engines.critiques.demo import DEMO_PATH
from engines.critiques.files import import_critiques
from engines.critiques.rubric import RUBRIC
from screens.rating_state import RatingState, stepped, typed_value
from store.critiques import DIMENSIONS, CritiqueRepository

SINGLE_ISSUE = DIMENSIONS.index("single_issue")
CLARITY = DIMENSIONS.index("clarity")


@pytest.fixture
def repo(db) -> CritiqueRepository:
    repository = CritiqueRepository(db)
    import_critiques(repository, DEMO_PATH)
    repository.ensure_rater("ann", active=True)
    return repository


@pytest.fixture
def state(repo) -> RatingState:
    rating_state = RatingState()
    rating_state.load(repo.positions(), {}, set())
    return rating_state


def values(state: RatingState) -> dict[str, float | None]:
    return state.draft(state.critique).values


@given(st.integers(0, 10), st.booleans())
def test_a_typed_digit_sets_tenths_or_on_a_yes_no_dimension_0_below_5_and_1_from_5(tenths, binary):
    value = typed_value(tenths / 10, binary)
    assert value == ((1.0 if tenths >= 5 else 0.0) if binary else tenths / 10)


@given(st.one_of(st.none(), st.floats(0, 1)), st.sampled_from([-0.05, -0.01, 0.01, 0.05]))
def test_a_step_stays_within_0_and_1_and_on_a_yes_no_dimension_toggles(value, delta):
    moved = stepped(value, delta)
    assert 0.0 <= moved <= 1.0 and moved == round(moved, 2)
    assert abs(moved - min(1.0, max(0.0, (value or 0.0) + delta))) < 0.006
    assert stepped(value, delta, binary=True) == (1.0 if delta > 0 else 0.0)


def test_digits_fill_the_dimensions_in_order_and_stop_at_the_last(state):
    for digit in (7, 8, 9, 6, 1, 9, 6, 3):  # one more than there are dimensions
        state.type_value(digit / 10)
    assert RUBRIC[SINGLE_ISSUE].binary
    assert values(state) == dict(zip(DIMENSIONS, (0.7, 0.8, 0.9, 0.6, 0.1, 1.0, 0.3)))
    assert state.dimension == len(DIMENSIONS) - 1
    assert state.draft(state.critique).missing == []


def test_steps_change_the_selected_dimension_without_moving_on(state):
    state.dimension = CLARITY
    state.step(0.05)
    state.step(0.01)
    state.step(-0.05)
    assert values(state)["clarity"] == 0.01 and state.dimension == CLARITY
    state.dimension = SINGLE_ISSUE
    state.step(0.01)
    assert values(state)["single_issue"] == 1.0
    state.move_dimension(1)
    state.move_dimension(1)
    assert state.dimension == (SINGLE_ISSUE + 2) % len(DIMENSIONS)


def test_undo_takes_back_the_last_change_of_the_selected_critique_only(state):
    first = state.critique
    state.type_value(0.7)
    state.type_value(0.8)
    state.select_id(state.critique_after(1).id)
    state.type_value(0.2)
    state.select_id(first.id)
    assert state.undo()
    assert state.draft(first).values[DIMENSIONS[1]] is None and state.dimension == 1
    assert state.draft(first).values[DIMENSIONS[0]] == 0.7 and state.draft(first).changed
    assert state.undo()
    assert not state.draft(first).changed and state.dimension == 0
    assert not state.undo()
    assert [c.uid for c in state.unsaved] == [state.critique_after(1).uid]


def test_saving_clears_the_unsaved_mark_and_the_undo_history_and_next_unrated_skips_it(repo, state):
    first = state.critique
    for digit in (7, 8, 9, 6, 1, 9, 6):
        state.type_value(digit / 10)
    assert [c.id for c in state.unsaved] == [first.id]
    rating = repo.add_rating(first.id, "ann", state.draft(first).values)
    state.saved(first.id, rating)
    assert state.unsaved == [] and not state.undo()
    assert state.draft(first).values == rating.values
    assert state.next_unrated(include_focused=True).id != first.id
    state.type_value(0.1)  # a change to a confirmed rating is unsaved again
    assert [c.id for c in state.unsaved] == [first.id]


def test_a_note_marks_the_draft_changed_only_when_it_differs(state):
    assert not state.set_note("")
    assert state.set_note("too long") and state.draft(state.critique).note == "too long"
    assert not state.set_note("too long")
    assert state.set_note("") and state.draft(state.critique).note is None


def test_moving_between_critiques_wraps_and_starts_each_at_its_first_dimension(state):
    flat = state.critiques
    state.dimension = 3
    state.select_id(state.critique_after(-1).id)
    assert state.critique.id == flat[-1].id and state.dimension == 0
    assert state.position is state.positions[-1]
    state.select_id(state.critique_after(1).id)
    assert state.critique.id == flat[0].id and state.position_index == 0


def test_a_reload_with_fewer_positions_goes_back_to_the_first(repo, state):
    state.select(len(state.positions) - 1, 0)
    state.load(repo.positions()[:1], {}, set())
    assert (state.position_index, state.critique_index) == (0, 0)
    state.forget_drafts()
    assert state.drafts == {} and not state.undo()
