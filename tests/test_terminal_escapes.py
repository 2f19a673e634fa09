"""Control characters from data, a model or a server reach no terminal: the TUI and the CLI show
them (ESC as ␛) instead of sending them, while files and pipes keep the data as it is.

A terminal obeys what it is sent: `ESC ] 0 ;` sets its title, `ESC ] 52 ;` writes the clipboard,
`ESC [ 2 J` clears the screen, and U+009B is CSI in one character. The hostile strings below mix
such sequences with any other control character and ordinary text; what the terminal gets may
hold only argtui's own sequences (colours, Textual's cursor moves, the progress bar's redraws)."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import uuid
from pathlib import Path
from xml.etree import ElementTree

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from argtui.app import ArgtuiApp
from argtui.config import load_config
from engines.critiques.files import import_critiques, read_critiques
from engines.terminal_text import VisibleControlsConsole, visible, visible_text
from screens.debate import DebateScreen
from screens.rating import RatingScreen
from screens.students import StudentPickerScreen
from store.critiques import CritiqueRepository
from store.debates import DebateRepository
from store.students import StudentRepository
from fakes import FakeServer, error_reply
from test_terminal_sizes import settle

ATTACKS = (
    "\x1b]0;PWNED-TITLE\x07",  # the window title, ended by BEL
    "\x1b]2;PWNED-TITLE\x1b\\",  # the same, ended by ST
    "\x1b]52;c;UFdORUQ=\x07",  # OSC 52: write the clipboard
    "\x1b[2J", "\x1b[3J", "\x1bc",  # clear the screen, the scrollback; reset the terminal
    "\x1bP+q544e\x1b\\",  # a DCS query
    "\x9b2J", "\x9d0;PWNED-TITLE\x9c",  # CSI and OSC as 8-bit C1 controls
)
CONTROLS = [chr(code) for code in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if chr(code) not in "\n\t"]
NOT_SHOWN = re.compile("[" + "".join(map(re.escape, CONTROLS)) + "]")
# argtui's own: SGR colours, cursor moves (Textual's), the progress bar's cursor hiding and line redraws,
# and the \r of the \r\n a pseudo-terminal ends lines with.
OWN_SEQUENCES = re.compile(r"\x1b\[(?:[0-9;]*[mHA]|\?25[lh])|\r\x1b\[2K|\r(?=\n)")

# Data: at least one attack, among ordinary text and any control but NUL (no reader takes NUL, nor an
# unpaired surrogate: tests/test_hostile_readers.py).
# Wrapped in < >, since identifiers lose surrounding blanks, and many controls count as blanks.
hostile = st.tuples(
    st.sampled_from(ATTACKS),
    st.lists(st.sampled_from(ATTACKS) | st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=6)
             | st.sampled_from([c for c in CONTROLS if c != "\x00"]), max_size=5),
).map(lambda parts: "<" + parts[0] + "".join(parts[1]) + ">")


def assert_sends_nothing_from_the_data(output: str) -> None:
    """`output` (what a terminal got) holds no control character but its own sequences, newlines and tabs."""
    rest = OWN_SEQUENCES.sub("", output)
    leaked = NOT_SHOWN.search(rest)
    assert leaked is None, f"sent to the terminal: {rest[max(0, leaked.start() - 30):leaked.end() + 30]!r}"
    for sequence in ("\x1b]0;", "\x1b]2;", "\x1b]52;", "\x1b[2J", "\x9b", "PWNED-TITLE\x07"):
        assert sequence not in output


def assert_shows_controls(output: str) -> None:
    """`output` shows a control character from the data: a control picture (␛) or a C1 control's �."""
    assert re.search("[\u2400-\u2421\ufffd]", output), output


# ---------------------------------------------------------------- the sanitiser


@given(st.text())
def test_no_control_character_but_newline_and_tab_survives(text):
    shown = visible(text)
    assert NOT_SHOWN.search(shown) is None
    assert shown.count("\n") == text.count("\n") and shown.count("\t") == text.count("\t")


@given(st.text(alphabet=st.characters(exclude_characters=CONTROLS)))
def test_text_without_controls_is_left_as_it_is(text):
    assert visible(text) is text


@given(st.lists(st.text(max_size=8), max_size=6))
def test_each_character_is_shown_on_its_own(pieces):
    assert visible("".join(pieces)) == "".join(map(visible, pieces))


@given(st.lists(hostile, max_size=4))
def test_json_escapes_every_control_only_with_ensure_ascii(texts):
    """Why the commands print `json.dumps(...)` as it is, and JSON made with ensure_ascii=False through print_data."""
    assert NOT_SHOWN.search(json.dumps(texts)) is None
    kept = json.dumps(texts, ensure_ascii=False)  # C0 escaped; DEL and the C1 controls kept
    assert set(NOT_SHOWN.findall(kept)) == set(re.findall("[\x7f-\x9f]", "".join(texts)))


