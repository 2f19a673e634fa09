"""Configuration: defaults, profiles, environment overrides, clear errors, no secret shown."""

from __future__ import annotations

import json

import pytest

from argtui.cli import main
from argtui.config import ConfigError, Paths, load_config
from engines.llm.profile import BackendProfile
from fakes import FakeServer


def write_config(home, text: str):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def test_argtui_home_relocates_config_and_data(argtui_home):
    paths = Paths.resolve()
    assert paths.config_file == argtui_home / "config.toml"
    assert paths.database.parent == argtui_home / "data"


def test_no_config_means_the_embedded_default():
    config = load_config()
    profile = config.profile()
    assert profile.embedded and profile.kind == "llamacpp" and profile.name == "embedded"


def test_profiles_are_read_with_their_sampling(argtui_home):
    write_config(argtui_home, """
default_backend = "gpu"
[backends.gpu]
kind = "vllm"
base_urls = ["http://10.0.0.5:8000/v1", "http://10.0.0.6:8000/v1"]
model = "meta-llama/Llama-3.3-70B-Instruct"
api_key_env = "GPU_KEY"
max_concurrency = 128
timeout_s = 300
[backends.gpu.sampling]
temperature = 1.0
max_tokens = 256
""")
    profile = load_config().profile()
    assert profile.name == "gpu" and profile.kind == "vllm"
    assert len(profile.base_urls) == 2 and profile.max_concurrency == 128
    assert profile.sampling.temperature == 1.0 and profile.sampling.max_tokens == 256


def test_invalid_toml_names_the_file_and_line(argtui_home):
    write_config(argtui_home, "[backends.gpu]\nkind = \n")
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert "config.toml" in str(caught.value) and "line 2" in str(caught.value)


def test_invalid_field_names_the_profile_and_field(argtui_home):
    write_config(argtui_home, '[backends.gpu]\nkind = "tgi"\n')
    with pytest.raises(ConfigError, match=r"\[backends\.gpu\]: kind"):
        load_config()


def test_dangling_default_is_an_error(argtui_home):
    write_config(argtui_home, 'default_backend = "nope"\n')
    with pytest.raises(ConfigError, match="no backend profile named 'nope'"):
        load_config()


def test_environment_defines_a_remote_profile(monkeypatch):
    monkeypatch.setenv("ARGTUI_BASE_URL", "https://llm.example.org/v1")
    monkeypatch.setenv("ARGTUI_MODEL", "some-model")
    monkeypatch.setenv("ARGTUI_API_KEY_ENV", "REMOTE_KEY")
    monkeypatch.setenv("REMOTE_KEY", "sk-secret-123")
    profile = load_config().profile()
    assert profile.name == "env" and profile.base_urls == ["https://llm.example.org/v1"]
    assert profile.api_key() == "sk-secret-123"


def test_an_environment_profile_without_a_kind_is_detected(monkeypatch, capsys):
    with FakeServer(owned_by="vllm", version="0.11.0") as fake:
        monkeypatch.setenv("ARGTUI_BASE_URL", fake.url)
        assert load_config().profile().kind is None
        assert main(["doctor", "--json", "--backend", "env"]) == 0
    [backend] = json.loads(capsys.readouterr().out)["backends"]
    assert backend["kind"] == "vllm" and backend["reachable"]
    monkeypatch.setenv("ARGTUI_BACKEND_KIND", "llamacpp")
    assert load_config().profile().kind == "llamacpp"


def test_saved_profiles_round_trip_without_keys(argtui_home, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-never-written")
    config = load_config()
    config.add_backend(
        BackendProfile(name="local", kind="vllm", base_urls=["http://127.0.0.1:8000/v1"],
                       model="m", api_key_env="MY_KEY"),
        make_default=True,
    )
    text = (argtui_home / "config.toml").read_text()
    assert "sk-never-written" not in text
    again = load_config()
    assert again.profile().name == "local" and again.profile().api_key() == "sk-never-written"


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_config_show_never_prints_a_key(argtui_home, monkeypatch, capsys, extra):
    write_config(argtui_home, '[backends.gpu]\nkind = "vllm"\nbase_urls = ["http://h:8000/v1"]\napi_key_env = "GPU_KEY"\n')
    monkeypatch.setenv("GPU_KEY", "sk-top-secret-value")
    assert main(["config", "show", *extra]) == 0
    out = capsys.readouterr().out
    assert "sk-top-secret-value" not in out
    assert "GPU_KEY" in out
    if extra:
        assert json.loads(out)["backends"]["gpu"]["api_key_set"] is True


def test_config_path_prints_the_locations(argtui_home, capsys):
    assert main(["config", "path"]) == 0
    out = capsys.readouterr().out
    assert str(argtui_home / "config.toml") in out


def test_cli_reports_a_broken_config_without_a_traceback(argtui_home, capsys):
    write_config(argtui_home, "not toml at all = = =\n")
    assert main(["config", "show"]) == 1
    err = capsys.readouterr().err
    assert "error:" in err and "config.toml" in err and "Traceback" not in err


def test_an_invalid_backend_kind_in_the_environment_is_named(monkeypatch, capsys):
    from argtui.cli import main

    monkeypatch.setenv("ARGTUI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("ARGTUI_BACKEND_KIND", "vlm")
    assert main(["doctor"]) == 1
    err = capsys.readouterr().err
    assert "ARGTUI_" in err and "kind" in err and "vllm" in err and "Traceback" not in err
