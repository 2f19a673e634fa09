"""Touché RAD readers: debates, GenIRSim runs and official labels; bad input names file, line and field."""

from __future__ import annotations

import gzip
import json

import pytest

from engines.datasets import DataFormatError
from engines.datasets.rad import align_labels, read_rad_debates, read_rad_labels

RAD = "touche25-rad"


def _debate(debate_id: str, turns: int = 2) -> dict:
    messages = []
    for index in range(turns):
        messages.append({"role": "user", "content": f"user says {index}", "arguments": None})
        messages.append({
            "role": "assistant", "content": f"bot replies {index}",
            "arguments": [{"id": f"1.{index}", "text": f"argument {index}", "original": "attacks", "score": 1.0}],
        })
    return {"id": debate_id, "claim": "A claim", "description": "About a claim", "simulated_debate": messages}


def _write_lines(path, records, gz=False) -> None:
    text = "".join(json.dumps(r) + "\n" for r in records)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")


def test_debate_turns_pair_each_user_message_with_its_reply(tmp_path):
    path = tmp_path / "debates.jsonl.gz"
    _write_lines(path, [_debate("d1", 3), _debate("d2", 1)], gz=True)
    debates = read_rad_debates(path)
    assert [d.id for d in debates] == ["d1", "d2"]
    turns = debates[0].user_turns()
    assert len(turns) == 3
    third = turns[2]
    assert third.index == 2 and third.user == "user says 2" and third.reply == "bot replies 2"
    assert third.dialogue == [
        ("user", "user says 0"), ("assistant", "bot replies 0"),
        ("user", "user says 1"), ("assistant", "bot replies 1"), ("user", "user says 2"),
    ]
    assert [a.text for a in third.arguments] == ["argument 2"] and third.arguments[0].original == "attacks"
    assert len(read_rad_debates(path, limit=1)) == 1


def test_trailing_unanswered_user_message_is_not_a_turn(tmp_path):
    record = _debate("d1", 2)
    record["simulated_debate"].append({"role": "user", "content": "last word", "arguments": None})
    path = tmp_path / "debates.jsonl"
    _write_lines(path, [record])
    assert len(read_rad_debates(path)[0].user_turns()) == 2


def test_missing_field_names_file_line_and_field(tmp_path):
    broken = _debate("d2", 2)
    del broken["simulated_debate"][3]["content"]
    path = tmp_path / "debates.jsonl"
    _write_lines(path, [_debate("d1"), broken])
    with pytest.raises(DataFormatError) as caught:
        read_rad_debates(path)
    error = caught.value
    assert (error.path, error.line, error.field) == (str(path), 2, "simulated_debate[3].content")
    assert str(path) in str(error) and "line 2" in str(error) and "simulated_debate[3].content" in str(error)


@pytest.mark.parametrize(
    "breaks, field",
    [
        (lambda r: r.pop("id"), "id"),
        (lambda r: r["simulated_debate"][1].update(role="user"), "simulated_debate[1].role"),
        (lambda r: r["simulated_debate"][1]["arguments"][0].pop("text"), "simulated_debate[1].arguments[0].text"),
        (lambda r: r["simulated_debate"][3].update(arguments="none"), "simulated_debate[3].arguments"),
    ],
)
def test_other_bad_debate_fields_are_named(tmp_path, breaks, field):
    record = _debate("d1")
    breaks(record)
    path = tmp_path / "debates.jsonl"
    _write_lines(path, [record])
    with pytest.raises(DataFormatError) as caught:
        read_rad_debates(path)
    assert caught.value.line == 1 and caught.value.field == field


