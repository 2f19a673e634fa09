"""Help and the command palette follow the bindings in force; the Debate screen by keyboard at 80×24."""

from __future__ import annotations

import io

from rich.console import Console
from textual.widgets import Footer, Input, Static
from textual.widgets._tabbed_content import ContentTabs

from argtui.app import ArgtuiApp
from engines.grice.judge import STRATEGIES
from engines.grice.questions import QUESTIONS
from engines.judging.task import SHORT_VARIANT_CHARS, tasks
from engines.judging.verdict import JudgeId
from screens.debate import SIDE_TABS, DebateScreen, MessageView, TranscriptScreen
from screens.glossary import (
    GlossaryScreen,
    JudgeName,
    component_label_definitions,
    glossary,
    variant_name,
)
from screens.help import HelpScreen
from screens.palette import ScreenCommands
from test_debate_screen import open_debate, stored_debate
from test_terminal_sizes import footer_descriptions, screen_lines, visible_region


def help_text(help_screen: HelpScreen) -> str:
    """The help as plain text: its key tables printed as a terminal would show them."""
    console = Console(width=120, file=io.StringIO(), record=True)
    for widget in help_screen.query(Static):
        console.print(widget.content)
    return console.export_text()


async def test_help_lists_the_bindings_in_force_on_the_screen_it_opened_from(closed_backend, argtui_home, until):
    debate_id = stored_debate(argtui_home)
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_debate(app, pilot, until, debate_id)
        list(screen.query(MessageView))[0].focus()  # the student's labelled message: Ctrl+T is in force
        await pilot.pause()
        in_force = {
            (active.binding.description or active.binding.action.replace("_", " "))
            for active in screen.active_bindings.values()
            if isinstance(active.node, DebateScreen) and not active.binding.system
        }
        everywhere = {active.binding.description for active in screen.active_bindings.values()
                      if active.node is app and not active.binding.system}
        await pilot.press("f1")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        assert {key.description for key in help_screen.keys["screen"]} == in_force
        assert {key.description for key in help_screen.keys["app"]} == everywhere
        shown = help_text(help_screen)
        for description in in_force | everywhere:
            assert description in shown, description
        assert "Transcript" in in_force and "Previous panel" in in_force  # a hidden binding is listed too
        assert shown.index("Keys on Debate") < shown.index("Keys everywhere")
        assert str(app.services.config.paths.config_file) in shown
        assert str(app.services.config.paths.data_dir / "logs") in shown

        await pilot.press("g")  # the glossary from Help
        assert isinstance(app.screen, GlossaryScreen)


async def test_the_glossary_reads_the_engines_definitions_and_opens_everywhere(closed_backend):
    entries = {entry.term: entry.definition for entry in glossary()}
    for question in QUESTIONS.values():
        assert entries[f"{question.dimension} ({question.maxim})"] == question.question
    for label, definition in component_label_definitions().items():
        assert entries[label] == definition and len(definition) > 20
    assert all(any(term.endswith(f"— {code}") for term in entries) for code in STRATEGIES)
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f9")
        assert isinstance(app.screen, GlossaryScreen)
        text = str(app.screen.query_one("#glossary", Static).render())
        assert "Analyzer (5 examples) — Analyzer5" in text and "Multi-agent debate — mad" in text


async def test_the_palette_finds_screen_actions_help_and_glossary_terms(closed_backend, argtui_home, until):
    debate_id = stored_debate(argtui_home)
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_debate(app, pilot, until, debate_id)
        list(screen.query(MessageView))[0].focus()
        await pilot.pause()
        provider = ScreenCommands(screen)
        found = {}
        for query in ("grice", "transcript", "glossary", "help", "quantity"):
            found[query] = [hit.text async for hit in provider.search(query)]
        assert any(text.startswith("Grice (") for text in found["grice"]), found["grice"]
        assert any("Grice maxims" in text for text in found["grice"])
        assert found["transcript"] and found["transcript"][0].startswith("Transcript (^t)")
        assert "Glossary" in found["glossary"]
        assert any(text.startswith("Help") for text in found["help"])
        assert any("Quantity (informative)" in text for text in found["quantity"])

        [hit] = [hit async for hit in provider.search("transcript")][:1]
        await hit.command()  # runs the screen's own action
        await pilot.pause()
        assert isinstance(app.screen, TranscriptScreen)


async def test_tab_walks_the_debate_screen_and_esc_from_the_tabs_keeps_the_debate(closed_backend, argtui_home, until):
    debate_id = stored_debate(argtui_home)
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_debate(app, pilot, until, debate_id)
        assert app.focused is screen.query_one("#message", Input)
        order = []
        for _ in range(6):
            await pilot.press("tab")
            focused = app.focused
            order.append(focused.id or type(focused).__name__)
            if isinstance(focused, MessageView):
                order[-1] = f"{focused.message.role} message"
        assert order == ["ContentTabs", "VerticalScroll", "log", "user message", "assistant message", "message"], order

        await pilot.press("tab")  # to the side panel's tabs
        assert isinstance(app.focused, ContentTabs)
        await pilot.press("escape")
        assert app.screen is screen and app.focused is screen.query_one("#message", Input)

        await pilot.press("f4", "f4")
        assert screen.query_one("#side").active == "grice-tab"
        await pilot.press("f3")
        assert screen.query_one("#side").active == "evidence-tab"
        assert isinstance(app.focused, ContentTabs)  # F3/F4 move to the tabs: Esc comes back

        await pilot.press("escape")
        assert app.screen is screen and app.focused is screen.query_one("#message", Input)
        await pilot.press("escape")  # from the message box with nothing running: back one screen
        assert app.screen is not screen


async def test_the_debate_screen_at_80x24_shows_whole_tab_labels_footer_and_status(closed_backend, argtui_home, until):
    debate_id = stored_debate(argtui_home)
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_debate(app, pilot, until, debate_id)
        list(screen.query(MessageView))[0].focus()
        await pilot.pause()
        lines = screen_lines(app)
        shown = "\n".join(lines)
        assert " ".join(SIDE_TABS.values()) in shown, shown  # one column apart: all fit at 80×24
        footer = visible_region(app, screen.query_one(Footer))
        footer_text = lines[footer.y]
        for words in ("esc Back", "^t Transcript", "f3/f4 Tabs", "Help", "^p palette", *footer_descriptions(app)):
            assert words in footer_text, footer_text
        status = visible_region(app, screen.query_one("#status"))
        assert status.height == 1 and "ready: type your argument" in lines[status.y]
        assert "Grice judge: Best per maxim" in shown and "parts: Multi-agent debate" in shown


def test_every_variant_of_every_task_has_a_plain_name_and_a_short_form_named_by_its_task():
    for task in tasks():
        for code in task.variants():
            assert code in task.variant_names, (task.name, code)  # declared by the task itself
            name = variant_name(task.name, code)
            assert name.title != code and len(name.short) <= SHORT_VARIANT_CHARS and name.definition, (task.name, code)
    assert variant_name("pairwise", "cot").definition != variant_name("components", "cot").definition
    assert variant_name("grice", "cot").title == "cot"  # a code the task does not have stays as written
    judge = JudgeName("pairwise", JudgeId(profile="gpu", model="m", variant="few/runs3@t1", options="ab12"))
    assert judge.title == "m@gpu Few-shot (few/runs3@t1) #ab12" and judge.short_variant == "Few-shot runs3@t1 #ab12"
