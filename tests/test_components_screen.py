"""The Components view under Textual's pilot: a stored essay coloured by label, a component's debate."""

from __future__ import annotations

import asyncio

from textual.widgets import Input, OptionList, Static

from argtui.app import ArgtuiApp
from engines.components import ComponentResult, Span, Turn
from engines.components.records import essay_key, store_essays, verdict_of
from engines.datasets.ukp_essays import Essay
from engines.judging.store import JudgmentStore
from engines.judging.task import TaskItem
from engines.judging.verdict import JudgeId
from engines.llm.types import Usage
from screens.components import ComponentsScreen
from screens.widgets.labels import LABEL_STYLES

TEXT = "Towns must keep their libraries. Libraries lend laptops to people who have none."
SPANS = [Span(0, 31, "Towns must keep their libraries"), Span(33, 80, "Libraries lend laptops to people who have none")]


async def wait_until(pilot, condition, timeout_s: float = 60) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition() and loop.time() < deadline:
        await pilot.pause(0.05)
    assert condition(), "the view never got there"


def rendered(app, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def store_debated_document(db) -> None:
    store_essays(db, [Essay("essay900", TEXT, (), ())])
    results = [
        ComponentResult(SPANS[0], "mad", "MajorClaim", {"MajorClaim": 0.7, "Claim": 0.3, "Premise": 0.0},
                        "logprobs", skipped=True, reason="Debate skipped: the Manager's top probability 0.70 exceeds 0.60.",
                        usage=Usage(calls=1), seconds=0.5),
        ComponentResult(
            SPANS[1], "mad", "Premise", {"MajorClaim": 0.0, "Claim": 0.55, "Premise": 0.45}, "logprobs",
            transcript=(
                Turn("proponent", "It is the thesis of the paragraph.", "Claim"),
                Turn("opponent", "It gives evidence for the first sentence.", "Premise"),
                Turn("proponent", "Evidence can be a claim too.", "Claim"),
                Turn("opponent", "Nothing supports it; it supports the major claim.", "Premise"),
                Turn("judge", "The direction of support shows a premise."),
            ),
            reason="The direction of support shows a premise.", proponent_label="Claim", opponent_label="Premise",
            usage=Usage(prompt_tokens=900, completion_tokens=100, calls=7, cached_calls=2), seconds=12.0,
        ),
    ]
    JudgmentStore(db, "components").save(JudgeId.of("test", "m", "mad"), [
        (TaskItem(essay_key("essay900", f"T{index + 1}"), "", "", reference=gold), verdict_of(result))
        for index, (result, gold) in enumerate(zip(results, ("MajorClaim", "Claim")))
    ])


async def test_stored_document_shows_coloured_components_and_the_debate(monkeypatch):
    monkeypatch.setenv("ARGTUI_BASE_URL", "http://127.0.0.1:9/v1")  # no model needed: none is started
    app = ArgtuiApp()
    store_debated_document(app.services.db)
    async with app.run_test(size=(80, 24)) as pilot:
        modes = app.screen.query_one(OptionList)
        modes.highlighted = next(i for i, m in enumerate(app.screen.modes) if m.name == "components")
        await pilot.press("enter")
        assert isinstance(app.screen, ComponentsScreen)
        documents = app.screen.query_one("#documents", OptionList)
        assert documents.option_count == 1 and "essay900 · m@test Debate (2)" in str(documents.get_option_at_index(0).prompt)
        documents.focus()
        documents.highlighted = 0
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.screen.shown is not None)

        content = app.screen.query_one("#document", Static).visual
        styles = {str(span.style) for span in content.spans}
        assert any(LABEL_STYLES["MajorClaim"] in style for style in styles)
        assert any(LABEL_STYLES["Premise"] in style for style in styles)
        assert all("@click=screen.select_component(" in style for style in styles)
        detail = rendered(app, "#detail")
        assert "Component 1 of 2" in detail and "gold:  MajorClaim " in detail
        assert "Why no debate: Debate skipped" in detail and "(the manager was sure: no debate)" in detail

        await pilot.press("n")
        detail = rendered(app, "#detail")
        assert "Component 2 of 2" in detail and "gold:  Claim " in detail and "Label:  Premise " in detail
        assert "Manager distribution" in detail and " 55%" in detail and "█" in detail
        assert "Proponent (Claim): It is the thesis" in detail and "Opponent (Premise): It gives evidence" in detail
        assert "Nothing supports it; it supports the major claim." in detail
        assert detail.count("The direction of support shows a premise.") == 1  # the judge's turn, said once
        assert "Judge: The direction of support shows a premise." in detail
        assert "7 calls (2 cached), 12.0 s, 1000 tokens" in detail

        await pilot.press("p")
        assert "Component 1 of 2" in rendered(app, "#detail")
        await pilot.click("#document", offset=(2, 1))  # the second line starts the second component
        await pilot.pause()
        assert "Component 2 of 2" in rendered(app, "#detail")
        await pilot.press("escape")
        assert not isinstance(app.screen, ComponentsScreen)


async def test_empty_store_explains_how_to_get_documents(monkeypatch):
    monkeypatch.setenv("ARGTUI_BASE_URL", "http://127.0.0.1:9/v1")
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(ComponentsScreen())
        await pilot.pause()
        assert "No labelled documents yet" in rendered(app, "#document")
        await pilot.press("m")
        assert "typed text uses Direct (vanilla)" in app.screen.sub_title


async def test_a_failing_backend_is_reported_and_the_view_stays(monkeypatch):
    monkeypatch.setenv("ARGTUI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(ComponentsScreen())
        await pilot.pause()
        screen = app.screen
        screen.query_one("#text", Input).value = TEXT
        screen.query_one("#text", Input).focus()
        await pilot.press("enter")
        assert [span.text for span in screen.shown.spans] == [span.text for span in SPANS]
        await wait_until(pilot, lambda: any("Labelling stopped" in (n.title or "") for n in app._notifications))
        assert app.screen is screen and screen.shown.results == {}
        assert "underline" in str(screen.query_one("#document", Static).visual.spans[0].style)