def test_the_pictures():
    assert visible("\x1b]0;T\x07\x00\x7f\r") == "␛]0;T␇␀␡␍"
    assert visible("\x9b2J\x85") == "\ufffd2J\ufffd"
    assert visible("line\n\tindented") == "line\n\tindented"


@given(st.text(st.sampled_from(CONTROLS) | st.characters(exclude_categories=["Cs"])))
def test_a_control_is_shown_in_one_character_of_one_cell(text):
    """One character for one keeps styles on their characters; one cell for the none a control
    measures keeps a laid-out line's end in its place."""
    shown = visible(text)
    controls = len(NOT_SHOWN.findall(text))
    assert len(shown) == len(text) and cell_len(shown) == cell_len(text) + controls


# Text from controls and anything else, but what rich's Text drops itself (BEL, BS, VT, FF, CR).
rich_text = st.text(st.sampled_from(CONTROLS) | st.characters(), max_size=8).map(
    lambda text: re.sub("[\a\b\v\f\r]", "", text))


@given(st.lists(st.tuples(rich_text, st.sampled_from(["", "bold", "red", "italic blue"])), max_size=6))
def test_styles_stay_on_the_characters_they_styled(pieces):
    shown = visible_text(Text.assemble(*pieces))
    expected = Text.assemble(*((visible(text), style) for text, style in pieces))
    assert shown.plain == expected.plain and shown.spans == expected.spans


@settings(deadline=None)
@given(texts=st.lists(hostile, min_size=1, max_size=4), width=st.integers(20, 100))
def test_the_console_prints_no_control_from_data_and_fits_its_width(texts, width):
    out = io.StringIO()
    console = VisibleControlsConsole(file=out, width=width, force_terminal=True, color_system="truecolor")
    table = Table("name", "text")
    for text in texts:
        console.print(text, markup=False)
        console.print(Text.assemble(("bold: ", "bold"), text))
        table.add_row(Text(text), text)
    console.print(table)
    assert_sends_nothing_from_the_data(out.getvalue())
    assert_shows_controls(out.getvalue())
    plain = Console(file=io.StringIO(), width=200)
    assert all(plain.measure(Text.from_ansi(line)).maximum <= width for line in out.getvalue().splitlines())


# ---------------------------------------------------------------- the TUI


def terminal_output(app: ArgtuiApp) -> str:
    """What the app sends the terminal to draw its screen in full (what its driver writes)."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return update.render_segments(app.console)


def critiques_file(folder: Path, position: str, critique: str, rater: str, note: str) -> Path:
    """One critique and its rating; the ids are the texts after a fresh key (the database outlives an example)."""
    key = uuid.uuid4().hex
    rating = {"rater": rater, "centrality": 1.0, "strength": 0.5, "correctness": 0.5, "clarity": 0.5,
              "dead_weight": 0.0, "single_issue": 1.0, "overall": 0.5, "note": note}
    row = {"position_id": f"p{key}{position}", "position": position, "critique_id": f"c{key}{critique}",
           "critique": critique, "source": note, "ratings": [rating]}
    path = folder / f"{key}.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


TUI = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@TUI
@given(texts=st.lists(hostile, min_size=4, max_size=4))
async def test_the_rating_screen_sends_no_sequence_from_the_critiques(closed_backend, tmp_path, texts):
    position, critique, rater, note = texts
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        import_critiques(CritiqueRepository(app.services.db), critiques_file(tmp_path, position, critique, rater, note))
        await app.push_screen(RatingScreen(rater=rater))
        await settle(app, pilot)
        await pilot.press("s")  # reveal the source
        await pilot.pause()
        output = terminal_output(app)
    assert_sends_nothing_from_the_data(output)
    assert_shows_controls(output)


@TUI
@given(claim=hostile, message=hostile, reply=hostile, error=hostile)
async def test_the_debate_screen_sends_no_sequence_from_a_reply_or_an_error(closed_backend, claim, message,
                                                                           reply, error):
    app = ArgtuiApp()
    repository = DebateRepository(app.services.db)
    debate = repository.create(claim, "pro", backend="closed")
    repository.add_turn(debate.id, "user", message)
    repository.add_turn(debate.id, "assistant", reply)
    repository.add_turn(debate.id, "user", message)
    repository.add_turn(debate.id, "assistant", "", error=error, state="failed")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(DebateScreen(debate.id))
        await settle(app, pilot)
        output = terminal_output(app)
    assert_sends_nothing_from_the_data(output)
    assert_shows_controls(output)


def drawn_lines(app: ArgtuiApp) -> list[str]:
    """The text of the lines the app sends the terminal, its own sequences taken out."""
    return [OWN_SEQUENCES.sub("", line) for line in re.split(r"\x1b\[\d+;\d+H", terminal_output(app))]


async def test_a_control_in_a_students_name_leaves_the_rest_of_the_picker_line_in_place(closed_backend):
    app = ArgtuiApp()
    for name in ("Ada\x1b[2J", "Bo\x85\x9b Li", "Plain"):
        StudentRepository(app.services.db).add(name + "x" * (20 - len(name)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, StudentPickerScreen)
        lines = [line for line in drawn_lines(app) if "rating" in line]
    shown = ("Ada␛[2J" + "x" * 13, "Bo\ufffd\ufffd Li" + "x" * 13, "Plain" + "x" * 15)
    assert len(lines) == 3 and all(name in line for name, line in zip(shown, lines)), lines
    # The picker's right border stays in its column: a picture is laid out in the cell it is drawn in.
    assert all("rating 1000 · no rated debate yet  ▎ █" in line for line in lines), lines
    assert len({line.index("▎ █") for line in lines}) == 1, lines


async def test_a_screenshot_with_controls_on_screen_is_valid_xml(closed_backend, tmp_path):
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        source = critiques_file(tmp_path, "Uniforms\x1b]0;PWNED-TITLE\x07", "Costly\x9b2J\x85", "ann\x1bc", "note\x00")
        import_critiques(CritiqueRepository(app.services.db), source)
        await app.push_screen(RatingScreen(rater="ann"))
        await settle(app, pilot)
        await pilot.press("ctrl+s")
        await pilot.pause()
    [saved] = (load_config().paths.data_dir / "screenshots").iterdir()
    svg = saved.read_text(encoding="utf-8")
    ElementTree.fromstring(svg)  # no control character XML refuses
    assert NOT_SHOWN.search(svg) is None and "Uniforms␛]0;PWNED-TITLE" in svg.replace("&#160;", " ")


# ---------------------------------------------------------------- the CLI, through a pseudo-terminal


def in_terminal(*args: str, columns: int = 120) -> tuple[int, str]:
    """Run `argtui ARGS` with its stdout and stderr on a pseudo-terminal; its exit status and what the terminal got."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    process = subprocess.Popen([sys.executable, "-m", "argtui", *args], stdin=subprocess.DEVNULL,
                               stdout=terminal, stderr=terminal, env={**os.environ, "TERM": "xterm-256color"})
    os.close(terminal)
    received = bytearray()
    try:
        while select.select([controller], [], [], 120)[0]:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the program closed the terminal (Linux says EIO)
                break
            if not chunk:
                break
            received += chunk
    finally:
        os.close(controller)
    return process.wait(timeout=60), received.decode("utf-8")


