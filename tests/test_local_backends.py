"""Local backends: the portable llama-server build, any GGUF file as a profile, and servers
that are already running (Ollama, LM Studio) detected and asked the way each supports."""

from __future__ import annotations

import importlib.util
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

from argtui.config import load_config
from argtui.runtime import Runtime
from engines.debate.levels import default_level
from engines.llm.client import LLMClient
from engines.llm.embedded import find_model, llama_server_command
from engines.llm.profile import BackendProfile, Sampling
from engines.llm.servers import free_loopback_port
from engines.pairwise.judge import JudgeSettings, judge_pair
from fakes import chat_reply, lmstudio_fake, ollama_fake, schema_answer

ROOT = Path(__file__).resolve().parent.parent


def _build_script():
    spec = importlib.util.spec_from_file_location("build_llama_server", ROOT / "packaging" / "build_llama_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _system_info() -> str:
    """The installed llama-server's system_info line: the CPU kernels it loaded (printed at
    verbosity 4, as it starts)."""
    command = [*llama_server_command(), "--model", str(find_model()), "--port", str(free_loopback_port()),
               "--verbosity", "4"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as server:
        try:
            return next(line.strip() for line in server.stdout if "system_info" in line)
        finally:
            server.kill()


@pytest.mark.llm
def test_the_installed_llama_server_is_the_portable_build(capsys):
    """The kernels the installed server runs: a native build on an AMX machine would list AMX and
    AVX-512 (and die there with SIGILL); the portable x86-64 build stops at AVX2."""
    line = _system_info()
    with capsys.disabled():  # the CI log shows which CPU kernels the installed server loaded
        print(f"\nllama-server {line}")
    if platform.machine() == "x86_64":
        assert "AVX2 = 1" in line
        assert "AMX_INT8 = 1" not in line and "AVX512 = 1" not in line, line


def test_the_build_identity_follows_its_flags(monkeypatch):
    """A changed flag names another wheel folder, so no cached build of other flags comes back."""
    build = _build_script()
    plain = build.build_identity(build.cmake_flags())
    monkeypatch.setenv("ARGTUI_LLAMA_CMAKE_ARGS", "-DGGML_VULKAN=ON")
    vulkan = build.build_identity(build.cmake_flags())
    assert plain != vulkan and plain.startswith(build.VERSION)
    moved = [flag.replace(str(ROOT), "/elsewhere") for flag in build.cmake_flags()]
    assert build.build_identity(moved) == vulkan  # a checkout in another folder reuses the build
    assert "-DGGML_NATIVE=OFF" in build.cmake_flags()
    if build.machine() == "x86_64":
        assert {"-DGGML_AVX2=ON", "-DGGML_AVX512=OFF", "-DGGML_AMX_INT8=OFF"} <= set(build.cmake_flags())


@pytest.mark.llm
async def test_a_gguf_profile_starts_its_own_llama_server(argtui_home, tmp_path):
    model = tmp_path / "my-debate-model.gguf"
    shutil.copyfile(find_model(), model)
    argtui_home.mkdir(parents=True, exist_ok=True)
    (argtui_home / "config.toml").write_text(
        f'default_backend = "mine"\n[backends.mine]\nmodel_path = "{model}"\nslots = 2\ncontext = 2048\n'
    )
    runtime = Runtime(load_config())
    try:
        profile = runtime.profile()
        assert profile.kind == "llamacpp" and profile.model == "my-debate-model"  # the name comes from the file
        assert default_level(profile) == 2  # a model the user chose gets the full opponent
        status = await runtime.status()
        assert status.reachable and status.managed and not status.embedded  # no demo notice
        assert status.model == "my-debate-model"
        client = await runtime.client()
        answer = await client.chat([{"role": "user", "content": "Say OK."}], Sampling(max_tokens=4, temperature=0))
        assert answer.usage.completion_tokens >= 1
        command = runtime._servers["mine"].command
        assert command[command.index("--parallel") + 1] == "2"
        assert command[command.index("--ctx-size") + 1] == str(2 * 2048)
    finally:
        await runtime.aclose()


def test_a_gguf_profile_that_names_no_file_says_so(argtui_home, capsys):
    argtui_home.mkdir(parents=True, exist_ok=True)
    (argtui_home / "config.toml").write_text('[backends.mine]\nmodel_path = "/nowhere/model.gguf"\n')
    from argtui.cli import main

    assert main(["doctor", "--json", "--backend", "mine"]) == 1
    assert "model_path /nowhere/model.gguf is not a file" in capsys.readouterr().out


def test_a_gguf_profile_cannot_also_name_a_url():
    with pytest.raises(ValueError, match="exclude each other"):
        BackendProfile(name="x", model_path="m.gguf", base_urls=["http://127.0.0.1:1/v1"])


@pytest.mark.parametrize("make_fake, kind", [(ollama_fake, "ollama"), (lmstudio_fake, "lmstudio")])
async def test_running_local_servers_are_detected_by_kind(make_fake, kind):
    with make_fake(schema_answer("x")) as fake:
        async with LLMClient(fake.profile(model="")) as client:
            assert await client.kind() == kind
            assert await client.model() == fake.models[0]


@pytest.mark.parametrize("make_fake", [ollama_fake, lmstudio_fake])
async def test_servers_without_n_get_a_json_schema_and_one_request_per_sample(make_fake):
    """A pairwise runs-mode judgment of 3 runs: 3 requests, each with the JSON-schema constraint
    these servers enforce and no `n` (which they ignore, answering one choice)."""
    with make_fake(schema_answer("x")) as fake:
        async with LLMClient(fake.profile(model="")) as client:
            verdict = await judge_pair(client, JudgeSettings(mode="runs", runs=3), "logical", "Uniforms help.",
                                       "Uniforms cost money.")
    assert len(fake.bodies) == 3
    assert all("n" not in body and "grammar" not in body and "structured_outputs" not in body for body in fake.bodies)
    assert all(body["response_format"]["type"] == "json_schema" for body in fake.bodies)
    assert verdict.label == "A" and len(verdict.data["run_labels"]) == 3


async def test_seeded_samples_split_into_requests_get_different_seeds():
    """Samples of one prompt asked one request each must not all draw the same sample."""
    with ollama_fake(lambda body: chat_reply("x")) as fake:
        async with LLMClient(fake.profile(model="")) as client:
            await client.samples([{"role": "user", "content": "hi"}], 3, Sampling(seed=7))
    assert sorted(body["seed"] for body in fake.bodies) == [7, 8, 9]
