"""Leaderboard: stored pairwise judges against the experts, per dimension and topic, and
the stored judges of every task.

Tabs: the agreement table of every stored pairwise judge (the seed's Table 1
columns, with the experts' own BT fit as the reference row), judge-vs-judge
agreement (Table 3), BT rankings side by side (experts vs the chosen judge),
the score distributions (Figure 1), an LLM-vs-expert scatter plot, every
task of the registry with its stored judges against the stored references
(a new task appears there with no edit to this screen), and the audit of every
stored judge (engines/judging/audit.py).

A panel of judges (`argtui eval --panel`, or a panel column in the Arena) is a stored
judge like any other, in every tab and the judge selector: "panel(few+zero)/swap@t0".

A number resting on fewer items than it needs is "–"; the line under a table
names the highlighted row's judge in full and says why any of its numbers is "–".
"""

from __future__ import annotations

from typing import Sequence

import math
import re

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Header, Select, Static, TabbedContent, TabPane
from textual_plotext import PlotextPlot

from engines.datasets.webis import DIMENSIONS, WebisCorpus
from engines.judging.audit import MIN_CORRELATED, MIN_ITEMS, Figure, JudgeAudit, audit, too_few
from engines.judging.evaluate import JudgeStanding, standings
from engines.judging.store import JudgmentStore
from engines.judging.task import Task, tasks
from engines.judging.verdict import JudgeId
from engines.metrics.agreement import LabelAgreement, ScoreAgreement
from engines.metrics.ranking import ranking
from engines.pairwise.evaluation import TABLE_COLUMNS, ArgumentId
from engines.pairwise.leaderboard import EXPERTS, Board, build_board
from engines.pairwise.run import load_corpus
from engines.tasks.pairwise import NAME as PAIRWISE
from screens.demo_notice import DemoNotice
from screens.glossary import JudgeName, judge_title
from screens.modes import Mode
from screens.mounted import call_from_thread
from screens.navigation import StepsBack, escape_bindings
from screens.services import services

HEADERS = {"pearson": "r", "spearman": "ρ", "kendall": "τ", "mae": "MAE", "rmse": "RMSE",
           "kappa": "κ", "alpha": "α", "percent": "%"}
SCORE_METRICS = ("pearson", "spearman", "kendall", "mae", "rmse")  # on BT scores of arguments
LABEL_METRICS = ("kappa", "alpha", "percent")  # on the labels of pairs
RANK_ROWS = 200


JUDGE_WIDTH = 20
NUMBER_WIDTH = 6
TASK_WIDTH = 14
TASK_JUDGE_WIDTH = 28
FIGURE_WIDTH = 24
INTERVAL_WIDTH = 14
NOTE_WIDTH = 80 - FIGURE_WIDTH - 2 * (NUMBER_WIDTH + 1) - INTERVAL_WIDTH - NUMBER_WIDTH - 2  # the rest of 80 columns
# What a model's file or repository name adds after its family and size: the tuning, the
# quantisation, the file type ("SmolLM2-135M-Instruct-Q8_0.gguf" is "SmolLM2-135M").
MODEL_SUFFIX = re.compile(r"([-_.](instruct|chat|it|q\d\w*|iq\d\w*|f16|bf16|fp16|gguf))+$", re.IGNORECASE)
HOW_TO_JUDGE = "run `argtui eval pairwise`, or judge pairs in the Arena"
EMPTY_HINTS = {  # what each tab needs, shown instead of an empty table or plot
    "agreement": f"Only the experts' own fit: no stored pairwise judge in this scope; {HOW_TO_JUDGE}.",
    "judges": "Judge vs judge compares two stored pairwise judges in this scope: run `argtui eval pairwise` "
    "with another --judge or --prompt, or a --panel of two, or pick two judges in the Arena (c).",
    "rankings": f"The judge column fills in once a pairwise judge is stored: {HOW_TO_JUDGE}.",
    "distributions": f"The experts' scores alone: {HOW_TO_JUDGE} to compare a judge's.",
    "scatter": f"No stored judge for this dimension and scope: {HOW_TO_JUDGE}.",
    "audit": "No stored judge of any task: run `argtui eval TASK` (add --mode swap for pairwise position figures), "
    "or judge items in the Arena.",
}
DETAILED = ("agreement", "judges", "tasks", "audit")  # the tabs whose tables have a detail line


