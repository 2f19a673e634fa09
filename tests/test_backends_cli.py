"""Choosing a backend from the command line: `serve --gguf` / `serve --model` (vLLM flags passed
on), `config use URL`, doctor's look at the usual local ports and its note on a vLLM server that
hides its cache hits, the model of an exported debate, and the batch-file hint."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
import time
import tomllib
from dataclasses import replace
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from argtui.cli import main
from argtui.config import load_config
from engines.llm import local_servers
from engines.llm.client import LLMClient
from engines.llm.embedded import EMBEDDED_MODEL_NAME, find_model
from engines.llm.local_servers import ServerIdentity, find_local_servers
from engines.llm.profile import Sampling
from engines.llm.servers import free_loopback_port
from fakes import FakeServer, Reply, chat_reply, error_reply, lmstudio_fake, ollama_fake, schema_answer
from store import Database
from store.debates import DebateRepository
from test_grice import rad_files

VLLM_IDENTITY = {"owned_by": "vllm", "version": "0.11"}
LLAMA_IDENTITY = {"props": {"default_generation_settings": {}}}


def written_config(home: Path) -> dict:
    return tomllib.loads((home / "config.toml").read_text(encoding="utf-8"))


def unused_url() -> str:
    return f"http://127.0.0.1:{free_loopback_port()}/v1"


# ---------------------------------------------------------------- serve --gguf


def test_serve_gguf_writes_a_default_profile_with_the_absolute_path(argtui_home, tmp_path, monkeypatch, capsys):
    model = find_model()  # the bundled GGUF file, named relative to the working directory
    monkeypatch.chdir(model.parent)
    assert main(["serve", "--gguf", model.name, "--context", "8192", "--slots", "2", "--threads", "3"]) == 0
    out = capsys.readouterr().out
    config = written_config(argtui_home)
    assert config["default_backend"] == "gguf"
    table = config["backends"]["gguf"]
    assert table["kind"] == "llamacpp" and table["model_path"] == str(model.absolute())
    assert (table["context"], table["slots"], table["threads"]) == (8192, 2, 3)
    profile = load_config().profile()
    assert profile.managed and profile.model == model.stem
    assert str(model.absolute()) in out and "argtui doctor" in out
    assert not (argtui_home / "data" / "logs" / "llama-server-gguf.log").exists()  # nothing started


def test_serve_gguf_keeps_the_default_with_no_default_and_names_the_profile(argtui_home, tmp_path, capsys):
    model = find_model()
    assert main(["serve", "--gguf", str(model), "--name", "mine", "--no-default"]) == 0
    config = written_config(argtui_home)
    assert "default_backend" not in config and set(config["backends"]["mine"]) >= {"kind", "model_path"}
    assert "context" not in config["backends"]["mine"]  # only the options given
    assert load_config().profile().name == "embedded"


@pytest.mark.parametrize(
    ("make_path", "message"),
    [
        (lambda folder: folder / "missing.gguf", "no such file"),
        (lambda folder: folder, "not a file"),
        (lambda folder: _write(folder / "notes.gguf", b"not a model"), "not a GGUF file"),
    ],
)
def test_serve_gguf_refuses_what_is_not_a_gguf_file(argtui_home, tmp_path, capsys, make_path, message):
    path = make_path(tmp_path)
    assert main(["serve", "--gguf", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: {message}") and "Traceback" not in err
    assert not (argtui_home / "config.toml").exists()


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--context", "100"], "--context: Input should be greater than or equal to 256"),
        (["--port", "8000"], "--port goes with --model (vLLM), not --gguf"),
        (["--tensor-parallel-size", "4"], "unrecognized arguments: --tensor-parallel-size 4"),
    ],
)
def test_serve_gguf_names_an_option_that_does_not_fit(argtui_home, capsys, extra, message):
    assert main(["serve", "--gguf", str(find_model()), *extra]) == 1
    assert message in capsys.readouterr().err
    assert not (argtui_home / "config.toml").exists()


@pytest.mark.parametrize("models", [[], ["--gguf", "a.gguf", "--model", "m"]])
def test_serve_takes_exactly_one_of_gguf_and_model(capsys, models):
    with pytest.raises(SystemExit) as stopped:
        main(["serve", *models])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: argtui serve ") and "--gguf" in err and "--model" in err


# ---------------------------------------------------------------- serve --model (vLLM)


@pytest.fixture
def vllm_stand_in(tmp_path, monkeypatch) -> Path:
    """A `vllm` on PATH that writes its arguments, one a line, to the returned file and exits 3."""
    folder = tmp_path / "bin"
    folder.mkdir()
    recorded = tmp_path / "vllm-argv.txt"
    script = folder / "vllm"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > '{recorded}'\nexit 3\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return recorded


@pytest.mark.parametrize(
    ("argv", "passed"),
    [
        (["--tensor-parallel-size", "4"], ["--tensor-parallel-size", "4"]),
        (["--", "--tensor-parallel-size", "4", "--port", "9"], ["--tensor-parallel-size", "4", "--port", "9"]),
        (["--max-model-len=8k", "--enable-prompt-tokens-details"],) * 2,
    ],
)
def test_unknown_flags_reach_vllm_serve_as_they_are(vllm_stand_in, argtui_home, capsys, argv, passed):
    assert main(["serve", "--model", "meta-llama/Llama-3.3-70B-Instruct", "--port", "8123", *argv]) == 1
    assert "vllm exited with code 3 while starting" in capsys.readouterr().err  # the stand-in's exit
    command = vllm_stand_in.read_text(encoding="utf-8").splitlines()
    ours = ["serve", "meta-llama/Llama-3.3-70B-Instruct", "--host", "127.0.0.1", "--port", "8123"]
    assert command[: len(ours)] == ours and command[-len(passed):] == passed and "--" not in command
    # Cache hits are reported (the timings' "reused"), once, whoever asked for it.
    assert command.count("--enable-prefix-caching") == command.count("--enable-prompt-tokens-details") == 1
    assert not (argtui_home / "config.toml").exists()  # never ready: nothing registered


def test_serve_model_without_vllm_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no vllm on it
    assert main(["serve", "--model", "m", "--tensor-parallel-size", "4"]) == 1
    err = capsys.readouterr().err
    assert "vLLM is not installed" in err and "pip install vllm" in err and "Traceback" not in err


def test_other_commands_still_reject_unknown_flags(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["config", "show", "--tensor-parallel-size", "4"])
    assert stopped.value.code == 2
    assert "unrecognized arguments: --tensor-parallel-size 4" in capsys.readouterr().err


# ---------------------------------------------------------------- config use URL


def test_config_use_writes_the_detected_kind_as_the_default(argtui_home, capsys):
    with ollama_fake(schema_answer("x")) as fake:
        assert main(["config", "use", fake.url]) == 0
    out = " ".join(capsys.readouterr().out.split())
    config = written_config(argtui_home)
    assert config["default_backend"] == "ollama"
    assert config["backends"]["ollama"] == {**config["backends"]["ollama"], "kind": "ollama", "base_urls": [fake.url]}
    assert config["backends"]["ollama"]["model"] == "llama3.2:3b"  # the first listed, as printed
    assert f"found ollama at {fake.url}, serving llama3.2:3b" in out and "argtui doctor" in out
    assert "model llama3.2:3b (the first listed)" in out
    assert load_config().profile().kind == "ollama"


def speed_probe_then(later: Reply):
    """A server whose answer to `config use`'s timing request is 10 tokens in about 0.5 s (at most
    20 tokens/s), and whose other answers are `later`."""

    def answer(body: dict) -> Reply:
        if body.get("max_tokens") == local_servers.SPEED_TOKENS:
            return replace(chat_reply("1 2 3 4 5", completion_tokens=10), delay_s=0.5)
        return later

    return answer


def test_config_use_writes_the_speed_it_measured(argtui_home, capsys):
    with FakeServer(speed_probe_then(chat_reply("OK")), models=["smollm2"], **VLLM_IDENTITY) as fake:
        assert main(["config", "use", fake.url]) == 0
        [probe] = fake.bodies
    profile = written_config(argtui_home)["backends"]["vllm"]
    assert profile["model"] == "smollm2" and probe["model"] == "smollm2"
    assert 0 < profile["tokens_per_s"] <= 20
    assert f"measured {profile['tokens_per_s']:g} tokens/s (10 tokens in " in capsys.readouterr().out


async def test_the_first_long_call_after_config_use_waits_as_long_as_its_budget_needs(argtui_home, capsys):
    """A run's first call, before any answer of the run measured the speed: at most 20 tokens/s
    give 100 tokens 10 s or more, so an answer in 2 s is not cut at a timeout_s of 1 s."""
    slow = replace(chat_reply("A long argument.", completion_tokens=100), delay_s=2.0)
    with FakeServer(speed_probe_then(slow), models=["smollm2"], **VLLM_IDENTITY) as fake:
        assert await asyncio.to_thread(main, ["config", "use", fake.url]) == 0
        profile = load_config().profile().model_copy(update={"timeout_s": 1.0, "retries": 0})
        async with LLMClient(profile) as client:
            assert not client.speed.measured and "the profile's tokens_per_s" in client.speed.limit(100).reason
            answer = await client.chat([{"role": "user", "content": "Argue."}], Sampling(max_tokens=100))
    assert answer.text == "A long argument." and answer.usage.latency_s > profile.timeout_s


def test_config_use_writes_the_profile_when_no_answer_can_be_timed(argtui_home, capsys):
    with FakeServer([error_reply(400, "no chat template")], models=["smollm2"], **VLLM_IDENTITY) as fake:
        assert main(["config", "use", fake.url]) == 0
    profile = written_config(argtui_home)["backends"]["vllm"]
    assert profile["model"] == "smollm2" and "tokens_per_s" not in profile
    assert "note: no answer could be timed" in capsys.readouterr().out


def test_config_use_takes_a_name_a_model_and_a_key_variable(argtui_home, monkeypatch, capsys):
    monkeypatch.setenv("STUDIO_KEY", "sk-never-written")
    with lmstudio_fake(schema_answer("x"), models=("qwen2.5-7b-instruct", "phi-4")) as fake:
        assert main(["config", "use", fake.url, "--name", "studio", "--model", "phi-4",
                     "--api-key-env", "STUDIO_KEY"]) == 0
    text = (argtui_home / "config.toml").read_text(encoding="utf-8")
    profile = written_config(argtui_home)["backends"]["studio"]
    assert (profile["kind"], profile["model"], profile["api_key_env"]) == ("lmstudio", "phi-4", "STUDIO_KEY")
    assert "sk-never-written" not in text
    assert "qwen2.5-7b-instruct, phi-4" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (unused_url(), "no OpenAI-compatible server answered at"),
        ("localhost:11434", "expected an http:// or https:// URL"),
    ],
    ids=["closed port", "no scheme"],  # the port differs between test processes: not in the id
)
def test_config_use_writes_nothing_when_no_server_answers(argtui_home, capsys, url, message):
    assert main(["config", "use", url]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err
    assert not (argtui_home / "config.toml").exists()


# ---------------------------------------------------------------- the usual local ports


@pytest.fixture
def web_app(tmp_path):
    """A plain web server (not an LLM server): answers 404 to the identity requests."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietFiles, directory=str(tmp_path)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


