"""Start a debate (claim, side, opponent level) or continue a past one: the Debate mode's first screen."""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Label, OptionList, RadioButton, RadioSet, Static
from textual.widgets.option_list import Option

from engines.debate.claims import Claim, bundled_claims, cmv_claims
from engines.debate.levels import FULL_LEVEL, LEVELS, OpponentLevel, default_level, get_level
from engines.errors import ArgtuiError
from engines.inspire.score import inspire_scores_by_debate
from engines.retrieval.stance import NoTopicError, claim_topic
from engines.student.ratings import level_rating
from screens.debate import DebateScreen
from screens.debate_state import level_title, turns_text
from screens.glossary import source_title
from screens.modes import Mode
from screens.services import backend_name, services
from screens.widgets.coach import value_text
from store.debates import Debate, DebateRepository


def side_word(relation: str) -> str:
    return "for" if relation == "supports" else "against"


def stance_note(claim: str, side: str, level: OpponentLevel) -> Text:
    """Which topic of the argument base the claim is on and the side each debater takes of it,
    or that it is on none (which level 0, answering from the base alone, cannot debate)."""
    matched = claim_topic(claim)
    if matched is None:
        if not level.needs_model:
            return Text(f"{str(NoTopicError()).capitalize()}.", style="bold")
        return Text("On no topic of the argument base: the bot uses the arguments nearest your messages, "
                    "any topic, either side.", style="dim")
    student = matched.student(side)
    worded = "" if matched.agrees else ", worded the other way"
    return Text.assemble(
        "Topic ", (f"\u201c{matched.topic.text}\u201d", "bold"), f"{worded}: you argue {side_word(student.relation)} "
        f"it, the bot {side_word(student.other.relation)} it ({matched.arguments(student.other)} arguments).",
    )


def claim_option(claim: Claim) -> Text:
    """A claim of the list, with its source and, for a topic of the base, its arguments on each side."""
    counts = f" · {claim.topic.supports} for · {claim.topic.attacks} against" if claim.topic else ""
    return Text.assemble(claim.text, (f"  {claim.source}{counts}", "dim"))


def past_debate(debate: Debate, turns: int, score: float | None) -> Text:
    """The claim (wrapped in the narrow column, never cut), then the debate's facts on one dim line."""
    facts = (f"#{debate.id} · you {debate.user_side} · {get_level(debate.level).name} · {turns_text(turns)}"
             f" · score {value_text(score)}")
    return Text.assemble(debate.claim, "\n", (facts, "dim"))