def test_invalid_json_and_duplicate_ids_are_named(tmp_path):
    path = tmp_path / "debates.jsonl"
    path.write_text(json.dumps(_debate("d1")) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        read_rad_debates(path)
    assert caught.value.line == 2 and "not valid JSON" in str(caught.value)
    _write_lines(path, [_debate("d1"), _debate("d1")])
    with pytest.raises(DataFormatError) as caught:
        read_rad_debates(path)
    assert caught.value.line == 2 and caught.value.field == "id"


def test_genirsim_missing_field_is_named(tmp_path):
    record = {"simulation": {"configuration": {"topic": {"description": "T"}}, "userTurns": [
        {"utterance": "hi", "systemResponse": {"utterance": "no", "response": {"content": "no", "arguments": []}}},
        {"utterance": "hi again", "systemResponse": {"response": {"content": "x", "arguments": []}}},
    ]}}
    path = tmp_path / "run.jsonl"
    _write_lines(path, [record])
    with pytest.raises(DataFormatError) as caught:
        read_rad_debates(path)
    assert caught.value.field == "simulation.userTurns[1].systemResponse.utterance" and caught.value.line == 1


def test_labels_with_nulls_missing_keys_and_bad_values(tmp_path):
    path = tmp_path / "x-labels.jsonl"
    path.write_text(
        json.dumps([{"quantity": 1, "quality": 0, "relation": None, "manner": 1}, {"quantity": 0}]) + "\n"
        + json.dumps([{"quantity": 1, "quality": 1, "relation": 1, "manner": 0}]) + "\n",
        encoding="utf-8",
    )
    labels = read_rad_labels(path)
    assert [line for line, _ in labels] == [1, 2]
    assert labels[0][1][1] == {"quantity": 0, "quality": None, "relation": None, "manner": None}
    assert labels[0][1][0]["relation"] is None and labels[1][1][0]["manner"] == 0

    path.write_text(json.dumps([{"quantity": 1}, {"quality": 2}]) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        read_rad_labels(path)
    assert (caught.value.line, caught.value.field) == (1, "[1].quality")
    path.write_text(json.dumps({"quantity": 1}) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        read_rad_labels(path)
    assert caught.value.line == 1 and "list" in str(caught.value)


def test_labels_align_by_position_and_turn_count(tmp_path):
    debates_path, labels_path = tmp_path / "debates.jsonl", tmp_path / "x-labels.jsonl"
    _write_lines(debates_path, [_debate("d1", 2), _debate("d2", 1)])
    debates = read_rad_debates(debates_path)
    _write_lines(labels_path, [[{"quantity": 1}, {"quantity": 0}], [{"manner": 1}], [{"quality": 1}]])
    aligned = align_labels(debates, read_rad_labels(labels_path), labels_path)
    assert aligned[("d1", 1)]["quantity"] == 0 and aligned[("d2", 0)]["manner"] == 1
    assert len(aligned) == 3  # the third label line (no debate) is ignored

    _write_lines(labels_path, [[{"quantity": 1}, {"quantity": 0}], [{"manner": 1}, {"manner": 0}]])
    with pytest.raises(DataFormatError) as caught:
        align_labels(debates, read_rad_labels(labels_path), labels_path)
    assert caught.value.line == 2 and "d2" in str(caught.value)
    _write_lines(labels_path, [[{"quantity": 1}, {"quantity": 0}]])
    with pytest.raises(DataFormatError, match="1 labelled debates for 2 debates"):
        align_labels(debates, read_rad_labels(labels_path), labels_path)


@pytest.mark.shared_data
def test_real_rad_files(shared_data):
    folder = shared_data / RAD
    submissions = read_rad_debates(folder / "touche25-rad-submissions-annotations.jsonl.gz")
    assert len(submissions) == 160
    assert sum(len(d.user_turns()) for d in submissions) == 800
    first = submissions[0]
    assert first.id == "aristotle-baseline-002456"
    assert first.user_turns()[0].arguments[0].id == "32197.16"
    cmv = read_rad_debates(folder / "touche25-rad-cmv-debates.jsonl.gz")
    assert len(cmv) == 100 and all(len(d.user_turns()) == 5 for d in cmv)
    toy = read_rad_debates(folder / "toy-simulation.genirsim.jsonl.gz")
    assert [d.claim for d in toy] == ["Television is bad", "Television is good"]
    assert all(len(d.user_turns()) == 3 for d in toy)
    assert toy[0].user_turns()[1].arguments[0].id == "1922.1953"