class _QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, format, *args) -> None:
        pass


def test_local_servers_are_found_with_their_kind_and_models(web_app):
    nothing = free_loopback_port()
    with (ollama_fake(schema_answer("x")) as ollama, lmstudio_fake(schema_answer("x")) as studio,
          FakeServer(models=["smollm2"], **LLAMA_IDENTITY) as llama, FakeServer(**VLLM_IDENTITY) as vllm):
        ports = [ollama.port, studio.port, nothing, web_app, llama.port, vllm.port]
        found = asyncio.run(find_local_servers(ports))
    assert found == [
        ServerIdentity(ollama.url, "ollama", ("llama3.2:3b",)),
        ServerIdentity(studio.url, "lmstudio", ("qwen2.5-7b-instruct",)),
        ServerIdentity(llama.url, "llamacpp", ("smollm2",)),
        ServerIdentity(vllm.url, "vllm", ("m",)),
    ]


def test_looking_on_ports_where_nothing_listens_takes_well_under_a_second():
    ports = [free_loopback_port() for _ in local_servers.LOCAL_PORTS]
    started = time.perf_counter()
    assert asyncio.run(find_local_servers(ports)) == []
    assert time.perf_counter() - started < 0.5


@pytest.fixture
def no_embedded_server(monkeypatch):
    """The embedded backend fails at once (no llama-server to start), as on a machine where it is broken."""
    monkeypatch.setenv("ARGTUI_LLAMA_SERVER", "/nonexistent/llama-server")


