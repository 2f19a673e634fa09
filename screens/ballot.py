"""Ballot: the end of a debate. Who won and why, speaker points, the strongest and the weakest
turn, one fix with a rewritten sentence, and how the student's rating moved.

The ballot is judged in a worker (`engines.student.ballots.end_debate`): the screen stays
usable meanwhile, and a ballot judged before is read back without a model call.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Footer, Header, LoadingIndicator, Static

from engines.debate.levels import get_level
from engines.errors import ArgtuiError
from engines.grice import METRICS
from engines.inspire.score import DIMENSION_TITLES
from engines.judging.runner import RunPaused, RunProgress
from engines.output import write_text_file
from engines.student.ballot_export import ballot_markdown
from engines.student.ballots import end_debate
from engines.student.ratings import RatingChange
from engines.tasks.ballot import SPEAKER_POINTS, Ballot, TurnMark
from screens.glossary import maxim_title
from screens.mounted import MountedScreen
from screens.services import services
from store import StoreError
from store.debates import DebateRepository

POINTS_SCALE = (f"scale {SPEAKER_POINTS[0]:g}–{SPEAKER_POINTS[1]:g}: {SPEAKER_POINTS[0]:g} poor · "
                f"{sum(SPEAKER_POINTS) / 2:g} average · {SPEAKER_POINTS[1]:g} outstanding")
DEMONSTRATION = ("Demonstration: the embedded tiny model judged this debate, near random. Point argtui "
                 "at a vLLM server for real judging (see Help).")
EXPORT_FOLDER = "ballots"  # under the data folder
TICK_S = 1.0  # the clock of the judging advances at this pace


def ballot_path(data_dir: Path, debate_id: int) -> Path:
    return data_dir / EXPORT_FOLDER / f"ballot-{debate_id}.md"


def score(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def verdict_text(ballot: Ballot) -> Text:
    won = ballot.winner == "student"
    return Text.assemble(
        ("You win" if won else "The bot wins", "bold green" if won else "bold yellow"),
        ("\nSpeaker points  ", "bold"), f"you {ballot.student_points:g}  ·  bot {ballot.bot_points:g}",
        (f"\n({POINTS_SCALE})", "dim"),
    )


def reason_text(ballot: Ballot) -> Text:
    return Text.assemble(("Reason for decision\n", "bold"), ballot.reason)


def mark_text(title: str, mark: TurnMark | None) -> Text:
    """A student turn with its InspireScore, the dimensions, and the Grice maxims of the bot's reply to it."""
    text = Text()
    text.append(title, style="bold")
    if mark is None:
        text.append("\nno turn was scored by the Coach", style="dim")
        return text
    text.append(f" · turn {mark.turn}", style="bold")
    text.append(f"\nInspireScore {score(mark.inspire)}\n")
    text.append(f"“{mark.text}”\n", style="italic")
    dimensions = " · ".join(f"{DIMENSION_TITLES.get(name, name)} {score(value)}"
                            for name, value in mark.dimensions.items())
    text.append(dimensions or "no dimension measured", style="dim")
    if mark.grice:
        maxims = " · ".join(f"{maxim_title(name).partition(' ')[0]} {score(mark.grice[name])}"
                            for name in METRICS if name in mark.grice)
        text.append(f"\nthe bot's reply, Grice P(yes): {maxims}", style="dim")
    return text


def fix_text(ballot: Ballot) -> Text:
    text = Text.assemble(("The fix\n", "bold"), ballot.fix)
    text.append(f"\nRewrite of turn {ballot.rewrite_turn}\n", style="bold")
    text.append("from  ", style="bold red")
    text.append(f"“{ballot.rewrite_from}”\n")
    text.append("to    ", style="bold green")
    text.append(f"“{ballot.rewrite_to}”")
    return text


def rating_text(change: RatingChange | None) -> Text:
    text = Text()
    text.append("Rating  ", style="bold")
    if change is None:
        text.append("no student debated: this debate moves no rating (s on Home picks a student)", style="dim")
        return text
    moved = change.student_after - change.student_before
    text.append(f"{change.student} {change.student_before:.0f} → ")
    text.append(f"{change.student_after:.0f}", style="bold")
    text.append(f" ({moved:+.0f})", style="green" if moved >= 0 else "red")
    level = get_level(change.level)
    text.append(f"\nagainst level {level.number} {level.name}: {change.level_before:.0f} → "
                f"{change.level_after:.0f}", style="dim")
    return text


