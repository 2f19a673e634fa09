"""What a batch run loads before and around its work: only what it uses."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import argtui.cli
from argtui.cli import GROUPS, build_parser, command_modules, group_modules
from argtui.config import load_config
from engines.llm.client import LLMClient
from engines.llm.profile import Sampling
from engines.llm.types import Completion


def test_a_group_command_reads_no_other_command_source(monkeypatch):
    def read_source(path, module):
        raise AssertionError(f"read {path} for `argtui eval pairwise`")

    command_modules.cache_clear()
    monkeypatch.setattr(argtui.cli, "_declared_parser", read_source)
    try:
        args = build_parser(["eval", "pairwise", "--limit", "1"]).parse_args(["eval", "pairwise", "--limit", "1"])
        export = build_parser(["export", "critiques", "--help"])
    finally:
        command_modules.cache_clear()
    assert (args.command, args.limit) == ("eval", 1)
    export_tasks = next(a for a in export._actions if a.dest == "command").choices["export"]
    assert sorted(next(a for a in export_tasks._actions if a.dest == "export_task").choices) == [
        "critiques", "debate", "preferences",
    ]


@pytest.mark.parametrize("argv", [["--help", "eval", "pairwise"], ["-h", "export"], ["--backend", "b", "--help", "eval"]])
def test_the_top_level_help_before_a_group_still_lists_every_command(argv):
    listing = build_parser(["--help"]).format_help()
    assert all(f" {entry.command} " in listing for entry in command_modules())
    assert build_parser(argv).format_help() == listing


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_a_group_by_its_module_names_is_the_group_of_the_full_listing(group):
    by_name = group_modules(group)
    assert by_name and by_name == tuple(entry for entry in command_modules() if entry.command == group)
    assert by_name[0].module == "eval" or group != "eval"


@pytest.mark.llm
async def test_a_client_on_aiohttp_makes_httpx_pools_only_for_a_stream(llama_profile):
    client = LLMClient(llama_profile.model_copy(update={"transport": "aiohttp", "max_concurrency": 40}))
    pools = client._transport._pools
    messages = [{"role": "user", "content": "Say OK."}]
    try:
        await client.chat(messages, Sampling(max_tokens=2))
        assert pools._pools == []
        streamed = [event async for event in client.stream(messages, Sampling(max_tokens=2))]
        assert isinstance(streamed[-1], Completion) and len(pools._pools) == pools.count == 3
    finally:
        await client.aclose()


@pytest.mark.llm
def test_a_batch_run_loads_neither_textual_nor_httpx_transport(llama_profile):
    load_config().add_backend(llama_profile.model_copy(update={"transport": "aiohttp"}), make_default=True)
    probe = (
        "import json, sys\n"
        "from argtui.cli import main\n"
        "code = main(['eval', 'pairwise', '--dimension', 'logical', '--topics', '20', '--limit', '1',"
        " '--prompt', 'zero', '--mode', 'logprob', '--bootstrap', '0', '--json'])\n"
        "print(json.dumps([code, [m for m in ('textual', 'httpcore') if m in sys.modules]]))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    *report, loaded = result.stdout.splitlines()
    assert json.loads("\n".join(report))["results"][0]["judged_now"] == 1
    assert json.loads(loaded) == [0, []]
