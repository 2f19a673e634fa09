"""MAD-ACC as the paper ran it: a backend per role, the smart-reasoning baseline, token limits
that leave room for a reasoning model (a cut answer is invalid), and the paper's Table 1.

Scripted OpenAI-compatible servers (tests/fakes.py) stand in for the models, so each test
can see which backend was asked what.
"""

from __future__ import annotations

import json
from contextlib import ExitStack

from argtui.cli import main
from engines.components import LIVE_SETTINGS, ClassifierSettings, classify_component, label_components
from engines.components.prompts import MAX_WORDS
from engines.components.records import result_of, verdict_of
from fakes import FakeServer, Reply, chat_reply
from test_components import ANSWERS, ESSAY, ScriptedServer, scripted_client, spans_of, write_brat

ROLE_PROFILES = ("big", "small", "warm")  # judge, manager, debaters


class CuttingServer(ScriptedServer):
    """A scripted server whose free-text answers containing `cut_when` stop at their token limit."""

    def __init__(self, answers: dict[str, str], cut_when: str):
        super().__init__(answers)
        self.cut_when = cut_when

    def __call__(self, body: dict) -> Reply:
        reply = super().__call__(body)
        if "grammar" not in body and self.cut_when in body["messages"][-1]["content"]:
            return chat_reply(self.text, finish_reason="length", completion_tokens=body["max_tokens"])
        return reply