def _fmt(value: float | None, percent: bool = False) -> str:
    if value is None or math.isnan(value):
        return "–"
    return f"{value * 100:.1f}" if percent else f"{value:.3f}"


def _number(value: float | int | None, percent: bool = False, width: int = NUMBER_WIDTH) -> Text:
    """Right-aligned in a fixed width with at least one space before it, so two columns never
    run together (the tables have no cell padding, to fit 80 columns): fractions drop the leading
    zero (-.192), and a number too wide for its column loses decimals (-1.00), then goes k or M."""
    room = width - 1
    if isinstance(value, int):
        shown = str(value) if len(str(value)) <= room else _compact(value)
    else:
        shown = _fmt(value, percent)
        if value is not None and not math.isnan(value):
            number = value * 100 if percent else value
            for decimals in (1,) if percent else (3, 2, 1, 0):
                shown = f"{number:.{decimals}f}"
                if abs(number) < 1:
                    shown = shown.replace("0.", ".", 1)
                if len(shown) <= room:
                    break
            if len(shown) > room:
                shown = _compact(number)
    return Text(shown.rjust(width))


def _compact(value: float) -> str:
    """A large count in a few characters: 12.3k, 4.5M."""
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            scaled = value / limit
            return f"{scaled:.1f}{suffix}" if abs(scaled) < 100 else f"{scaled:.0f}{suffix}"
    return f"{value:.0f}"


def short_model(model: str) -> str:
    """A model's name without its folder, tuning, quantisation and file type ("SmolLM2-135M")."""
    name = model.rstrip("/").rsplit("/", 1)[-1]
    return MODEL_SUFFIX.sub("", name) or name


def shown_metrics(
    metrics: dict[str, float], scores: ScoreAgreement | None, labels: LabelAgreement,
) -> tuple[dict[str, float | None], list[str]]:
    """A row's metrics as shown: those resting on fewer items than they need are None, with the
    reasons (a correlation on one pair's two arguments is ±1 whatever was judged)."""
    shown: dict[str, float | None] = dict(metrics)
    reasons = []
    for keys, items, needed, unit in ((SCORE_METRICS, scores.n if scores else 0, MIN_CORRELATED, "scored arguments"),
                                      (LABEL_METRICS, labels.n, MIN_ITEMS, "pairs")):
        if why := too_few(items, needed, unit):
            reasons.append(f"{', '.join(HEADERS[key] for key in keys if key in shown)}: {why}")
            shown.update({key: None for key in keys if key in shown})
    undefined = [HEADERS[key] for key, value in shown.items() if value is not None and math.isnan(value)]
    if undefined:
        reasons.append(f"{', '.join(undefined)}: undefined, one score or label throughout")
    return shown, reasons


def _judge_cell(
    stored: JudgeId | None, task: str = PAIRWISE, bold: bool = False, width: int = JUDGE_WIDTH, arena: int = 0
) -> Text:
    """A stored judge ("model@profile variant") on two lines: model@profile, then the variant's short
    name and how many of its items were judged in the Arena (the judge selector names it in full);
    None: the experts' own row."""
    style = "bold" if bold else ""
    if stored is None:
        return Text("experts", style=style)
    judge = JudgeName(task, stored)
    mark = f" +{arena} Arena" if arena else ""
    backend = f"{short_model(stored.model)}@{stored.profile}"
    cell = Text(f"{_clip(backend, width)}\n {_clip(judge.short_variant, width - 1 - len(mark))}", style=style)
    cell.append(mark, style="italic")
    return cell


def _clip(line: str, width: int = JUDGE_WIDTH) -> str:
    return line if len(line) < width else line[: width - 2] + "…"


def _detail(task: str, stored: JudgeId | None, reasons: Sequence[str] = ()) -> Text:
    """The detail line of a row: its judge's whole name, and why any of its numbers is "–"."""
    name = "the experts' own comparisons" if stored is None else judge_title(task, stored)
    return Text(" · ".join([name, *(f"– {reason}" for reason in reasons)]))


def _table(table: DataTable, text_columns: int, *columns: tuple[str, int]) -> None:
    """Columns of fixed width; after the first `text_columns`, headers align right like the numbers."""
    for index, (label, width) in enumerate(columns):
        table.add_column(label if index < text_columns else label.rjust(width), width=width)


