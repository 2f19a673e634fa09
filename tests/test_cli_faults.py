"""CLI faults a hostile or careless user meets: names from data print as they are (never as
markup), a broken config names the file and the setting with its expected type, the Webis and
UKP readers refuse what would fail later, `debate --export` checks its target before the
debate and writes it whole, a closed pipe stops quietly, piped tables keep their rows whole,
and a refused connection says so. Each bad input gives one line and exit 1, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from argtui.cli import main
from argtui.config import load_config
from engines.datasets import DataFormatError
from engines.datasets.ukp_essays import read_essay
from engines.datasets.webis import load_webis
from engines.llm.profile import BackendProfile
from engines.llm.servers import free_loopback_port
from store import Database
from store.debates import DebateRepository
from store.runs import RunRepository, RunState
from test_critique_files import critique_line, rating, write_jsonl
from test_hostile_readers import GOOD_ANN, WEBIS_HEADER, webis_row, write_essay_text, write_webis_release

CLAIM = "We should abandon the use of school uniform"  # a topic of the bundled argument base


def one_error_line(capsys) -> str:
    """The command's stderr, checked to be a single line with no traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error: ") and err.count("\n") == 1, err
    return err


def app_database() -> Database:
    return Database(load_config().paths.database)


# ---------------------------------------------------------------- names from data are not markup


def test_a_rater_named_like_markup_is_imported_and_printed_as_is(tmp_path, capsys):
    path = write_jsonl(tmp_path / "in.jsonl", [critique_line("p1", "c1", [rating("bob[/]", 0.5)])])
    assert main(["import", "critiques", str(path)]) == 0
    assert "raters in the file: bob[/]" in capsys.readouterr().out
    assert main(["export", "critiques"]) == 0
    assert '"rater": "bob[/]"' in capsys.readouterr().out


def test_a_profile_named_like_markup_is_shown_as_is(argtui_home, capsys):
    argtui_home.mkdir(parents=True)
    (argtui_home / "config.toml").write_text(
        '[backends."x[/]"]\nkind = "vllm"\nmodel = "m[bold]"\nbase_urls = ["http://127.0.0.1:9/v1"]\n'
    )
    assert main(["config", "show"]) == 0
    assert "  x[/] kind=vllm model=m[bold] urls=http://127.0.0.1:9/v1" in capsys.readouterr().out


# ---------------------------------------------------------------- config errors: file, setting, type

CONFIG_FAULTS = {
    "a name key in a profile": (b'[backends.local]\nname = "other"\nkind = "vllm"\n',
                                ": [backends.local]: name: not a setting"),
    "backends an array": (b"backends = [1, 2]\n",
                          ": backends: expected a table of profiles, [backends.NAME], got an array of 2 values"),
    "a profile not a table": (b"backends.local = 3\n", ": backends.local: expected a table [backends.local]"),
    "datasets a string": (b'datasets = "x"\n',
                          ": datasets: expected a table of folders, NAME = \"PATH\", got the string 'x'"),
    "a dataset folder a number": (b"[datasets]\nukp-essays = 1\n", ": [datasets]: ukp-essays: expected a string"),
    "default_backend a number": (b"default_backend = 5\n", ": default_backend: expected a string (a profile name)"),
    "retrieval an array": (b"retrieval = []\n", ": retrieval: expected a table [retrieval], got an array"),
    "not UTF-8": (b'default_backend = "embedded"\n# caf\xe9\n', ", line 2: not UTF-8 text (byte 0xe9)"),
    "a folder": (None, ": is a folder; the config must be a TOML file"),
}


@pytest.mark.parametrize("fault", CONFIG_FAULTS)
def test_a_bad_config_names_the_file_and_the_setting_in_one_line(argtui_home, capsys, fault):
    content, expected = CONFIG_FAULTS[fault]
    config_file = argtui_home / "config.toml"
    argtui_home.mkdir(parents=True)
    if content is None:
        config_file.mkdir()
    else:
        config_file.write_bytes(content)
    assert main(["config", "show"]) == 1
    err = one_error_line(capsys)
    assert f"{config_file}{expected}" in err, err