def configure(home, servers: dict[str, FakeServer]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("".join(
        f'[backends.{name}]\nkind = "llamacpp"\nbase_urls = ["{fake.url}"]\nmodel = "{name}-model"\nretries = 0\n'
        for name, fake in servers.items()
    ))


def user_prompts(server: ScriptedServer) -> list[str]:
    return [body["messages"][-1]["content"] for body in server.bodies]


def test_each_role_asks_its_own_backend(argtui_home, tmp_path, capsys):
    scripts = {name: ScriptedServer(ANSWERS) for name in ROLE_PROFILES}
    data = write_brat(tmp_path / "essays", ESSAY)
    with ExitStack() as stack:
        servers = {name: stack.enter_context(FakeServer(script)) for name, script in scripts.items()}
        configure(argtui_home, servers)
        argv = ["eval", "components", "--data", str(data), "--split", "all", "--method", "mad", "--json"]
        assert main([*argv, "--judge", "big", "--manager", "nowhere"]) == 1  # named before anything runs
        assert "no backend profile named 'nowhere'" in capsys.readouterr().err
        assert not any(script.bodies for script in scripts.values())
        assert main([*argv, "--judge", "big", "--manager", "small", "--debaters", "warm"]) == 0
    [result] = json.loads(capsys.readouterr().out)["results"]
    judge, manager, debaters = (scripts[name] for name in ROLE_PROFILES)
    components = len(ESSAY.components)
    # The Manager: one constrained distribution per component, deterministic.
    assert len(manager.bodies) == components
    assert all("grammar" in body and body["logprobs"] and body["temperature"] == 0.0 for body in manager.bodies)
    # The debaters: two rounds of two turns, sampled at 0.7.
    assert len(debaters.bodies) == 4 * components
    assert all("grammar" not in body and body["temperature"] == 0.7 for body in debaters.bodies)
    assert sum("You are the Proponent" in prompt for prompt in user_prompts(debaters)) == 2 * components
    # The Judge: its reason over the transcript, then its constrained verdict.
    assert len(judge.bodies) == 2 * components
    assert sum("You are the Judge of a debate" in prompt for prompt in user_prompts(judge)) == components
    assert result["judge"].startswith("big-model@big mad #") and result["calls_per_component"] == 7.0


async def test_smart_reasoning_is_the_judges_prompt_without_a_debate():
    server = ScriptedServer({ESSAY.components[1].text: "Claim"}, text="It is supported by the next sentence.")
    settings = ClassifierSettings(judge_max_tokens=3000)
    async with scripted_client(server) as client:
        result = await classify_component(client, ESSAY.text, spans_of(ESSAY), 1, "smart", settings=settings)
    assert result.valid and result.label == "Claim" and result.method == "smart"
    assert [t.role for t in result.transcript] == ["judge"] and result.reason == "It is supported by the next sentence."
    reason, verdict = server.bodies
    prompt = reason["messages"][-1]["content"]
    assert "You are the Judge" in prompt and "direction of support" in prompt and "provided definitions" in prompt
    assert "Proponent" not in prompt and "Debate" not in prompt and "transcript" not in prompt
    assert reason["max_tokens"] == 3000 and reason["temperature"] == 0.0
    assert "Claim: An intermediate node" in reason["messages"][0]["content"]  # the Judge's definitions
    assert "grammar" in verdict and "Your verdict" in verdict["messages"][-1]["content"]


async def test_token_limits_reach_each_role_and_the_word_budget_stays_short():
    server = ScriptedServer({})
    settings = ClassifierSettings(debater_max_tokens=1500, judge_max_tokens=5000, reasoning_max_tokens=1200)
    text = ESSAY.text
    async with scripted_client(server) as client:
        await classify_component(client, text, spans_of(ESSAY), 2, "mad", settings=settings)
        await classify_component(client, text, spans_of(ESSAY), 2, "cot", settings=settings)
        asked_large = len(server.bodies)
        await label_components(client, "Cities should ban cars from their centres.", method="mad")
    free_text = [body for body in server.bodies[:asked_large] if "grammar" not in body]
    assert [body["max_tokens"] for body in free_text] == [1500] * 4 + [5000, 1200]
    # A large limit is room to think, not a request for a longer answer.
    assert all(f"at most {MAX_WORDS} words" in body["messages"][-1]["content"] for body in free_text)
    live = [body for body in server.bodies[asked_large:] if "grammar" not in body]
    assert [body["max_tokens"] for body in live] == [LIVE_SETTINGS.debater_max_tokens] * 4 + [
        LIVE_SETTINGS.judge_max_tokens
    ]
    assert all("at most 60 words" in body["messages"][-1]["content"] for body in live)


async def test_a_cut_answer_makes_the_result_invalid_but_keeps_what_it_chose():
    server = CuttingServer({ESSAY.components[1].text: "Claim"}, cut_when="Respond to the Proponent's")
    async with scripted_client(server) as client:
        result = await classify_component(client, ESSAY.text, spans_of(ESSAY), 1, "mad", seed=1)
    assert result.truncated == ("opponent turn 2",) and result.label == "Claim" and not result.valid
    verdict = verdict_of(result)
    assert verdict.label is None and not verdict.valid and "opponent turn 2" in verdict.invalid_reason
    assert result_of(verdict, "mad") == result


def test_truncated_answers_count_as_invalid_in_the_report_and_the_table(argtui_home, tmp_path, capsys):
    data = write_brat(tmp_path / "essays", ESSAY)
    script = CuttingServer(ANSWERS, cut_when="Let's think step by step")  # every chain of thought is cut
    with FakeServer(script) as fake:
        configure(argtui_home, {"big": fake})
        argv = ["eval", "components", "--data", str(data), "--split", "all", "--judge", "big",
                "--method", "cot", "vanilla", "--reasoning-tokens", "1024"]
        assert main([*argv, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert main(argv) == 0  # stored: the table again, nothing asked
    cot, vanilla = out["results"]
    assert cot["truncated"] == 5 and cot["invalid"] == 5 and cot["macro_f1"] == 0.0
    assert vanilla["truncated"] == 0 and vanilla["invalid"] == 1  # the one answer that is not a label
    assert all(body["max_tokens"] == 1024 for body in script.bodies if "grammar" not in body)
    rows = {row["method"]: row for row in out["summary"]["rows"]}
    assert (rows["cot"]["invalid"], rows["vanilla"]["invalid"]) == (5, 1)
    printed = " ".join(capsys.readouterr().out.split())  # captions wrap at the terminal's width
    assert "invalid 5 of 5 (5 cut at the token limit)" in printed
    assert "invalid answers (counted wrong): Vanilla 1; Chain-of-Thought 5" in printed


def test_the_table_has_the_papers_rows_columns_and_numbers(argtui_home, tmp_path, capsys):
    data = write_brat(tmp_path / "essays", ESSAY)
    with FakeServer(ScriptedServer(ANSWERS)) as fake:
        configure(argtui_home, {"big": fake})
        argv = ["eval", "components", "--data", str(data), "--split", "all", "--judge", "big",
                "--method", "mad", "smart", "vanilla", "cot"]
        output = tmp_path / "table.json"
        assert main([*argv, "--json", "--output", str(output)]) == 0
        out = json.loads(capsys.readouterr().out)
        assert main(argv) == 0
    printed = capsys.readouterr().out
    table = printed[printed.index("Table 1:"):]
    header = next(line for line in table.splitlines() if "Macro F1" in line)
    assert header.split() == ["method", "Macro", "F1", "W-F1", "MC", "Claim", "Premise"]
    # Rows in the paper's order, whatever order the methods were given in.
    names = ["Vanilla", "Chain-of-Thought", "Smart Reasoning", "MAD-ACC"]
    assert [row["name"] for row in out["summary"]["rows"]] == names
    positions = [table.index(name) for name in names]
    assert positions == sorted(positions)
    results = {result["method"]: result for result in out["results"]}
    for row in out["summary"]["rows"]:
        scores = results[row["method"]]
        expected = [scores["macro_f1"], scores["weighted_f1"], *(scores["per_class"][label]["f1"]
                                                                 for label in ("MajorClaim", "Claim", "Premise"))]
        numbers = [row["macro_f1"], row["weighted_f1"], *row["f1"].values()]
        assert numbers == [round(100 * value, 1) for value in expected]
        line = next(line for line in table.splitlines() if line.startswith(row["name"]))
        assert line.split()[-5:] == [f"{number:.1f}" for number in numbers]  # printed as percentages
    # The supervised reference row, as the paper reports it (not run): last, macro F1 only.
    reference = next(line for line in table.splitlines() if line.startswith("Cabessa et al. (2025)"))
    assert reference.split()[-5:] == ["89.5", "–", "–", "–", "–"] and positions[-1] < table.index(reference)
    assert out["summary"]["reference"] == {"name": "Cabessa et al. (2025)", "macro_f1": 89.5}
    assert json.loads(output.read_text())["table"] == out["summary"]