def test_doctor_without_a_configuration_names_the_servers_it_found(no_embedded_server, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "250")
    with ollama_fake(schema_answer("x")) as ollama, FakeServer(**VLLM_IDENTITY) as vllm:
        # The ports doctor looks on, pointed at the fakes: nothing else may answer in the test.
        monkeypatch.setattr(local_servers, "LOCAL_PORTS", {ollama.port: "Ollama", vllm.port: "vLLM"})
        assert main(["doctor", "--json"]) == 1  # the embedded backend cannot start
        report = json.loads(capsys.readouterr().out)
        assert main(["doctor"]) == 1
        text = " ".join(capsys.readouterr().out.split())
    assert report["local_servers"] == [
        {"url": ollama.url, "kind": "ollama", "models": ["llama3.2:3b"], "use": f"argtui config use {ollama.url}"},
        {"url": vllm.url, "kind": "vllm", "models": ["m"], "use": f"argtui config use {vllm.url}"},
    ]
    assert (f"found ollama at {ollama.url} serving llama3.2:3b; to make it the default backend: "
            f"argtui config use {ollama.url}") in text
    assert f"argtui config use {vllm.url}" in text


def test_doctor_says_when_no_local_server_runs(no_embedded_server, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "250")
    port = free_loopback_port()
    monkeypatch.setattr(local_servers, "LOCAL_PORTS", {port: "Ollama"})
    assert main(["doctor"]) == 1
    assert f"no server is running on the usual local ports ({port} Ollama)" in " ".join(capsys.readouterr().out.split())


