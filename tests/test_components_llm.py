"""The component classifier against the real embedded model: a debate end to end, the CLI, the live view.

The tiny model's labels are near random; these tests check that every step
runs for real and that what is stored is what happened. Turns are kept short
so the tests stay small on a laptop CPU.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from textual.widgets import Input

from argtui.app import ArgtuiApp
from argtui.cli import main
from engines.components import LABELS, ClassifierSettings, classify_component, label_components
from engines.components.evaluation import essay_spans
from engines.components.records import document_components, essay_key, labelled_documents, store_essays, verdict_of
from engines.datasets.ukp_essays import load_ukp_essays
from engines.judging.store import JudgmentStore
from engines.judging.task import TaskItem
from engines.judging.verdict import JudgeId
from engines.llm.client import LLMClient
from screens.components import ComponentsScreen
from conftest import TEST_KEY_ENV
from store import Database
from test_components_screen import wait_until

pytestmark = pytest.mark.llm

SHORT = ClassifierSettings(debater_max_tokens=16, judge_max_tokens=16)
PARAGRAPH = "Cities should ban cars from their centres. The air there is unhealthy, because traffic is heavy."


@pytest.fixture
def llama_env(monkeypatch, llama_server):
    """Point the CLI and the app at the session's llama-server (no second server is started)."""
    monkeypatch.setenv("ARGTUI_BASE_URL", llama_server.url)
    monkeypatch.setenv("ARGTUI_BACKEND_KIND", "llamacpp")
    monkeypatch.setenv("ARGTUI_MODEL", "SmolLM2-135M-Instruct")
    monkeypatch.setenv("ARGTUI_API_KEY_ENV", TEST_KEY_ENV)


@pytest.mark.shared_data
async def test_mad_debates_essay_components_and_stores_the_transcripts(llama_profile, shared_data, tmp_path):
    essay = load_ukp_essays(shared_data / "ukp-argument-annotated-essays-v2", "test", limit=1)[0]
    spans = essay_spans(essay)
    db = Database(tmp_path / "mad.sqlite3")
    store_essays(db, [essay])
    judge = JudgeId.of("test-llama", "SmolLM2-135M-Instruct", "mad")
    async with LLMClient(llama_profile) as client:
        results = await asyncio.gather(*(
            classify_component(client, essay.text, spans, index, "mad", settings=SHORT, key=f"{essay.id}/{index}")
            for index in (0, 1)
        ))
    for index, result in zip((0, 1), results):
        assert result.label in LABELS  # the judge's choice is constrained by a grammar
        assert result.distribution and abs(sum(result.distribution.values()) - 1) < 1e-6
        assert {result.proponent_label, result.opponent_label} <= set(LABELS)
        assert result.proponent_label != result.opponent_label
        assert [t.role for t in result.transcript] == ["proponent", "opponent", "proponent", "opponent", "judge"]
        assert all(turn.text for turn in result.transcript[:4])
        assert result.usage.calls == 7 and result.usage.completion_tokens > 0
    JudgmentStore(db, "components").save(judge, [
        (TaskItem(essay_key(essay.id, essay.components[index].id), "", essay.text,
                  reference=essay.components[index].label), verdict_of(result))
        for index, result in zip((0, 1), results)
    ])
    [entry] = labelled_documents(db)
    assert entry.items == tuple(sorted(essay_key(essay.id, c.id) for c in essay.components[:2]))
    stored = document_components(db, entry)
    assert [c.result for c in stored] == results
    assert [c.gold for c in stored] == [c.label for c in essay.components[:2]]
    db.close()


async def test_label_components_from_the_python_api(llama_profile):
    seen = []
    async with LLMClient(llama_profile) as client:
        results = await label_components(
            client, PARAGRAPH, method="mad", on_component=lambda i, r: seen.append(i), settings=SHORT
        )
    assert [r.span.text for r in results] == [
        "Cities should ban cars from their centres", "The air there is unhealthy", "traffic is heavy",
    ]
    assert sorted(seen) == [0, 1, 2] and all(r.label in LABELS for r in results)
    assert all(len(r.transcript) == 5 for r in results)


