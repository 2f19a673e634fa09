"""The per-turn token budget benchmark runs (`--smoke`: one level-0 message on a fresh embedded
server) and prints each judge's figures and the turn's; their size is the benchmark's to report,
not a target this test holds."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from engines.llm.embedded import EmbeddedSettings
from engines.tasks.debate_judges import LIVE_GRICE_LAYOUT

JUDGES = ("reply", "grice", "components", "coach")


@pytest.mark.llm
def test_the_smoke_run_prints_the_tokens_and_wall_time_of_every_judge_of_a_turn(tmp_path):
    output = tmp_path / "budget.json"
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "benchmarks" / "bench_turn_budget.py"), "--smoke", "--output", str(output)],
        capture_output=True, text=True, timeout=1500, cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    figures = r"\s+(\d+) /\s+(\d+),\s+(\d+) generated"
    for judge in (*JUDGES, "turns"):
        assert any(re.match(rf"\s+{judge}{figures}", line) for line in lines), done.stdout
    # the judges' preparation when the debate opens, on a row of its own: the Analyzer's stage 1s
    [prepared] = [re.match(rf"\s+prepare:{figures}", line) for line in lines if line.lstrip().startswith("prepare:")]
    assert prepared is not None and int(prepared[1]) > 0, done.stdout
    [message] = [line for line in lines if re.match(rf"\s+message 1:{figures}", line)]
    assert all(f"{judge} " in message for judge in JUDGES), message  # each one's wall time

    results = json.loads(output.read_text())
    assert results["grice_layout"] == LIVE_GRICE_LAYOUT and results["slots"] == EmbeddedSettings().slots
    [level] = results["levels"].values()
    assert level["prepare"]["computed"] == int(prepared[1])
    assert level["level"] == 0 and len(level["turns"]) == 1
    judges = level["judges"]
    for count in ("computed", "reused", "generated"):
        assert level["total"][count] == sum(judges[judge][count] for judge in JUDGES)
    # Level 0 answers from the argument base; every judge asks the model, and each judgment is read
    assert judges["reply"]["generated"] == 0
    assert all(judges[judge]["computed"] + judges[judge]["reused"] > 0 for judge in JUDGES[1:])
    assert level["turns"][0]["failure"] is None
