"""Every eval task under interruption, as a user meets it: Ctrl-C and SIGTERM mid-run and a
backend that dies mid-run each leave the run PAUSED with its cause; a bug inside a judge
leaves it FAILED with one line on the terminal; the rerun finishes and no answered LLM call
is asked again (counted at the server).

The fake server answers every call slowly with "A", which most tasks store as an invalid
verdict: a stored verdict all the same, so resuming is tested for every task alike."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest

from argtui.cli import main
from argtui.config import load_config
from engines.judging import task as registry
from engines.llm.servers import free_loopback_port
from store import Database
from store.runs import RunRepository, RunState
from conftest import shared_data_dir, write_rad_debates
from fakes import FakeServer, Reply, chat_reply

SLOW = Reply(json=chat_reply("A").json, delay_s=0.15)
HELD = Reply(json=chat_reply("A").json, delay_s=60)  # answered when the server closes, if at all
ITEMS = 8


def _components(folder: Path) -> list[str]:
    data = shared_data_dir() / "ukp-argument-annotated-essays-v2"
    if not data.is_dir():
        pytest.skip(f"the UKP essays are not at {data} (set ARGTUI_SHARED_DATA)")
    return ["--method", "vanilla", "--limit", "1", "--data", str(data)]


def _critiques(folder: Path) -> list[str]:
    assert main(["import", "critiques", "--demo"]) == 0
    return ["--prompt", "simple", "--limit", str(ITEMS)]


# The arguments of a small `argtui eval <task>` run with one call per item, for the tasks argtui
# ships; a task added later runs these cases once it has a recipe here, and needs none to work.
RECIPES: dict[str, Callable[[Path], list[str]]] = {
    "pairwise": lambda folder: [
        "--prompt", "zero", "--mode", "logprob", "--dimension", "logical", "--limit", str(ITEMS),
    ],
    "grice": lambda folder: [
        "--strategy", "ZSL", "--no-rationale",
        "--debates", str(write_rad_debates(folder / "debates.jsonl", ITEMS // 2)),
    ],
    "critiques": _critiques,
    "inspire": lambda folder: ["--debates", str(write_rad_debates(folder / "debates.jsonl", 2))],
    "components": _components,
}


def recipe(task: str, folder: Path) -> list[str]:
    return RECIPES[task](folder)


TASKS = list(RECIPES)


def use_server(fake: FakeServer) -> None:
    load_config().add_backend(fake.profile(kind="openai", retries=0, timeout_s=10, max_concurrency=1))


def runs_of(home: Path, task: str):
    db = Database(home / "data" / "argtui.sqlite3")
    try:
        return [run for run in RunRepository(db).list() if run.task == task]
    finally:
        db.close()


STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def as_a_shell_starts_it() -> None:
    """The child's stop signals as a shell starts a command: their default actions, none blocked. A
    test worker's own (which another test's library may have ignored or blocked, and which a child
    inherits) would leave the signals under test without effect."""
    for stop in STOP_SIGNALS:
        signal.signal(stop, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def start(task: str, args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "argtui", "eval", task, *args, "--judge", "fake", "--concurrency", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
        preexec_fn=as_a_shell_starts_it,
    )


def held_after(count: int) -> Callable[[dict], Reply]:
    """SLOW answers to the first `count` calls, then answers held until the server closes: an
    interruption sent after `count` calls finds the run unfinished, however slow the machine is."""
    calls = itertools.count(1)
    return lambda body: SLOW if next(calls) <= count else HELD


def wait_for_calls(fake: FakeServer, count: int, process: subprocess.Popen, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while len(fake.bodies) < count:
        assert process.poll() is None, f"the run ended early: {process.communicate()}"
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.02)


@pytest.mark.parametrize("task", TASKS)
def test_interruptions_pause_and_the_rerun_asks_nothing_twice(task, tmp_path, argtui_home):
    args = recipe(task, tmp_path)
    bodies: list[str] = []
    port = free_loopback_port()  # a restarted backend keeps its address (and so its cached answers)

    for stop, cause in ((signal.SIGINT, "interrupted"), (signal.SIGTERM, "SIGTERM")):
        with FakeServer(held_after(2), port=port) as fake:
            use_server(fake)
            process = start(task, args)
            wait_for_calls(fake, 2, process)
            process.send_signal(stop)
            _, err = process.communicate(timeout=30)
            bodies += [json.dumps(body, sort_keys=True) for body in fake.bodies]
        assert process.returncode in (1, 130), err
        assert "Traceback" not in err
        [run] = runs_of(argtui_home, task)
        assert run.state == RunState.PAUSED and cause in run.error, (run.state, run.error, err)

    fake = FakeServer(held_after(2), port=port).__enter__()
    use_server(fake)
    process = start(task, args)
    wait_for_calls(fake, 2, process)
    fake.__exit__(None, None, None)  # the backend dies mid-run
    _, err = process.communicate(timeout=60)
    bodies += [json.dumps(body, sort_keys=True) for body in fake.bodies]
    assert process.returncode == 1 and "Traceback" not in err and "paused after" in err, err
    [run] = runs_of(argtui_home, task)
    assert run.state == RunState.PAUSED and "fake" in run.error

    with FakeServer([SLOW], port=port) as fake:
        use_server(fake)
        process = start(task, args)
        out, err = process.communicate(timeout=120)
        bodies += [json.dumps(body, sort_keys=True) for body in fake.bodies]
    assert process.returncode == 0, err
    [run] = runs_of(argtui_home, task)
    assert run.state == RunState.DONE and run.done == run.total and run.error is None
    # A call in flight at each of the three interruptions may be asked again; no answered one is.
    repeated = sum(count - 1 for count in Counter(bodies).values())
    assert repeated <= 3, f"{repeated} calls were asked again"


@pytest.mark.parametrize("task", TASKS)
def test_a_bug_inside_a_judge_fails_the_run_with_one_line(task, tmp_path, argtui_home, monkeypatch, capsys):
    args = recipe(task, tmp_path)
    instance = registry.task(task)

    async def broken(*_args, **_kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(instance, "judge", broken)
    with FakeServer([SLOW]) as fake:
        use_server(fake)
        assert main(["eval", task, *args, "--judge", "fake"]) == 1
    err = capsys.readouterr().err
    assert "ZeroDivisionError" in err and "bug in argtui" in err and "Traceback" not in err
    [run] = runs_of(argtui_home, task)
    assert run.state == RunState.FAILED and "ZeroDivisionError" in run.error
    log = (argtui_home / "data" / "logs" / "argtui.log").read_text()
    assert "Traceback" in log and "ZeroDivisionError" in log