class BallotScreen(MountedScreen):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Close"),
        Binding("m", "save_markdown", "Save Markdown", tooltip="Write the ballot as Markdown to the data folder"),
        Binding("r", "retry", "Retry", tooltip="Judge the ballot again after a failure"),
    ]

    def __init__(self, debate_id: int):
        super().__init__()
        self.debate_id = debate_id
        self.ballot: Ballot | None = None
        self.change: RatingChange | None = None
        self.failure: str | None = None
        self.judging: RunProgress | None = None  # the judging's last progress, while it runs
        self.judging_since: float | None = None  # when the judging began (None: it does not run)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(DEMONSTRATION, id="ballot-demo")
        with Horizontal(id="ballot-progress"):
            yield LoadingIndicator()
            yield Static(id="ballot-status")
        with VerticalScroll(id="ballot-body"):
            yield Static(id="ballot-claim")
            yield Static(id="ballot-verdict")
            yield Static(id="ballot-reason")
            with Horizontal(id="ballot-turns"):
                yield Static(id="ballot-strongest")
                yield Static(id="ballot-weakest")
            yield Static(id="ballot-fix")
            yield Static(id="ballot-rating")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"Ballot · debate {self.debate_id}"
        debate = DebateRepository(services(self).db).get(self.debate_id)
        if debate is not None:
            self.query_one("#ballot-claim", Static).update(Text.assemble(
                ("Claim: ", "bold"), debate.claim, f"   you: {debate.user_side}"))
        self.query_one("#ballot-demo").display = False
        self.query_one("#ballot-body").display = False
        self.set_interval(TICK_S, self._show_judging)
        self._judge()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if not super().check_action(action, parameters):  # the widgets are not there (yet)
            return False
        if action == "save_markdown":
            return self.ballot is not None
        if action == "retry":
            return self.failure is not None
        return True

    def _say(self, status: str | Text, working: bool) -> None:
        self.query_one("#ballot-progress").display = True
        self.query_one("#ballot-status", Static).update(Text(status) if isinstance(status, str) else status)
        self.query_one(LoadingIndicator).display = working

    @work(exclusive=True, group="ballot")
    async def _judge(self) -> None:
        self.failure = None
        self.refresh_bindings()
        self._say("connecting to the backend…", working=True)
        context = services(self)
        try:
            debate = DebateRepository(context.db).get(self.debate_id)
            if debate is None:
                raise ArgtuiError(f"no debate {self.debate_id}")
            client = await context.client(debate.backend or None)
            self.judging_since, self.judging = time.monotonic(), None
            self._show_judging()
            ballot, change = await end_debate(context, client, self.debate_id, self._progress)
        except (ArgtuiError, StoreError) as exc:
            self.judging_since = None
            # A paused run's advice is the command line's; here the screen's key tries again.
            self.failure = exc.cause if isinstance(exc, RunPaused) else str(exc)
            self._say(Text(f"the ballot failed: {self.failure} (r tries again)", style="red"), working=False)
            self.refresh_bindings()
            return
        self._show(ballot, change)

    def _progress(self, progress: RunProgress) -> None:
        self.judging = progress
        self._show_judging()

    def _show_judging(self) -> None:
        """`Ballot 0 of 1 · 12 s`: the debate's judgment done so far and the seconds it has taken."""
        if self.judging_since is None:
            return
        done, total = (self.judging.done, self.judging.total) if self.judging is not None else (0, 1)
        judge = f" ({self.judging.judge})" if self.judging is not None else ""
        self._say(Text.assemble((f"Ballot {done} of {total}", "bold"),
                                f" · {time.monotonic() - self.judging_since:.0f} s · judging the debate{judge}: "
                                "the ballot takes one answer of the model…"), working=True)

    def _show(self, ballot: Ballot, change: RatingChange | None) -> None:
        self.ballot, self.change, self.judging_since = ballot, change, None
        self.query_one("#ballot-progress").display = False  # the footer says what to do next
        self.query_one("#ballot-demo").display = ballot.demonstration
        self.query_one("#ballot-body").display = True
        self.query_one("#ballot-verdict", Static).update(verdict_text(ballot))
        self.query_one("#ballot-reason", Static).update(reason_text(ballot))
        self.query_one("#ballot-strongest", Static).update(mark_text("Strongest", ballot.strongest))
        self.query_one("#ballot-weakest", Static).update(mark_text("Weakest", ballot.weakest))
        self.query_one("#ballot-fix", Static).update(fix_text(ballot))
        self.query_one("#ballot-rating", Static).update(rating_text(change))
        self.query_one("#ballot-body").focus()  # the arrow keys and PgUp/PgDn scroll it
        self.refresh_bindings()

    def action_retry(self) -> None:
        self._judge()

    def action_save_markdown(self) -> None:
        if self.ballot is None:
            return
        context = services(self)
        path = ballot_path(context.data_dir, self.debate_id)
        try:
            written = write_text_file(path, ballot_markdown(context.db, self.debate_id, self.ballot),
                                      make_parents=True)
        except ArgtuiError as exc:
            self.notify(str(exc), title="Ballot not saved", severity="error", markup=False)
            return
        self._say(Text.assemble("saved ", (str(written), "bold"), (" · Esc closes", "dim")), working=False)
        self.notify(f"saved {written}", title="Ballot", markup=False)
