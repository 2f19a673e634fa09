"""The critique judges as the seed runs them: a reasoning budget set by --max-tokens, the
invalid share beside every loss, and the loss table with its intervals and the random row."""

from __future__ import annotations

import json
import math
import re

import pytest

from argtui.cli import main
from argtui.config import load_config
from engines.critiques.agreement import TABLE_COLUMNS, agreement_report, report_as_dict, table_rows
from engines.critiques.judges import DEFAULT_MAX_TOKENS
from engines.critiques.report import JudgeRating
from engines.errors import ArgtuiError
from engines.judging.task import default_options, task
from store.critiques import DIMENSIONS, HUMAN

TASK = task("critiques")


def test_max_tokens_is_a_judge_option_with_room_to_think():
    option = {o.name: o for o in TASK.options}["max_tokens"]
    assert option.judge_option and option.flag == "--max-tokens"
    assert option.default == DEFAULT_MAX_TOKENS >= 2000
    with pytest.raises(ArgtuiError, match="--max-tokens"):
        TASK.check_options(default_options(TASK, max_tokens=0))


def rating(rater: str, critique: str, overall: float | None, kind: str = HUMAN) -> JudgeRating:
    values = {name: 0.8 for name in DIMENSIONS} | {"overall": overall}
    return JudgeRating(rater, critique, values, overall is not None, kind)


def test_the_invalid_share_stands_next_to_the_losses():
    position_of = {f"c{i}": "p1" for i in range(4)} | {"d0": "p2", "d1": "p2"}
    reference = [rating("ann", c, overall) for c, overall in zip(position_of, (0.1, 0.4, 0.7, 0.9, 0.2, 0.6))]
    judge = [rating("m@gpu rubric", c, overall, "judge")
             for c, overall in zip(position_of, (0.2, None, 0.6, 0.9, None, 0.1))]
    report = agreement_report([*reference, *judge], position_of, 6, "ann", resamples=200)
    row, random_row = report.versus_reference
    assert (row.shared, row.invalid, row.missing) == (4, 2, 0)
    assert row.invalid_share == pytest.approx(2 / 6)
    assert random_row.compared == "random" and random_row.invalid_share == 0
    assert TABLE_COLUMNS[2:6] == ("ranking", "unweighted", "custom", "invalid")
    cells = table_rows(report.versus_reference)[0]
    assert cells[5] == "33.3%\n2 of 6"
    assert report_as_dict(report)["versus_reference"][0]["invalid_share"] == pytest.approx(2 / 6)
    # a rater of none of the reference's critiques has no share to show
    other = agreement_report([*reference, rating("bob", "elsewhere", 0.5)], position_of, 6, "ann", ["bob"])
    [bob] = other.versus_reference
    assert math.isnan(bob.invalid_share) and table_rows([bob])[0][5] == "–"


def test_agreement_critiques_prints_the_losses_with_intervals_and_the_random_row(capsys):
    assert main(["import", "critiques", "--demo"]) == 0
    capsys.readouterr()
    assert main(["agreement", "critiques", "--reference", "demo-crowd-wa", "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "ranking" in line)
    assert header.index("ranking") < header.index("unweighted") < header.index("custom") < header.index("invalid")
    assert re.search(r"random\s", out) and "demo-crowd-mace" in out
    assert len(re.findall(r"\.\d{3}–\.\d{3}", out)) >= 6  # every loss of both rows over its interval
    assert "0.0%" in out  # the raters' invalid share
    assert main(["agreement", "critiques", "--reference", "demo-crowd-wa", "--resamples", "200", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["versus_reference"]
    assert [row["compared"] for row in rows] == ["demo-crowd-mace", "random"]
    assert all(row["ranking"]["low"] <= row["ranking"]["value"] <= row["ranking"]["high"] for row in rows)


@pytest.mark.llm
def test_max_tokens_reaches_the_backend_and_names_the_judge(llama_profile, capsys):
    load_config().add_backend(llama_profile.model_copy(update={"timeout_s": 300}), make_default=True)
    assert main(["import", "critiques", "--demo"]) == 0
    capsys.readouterr()
    assert main(["eval", "critiques", "--prompt", "rubric", "--limit", "1", "--max-tokens", "8", "--json"]) == 0
    [cut] = json.loads(capsys.readouterr().out)["results"]
    assert "#" in cut["judge"]  # not the default budget: its own judge
    assert cut["invalid"] == 1 and 0 < cut["usage"]["completion_tokens"] <= 8  # cut off at the limit
    assert main(["agreement", "critiques", "--reference", "demo-crowd-wa", "--compare", cut["judge"]]) == 0
    out = capsys.readouterr().out
    assert "100.0%" in out and "1 of 1" in out  # its one rating was invalid