def test_components_command_segments_labels_and_stores(llama_env, capsys, argtui_home):
    assert main(["components", PARAGRAPH, "--method", "vanilla", "--json"]) == 0
    components = json.loads(capsys.readouterr().out)
    assert [c["text"] for c in components] == [
        "Cities should ban cars from their centres", "The air there is unhealthy", "traffic is heavy",
    ]
    assert all(PARAGRAPH[c["start"] : c["end"]] == c["text"] and c["label"] in LABELS for c in components)
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    [entry] = labelled_documents(db)
    assert entry.judge.name.startswith("SmolLM2-135M-Instruct@env vanilla #") and entry.text == PARAGRAPH
    assert [c.result.label for c in document_components(db, entry)] == [c["label"] for c in components]
    db.close()


async def test_typed_paragraph_is_labelled_live_in_the_view(llama_env):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(ComponentsScreen())
        await pilot.pause()
        screen = app.screen
        await pilot.press("m")  # mad -> vanilla: one call per component
        await pilot.press("t")
        screen.query_one("#text", Input).value = PARAGRAPH
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.stored, timeout_s=120)
        assert screen.shown is not None and len(screen.shown.results) == 3
        assert all(result.method == "vanilla" for result in screen.shown.results.values())
        assert screen.stored[0].judge.name.startswith("SmolLM2-135M-Instruct@env vanilla #")
        assert "Label:" in str(screen.query_one("#detail").render())


def test_eval_components_command_reports_metrics_and_writes_transcripts(llama_env, tmp_path, capsys):
    brat = tmp_path / "essays" / "brat-project-final"
    brat.mkdir(parents=True)
    text = "Towns must keep their libraries. Libraries lend laptops. Many people have no computer."
    (brat / "essay900.txt").write_text(text)
    (brat / "essay900.ann").write_text(
        "T1\tMajorClaim 0 31\tTowns must keep their libraries\n"
        "T2\tClaim 33 55\tLibraries lend laptops\n"
        "T3\tPremise 57 85\tMany people have no computer\n"
        "R1\tsupports Arg1:T3 Arg2:T2\t\n"
    )
    output = tmp_path / "out" / "predictions.json"
    argv = ["eval", "components", "--data", str(tmp_path / "essays"), "--split", "all",
            "--method", "vanilla", "--json", "--output", str(output)]
    assert main(argv) == 0
    [report] = json.loads(capsys.readouterr().out)["results"]
    assert report["judge"].startswith("SmolLM2-135M-Instruct@env vanilla #") and report["judged_now"] == 3
    assert report["n"] == 3 and report["components"] == 3 and report["calls_per_component"] == 1.0
    assert set(report["per_class"]) == set(LABELS) and 0 <= report["macro_f1"] <= 1
    assert sum(sum(row.values()) for row in report["confusion"].values()) == 3
    written = json.loads(output.read_text())
    [run] = written["runs"]
    assert [p["component"] for p in run["predictions"]] == ["T1", "T2", "T3"]
    assert run["predictions"][1]["gold"] == "Claim" and run["metrics"]["run_id"] == report["run_id"]
    [row] = written["table"]["rows"]
    assert row["name"] == "Vanilla" and row["macro_f1"] == round(100 * report["macro_f1"], 1)

    assert main(argv[:-3]) == 0  # the table; everything is already stored, nothing is asked again
    table = " ".join(capsys.readouterr().out.split())  # a long judge name wraps its lines
    assert "macro F1" in table and "Confusion matrix" in table and "1.00 calls" in table
    assert "Table 1: classification performance (%)" in table and f"{row['macro_f1']:.1f}" in table
    assert "0 judged now, 3 resumed" in table