def test_doctor_with_a_configuration_does_not_look_for_servers(no_embedded_server, monkeypatch, capsys):
    with FakeServer(**VLLM_IDENTITY) as configured, ollama_fake(schema_answer("x")) as ollama:
        monkeypatch.setattr(local_servers, "LOCAL_PORTS", {ollama.port: "Ollama"})
        load_config().add_backend(configured.profile(name="gpu"), make_default=True)
        assert main(["doctor", "--json"]) == 1  # gpu answers, the embedded backend cannot start
    assert json.loads(capsys.readouterr().out)["local_servers"] is None
    assert ollama.received == []


# ---------------------------------------------------------------- vLLM's cached-token reporting


def reporting_cache_hits(body: dict, seen: set[str]) -> Reply:
    """An answer as vLLM with --enable-prompt-tokens-details gives it: `prompt_tokens_details` only
    when the prompt's start was in the prefix cache (a prompt asked before)."""
    reply = chat_reply("OK")
    prompt = json.dumps(body["messages"])
    if prompt in seen:
        reply = replace(reply, json={**reply.json, "usage": {**reply.json["usage"],
                                                              "prompt_tokens_details": {"cached_tokens": 512}}})
    seen.add(prompt)
    return reply


@pytest.mark.parametrize("reports", [False, True])
def test_doctor_notes_a_vllm_server_that_does_not_report_cached_tokens(argtui_home, monkeypatch, capsys, reports):
    monkeypatch.setenv("COLUMNS", "250")
    answer = partial(reporting_cache_hits, seen=set()) if reports else [chat_reply("OK")]
    with FakeServer(answer, **VLLM_IDENTITY) as fake:
        load_config().add_backend(fake.profile(name="gpu", model=""), make_default=True)
        assert main(["doctor", "--json", "--backend", "gpu"]) == 0
        [backend] = json.loads(capsys.readouterr().out)["backends"]
        assert len(fake.bodies) == 3  # the ping, then a long prompt twice: the second hits the cache
        assert main(["doctor", "--backend", "gpu"]) == 0
        text = " ".join(capsys.readouterr().out.split())
    assert backend["kind"] == "vllm" and backend["reports_cached_tokens"] is reports
    note = "start it with --enable-prompt-tokens-details"
    assert (note in text) is not reports


