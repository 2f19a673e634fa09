"""`argtui audit --fill` against a fake server: a judge stored in runs mode only gets its items judged
in swap mode, after the command said how many LLM calls that takes, and the server then receives
exactly those; a second fill finds nothing missing and sends nothing. An answer the response cache
holds is no call. Without --yes and with no terminal to ask on, nothing is run."""

from __future__ import annotations

import json
import re

import pytest

from argtui.cli import main
from argtui.config import load_config
from engines.judging.store import JudgmentStore
from store import Database
from fakes import FakeServer, chat_reply, logprob_entry

PAIRS = 3
EVAL = ["eval", "pairwise", "--dimension", "logical", "--topics", "20", "--limit", str(PAIRS), "--bootstrap", "0",
        "--json"]
FILL = ["audit", "--task", "pairwise", "--fill", "--json"]


def always_a(body: dict):
    """Every answer "A" (as many as asked for), with the label logprobs swap mode reads."""
    top = [("A", -0.1), ("B", -2.5), ("Tie", -3.0)]
    return chat_reply(*["A"] * body.get("n", 1), logprobs=[logprob_entry("A", -0.1, top)], prompt_tokens=40)


def judge_stored(capsys, *flags: str):
    """A fake server as the default backend, and a pairwise judge stored from it (runs mode unless `flags`)."""
    with FakeServer(always_a) as fake:
        load_config().add_backend(fake.profile(kind="llamacpp"), make_default=True)
        assert main([*EVAL, *flags]) == 0
        capsys.readouterr()
        yield fake


@pytest.fixture
def runs_judge(capsys):
    yield from judge_stored(capsys)


@pytest.fixture
def logprob_judge(capsys):
    yield from judge_stored(capsys, "--mode", "logprob")


def called(err: str) -> int:
    found = re.search(r"(\d+) LLM calls to fill", err)
    assert found, err
    return int(found.group(1))


def stored_judges() -> list[str]:
    db = Database(load_config().paths.database)
    try:
        return [row.name for row in JudgmentStore(db, "pairwise").judges()]
    finally:
        db.close()


def test_fill_judges_the_runs_judges_items_in_both_orders_with_the_calls_it_said(runs_judge, capsys):
    [runs_name] = stored_judges()
    sent = len(runs_judge.bodies)
    assert main([*FILL, "--yes"]) == 0
    out, err = capsys.readouterr()
    received = runs_judge.bodies[sent:]
    assert called(err) == len(received) == 2 * PAIRS  # each pair as shown and swapped
    assert all(body.get("n", 1) == 1 and body.get("logprobs") for body in received)
    audits = {found["judge"]: {figure["name"]: figure for figure in found["figures"]} for found in json.loads(out)}
    [swap_name] = set(audits) - {runs_name}
    assert " zero/swap@t0 " in swap_name and " zero/runs3@t1 " in runs_name
    consistency, first = audits[swap_name]["position consistency"], audits[swap_name]["first position"]
    # "A" in both orders names the first-shown text each time: never consistent, always the first.
    assert (consistency["value"], consistency["items"]) == (0.0, PAIRS) and first["value"] == 1.0
    assert audits[runs_name]["runs agree"]["items"] == PAIRS

    sent = len(runs_judge.bodies)
    assert main([*FILL, "--yes"]) == 0
    out, err = capsys.readouterr()
    assert called(err) == 0 and len(runs_judge.bodies) == sent
    assert {found["judge"] for found in json.loads(out)} == {runs_name, swap_name}


def test_fill_without_yes_and_no_terminal_refuses_and_runs_nothing(runs_judge, capsys):
    before = stored_judges()
    sent = len(runs_judge.bodies)
    assert main(FILL) == 1
    err = capsys.readouterr().err
    assert called(err) == 2 * PAIRS and "give --yes" in err
    assert len(runs_judge.bodies) == sent
    assert stored_judges() == before


def test_an_answer_the_cache_holds_is_no_call_to_fill(logprob_judge, capsys):
    """A logprob judge lacks both orders and repeated runs; its answers as shown are swap mode's first
    order, from the response cache, so only the swapped order and the runs are calls."""
    sent = len(logprob_judge.bodies)
    assert main([*FILL, "--yes"]) == 0
    err = capsys.readouterr().err
    received = logprob_judge.bodies[sent:]
    runs = [body for body in received if body.get("n", 1) == 3]
    assert called(err) == len(received) == 2 * PAIRS
    assert len(runs) == PAIRS  # one request of three samples per pair; the other PAIRS: the swapped order
