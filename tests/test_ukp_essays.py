"""The UKP Argument Annotated Essays reader: counts from the dataset documentation, quirks, clear errors."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from engines.datasets import DataFormatError
from engines.datasets.ukp_essays import load_ukp_essays, read_essay, read_prompts, read_split

UKP = "ukp-argument-annotated-essays-v2"
TEXT = "Schools should teach cooking. Cooking teaches planning. It also saves money."


@pytest.fixture(scope="module")
def essays(shared_data):
    return load_ukp_essays(shared_data / UKP)


@pytest.mark.shared_data
def test_corpus_counts(essays):
    assert len(essays) == 402
    assert Counter(essay.split for essay in essays) == {"train": 322, "test": 80}
    labels = Counter(c.label for essay in essays for c in essay.components)
    assert sum(labels.values()) == 6089
    assert labels == {"MajorClaim": 751, "Claim": 1506, "Premise": 3832}
    relations = Counter(r.type for essay in essays for r in essay.relations)
    assert relations == {"supports": 3613, "attacks": 219}
    stances = Counter(c.stance for essay in essays for c in essay.components if c.stance)
    assert sum(stances.values()) == 1506
    assert all(c.label == "Claim" for essay in essays for c in essay.components if c.stance)


@pytest.mark.shared_data
def test_test_split_counts(shared_data):
    test = load_ukp_essays(shared_data / UKP, "test")
    assert len(test) == 80 and all(essay.split == "test" for essay in test)
    labels = Counter(c.label for essay in test for c in essay.components)
    assert sum(labels.values()) == 1266
    assert labels == {"MajorClaim": 153, "Claim": 304, "Premise": 809}
    assert len(load_ukp_essays(shared_data / UKP, "train")) == 322
    assert [essay.id for essay in load_ukp_essays(shared_data / UKP, "test", limit=3)] == [
        "essay004", "essay005", "essay006",
    ]


@pytest.mark.shared_data
def test_offsets_stances_relations_and_prompts(essays):
    first = essays[0]
    assert first.id == "essay001"
    claim = next(c for c in first.components if c.id == "T3")
    assert claim.label == "Claim" and claim.stance == "For" and (claim.start, claim.end) == (591, 714)
    assert first.text[claim.start : claim.end] == claim.text
    assert next(c for c in first.components if c.id == "T7").stance == "Against"
    assert [c.start for c in first.components] == sorted(c.start for c in first.components)
    assert ("R1", "supports", "T4", "T3") in {(r.id, r.type, r.source, r.target) for r in first.relations}
    assert first.prompt.startswith("Some people think that children should be taught to compete")
    # prompts.csv is Mac Roman: 0xD5 is a right single quote, 0xCA a no-break space.
    essay211 = next(e for e in essays if e.id == "essay211")
    assert "today’s young people" in essay211.prompt
    assert all("Ê" not in e.prompt and "Õ" not in e.prompt for e in essays)


@pytest.mark.shared_data
def test_split_file_with_cr_line_endings(shared_data):
    path = shared_data / UKP / "train-test-split.csv"
    assert b"\r" in path.read_bytes() and b"\n" not in path.read_bytes()
    split = read_split(path)
    assert len(split) == 402 and split["essay004"] == "test" and split["essay001"] == "train"


@pytest.mark.shared_data
def test_brat_folder_itself_is_accepted(shared_data):
    essays = load_ukp_essays(shared_data / UKP / "brat-project-final", limit=2)
    assert [essay.id for essay in essays] == ["essay001", "essay002"]


def write_essay(folder: Path, ann: str, text: str = TEXT, name: str = "essay001") -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    txt, ann_path = folder / f"{name}.txt", folder / f"{name}.ann"
    txt.write_text(text)
    ann_path.write_text(ann)
    return txt, ann_path


GOOD_ANN = (
    "T1\tMajorClaim 0 28\tSchools should teach cooking\n"
    "T2\tPremise 30 54\tCooking teaches planning\t\n"  # a stray trailing tab, as in the corpus
    "A1\tStance T2 For\n"
    "R1\tsupports Arg1:T2 Arg2:T1\t\n"
)


def test_a_small_essay_reads(tmp_path):
    essay = read_essay(*write_essay(tmp_path, GOOD_ANN))
    assert [(c.id, c.label, c.text) for c in essay.components] == [
        ("T1", "MajorClaim", "Schools should teach cooking"), ("T2", "Premise", "Cooking teaches planning"),
    ]
    assert essay.components[1].stance == "For"
    assert essay.relations[0].source == "T2" and essay.relations[0].target == "T1"


@pytest.mark.parametrize(
    "bad_line, field, problem",
    [
        ("T3\tClaim 56 x\tIt also saves money", "T3", "integers"),
        ("T3\tOpinion 56 75\tIt also saves money", "T3", "unknown label"),
        ("T3\tClaim 56 75\tIt also saves honey", "T3", "annotation says"),
        ("T3\tClaim 56 900\tIt also saves money", "T3", "outside the text"),
        ("T3 Claim 56 75 It also saves money", None, "tab-separated"),
        ("R2\tsupports T2 T1\t", "R2", "Arg1"),
        ("A2\tStance T1 Maybe", "A2", "For|Against"),
        ("R2\tattacks Arg1:T9 Arg2:T1\t", "R2", "unknown component T9"),
        ("X1\tsomething", None, "unknown annotation type"),
    ],
)
def test_a_malformed_ann_line_names_file_and_line(tmp_path, bad_line, field, problem):
    txt, ann = write_essay(tmp_path, GOOD_ANN + bad_line + "\n")
    with pytest.raises(DataFormatError) as caught:
        read_essay(txt, ann)
    error = caught.value
    assert error.path == str(ann) and error.line == 5 and error.field == field
    assert problem in str(error) and f"{ann}, line 5" in str(error)


def test_missing_files_and_split_problems_are_named(tmp_path):
    with pytest.raises(DataFormatError, match="not a folder"):
        load_ukp_essays(tmp_path / "nowhere")
    brat = tmp_path / "release" / "brat-project-final"
    write_essay(brat, GOOD_ANN)
    with pytest.raises(DataFormatError, match="train-test-split.csv.*file not found"):
        load_ukp_essays(tmp_path / "release", "test")
    (tmp_path / "release" / "train-test-split.csv").write_bytes(b'"ID";"SET"\r"essay001";"DEV"\r')
    with pytest.raises(DataFormatError, match="line 2.*expected TRAIN or TEST"):
        load_ukp_essays(tmp_path / "release", "test")
    (tmp_path / "release" / "train-test-split.csv").write_bytes(b'"ID";"SET"\r"essay001";"TRAIN"\r')
    assert [e.split for e in load_ukp_essays(tmp_path / "release")] == ["train"]
    (tmp_path / "release" / "prompts.csv").write_bytes(b"ESSAY;PROMPT\ressay001.txt;Is it one\xd5s duty?\xca\r")
    assert read_prompts(tmp_path / "release" / "prompts.csv") == {"essay001": "Is it one’s duty?"}
