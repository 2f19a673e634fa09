"""`argtui index …` on a fresh ARGTUI_HOME: first-use build, search, graph, status, imports, push."""

from __future__ import annotations

import json

import pytest

import argtui.commands.index as index_command
from argtui.cli import main
from argtui.config import load_config
from engines.retrieval import backends
from engines.retrieval.corpus import bundled_arguments
from engines.retrieval.elastic import ElasticsearchRetriever, connect_elasticsearch
from store import Database
from store.runs import RunRepository, RunState

RAD_LINES = [
    {"id": "9001.1", "topic": "Should cities ban cars from their centres?", "tags": ["Cities", "Transport"],
     "attacks": "City centres should stay open to private cars.",
     "supports": "City centres should not stay open to private cars.",
     "text": "Car-free streets let buses and bicycles move faster through the city.",
     "references": [], "original": "supports"},
    {"id": "9001.2", "topic": "Should cities ban cars from their centres?", "tags": ["Cities"],
     "attacks": "Car-free streets let buses and bicycles move faster through the city.",
     "supports": "Car-free streets do not let buses and bicycles move faster through the city.",
     "text": "Delivery vans still need the same streets, so traffic barely changes.",
     "references": ["http://example.org/study"], "original": "attacks", "score": 0.5},
]


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_rad(path, lines) -> None:
    path.write_text("\n".join(json.dumps(line) if isinstance(line, dict) else line for line in lines) + "\n")


def test_first_search_builds_the_bundled_index_and_finds_uniform_arguments(capsys):
    code, out, err = run(capsys, "index", "search", "school uniforms reduce bullying")
    assert code == 0
    assert "Building the argument index" in err and "31768/31768" in err
    assert "attacks the topic: We should abandon the use of school uniform" in out
    assert "reduc" in out.split("\n")[0] and "bullying" in out.split("\n")[0]

    code, out, _ = run(capsys, "index", "search", "school uniforms reduce bullying", "--k", "5", "--json")
    hits = json.loads(out)  # stdout holds only JSON, and the index is not rebuilt
    assert code == 0 and len(hits) == 5
    assert all("uniform" in hit["topic"].lower() and hit["relation"] in ("attacks", "supports") for hit in hits)
    assert hits[0]["score"] >= hits[-1]["score"]

    code, out, _ = run(capsys, "index", "search", "uniforms", "--field", "supports", "--relation", "supports",
                       "--topic", "school uniforms", "--json")
    assert {hit["relation"] for hit in json.loads(out)} == {"supports"}

    code, out, _ = run(capsys, "index", "graph", "school uniforms reduce bullying", "--goal", "support", "--json")
    graph = json.loads(out)
    assert graph["goal"] == "SUPPORT" and [n["strategy"] for n in graph["nodes"]].count("chain") == 2
    assert {edge["relation"] for edge in graph["edges"] if edge["target"] != "idea"} == {"supports"}

    code, out, _ = run(capsys, "index", "status", "--json")
    status = json.loads(out)
    assert status["total"] == 31_768 and status["backend"] == "tantivy"
    code, out, _ = run(capsys, "index", "status")
    assert "CC BY-SA 3.0" in out and "31,768" in out


def test_import_rad_into_the_embedded_index(capsys, tmp_path):
    rad = tmp_path / "rad.jsonl"
    write_rad(rad, RAD_LINES)
    code, out, _ = run(capsys, "index", "import-rad", str(rad), "--json")
    assert code == 0 and json.loads(out)["written"] == 2

    code, out, _ = run(capsys, "index", "search", "delivery vans traffic", "--json", "--k", "1")
    [hit] = json.loads(out)
    assert hit["id"] == "9001.2" and hit["relation"] == "attacks" and hit["source"] == "touche25-rad"
    assert hit["attacks"] == RAD_LINES[1]["attacks"] and hit["tags"] == ["Cities"]

    code, out, _ = run(capsys, "index", "status", "--json")
    assert json.loads(out)["sources"]["touche25-rad"] == 2


