"""Result files are written whole or not at all, and never over what is not a regular file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from argtui.cli import main
from engines.output import OutputError, write_text_file


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp") or ".partial" in p.name)


def test_a_file_is_replaced_whole(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("old", encoding="utf-8")
    write_text_file(target, "new\n")
    assert target.read_text(encoding="utf-8") == "new\n" and leftovers(tmp_path) == []


def test_a_planted_link_is_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    (tmp_path / "out.jsonl.partial").symlink_to(victim)  # where the old writer wrote first
    write_text_file(tmp_path / "out.jsonl", "data")
    assert victim.read_text(encoding="utf-8") == "precious"
    link = tmp_path / "link.jsonl"
    link.symlink_to(victim)
    with pytest.raises(OutputError, match="is a link"):
        write_text_file(link, "data")
    assert victim.read_text(encoding="utf-8") == "precious"


def test_targets_that_are_not_files_are_refused_and_left_as_they_are(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="not a regular file"):
        write_text_file(fifo, "data")
    with pytest.raises(OutputError, match="is a folder"):
        write_text_file(tmp_path, "data")
    if Path("/dev/full").exists():
        with pytest.raises(OutputError, match="not a regular file"):
            write_text_file(Path("/dev/full"), "data")
        assert Path("/dev/full").is_char_device()
    with pytest.raises(OutputError, match="does not exist"):
        write_text_file(tmp_path / "missing" / "out.json", "data")
    assert leftovers(tmp_path) == [] and fifo.exists() and not fifo.is_file()


def test_a_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    def disk_full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("engines.output.os.replace", disk_full)
    with pytest.raises(OutputError, match="No space left"):
        write_text_file(tmp_path / "out.json", "data")
    assert list(tmp_path.iterdir()) == []


def test_the_export_command_names_the_problem_without_a_traceback(tmp_path, capsys):
    assert main(["import", "critiques", "--demo"]) == 0
    assert main(["export", "critiques", "--output", str(tmp_path / "nowhere" / "out.jsonl")]) == 1
    assert main(["export", "critiques", "--output", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "does not exist" in err and "is a folder" in err and "Traceback" not in err
    assert main(["export", "critiques", "--output", str(tmp_path / "ok.jsonl")]) == 0
    assert (tmp_path / "ok.jsonl").read_text(encoding="utf-8").count("\n") == 51