class NewDebateScreen(Screen):
    """Start a debate (claim and side) or reopen a past one."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, claim: str | None = None, side: str = "pro"):
        super().__init__()
        self.preset_claim = claim
        self.preset_side = side
        self.claims: list[Claim] = []
        self.shown_claim = claim or ""  # the claim typed or highlighted last: the one the stance note is about

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="columns"):
            with Vertical(id="start"):
                yield Label("Pick a claim or type one; Enter starts")
                yield Input(value=self.preset_claim or "", placeholder="a claim to debate…", id="claim-input")
                with RadioSet(id="side"):
                    yield RadioButton("PRO — I argue for the claim", value=self.preset_side == "pro", id="pro")
                    yield RadioButton("CON — I argue against it", value=self.preset_side == "con", id="con")
                default = default_level(services(self).profile(backend_name(self)))
                with RadioSet(id="level"):
                    for level in LEVELS:
                        yield RadioButton(
                            f"{level.number} {level.name}", value=level.number == default, id=f"level-{level.number}"
                        )
                yield Static(id="level-description")
                yield Static(id="claim-stance")
                yield OptionList(Option("loading claims…", disabled=True), id="claims")
                yield Static(id="claim-source")
            with Vertical(id="past"):
                yield Label("Past debates; Enter continues")
                yield OptionList(id="debates")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "New debate"
        scores = inspire_scores_by_debate(services(self).db)  # InspireScores stored by the Coach or `argtui eval inspire`
        debates = self.query_one("#debates", OptionList)
        debates.add_options(
            Option(past_debate(debate, turns, scores.get(debate.id)), id=str(debate.id))
            for debate, turns in DebateRepository(services(self).db).list()
        )
        if debates.option_count:  # Enter in the list continues the latest debate
            debates.highlighted = 0
        self.query_one("#claim-input", Input).focus()
        self._describe_level()
        self._load_claims()

    @work(exclusive=True)
    async def _load_claims(self) -> None:
        """Read off the event loop; the worker goes with the screen (Enter may start a debate first),
        so the claims are never shown in a screen that is gone."""
        claims = await asyncio.to_thread(bundled_claims)
        rad_path = services(self).dataset_path("touche-rad")
        if rad_path:
            try:
                claims = (await asyncio.to_thread(cmv_claims, rad_path)) + claims
            except ArgtuiError as exc:
                self.notify(f"Touché claims not loaded: {exc}", severity="warning", markup=False)
        self._show_claims(claims)

    def _show_claims(self, claims: list[Claim]) -> None:
        self.claims = claims
        options = self.query_one("#claims", OptionList)
        options.clear_options()
        options.add_options(Option(claim_option(claim), id=str(i)) for i, claim in enumerate(claims))
        self._describe_stance()

    def _side(self) -> str:
        pressed = self.query_one("#side", RadioSet).pressed_button
        return pressed.id if pressed is not None else "pro"

    def _level(self) -> OpponentLevel:
        pressed = self.query_one("#level", RadioSet).pressed_button
        return get_level(int(pressed.id.removeprefix("level-")) if pressed is not None else FULL_LEVEL)

    @on(RadioSet.Changed, "#level")
    def _describe_level(self) -> None:
        level = self._level()
        self.query_one("#level-description", Static).update(Text.assemble(
            (level_title(level, level_rating(services(self).db, level.number)), "bold"),
            (f": {level.description}.", "italic"),
        ))
        self._describe_stance()

    @on(RadioSet.Changed, "#side")
    def _describe_stance(self) -> None:
        """Once the topics are read (with the claims, off the event loop): the claim's topic and sides."""
        shown = self.query_one("#claim-stance", Static)
        shown.display = bool(self.claims and self.shown_claim.strip())
        if shown.display:
            shown.update(stance_note(self.shown_claim, self._side(), self._level()))

    @on(Input.Changed, "#claim-input")
    def claim_changed(self, event: Input.Changed) -> None:
        self.shown_claim = event.value
        self._describe_stance()

    def _start(self, claim: str) -> None:
        if not self.is_active:  # Enter again while the Debate screen takes over: one debate, not two
            return
        claim = claim.strip()
        if not claim:
            self.notify("type a claim or pick one from the list", severity="warning")
            return
        student = getattr(self.app, "student", None)  # the student profile chosen at start, if any
        debate = DebateRepository(services(self).db).create(
            claim, self._side(), backend=backend_name(self), level=self._level().number,
            student_id=student.id if student is not None else None,
        )
        self.app.switch_screen(DebateScreen(debate.id))

    @on(Input.Submitted, "#claim-input")
    def claim_typed(self, event: Input.Submitted) -> None:
        self._start(event.value)

    @on(OptionList.OptionHighlighted, "#claims")
    def spell_out_source(self, event: OptionList.OptionHighlighted) -> None:
        if self.claims and event.option.id is not None:
            claim = self.claims[int(event.option.id)]
            self.query_one("#claim-source", Static).update(Text(f"{claim.source}: {source_title(claim.source)}"))
            self.shown_claim = claim.text
            self._describe_stance()

    @on(OptionList.OptionSelected, "#claims")
    def claim_picked(self, event: OptionList.OptionSelected) -> None:
        self._start(self.claims[int(event.option.id)].text)

    @on(OptionList.OptionSelected, "#debates")
    def reopen(self, event: OptionList.OptionSelected) -> None:
        if self.is_active:  # as in `_start`
            self.app.switch_screen(DebateScreen(int(event.option.id)))


MODE = Mode(
    name="debate",
    title="Debate",
    description="Debate the retrieval-augmented bot on a claim; see its strategy, evidence and Grice "
    "judgments of every reply, and the argument components of your own messages.",
    make_screen=NewDebateScreen,
    order=10,
)
