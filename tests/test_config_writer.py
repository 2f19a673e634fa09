"""Saving the config file changes only what argtui changed: a hand-written file keeps its comments,
its order and the tables argtui does not know; a profile is written with its non-default settings
only; nothing planted beside the file is followed (issue 34, item 3)."""

from __future__ import annotations

import os
import tomllib

import pytest

from argtui.cli import main
from argtui.config import load_config
from engines.datasets.ukp_essays import DATA_ENV as UKP_ESSAYS_ENV
from engines.errors import ArgtuiError
from engines.llm.profile import BackendProfile

HAND_WRITTEN = """\
# My argtui settings: the GPU box first.
default_backend = "gpu"  # the big one

[backends.gpu]
kind = "vllm"  # vLLM on the lab's server
base_urls = ["http://10.0.0.5:8000/v1"]
model = "meta-llama/Llama-3.3-70B-Instruct"
max_concurrency = 16  # the default, said anyway

[experimental]
# argtui does not know this table
fast_path = true
"""


def test_serve_gguf_keeps_the_comments_and_unknown_tables_and_follows_no_planted_link(argtui_home, tmp_path, capsys):
    argtui_home.mkdir(parents=True)
    config_file = argtui_home / "config.toml"
    config_file.write_text(HAND_WRITTEN, encoding="utf-8")
    victim = tmp_path / "victim.txt"
    victim.write_text("not argtui's", encoding="utf-8")
    (argtui_home / "config.toml.tmp").symlink_to(victim)
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF" + bytes(16))

    assert main(["serve", "--gguf", str(model), "--name", "x"]) == 0
    capsys.readouterr()

    assert victim.read_text(encoding="utf-8") == "not argtui's"
    assert not config_file.is_symlink() and os.readlink(argtui_home / "config.toml.tmp") == str(victim)
    text = config_file.read_text(encoding="utf-8")
    # Every line of the file is still there, but the default it changed.
    kept = [line for line in HAND_WRITTEN.splitlines() if line and not line.startswith("default_backend")]
    assert [line for line in text.splitlines() if line in kept] == kept
    assert 'default_backend = "x"  # the big one' in text
    saved = tomllib.loads(text)
    assert saved["experimental"] == {"fast_path": True}
    assert saved["backends"]["x"] == {"kind": "llamacpp", "model": "tiny", "model_path": str(model)}
    assert load_config().profile().model_path == str(model)


def test_a_profile_is_written_with_its_non_default_settings_and_a_default_again_goes(argtui_home):
    config = load_config()
    config.add_backend(BackendProfile(name="local", kind="ollama", base_urls=["http://127.0.0.1:11434/v1"],
                                      model="smollm2"))
    assert tomllib.loads((argtui_home / "config.toml").read_text())["backends"]["local"] == {
        "kind": "ollama", "base_urls": ["http://127.0.0.1:11434/v1"], "model": "smollm2"}
    config.add_backend(config.backends["local"].model_copy(update={"timeout_s": 600.0}))
    assert tomllib.loads((argtui_home / "config.toml").read_text())["backends"]["local"]["timeout_s"] == 600
    config.add_backend(config.backends["local"].model_copy(update={"timeout_s": 120.0}))  # the default
    assert "timeout_s" not in (argtui_home / "config.toml").read_text()
    assert load_config().profile("local") == config.backends["local"]


def test_environment_overrides_are_not_written(argtui_home, monkeypatch):
    monkeypatch.setenv("ARGTUI_BASE_URL", "https://llm.example.org/v1")
    monkeypatch.setenv(UKP_ESSAYS_ENV, "/somewhere")
    load_config().add_backend(BackendProfile(name="other", base_urls=["http://127.0.0.1:8080/v1"]))
    saved = tomllib.loads((argtui_home / "config.toml").read_text())
    assert saved == {"backends": {"other": {"base_urls": ["http://127.0.0.1:8080/v1"]}}}
    monkeypatch.delenv("ARGTUI_BASE_URL")
    assert load_config().profile().name == "embedded"  # no saved default naming the environment's profile


def test_a_config_file_that_is_a_link_is_not_written_through(argtui_home, tmp_path):
    argtui_home.mkdir(parents=True)
    target = tmp_path / "elsewhere.toml"
    target.write_text(HAND_WRITTEN, encoding="utf-8")
    (argtui_home / "config.toml").symlink_to(target)
    with pytest.raises(ArgtuiError, match="config.toml: is a link"):
        load_config().add_backend(BackendProfile(name="x", base_urls=["http://127.0.0.1:8080/v1"]))
    assert target.read_text(encoding="utf-8") == HAND_WRITTEN