def test_a_server_that_reports_cached_tokens_at_once_is_asked_once(argtui_home, capsys):
    plain = chat_reply("OK")
    reply = replace(plain, json={**plain.json, "usage": {**plain.json["usage"], "prompt_tokens_details": {}}})
    with FakeServer([reply], **VLLM_IDENTITY) as fake:
        load_config().add_backend(fake.profile(name="gpu"), make_default=True)
        assert main(["doctor", "--json", "--backend", "gpu"]) == 0
    [backend] = json.loads(capsys.readouterr().out)["backends"]
    assert backend["reports_cached_tokens"] is True and len(fake.bodies) == 1


# ---------------------------------------------------------------- the model of an exported debate


def stored_debate(home: Path, backend: str) -> int:
    db = Database(home / "data" / "argtui.sqlite3")
    try:
        return DebateRepository(db).create("Ban cars from city centres.", "pro", backend=backend, level=0).id
    finally:
        db.close()


def exported_model(capsys, debate_id: int) -> tuple[str, str]:
    assert main(["export", "debate", str(debate_id), "--format", "rad"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out)["simulation"]["configuration"]["system"]["model"], captured.err


def test_the_rad_export_names_the_model_of_the_debate_profile(argtui_home, capsys):
    with FakeServer(models=["served-model"]) as fake:
        config = load_config()
        config.add_backend(fake.profile(name="served", model=""))
        config.add_backend(fake.profile(name="named", model="named-model"))
        served, named, embedded = (stored_debate(argtui_home, name) for name in ("served", "named", "embedded"))
        assert exported_model(capsys, served) == ("served-model", "")  # as `debate --script` asks the server
        listed = len(fake.received)
        assert exported_model(capsys, named) == ("named-model", "")
        assert exported_model(capsys, embedded) == (EMBEDDED_MODEL_NAME, "")
        assert len(fake.received) == listed  # a profile that names its model is not asked


def test_the_rad_export_warns_when_the_model_cannot_be_found(argtui_home, capsys):
    debate_id = stored_debate(argtui_home, "deleted-profile")
    model, warning = exported_model(capsys, debate_id)
    assert model == "" and warning.startswith("warning: the run's model is left empty: ")
    assert "deleted-profile" in warning


# ---------------------------------------------------------------- the batch-file hint


def test_the_batch_hint_names_vllm_run_batch_and_the_served_model(argtui_home, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "250")
    debates, labels = rad_files(tmp_path)
    requests = tmp_path / "requests.jsonl"
    with FakeServer(models=["smollm2"]) as fake:
        load_config().add_backend(fake.profile(model="smollm2", kind="openai"), make_default=True)
        assert main(["eval", "grice", "--debates", str(debates), "--labels", str(labels), "--strategy", "zsl",
                     "--no-rationale", "--export-requests", str(requests)]) == 0
        assert fake.bodies == []  # an export sends nothing
    text = " ".join(capsys.readouterr().out.split())
    assert (f"vllm run_batch -i {requests} -o RESULTS --model MODEL "
            "--served-model-name smollm2") in text
    assert "python -m vllm.entrypoints.openai.run_batch" in text  # for versions before the command
    assert "run-batch" not in text
