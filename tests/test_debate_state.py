"""The Debate screen's state without Textual: messages and their links, states, retry and
transcript targets, the status line and the turn count, from turns stored in a real SQLite file."""

from __future__ import annotations

import io

from rich.console import Console

from engines.components.records import text_key, typed_item, verdict_of
from engines.components.types import ComponentResult, Span
from engines.debate.opponent import FALLBACK_STEP, StepFailed, StepFinished, StepStarted, TurnFailed
from engines.debate.records import ComponentRecord, DebateRecords, SpanRecord, StoredTurn, TurnSteps
from engines.judging.store import JudgmentStore
from engines.judging.verdict import JudgeId
from screens.debate_state import DebateState, Message, turns_text
from screens.widgets.strategy import steps_panel
from store import Database
from store.debates import DebateRepository


def stored(db: Database, *, labelled: bool = True, reply: str | None = "done"):
    """A debate with one message (labelled or not) and its reply in `reply`'s state (None: no reply row)."""
    repository = DebateRepository(db)
    records = DebateRecords(repository)
    debate = repository.create("Uniforms should be mandatory", "pro", backend="closed")
    message = records.add_message(debate.id, "Uniforms reduce bullying.")
    if labelled:  # in the judgment store, linked from the message
        component = ComponentResult(Span(0, 8, "Uniforms"), "vanilla", "Claim")
        judge = JudgeId.of("closed", "m", "vanilla")
        item = typed_item(message.content, component.span)
        JudgmentStore(db, "components").save(judge, [(item, verdict_of(component))])
        records.link_judgment(message.id, "components", "vanilla", judge.name, "components",
                              [text_key(message.content, component.span)])
    if reply is not None:
        turn = records.start_reply(debate.id)
        if reply == "cancelled":
            records.cancel_reply(turn.id, 1.0)
    return records.turns(debate.id)


def test_stored_turns_open_linked_with_their_states(db):
    state = DebateState.opened(stored(db, labelled=True, reply="cancelled"))
    message, reply = state.messages
    assert (message.role, message.state, reply.role, reply.state) == ("user", "done", "assistant", "cancelled")
    assert message.reply is reply and reply.answers is message and message.components[0].label == "Claim"
    assert state.turn_count == 1 and state.has_unfinished()


def test_a_message_left_without_a_reply_gets_a_cancelled_one_and_running_work_shows_cancelled(db):
    state = DebateState.opened(stored(db, labelled=False, reply=None))
    assert [(m.role, m.state) for m in state.messages] == [("user", "cancelled"), ("assistant", "cancelled")]
    assert state.messages[0].reply is state.messages[1] and state.messages[0].components is None
    left_running = DebateState.opened(stored(db, labelled=True, reply="running"))
    assert left_running.messages[1].state == "cancelled"  # nothing runs when the screen opens


def test_turns_count_messages_with_their_replies_not_messages(db):
    state = DebateState.opened(stored(db))
    assert state.turn_count == 1 and len(state.messages) == 2
    [turn] = stored(db, labelled=False, reply=None)
    second = state.add_message(turn)
    reply = state.add_reply(second)
    assert state.turn_count == 2 and state.messages[-2:] == [second, reply]
    assert (turns_text(1), turns_text(2), turns_text(0)) == ("1 turn", "2 turns", "0 turns")


def test_a_new_reply_is_placed_right_after_its_message():
    state = DebateState()
    turn_less = [Message("user"), Message("user")]
    state.messages += turn_less
    reply = state.add_reply(turn_less[0])
    assert state.messages == [turn_less[0], reply, turn_less[1]] and reply.answers is turn_less[0]


def test_retry_prefers_the_selected_turn_then_the_latest_unfinished_one():
    state = DebateState()
    older, newer = Message("user", state="failed"), Message("user", state="done")
    state.messages += [older, newer]
    older_reply, newer_reply = state.add_reply(older), state.add_reply(newer)
    older_reply.state, newer_reply.state = "done", "cancelled"
    assert state.retry_target() == (newer, newer_reply)  # the latest
    state.selected = older_reply
    assert state.retry_target() == (older, older_reply)  # the selected turn's message failed
    newer_reply.state = older.state = "done"
    assert state.retry_target() is None and not state.has_unfinished()


def test_working_and_the_transcript_target_follow_states_and_labels():
    state = DebateState()
    message = Message("user", state="done")
    state.messages.append(message)
    reply = state.add_reply(message)
    assert state.working() == [reply] and state.bot_working() is reply
    assert state.transcript_message() is None  # nothing labelled yet
    message.components = [ComponentRecord(span=SpanRecord(start=0, end=8, text="Uniforms"), method="mad")]
    state.selected = reply
    assert state.transcript_message() is message and state.reply_to_explain() is reply
    reply.state = "done"
    assert state.working() == [] and state.bot_working() is None


def test_begin_follow_and_cancel_keep_no_partial_reply():
    reply = Message("assistant", StoredTurn(id=1, position=1, role="assistant", content="old text", state="failed",
                                            error="boom"), state="failed", evidence=("row",))
    assert (reply.content, reply.error) == ("old text", "boom")  # as stored
    reply.turn = StoredTurn(  # a stored running turn in its place, as the session starts one
        id=1, position=1, role="assistant", content="", state="running")
    reply.begin(limit_s=60)
    assert (reply.state, reply.content, reply.error, reply.evidence, reply.limit_s) == ("running", "", None, (), 60)
    assert reply.clock().endswith("/60 s")
    reply.follow(StepStarted("strategy"))
    assert reply.running_step == "strategy"
    steps = TurnSteps()
    reply.follow(StepFinished("strategy", steps, (), 1.5))
    reply.follow(StepStarted("queries"))
    assert reply.step_seconds == {"strategy": 1.5} and reply.running_step == "queries"
    reply.streamed = "partial"
    assert reply.content == "partial"  # while it is written
    reply.cancel()
    assert (reply.state, reply.content, reply.turn.state) == ("cancelled", "", "cancelled")
    assert reply.step_state == {"strategy": "done", "queries": "cancelled"} and reply.turn.seconds > 0
    failed = Message("assistant")
    failed.follow(StepStarted("queries"))
    failed.follow(TurnFailed("queries", "invalid JSON", "{"))
    assert failed.step_state == {"queries": "failed"} and failed.running_step is None


def test_a_message_restarted_loses_its_labels():
    message = Message("user", state="failed", status="backend down",
                      components=[ComponentRecord(span=SpanRecord(start=0, end=4, text="text"), method="mad")])
    message.begin()
    assert (message.state, message.status, message.components, message.limit_s) == ("running", "", None, None)
    assert message.clock().endswith(" s") and "/" not in message.clock()


def test_a_failed_step_is_marked_in_words_before_level_0_s_answer():
    reply = Message("assistant")
    for event in (StepStarted("reply"), StepFailed("reply", "timed out after 30 s"), StepStarted(FALLBACK_STEP[0])):
        reply.follow(event)
    assert reply.step_state == {"reply": "failed", FALLBACK_STEP[0]: "running"}
    console = Console(width=40, file=io.StringIO(), record=True)
    console.print(steps_panel(reply, [("retrieval", "Retrieval"), ("reply", "Reply")]))
    panel = console.export_text()
    assert "✗ Reply" in panel and "failed" in panel and "TurnState" not in panel
    assert FALLBACK_STEP[1] in panel  # the step that answers instead