class LeaderboardScreen(StepsBack):
    BINDINGS = [
        *escape_bindings("selector"),
        Binding("right_square_bracket", "switch_tab(1)", "Next tab"),
        Binding("left_square_bracket", "switch_tab(-1)", "Previous tab", show=False),
        Binding("R", "reload", "Reload"),
    ]

    def __init__(self, *, judge: str | None = None, dimension: str | None = None, topic: int | None = None):
        super().__init__()
        self.judge = judge
        self.dimension = dimension or DIMENSIONS[0]
        # Until a dimension is asked for, the board opens on one with stored judges: the Arena
        # draws pairs of every dimension, and its judgments should be what a user sees first.
        self.dimension_chosen = dimension is not None
        self.topic = topic
        self.board: Board | None = None
        self.standings: list[tuple[Task, list[JudgeStanding]]] | None = None
        self._topics_listed = False
        self._opened = False  # the first board and standings shown (see `_open_on_what_was_judged`)
        self.audits: list[JudgeAudit] | None = None
        self._details: dict[str, dict[object, Text]] = {tab: {} for tab in DETAILED}  # tab -> row key -> line

    def compose(self) -> ComposeResult:
        yield Header()
        yield DemoNotice()
        with Horizontal(id="controls"):
            yield Select([], prompt="judge", id="judge", compact=True)
            yield Select([(d, d) for d in DIMENSIONS], value=self.dimension, allow_blank=False,
                         id="dimension", compact=True)
            yield Select([], prompt="all topics", id="topic", compact=True)
        yield Static(id="status")
        with TabbedContent(id="tabs"):
            with TabPane("Agreement", id="agreement"):
                yield Static(id="agreement-empty", classes="empty")
                yield DataTable(id="agreement-table", cursor_type="row", zebra_stripes=True, cell_padding=0)
                yield Static(id="agreement-detail", classes="detail")
            with TabPane("Judge vs judge", id="judges"):
                yield Static(id="judges-empty", classes="empty")
                yield DataTable(id="judges-table", cursor_type="row", zebra_stripes=True, cell_padding=0)
                yield Static(id="judges-detail", classes="detail")
            with TabPane("Rankings", id="rankings"):
                yield Static(id="rankings-empty", classes="empty")
                yield DataTable(id="rankings-table", cursor_type="row", zebra_stripes=True, cell_padding=0)
            with TabPane("Distributions", id="distributions"):
                yield Static(id="distributions-empty", classes="empty")
                yield PlotextPlot(id="distribution-plot")
            with TabPane("Scatter", id="scatter"):
                yield Static(id="scatter-empty", classes="empty")
                yield PlotextPlot(id="scatter-plot")
            with TabPane("All tasks", id="tasks"):
                yield DataTable(id="tasks-table", cursor_type="row", zebra_stripes=True, cell_padding=0)
                yield Static(id="tasks-detail", classes="detail")
            with TabPane("Audit", id="audit"):
                yield Static(id="audit-empty", classes="empty")
                yield DataTable(id="audit-table", cursor_type="row", zebra_stripes=True, cell_padding=0)
                yield Static(id="audit-detail", classes="detail")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Leaderboard"
        n = NUMBER_WIDTH
        _table(self.query_one("#agreement-table", DataTable), 1,
               ("judge", JUDGE_WIDTH), ("pairs", n), ("inv.", 5), *((h, n) for h in HEADERS.values()))
        _table(self.query_one("#judges-table", DataTable), 2,
               ("judge", JUDGE_WIDTH), ("vs judge", JUDGE_WIDTH), ("pairs", n),
               *((h, n) for h in ("κ", "α", "%", "r", "ρ")))
        _table(self.query_one("#rankings-table", DataTable), 0,
               ("#", 3), (" experts", 30), ("score", n), (" judge", 31), ("score", n))
        _table(self.query_one("#tasks-table", DataTable), 2,
               ("task", TASK_WIDTH), ("judge", TASK_JUDGE_WIDTH), ("items", n), ("inv.", 5), ("ref.", n),
               ("acc.", n), ("F1", n))
        _table(self.query_one("#audit-table", DataTable), 1,
               ("figure", FIGURE_WIDTH), ("value", n + 1), (" 95% interval", INTERVAL_WIDTH), ("ref.", n + 1),
               ("items", n), (" note".ljust(NOTE_WIDTH), NOTE_WIDTH))
        self.action_reload()

    def action_switch_tab(self, step: int) -> None:
        tabs = self.query_one(TabbedContent)
        panes = [pane.id for pane in tabs.query(TabPane)]
        tabs.active = panes[(panes.index(tabs.active) + step) % len(panes)]

    def action_reload(self) -> None:
        self._refresh_board()
        self._compute_standings()
        self._compute_audits()

    def _refresh_board(self) -> None:
        self.query_one("#status", Static).update("Fitting Bradley-Terry scores…")
        self._compute(self.dimension, self.topic, not self.dimension_chosen)

    @work(thread=True, exclusive=True, group="board")
    def _compute(self, dimension: str, topic: int | None, judged_first: bool) -> None:
        """The board of the dimension; with `judged_first`, of the first one with stored judges when
        that one has none."""
        # A thread: the first call loads the dataset, and BT fits over all topics take a moment.
        corpus = load_corpus()
        db = services(self).db
        board = build_board(db, corpus, dimension, topic)
        if judged_first and not board.judges and board.stored_judges:
            for other in (d for d in DIMENSIONS if d != dimension):
                if (judged := build_board(db, corpus, other, topic)).judges:
                    board, dimension = judged, other
                    break
        call_from_thread(self, self._show, board, corpus, dimension)

    @work(thread=True, exclusive=True, group="standings")
    def _compute_standings(self) -> None:
        context = services(self)
        found = [(task, standings(context, task)) for task in tasks()]
        arena = {
            (task.name, row.judge.name): JudgmentStore(context.db, task.name).arena_items(row.judge)
            for task, rows in found for row in rows
        }
        call_from_thread(self, self._fill_tasks, found, arena)

    @work(thread=True, exclusive=True, group="audit")
    def _compute_audits(self) -> None:
        # A thread: a thousand bootstrap resamples per figure and judge.
        call_from_thread(self, self._fill_audit, audit(services(self).db, tasks()))

    def _show(self, board: Board, corpus: WebisCorpus, dimension: str) -> None:
        self.board = board
        self.dimension = dimension
        judges = board.judges
        if self.judge not in judges:
            self.judge = judges[0] if judges else None
        judge_select = self.query_one("#judge", Select)
        with self.prevent(Select.Changed):
            self.query_one("#dimension", Select).value = dimension
            judge_select.set_options(
                [(Text(judge_title(PAIRWISE, board.judge_ids[name])), name) for name in judges]
            )
            if self.judge:
                judge_select.value = self.judge
            topic_select = self.query_one("#topic", Select)
            if not self._topics_listed:  # once: the topics do not change
                self._topics_listed = True
                topic_select.set_options(
                    [(Text(f"{t.id} {t.short_query}"), str(t.id)) for t in sorted(corpus.topics.values(), key=lambda t: t.id)]
                )
                if self.topic is not None:
                    topic_select.value = str(self.topic)
        scope = "all topics" if self.topic is None else f"topic {self.topic}"
        if judges:
            found = f"{len(judges)} stored judge(s)"
            if board.arena_items:
                found += f", {sum(board.arena_items.values())} pair(s) from the Arena"
        elif board.stored_judges:
            found = f"no stored judge in this scope ({board.stored_judges} elsewhere)"
        else:
            found = "no judge yet: argtui eval pairwise, or the Arena"
        self.query_one("#status", Static).update(Text(f"{self.dimension} · {scope} · {found}"))
        self._show_empty("agreement", not judges)
        self._show_empty("judges", len(judges) < 2)
        self._show_empty("rankings", not judges)
        self._show_empty("distributions", not judges)
        self._show_empty("scatter", not judges)
        self._fill_agreement(board)
        self._fill_judges(board)
        self._fill_rankings(board)
        self._plot(board)
        self._open_on_what_was_judged()

    def _open_on_what_was_judged(self) -> None:
        """Once both are in: with no pairwise judge stored but judges of other tasks (judged in the
        Arena, say), the All tasks tab, unless another tab was picked meanwhile."""
        if self._opened or self.board is None or self.standings is None:
            return
        self._opened = True
        tabs = self.query_one(TabbedContent)
        if tabs.active == "agreement" and not self.board.stored_judges and any(rows for _, rows in self.standings):
            tabs.active = "tasks"

    def _show_empty(self, tab: str, empty: bool) -> None:
        hint = self.query_one(f"#{tab}-empty", Static)
        hint.update(EMPTY_HINTS[tab])
        hint.set_class(empty, "-shown")

    def _fill_agreement(self, board: Board) -> None:
        table = self.query_one("#agreement-table", DataTable)
        table.clear()
        details = self._details["agreement"] = {}
        for name, result in board.results.items():
            metrics, reasons = shown_metrics(result.metrics(), result.scores, result.labels)
            stored = board.judge_ids.get(name)
            table.add_row(
                _judge_cell(stored, bold=name == self.judge, arena=board.arena_items.get(name, 0)),
                _number(result.pairs),
                _number(result.invalid, width=5),
                *(_number(metrics[key], percent=key == "percent") for key in TABLE_COLUMNS),
                height=1 if name == EXPERTS else 2, key=name,
            )
            details[name] = _detail(PAIRWISE, stored, reasons)
        self._show_detail("agreement")

    def _fill_tasks(self, found: list[tuple[Task, list[JudgeStanding]]], arena: dict[tuple[str, str], int]) -> None:
        self.standings = found
        table = self.query_one("#tasks-table", DataTable)
        table.clear()
        details = self._details["tasks"] = {}
        for task, rows in found:
            name = Text(_clip(task.name, TASK_WIDTH), style="bold")
            if not rows:
                table.add_row(name, Text(f"no stored judge: run\n argtui eval {task.name}", style="dim"), height=2)
            for row in rows:
                why = too_few(row.labelled, MIN_ITEMS, "judgments with a reference")
                key = table.add_row(
                    name, _judge_cell(row.judge, task.name, width=TASK_JUDGE_WIDTH,
                                      arena=arena[task.name, row.judge.name]),
                    _number(row.judgments),
                    _number(row.invalid, width=5), _number(row.labelled),
                    _number(None if why else row.accuracy), _number(None if why else row.macro_f1), height=2,
                )
                details[key] = _detail(task.name, row.judge, [f"acc., F1: {why}"] if why else [])
                name = Text("")
        self._show_detail("tasks")
        self._open_on_what_was_judged()

    def _fill_audit(self, audits: list[JudgeAudit]) -> None:
        """Per judge, a heading row (task and judge), then one row per figure: its value, interval,
        the reference's value on the same items, the items it rests on, or why it is "–"."""
        self.audits = audits
        self._show_empty("audit", not audits)
        table = self.query_one("#audit-table", DataTable)
        table.clear()
        details = self._details["audit"] = {}
        for judged in audits:
            heading = Text(f"{judged.task}: ", style="bold")
            heading.append_text(_judge_cell(judged.judge, judged.task, width=FIGURE_WIDTH + 2 * NUMBER_WIDTH))
            key = table.add_row(heading, "", "", "", _number(judged.judgments), "", height=2)
            details[key] = _detail(judged.task, judged.judge, [f"{judged.invalid} invalid"] if judged.invalid else [])
            costs = (judged.prompt_tokens, judged.completion_tokens, judged.seconds)
            for figure in judged.figures():
                key = table.add_row(*self._figure_cells(figure, percent=figure.name != "κ" and figure not in costs))
                line = _detail(judged.task, judged.judge, [f"{figure.name}: {figure.missing}"] if figure.missing else [])
                if not figure.missing:
                    line.append(f" · {figure.name} on {figure.items} {figure.unit}")
                details[key] = line
        self._show_detail("audit")

    @staticmethod
    def _figure_cells(figure: Figure, percent: bool) -> list[Text]:
        n = NUMBER_WIDTH
        interval = "" if figure.low is None or figure.high is None else (
            f"{_number(figure.low, percent).plain.strip()}–{_number(figure.high, percent).plain.strip()}")
        return [
            Text(" " + _clip(f"{figure.name} %" if percent else figure.name, FIGURE_WIDTH - 1)),
            _number(figure.value, percent, n + 1),
            Text(" " + interval), _number(figure.reference, percent, n + 1), _number(figure.items),
            Text(" " + figure.missing, style="dim"),
        ]

    def _show_detail(self, tab: str) -> None:
        """The detail line of the tab's highlighted row (the first before any is)."""
        table = self.query_one(f"#{tab}-table", DataTable)
        line = Text()
        if table.row_count:
            row = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
            line = self._details[tab].get(row, Text())
        self.query_one(f"#{tab}-detail", Static).update(line)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        tab = (event.data_table.id or "").removesuffix("-table")
        if tab in DETAILED:
            self._show_detail(tab)

    def _fill_judges(self, board: Board) -> None:
        table = self.query_one("#judges-table", DataTable)
        table.clear()
        details = self._details["judges"] = {}
        for row in board.comparisons:
            scores = row.scores
            metrics, reasons = shown_metrics(
                {"kappa": row.labels.kappa, "alpha": row.labels.alpha, "percent": row.labels.percent,
                 "pearson": scores.pearson if scores else math.nan, "spearman": scores.spearman if scores else math.nan},
                scores, row.labels,
            )
            key = table.add_row(
                _judge_cell(board.judge_ids[row.first]), _judge_cell(board.judge_ids[row.second]),
                _number(row.labels.n),
                *(_number(metrics[key], percent=key == "percent") for key in ("kappa", "alpha", "percent",
                                                                             "pearson", "spearman")),
                height=2,
            )
            first, second = (judge_title(PAIRWISE, board.judge_ids[name]) for name in (row.first, row.second))
            details[key] = Text(" · ".join([f"{first} vs {second}", *(f"– {reason}" for reason in reasons)]))
        self._show_detail("judges")

    def _fill_rankings(self, board: Board) -> None:
        table = self.query_one("#rankings-table", DataTable)
        table.clear()
        experts = ranking(board.results[EXPERTS].expert_scores)
        judged = ranking(board.results[self.judge].judge_scores) if self.judge else []
        for position in range(min(RANK_ROWS, max(len(experts), len(judged)))):
            cells: list = [Text(str(position + 1).rjust(3))]
            for ranked in (experts, judged):
                if position < len(ranked):
                    arg_id, score = ranked[position]
                    cells += [Text(" " + self._label(board, arg_id)), Text(f"{score:+.2f}".rjust(NUMBER_WIDTH))]
                else:
                    cells += ["", ""]
            table.add_row(*cells)

    @staticmethod
    def _label(board: Board, arg_id: ArgumentId) -> str:
        topic, (discussion, argument) = arg_id
        text = " ".join(board.texts.get(arg_id, "").split())
        return f"{topic}/{discussion}/{argument} {text}"

    def _plot(self, board: Board) -> None:
        experts = board.results[EXPERTS]
        judge = board.results.get(self.judge) if self.judge else None
        distribution = self.query_one("#distribution-plot", PlotextPlot)
        plt = distribution.plt
        plt.clear_data()
        plt.clear_figure()
        # Figure 1 of the seed: both distributions over the same arguments (the judged ones).
        expert_scores = judge.expert_scores if judge else experts.expert_scores
        plt.hist(list(expert_scores.values()), bins=20, label="experts (published)")
        if judge:
            plt.hist(list(judge.judge_scores.values()), bins=20, label="judge (BT)")
        plt.title(f"BT scores · {self.dimension} · {len(expert_scores)} arguments")
        distribution.refresh()
        scatter = self.query_one("#scatter-plot", PlotextPlot)
        plt = scatter.plt
        plt.clear_data()
        plt.clear_figure()
        if judge and judge.judge_scores:
            items = [arg for arg in judge.judge_scores if arg in judge.expert_scores]
            plt.scatter([judge.expert_scores[a] for a in items], [judge.judge_scores[a] for a in items])
            plt.xlabel("expert score")
            plt.ylabel("judge score")
            plt.title(f"judge vs experts · r {_fmt(judge.scores.pearson)} · ρ {_fmt(judge.scores.spearman)}")
        else:
            plt.title("no stored judge for this dimension and scope")
        scatter.refresh()

    def on_select_changed(self, event: Select.Changed) -> None:
        value = None if event.value is Select.NULL else str(event.value)
        if event.select.id == "judge" and value and value != self.judge:
            self.judge = value
            if self.board is not None:
                self._show(self.board, load_corpus(), self.dimension)
        elif event.select.id == "dimension" and value and value != self.dimension:
            self.dimension = value
            self.dimension_chosen = True
            self._refresh_board()
        elif event.select.id == "topic":
            topic = None if value is None else int(value)
            if topic != self.topic:
                self.topic = topic
                self._refresh_board()


MODE = Mode(
    name="leaderboard",
    title="Leaderboard",
    description="Pairwise judges against the experts of Webis-ArgQuality-20: agreement tables, "
    "Bradley-Terry rankings side by side, score distributions and LLM-vs-expert scatter plots; "
    "and the stored judges of every task against the reference.",
    make_screen=LeaderboardScreen,
    order=40,
)