# ---------------------------------------------------------------- readers refuse what fails later


def write_webis_pairs(root: Path, pairs: str) -> None:
    write_webis_release(root)
    (root / "Webis-ArgQuality-20-Full" / "webis-argquality20-arguments.csv").write_text(
        "\n".join([WEBIS_HEADER, webis_row(1), webis_row(2, "Vans deliver goods.")]) + "\n")
    (root / "Webis-ArgQuality-20-Raw" / "webis-argquality20-raw-logical.csv").write_text(
        "Discussion ID A,Argument ID A,Discussion ID B,Argument ID B,Comparison\n" + pairs)


def test_a_webis_pair_of_an_argument_with_itself_is_refused_with_file_line_and_field(tmp_path, capsys):
    root = tmp_path / "webis"
    write_webis_pairs(root, "10,1,10,2,A\n10,2,10,2,Tie\n")
    with pytest.raises(DataFormatError) as refused:
        load_webis(root, dimensions=("logical",))
    assert (refused.value.line, refused.value.field) == (3, "Argument ID B")
    assert "raw-logical.csv" in refused.value.path and "compares argument (10, 2) with itself" in str(refused.value)
    # The command stops at the file, before any backend or Bradley-Terry fit.
    assert main(["eval", "pairwise", "--data", str(root), "--dimension", "logical", "--limit", "1"]) == 1
    assert f"{refused.value.path}, line 3: field 'Argument ID B'" in one_error_line(capsys)


ANN_FAULTS = {
    "overlapping spans": (GOOD_ANN[:2] + ["T3\tPremise 38 54\tteaches planning\n"],  # inside T2
                          3, "T3", "span 38-54 overlaps T2 (30-54, line 2)"),
    "an id used twice": ([GOOD_ANN[0], "T1\tPremise 30 54\tCooking teaches planning\n"],
                         2, "T1", "id T1 is already used on line 1"),
    "two stances for one component": (GOOD_ANN + ["A2\tStance T2 Against\n"],
                                      5, "Stance", "T2 already has a stance on line 3"),
}


@pytest.mark.parametrize("fault", ANN_FAULTS)
def test_ukp_annotations_that_overlap_or_reuse_an_id_are_reader_errors(tmp_path, capsys, fault):
    lines, line, field, problem = ANN_FAULTS[fault]
    brat = tmp_path / "ukp" / "brat-project-final"
    brat.mkdir(parents=True)
    write_essay_text(brat)
    ann = brat / "essay001.ann"
    ann.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(DataFormatError) as refused:
        read_essay(brat / "essay001.txt", ann)
    assert (refused.value.line, refused.value.field) == (line, field) and problem in str(refused.value)
    assert main(["eval", "components", "--data", str(tmp_path / "ukp"), "--split", "all"]) == 1
    assert f"{ann}, line {line}: field '{field}': {problem}" in one_error_line(capsys)


# ---------------------------------------------------------------- debate --export


@pytest.fixture
def script(tmp_path) -> Path:
    path = tmp_path / "student.txt"
    path.write_text("School uniforms reduce bullying because nobody is mocked for their clothes.\n", encoding="utf-8")
    return path


def debate_argv(script: Path, export: Path) -> list[str]:
    return ["debate", "--claim", CLAIM, "--side", "con", "--level", "0", "--script", str(script),
            "--export", str(export)]


def test_debate_export_refuses_a_link_a_folder_or_a_device_before_the_debate_is_played(tmp_path, script, capsys):
    victim = tmp_path / "victim.json"
    victim.write_text("precious", encoding="utf-8")
    link = tmp_path / "run.json"
    link.symlink_to(victim)
    (tmp_path / "notes.txt").write_text("a file", encoding="utf-8")
    refused = {link: "is a link", tmp_path: "is a folder", tmp_path / "notes.txt" / "run.json": "Not a directory"}
    if Path("/dev/full").exists():
        refused[Path("/dev/full")] = "is not a regular file"
    for target, problem in refused.items():
        assert main(debate_argv(script, target)) == 1
        err = one_error_line(capsys)
        assert f"{target}: " in err and problem in err, err
    assert victim.read_text(encoding="utf-8") == "precious"
    assert main(["debate", "--list"]) == 0 and capsys.readouterr().out == ""  # no debate was played