def piped(*args: str) -> bytes:
    return subprocess.run([sys.executable, "-m", "argtui", *args], stdout=subprocess.PIPE, check=True).stdout


CLI = settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@CLI
@given(texts=st.lists(hostile, min_size=4, max_size=4))
def test_import_export_and_agreement_show_the_data_and_files_keep_it(tmp_path, texts):
    position, critique, rater, note = texts
    source = critiques_file(tmp_path, position, critique, rater, note)
    folder = source.with_suffix("")
    folder.mkdir()
    for args in (("import", "critiques", str(source)), ("export", "critiques", "--format", "csv")):
        status, output = in_terminal(*args)
        assert status == 0, output
        assert_sends_nothing_from_the_data(output)
        assert_shows_controls(output)  # the raters' names, and every field of the CSV
    status, output = in_terminal("agreement", "critiques", "--reference", rater + "\x1b]0;PWNED-TITLE\x07")
    assert status != 0 and "error: " in output  # with the raters it has, named
    assert_shows_controls(output)
    assert_sends_nothing_from_the_data(output)

    (folder / "piped.csv").write_bytes(piped("export", "critiques", "--format", "csv"))
    assert piped("export", "critiques", "--output", str(folder / "out.jsonl")) == b""
    for exported in (folder / "piped.csv", folder / "out.jsonl"):
        parsed = read_critiques(exported)
        stored = next(c for c in parsed.critiques if c.uid == f"c{folder.name}{critique}")  # as written, in the file
        assert stored.text == critique
        assert [p.text for p in parsed.positions if p.uid == stored.position_uid] == [position]
        assert {(r.rater, r.note) for r in parsed.ratings if r.critique_uid == stored.uid} == {(rater, note)}


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(message=hostile)
def test_a_servers_error_message_is_shown_by_eval_and_runs(message):
    assert in_terminal("import", "critiques", "--demo")[0] == 0
    with FakeServer([error_reply(401, message)]) as fake:
        load_config().add_backend(fake.profile(kind="openai", retries=0, timeout_s=10, max_concurrency=1))
        status, output = in_terminal("eval", "critiques", "--prompt", "simple", "--limit", "2", "--judge", "fake")
    assert status != 0 and "401" in output
    assert_sends_nothing_from_the_data(output)
    assert_shows_controls(output)
    status, output = in_terminal("runs", columns=200)
    assert status == 0 and "401" in output  # the run's cause
    assert_sends_nothing_from_the_data(output)
    assert_shows_controls(output)
