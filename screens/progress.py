"""Progress: a student's rating, InspireScore dimensions and Grice maxims over their debates,
and the three weakest skills with an example message each."""

from __future__ import annotations

import math

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import Footer, Header, Static
from textual_plotext import PlotextPlot

from engines.errors import ArgtuiError
from engines.grice import METRICS
from engines.inspire.score import DIMENSION_TITLES, DIMENSIONS
from engines.student.progress import DebatePoint, Progress, WeakSpot, student_progress
from engines.student.ratings import START_STUDENT
from screens.glossary import maxim_title
from screens.mounted import call_from_thread
from screens.services import services

MIN_POINTS = 2  # debates before a line can be drawn
AXIS_LABELS = 12  # at most this many debates named under the x axis; 5 ratings beside the y axis
WIDE = (110, 34)  # from this size (columns, rows) the three plots and the weakest skills share the screen
EXAMPLE_CHARS = 160


def rating_ticks(ratings: list[float]) -> list[int]:
    """Whole ratings from below the lowest to above the highest, about five of them."""
    low, high = math.floor(min(ratings)), math.ceil(max(ratings))
    step = max(1, math.ceil((high - low) / 4))
    return list(range(low, high + step, step))


def debates_text(count: int) -> str:
    return f"{count} debate{'s' if count != 1 else ''}"


def clip(text: str, limit: int = EXAMPLE_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def weakest_text(spots: tuple[WeakSpot, ...]) -> Text:
    text = Text()
    text.append("Weakest skills", style="bold")
    if not spots:
        text.append("\nNone yet: they appear once the Coach has scored your messages (the Coach tab of a debate).",
                    style="dim")
    for number, spot in enumerate(spots, start=1):
        text.append(f"\n{number}. {spot.title}", style="bold")
        text.append(f"  mean {spot.mean:.2f}\n")
        text.append(f"   e.g. debate {spot.example_debate}, your turn {spot.example_turn}: ", style="dim")
        text.append(f"“{clip(spot.example_text)}”", style="italic")
    return text


def empty_text(count: int) -> Text:
    return Text.assemble(
        (f"{debates_text(count)} so far. ", "bold"),
        f"After {MIN_POINTS} debates the plots appear here, one point per debate: the rating after it, the "
        "InspireScore dimensions of your messages and the Grice maxims of the bot's replies. End a debate "
        "with Ctrl+E to get its ballot and move your rating.",
    )


class ProgressScreen(Screen):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "reload", "Reload"),
    ]

    def __init__(self, student_id: int):
        super().__init__()
        self.student_id = student_id
        self.progress: Progress | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("reading the debates…", id="progress-status")
        with VerticalScroll(id="progress-body"):
            yield Static(id="progress-empty")
            with Vertical(id="charts"):
                yield PlotextPlot(id="rating-plot")
                yield PlotextPlot(id="dimensions-plot")
                yield PlotextPlot(id="maxims-plot")
                yield Static(id="weakest")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Progress"
        self.query_one("#charts").display = False
        self.query_one("#progress-body").focus()  # the arrow keys and PgUp/PgDn scroll it
        self.action_reload()

    def on_resize(self, event: Resize) -> None:
        self.set_class(event.size.width >= WIDE[0] and event.size.height >= WIDE[1], "-wide")

    def action_reload(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="progress")
    def _load(self) -> None:
        try:
            progress = student_progress(services(self).db, self.student_id)
        except ArgtuiError as exc:
            message = Text(str(exc), style="red")
            call_from_thread(self, lambda: self.query_one("#progress-status", Static).update(message))
            return
        call_from_thread(self, self._show, progress)

    def _show(self, progress: Progress) -> None:
        self.progress = progress
        points = progress.points
        rating = points[-1].rating if points else START_STUDENT
        self.query_one("#progress-status", Static).update(Text.assemble(
            (progress.student.name, "bold"), f" · rating {rating:.0f} · {debates_text(len(points))}",
        ))
        enough = len(points) >= MIN_POINTS
        empty = self.query_one("#progress-empty", Static)
        empty.display = not enough
        empty.update(Text.assemble(empty_text(len(points)), "\n\n", weakest_text(progress.weakest)))
        self.query_one("#charts").display = enough
        if enough:
            self._plot_rating(points)
            self._plot_lines("#dimensions-plot", "InspireScore dimensions of your messages", points,
                             {DIMENSION_TITLES[name]: [p.dimensions[name] for p in points] for name in DIMENSIONS})
            self._plot_lines("#maxims-plot", "Grice maxims of the bot's replies (P(yes))", points,
                             {maxim_title(name): [p.maxims[name] for p in points] for name in METRICS})
            self.query_one("#weakest", Static).update(weakest_text(progress.weakest))

    def _plot_rating(self, points: tuple[DebatePoint, ...]) -> None:
        plot = self.query_one("#rating-plot", PlotextPlot)
        plt = self._start(plot, "Rating after each debate", points)
        ratings = [p.rating for p in points]
        plt.hline(START_STUDENT, "gray")  # where every student starts
        plt.yticks(rating_ticks([*ratings, START_STUDENT]))
        plt.plot(list(range(1, len(points) + 1)), ratings, marker="braille")
        plot.refresh()

    def _plot_lines(self, selector: str, title: str, points: tuple[DebatePoint, ...],
                    lines: dict[str, list[float | None]]) -> None:
        """One line per measure over 0..1; a debate where it has no score leaves a gap in its points."""
        plot = self.query_one(selector, PlotextPlot)
        plt = self._start(plot, title, points)
        plt.ylim(0, 1)
        for label, values in lines.items():
            measured = [(x, value) for x, value in enumerate(values, start=1) if value is not None]
            if measured:
                plt.plot([x for x, _ in measured], [value for _, value in measured], label=label, marker="braille")
        plot.refresh()

    @staticmethod
    def _start(plot: PlotextPlot, title: str, points: tuple[DebatePoint, ...]):
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(title)
        every = math.ceil(len(points) / AXIS_LABELS)
        named = points[::every]
        plt.xticks(list(range(1, len(points) + 1, every)), [str(p.debate_id) for p in named])
        plt.xlim(1, len(points))  # the lines end at the last debate, within the frame
        plt.xlabel("debate")
        return plt
