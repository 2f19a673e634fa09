"""Batch files against the real llama-server: `--export-requests` writes what a run still needs
(never a cached answer), a batch runner (tests/batch_replay.py) answers it, `--import-results`
loads the answers, and the rerun completes from the cache with the report of a live run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from argtui.cli import main
from argtui.config import load_config
from engines.llm.batch import BatchRequestLine
from engines.llm.servers import ManagedServer
from store import Database
from store.llm_batch import BatchRequests
from store.llm_cache import LLMCacheEntry
from conftest import TEST_KEY_ENV, running_embedded_server
from test_grice import rad_files

pytestmark = pytest.mark.llm

REPLAY = Path(__file__).with_name("batch_replay.py")
PAIRWISE = ["eval", "pairwise", "--dimension", "logical", "--topics", "20", "--bootstrap", "0"]
# Reports that differ only in how the answers arrived: left out of the comparison.
ACCOUNTING = {"run_id", "judged_now", "resumed", "usage", "wall_seconds", "output", "per_turn", "latency_seconds"}


@pytest.fixture(scope="module")
def uncached_server(tmp_path_factory):
    """A llama-server that computes every prompt afresh. With its prompt cache on, a request's
    logprobs move in the second decimal with what the cache held, so no replay could equal a live
    run exactly."""
    yield from running_embedded_server(tmp_path_factory.mktemp("uncached"), "--no-cache-prompt")


@pytest.fixture
def use_home(llama_profile, tmp_path, monkeypatch):
    """`use_home(name, server)`: a fresh ARGTUI_HOME (config and database) with the server as
    default: the shared test server, or one request at a time to `server` (as the replay sends
    them: the server's numbers depend on what it computes together). The profile samples with a
    seed, so the same request gets the same answer live and replayed."""

    def use(name: str, server: ManagedServer | None = None) -> Path:
        home = tmp_path / name
        monkeypatch.setenv("ARGTUI_HOME", str(home))
        profile = llama_profile.model_copy(update={
            "timeout_s": 300, "sampling": llama_profile.sampling.model_copy(update={"seed": 11}),
            **({"base_urls": [server.url], "max_concurrency": 1} if server else {}),
        })
        load_config().add_backend(profile, make_default=True)
        return home

    return use


def run_json(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def cached_keys() -> set[str]:
    db = Database(load_config().paths.database)
    try:
        with db.engine.connect() as conn:
            return set(conn.exec_driver_sql(f"SELECT key FROM {LLMCacheEntry.__tablename__}").scalars())
    finally:
        db.close()


def exported_keys(custom_ids: list[str]) -> dict[str, tuple[str, ...]]:
    db = Database(load_config().paths.database)
    try:
        return {cid: request.sample_keys for cid, request in BatchRequests(db).get(custom_ids).items()}
    finally:
        db.close()


def read_requests(path: Path) -> list[BatchRequestLine]:
    """The exported lines, each checked against the batch input format."""
    lines = []
    for text in path.read_text(encoding="utf-8").splitlines():
        raw = json.loads(text)
        assert set(raw) == {"custom_id", "method", "url", "body"}
        assert raw["method"] == "POST" and raw["url"] == "/v1/chat/completions"
        assert len(raw["custom_id"]) <= 64  # the hosted batch APIs' limit
        assert raw["body"]["model"] and raw["body"]["messages"] and "stream" not in raw["body"]
        lines.append(BatchRequestLine.model_validate(raw))
    assert len({line.custom_id for line in lines}) == len(lines)
    return lines


def replay(requests: Path, results: Path, llama_server) -> None:
    """The batch runner: every line sent to the real server, the output file written."""
    root = llama_server.url.removesuffix("/v1")
    subprocess.run([sys.executable, str(REPLAY), str(requests), str(results), "--server", root, "--api-key-env", TEST_KEY_ENV],
                   check=True, capture_output=True, timeout=1800)


def comparable(result: dict) -> dict:
    return {key: value for key, value in result.items() if key not in ACCOUNTING}


def turn_scores(result: dict) -> list[float]:
    """Every maxim's score of every turn in the run file a grice result names."""
    lines = [json.loads(line) for line in Path(result["output"]).read_text(encoding="utf-8").splitlines()]
    return [turn[maxim]["score"] for line in lines for turn in line["userTurnsEvaluations"] for maxim in turn]


def batch_rounds(capsys, argv: list[str], folder: Path, llama_server, rounds: int = 6) -> tuple[dict, int]:
    """Export, replay, import until an export finds nothing missing (that export completes the
    run from the cache); the final run's result and how many rounds had requests."""
    for round_number in range(1, rounds + 1):
        requests, results = folder / f"requests-{round_number}.jsonl", folder / f"results-{round_number}.jsonl"
        before = cached_keys()
        exported = run_json(capsys, [*argv, "--export-requests", str(requests)])
        assert cached_keys() == before  # an export asks the server nothing
        lines = read_requests(requests)
        assert exported["requests"] == len(lines)
        if not lines:
            break
        assert not cached_keys() & {k for keys in exported_keys([l.custom_id for l in lines]).values() for k in keys}
        replay(requests, results, llama_server)
        loaded = run_json(capsys, [*argv, "--import-results", str(results)])
        assert (loaded["lines"], loaded["requests"], loaded["skipped"]) == (len(lines), len(lines), [])
        assert loaded["answers"] == exported["answers"]
    else:
        pytest.fail(f"still exporting requests after {rounds} rounds")
    [result] = run_json(capsys, argv)["results"]
    assert cached_keys() == before and result["usage"]["calls"] == 0  # nothing asked, everything stored
    return result, round_number - 1


def test_pairwise_exports_only_what_is_missing_and_the_imported_run_equals_a_live_one(
    use_home, uncached_server, tmp_path, capsys
):
    # Sampled at temperature 1: a logit moved by the prompt cache or by a neighbour in the
    # batch can flip a token, so live and replay both ask the uncached server one at a time.
    use_home("live", uncached_server)
    [live] = run_json(capsys, [*PAIRWISE, "--limit", "3"])["results"]
    assert live["judged_now"] == 3

    use_home("batch", uncached_server)
    [first] = run_json(capsys, [*PAIRWISE, "--limit", "1"])["results"]  # one pair answered live
    requests = tmp_path / "requests.jsonl"
    exported = run_json(capsys, [*PAIRWISE, "--limit", "3", "--export-requests", str(requests)])
    lines = read_requests(requests)
    assert (exported["requests"], exported["items_waiting"]) == (2, 2)  # the other two pairs
    assert all(line.body["n"] == 3 for line in lines) and exported["answers"] == 6  # three runs per pair
    keys = exported_keys([line.custom_id for line in lines])
    assert sorted(map(len, keys.values())) == [3, 3]
    assert len(cached_keys()) == first["usage"]["calls"] == 3
    assert not cached_keys() & {key for sample_keys in keys.values() for key in sample_keys}
    again = tmp_path / "again.jsonl"
    run_json(capsys, [*PAIRWISE, "--limit", "3", "--export-requests", str(again)])
    assert again.read_text() == requests.read_text()  # nothing was stored for the waiting pairs

    results = tmp_path / "results.jsonl"
    replay(requests, results, uncached_server)
    loaded = run_json(capsys, [*PAIRWISE, "--import-results", str(results)])
    assert (loaded["requests"], loaded["answers"], loaded["skipped"]) == (2, 6, [])

    before = cached_keys()
    [rerun] = run_json(capsys, [*PAIRWISE, "--limit", "3"])["results"]
    assert (rerun["judged_now"], rerun["resumed"]) == (2, 1)
    assert rerun["usage"]["calls"] == rerun["usage"]["cached_calls"] == 6  # all from the cache
    assert rerun["usage"]["prompt_tokens"] > 0  # the batch's token counts came with its answers
    assert cached_keys() == before
    assert comparable(rerun) == comparable(live)


def test_grice_exports_each_step_in_turn_and_ends_with_the_live_report(
    use_home, uncached_server, tmp_path, capsys
):
    debates, labels = rad_files(tmp_path)
    argv = ["eval", "grice", "--debates", str(debates), "--labels", str(labels), "--limit", "1", "--no-rationale"]
    use_home("live", uncached_server)
    [live] = run_json(capsys, argv)["results"]
    assert live["turns"] == 2 and live["judged_now"] == 2

    use_home("batch", uncached_server)
    result, rounds = batch_rounds(capsys, argv, tmp_path, uncached_server)
    assert rounds >= 2  # BEST's Analyzer metrics need their reasons before their answers
    assert result["resumed"] == 2
    assert turn_scores(result) == turn_scores(live)
    assert comparable(result) == comparable(live)


def test_a_results_file_with_bad_lines_imports_the_good_ones_and_names_each_bad_line(
    use_home, llama_server, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "250")  # the summary on one line
    use_home("batch")
    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    run_json(capsys, [*PAIRWISE, "--limit", "2", "--export-requests", str(requests)])
    replay(requests, results, llama_server)
    good = results.read_text(encoding="utf-8").splitlines()
    first, second = json.loads(good[0]), json.loads(good[1])
    failed = {**second, "response": {"status_code": 500, "request_id": "r", "body": {"error": "overloaded"}}}
    garbage = [
        "{not json",
        json.dumps({"id": "x", "response": first["response"]}),  # no custom_id
        json.dumps({**first, "custom_id": "someone-else-7"}),
        json.dumps(failed),
        json.dumps({**second, "response": None, "error": {"code": "timeout", "message": "expired"}}),
        json.dumps({**second, "response": {"status_code": 200, "body": {"choices": "none"}}}),
    ]
    results.write_text("\n".join([good[0], *garbage]) + "\n", encoding="utf-8")

    assert main([*PAIRWISE, "--import-results", str(results)]) == 1
    captured = capsys.readouterr()
    assert "3 answers of 1 requests" in captured.out and "6 of 7 lines skipped" in captured.out
    problems = captured.err.splitlines()
    assert "Traceback" not in captured.err and len(problems) == 6
    expected = [
        (2, "not valid JSON"), (3, "'custom_id'"), (4, "'custom_id': 'someone-else-7' names no request"),
        (5, "'response.status_code': 500"), (6, "'error': the batch runner failed this request: expired"),
        (7, "'response.body.choices'"),
    ]
    for (line, text), problem in zip(expected, problems):
        assert f"{results}, line {line}: " in problem and text in problem, problem

    # The good line's pair is answered from the cache now; the other pair is still missing.
    left = tmp_path / "left.jsonl"
    exported = run_json(capsys, [*PAIRWISE, "--limit", "2", "--export-requests", str(left)])
    assert exported["requests"] == 1 and read_requests(left)[0].custom_id == second["custom_id"]