@pytest.mark.llm
def test_a_played_debate_is_exported_whole_through_the_result_writer(tmp_path, script, llama_profile, capsys):
    load_config().add_backend(llama_profile.model_copy(update={"timeout_s": 300}), make_default=True)
    target = tmp_path / "runs" / "run.json"  # its folder is made when the debate is over
    argv = debate_argv(script, target) + ["--grice-strategy", "ZSL", "--component-method", "vanilla"]
    assert main(argv) == 0
    run = json.loads(target.read_text(encoding="utf-8"))
    [turn] = run["simulation"]["userTurns"]
    assert turn["systemResponse"]["response"]["content"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["run.json"]  # no temporary file left
    unwrapped = "".join(capsys.readouterr().err.split())  # the console wraps lines at a space or inside the path
    assert "".join(f"wrote {target} (debate 1)".split()) in unwrapped


# ---------------------------------------------------------------- pipes: closed early, and wide rows


def test_output_piped_into_head_stops_quietly(argtui_home):
    db = app_database()
    try:
        repository = DebateRepository(db)
        debate = repository.create(CLAIM, "con", backend="embedded", level=0)
        for number in range(4):  # a megabyte of export: more than a pipe holds, so `head` leaves mid-write
            repository.add_turn(debate.id, "user", f"message {number} " + "uniforms " * 30_000)
            repository.add_turn(debate.id, "assistant", f"reply {number}")
    finally:
        db.close()
    # Buffered, as stdout is by default: unbuffered, a write the closed pipe cut short is dropped silently.
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}, "ARGTUI_HOME": str(argtui_home)}
    export = subprocess.Popen([sys.executable, "-m", "argtui", "export", "debate", str(debate.id), "--format", "rad"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    head = subprocess.Popen(["head", "-c", "300"], stdin=export.stdout, stdout=subprocess.PIPE)
    export.stdout.close()  # head holds the only reading end
    shown, _ = head.communicate(timeout=120)
    err = export.stderr.read().decode()
    assert export.wait(timeout=120) == 1
    assert len(shown) == 300 and shown.startswith(b"{")
    assert err == "", err  # no traceback, no "Exception ignored" at exit


LONG_JUDGE = "SmolLM2-1.7B-Instruct-Q4_K_M.gguf@embedded pairwise logprob few-shot"
LONG_CAUSE = ("backend 'embedded' at http://127.0.0.1:41234/v1/chat/completions: ConnectError after 4 attempts: "
              "cannot connect to 127.0.0.1:41234: Connection refused; " * 3).strip()


def test_piped_runs_keep_the_judge_and_the_cause_whole_on_their_row(capsys):
    db = app_database()
    try:
        runs = RunRepository(db)
        run = runs.open("eval-pairwise", "a long run", {}, 3051, task="pairwise", judge=LONG_JUDGE)
        runs.update(run.id, state=RunState.PAUSED, done=20, error=LONG_CAUSE)
    finally:
        db.close()
    assert main(["runs"]) == 0  # capsys stands for a pipe: not a terminal
    out = capsys.readouterr().out
    [row] = [line for line in out.splitlines() if line.strip().startswith(str(run.id))]
    assert LONG_JUDGE in row and LONG_CAUSE in row and "20/3051" in row and "…" not in out


# ---------------------------------------------------------------- a refused connection


def test_a_refused_plain_http_connection_names_the_address_not_tls(argtui_home, capsys):
    port = free_loopback_port()
    load_config().add_backend(BackendProfile(
        name="closed", kind="openai", base_urls=[f"http://127.0.0.1:{port}/v1"], model="m", retries=0, timeout_s=5,
    ))
    assert main(["doctor", "--backend", "closed"]) == 1
    out = capsys.readouterr().out
    [row] = [line for line in out.splitlines() if "closed" in line]
    assert f"cannot connect to 127.0.0.1:{port}: Connection refused" in row and "ssl:" not in out, out