def test_a_malformed_rad_file_names_line_and_field_and_changes_nothing(capsys, tmp_path):
    rad = tmp_path / "broken.jsonl"
    write_rad(rad, [RAD_LINES[0], {**RAD_LINES[1], "text": ""}])
    code, _, err = run(capsys, "index", "import-rad", str(rad))
    assert code == 1 and "broken.jsonl, line 2" in err and "'text'" in err
    code, out, _ = run(capsys, "index", "status", "--json")
    assert json.loads(out) == {"backend": "tantivy", "built": False}  # not even the first build happened

    write_rad(rad, [RAD_LINES[0], "{not json"])
    code, _, err = run(capsys, "index", "import-rad", str(rad))
    assert code == 1 and "line 2" in err and "not valid JSON" in err
    write_rad(rad, [{**RAD_LINES[0], "original": "rebuts"}])
    code, _, err = run(capsys, "index", "import-rad", str(rad))
    assert code == 1 and "'original'" in err


def osmem_opener(node_class, seen: list | None = None):
    """`open_elasticsearch` for osmem-server: the client sends plain JSON; `seen` records each call."""

    def open_retriever(es_url, index, api_key=None):
        if seen is not None:
            seen.append((es_url, index, api_key))
        return ElasticsearchRetriever(connect_elasticsearch(es_url, node_class=node_class), index, url=es_url)

    return open_retriever


def test_push_and_import_into_elasticsearch_are_resumable_runs(capsys, monkeypatch, osmem_es, tmp_path):
    url, node_class = osmem_es
    monkeypatch.setattr(backends, "open_elasticsearch", osmem_opener(node_class))
    subset = bundled_arguments()[:300]
    monkeypatch.setattr(index_command, "bundled_arguments", lambda: subset)

    code, out, _ = run(capsys, "index", "push", "--es", url, "--index", "pushed", "--json")
    assert code == 0 and json.loads(out) | {"location": ""} == {
        "backend": "elasticsearch", "location": "", "written": 300, "skipped": 0, "total": 300,
    }
    code, out, _ = run(capsys, "index", "push", "--es", url, "--index", "pushed")
    out = " ".join(out.split())
    assert "0 arguments written" in out and "300 were there already" in out  # a rerun sends nothing twice

    rad = tmp_path / "rad.jsonl"
    write_rad(rad, RAD_LINES)
    code, out, _ = run(capsys, "index", "import-rad", str(rad), "--es", url, "--index", "pushed")
    out = " ".join(out.split())  # the console wraps long lines
    assert code == 0 and "2 arguments written to" in out and "index pushed" in out

    code, out, _ = run(capsys, "index", "search", "delivery vans traffic", "--es", url, "--index", "pushed",
                       "--json", "--k", "1")
    assert json.loads(out)[0]["id"] == "9001.2"

    db = Database(load_config().paths.database)
    runs = RunRepository(db).list(kind=index_command.PUSH_RUN_KIND)
    db.close()
    assert len(runs) == 2 and {run.state for run in runs} == {RunState.DONE}
    assert {run.done for run in runs} == {300, 2}


def test_push_needs_a_cluster(capsys):
    code, _, err = run(capsys, "index", "push")
    assert code == 1 and "--es URL" in err


@pytest.mark.parametrize(("bad", "why"), [("0", "must be at least 1"), ("-3", "must be at least 1"),
                                          ("two", "Input should be a valid integer")])
def test_k_must_be_a_positive_number(capsys, bad, why):
    with pytest.raises(SystemExit):
        main(["index", "search", "x", "--k", bad])
    assert f"argument --k: {why}" in capsys.readouterr().err


def test_the_retrieval_table_of_the_config_file_picks_elasticsearch(capsys, monkeypatch, osmem_es, argtui_home):
    url, node_class = osmem_es
    seen = []
    monkeypatch.setattr(backends, "open_elasticsearch", osmem_opener(node_class, seen))
    monkeypatch.setenv("TEST_ES_KEY", "key-from-the-environment")
    argtui_home.mkdir(parents=True, exist_ok=True)
    config_file = argtui_home / "config.toml"
    config_file.write_text(
        f'[retrieval]\nbackend = "elasticsearch"\nes_url = "{url}"\nindex = "configured"\napi_key_env = "TEST_ES_KEY"\n'
    )
    code, _, err = run(capsys, "index", "status")
    assert code == 1 and "configured" in err  # no such index yet: the error names it
    assert seen == [(url, "configured", "key-from-the-environment")]

    config = load_config()
    config.save()  # saving keeps the table (and never the key)
    assert 'index = "configured"' in config_file.read_text() and "key-from" not in config_file.read_text()

    config_file.write_text('[retrieval]\nbackend = "elasticsearch"\n')
    code, _, err = run(capsys, "index", "search", "anything")
    assert code == 1 and "[retrieval]" in err and "needs es_url" in err
