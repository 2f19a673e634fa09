"""UKP Argument Annotated Essays v2 (Stab & Gurevych): brat standoff essays with components and relations.

Research-only data: argtui never bundles it; it reads the release folder the
user points at (the folder holding `brat-project-final/`, or that folder
itself). Quirks handled here: `.ann` lines are tab-separated and some carry a
trailing tab; offsets index the `.txt` file as stored (read without newline
translation); `train-test-split.csv` has CR-only line endings;
`prompts.csv` is documented as ISO-8859-1 but its bytes are Mac Roman (0xD5
is a right single quote, 0xCA a no-break space), so it is decoded as such.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from engines.datasets import DataFormatError, read_csv_rows, text_lines

DATA_ENV = "ARGTUI_UKP_ESSAYS"  # where the release folder is, when no path is given
COMPONENT_LABELS = ("MajorClaim", "Claim", "Premise")
RELATION_TYPES = ("supports", "attacks")
STANCES = ("For", "Against")
BRAT_FOLDER = "brat-project-final"
SPLIT_FILE = "train-test-split.csv"
PROMPTS_FILE = "prompts.csv"
PROMPTS_ENCODING = "mac_roman"
ESSAY_NAME = re.compile(r"essay\d+")

Split = Literal["train", "test", "all"]
SPLITS: tuple[str, ...] = ("train", "test", "all")


@dataclass(frozen=True)
class EssayComponent:
    id: str  # brat id, e.g. "T3"
    label: str  # MajorClaim | Claim | Premise
    start: int  # character offsets into the essay text
    end: int
    text: str
    stance: str | None = None  # For | Against, on Claims only


@dataclass(frozen=True)
class EssayRelation:
    id: str  # e.g. "R1"
    type: str  # supports | attacks
    source: str  # component id of Arg1
    target: str  # component id of Arg2


@dataclass(frozen=True)
class Essay:
    id: str  # e.g. "essay001"
    text: str
    components: tuple[EssayComponent, ...]  # in text order
    relations: tuple[EssayRelation, ...]
    split: str | None = None  # "train" | "test" when a split file was read
    prompt: str | None = None


def resolve_root(path: Path) -> tuple[Path, Path]:
    """(release folder, brat folder) for either of the two."""
    path = Path(path)
    if (path / BRAT_FOLDER).is_dir():
        return path, path / BRAT_FOLDER
    if path.is_dir():
        return path.parent, path
    raise DataFormatError(path, None, None, "not a folder (expected the UKP essays release or its brat folder)")


def load_ukp_essays(path: Path, split: Split = "all", limit: int | None = None) -> list[Essay]:
    """Essays in id order: every `essayNNN` pair in the folder, or one split of the split file.

    `limit` keeps the first N essays (of the split). Prompts are attached when
    `prompts.csv` is present; split names when the split file is.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    root, brat = resolve_root(path)
    split_path = root / SPLIT_FILE
    splits = read_split(split_path) if split != "all" or split_path.is_file() else {}
    names = sorted(p.stem for p in brat.glob("essay*.txt") if ESSAY_NAME.fullmatch(p.stem))
    if split != "all":
        missing = sorted(set(name for name, s in splits.items() if s == split) - set(names))
        if missing:
            raise DataFormatError(split_path, None, "ID", f"essays not in {brat}: {', '.join(missing[:5])}")
        names = [name for name in names if splits.get(name) == split]
    if not names:
        raise DataFormatError(brat, None, None, "no essayNNN.txt files found")
    if limit is not None:
        names = names[:limit]
    prompts_path = root / PROMPTS_FILE
    prompts = read_prompts(prompts_path) if prompts_path.is_file() else {}
    return [
        read_essay(brat / f"{name}.txt", brat / f"{name}.ann", splits.get(name), prompts.get(name))
        for name in names
    ]


def read_split(path: Path) -> dict[str, str]:
    """essay id -> "train" | "test" from the `"ID";"SET"` file (CR-only line endings)."""
    result = {}
    for line, row in read_csv_rows(path, ("ID", "SET"), delimiter=";"):
        name, value = row["ID"].strip(), (row["SET"] or "").strip().lower()
        if not ESSAY_NAME.fullmatch(name):
            raise DataFormatError(path, line, "ID", f"expected an essay id like essay001, got {name!r}")
        if value not in ("train", "test"):
            raise DataFormatError(path, line, "SET", f"expected TRAIN or TEST, got {row['SET']!r}")
        result[name] = value
    return result


def read_prompts(path: Path) -> dict[str, str]:
    """essay id -> the writing prompt (`ESSAY;PROMPT`, Mac Roman bytes, CR line endings)."""
    prompts = {}
    for _, row in read_csv_rows(path, ("ESSAY", "PROMPT"), delimiter=";", encoding=PROMPTS_ENCODING):
        name = row["ESSAY"].strip().removesuffix(".txt")
        prompts[name] = " ".join(row["PROMPT"].replace("\xa0", " ").split())
    return prompts


def read_essay(txt_path: Path, ann_path: Path, split: str | None = None, prompt: str | None = None) -> Essay:
    """One essay: its text and the brat annotations, checked against the text."""
    for file in (txt_path, ann_path):
        if not file.is_file():
            raise DataFormatError(file, None, None, "file not found")
    text = "".join(text_lines(txt_path))  # line ends kept: the offsets count them
    components: dict[str, EssayComponent] = {}
    stances: dict[str, tuple[int, str]] = {}
    relations: list[tuple[int, EssayRelation]] = []
    lines_of: dict[str, int] = {}  # annotation id -> its line: brat ids are unique within a file
    for number, line in enumerate(text_lines(ann_path), start=1):
        raw = line.rstrip("\r\n")
        if not raw.strip():
            continue
        ident = raw.split("\t", 1)[0]
        if ident in lines_of:
            raise DataFormatError(ann_path, number, ident, f"id {ident} is already used on line {lines_of[ident]}")
        lines_of[ident] = number
        kind = raw[:1]
        if kind == "T":
            component = _component(raw, text, ann_path, number)
            components[component.id] = component
        elif kind == "A":
            target, stance = _stance(raw, ann_path, number)
            if target in stances:
                raise DataFormatError(
                    ann_path, number, "Stance", f"{target} already has a stance on line {stances[target][0]}"
                )
            stances[target] = (number, stance)
        elif kind == "R":
            relations.append((number, _relation(raw, ann_path, number)))
        else:
            raise DataFormatError(ann_path, number, None, f"unknown annotation type {raw[:10]!r}")
    for target, (number, stance) in stances.items():
        if target not in components:
            raise DataFormatError(ann_path, number, "Stance", f"refers to unknown component {target}")
        components[target] = replace(components[target], stance=stance)
    for number, relation in relations:
        for end in (relation.source, relation.target):
            if end not in components:
                raise DataFormatError(ann_path, number, relation.id, f"refers to unknown component {end}")
    ordered = tuple(sorted(components.values(), key=lambda c: (c.start, c.end)))
    # Components segment the text: sorted by start, any overlap shows between neighbours.
    for first, second in zip(ordered, ordered[1:]):
        if second.start < first.end:
            later, earlier = sorted((first, second), key=lambda c: lines_of[c.id], reverse=True)
            raise DataFormatError(
                ann_path, lines_of[later.id], later.id,
                f"span {later.start}-{later.end} overlaps {earlier.id} ({earlier.start}-{earlier.end}, "
                f"line {lines_of[earlier.id]}); components must not overlap",
            )
    return Essay(txt_path.stem, text, ordered, tuple(r for _, r in relations), split, prompt)


def _fields(raw: str, path: Path, number: int) -> list[str]:
    fields = raw.split("\t")
    while len(fields) > 1 and fields[-1] == "":  # some lines end in a stray tab
        fields.pop()
    if len(fields) < 2:
        raise DataFormatError(path, number, None, f"expected tab-separated fields, got {raw[:60]!r}")
    return fields


def _component(raw: str, text: str, path: Path, number: int) -> EssayComponent:
    fields = _fields(raw, path, number)
    if len(fields) != 3:
        raise DataFormatError(path, number, fields[0], "expected: id, 'Label start end', text")
    ident, spec, surface = fields
    parts = spec.split()
    if len(parts) != 3:
        raise DataFormatError(path, number, ident, f"expected 'Label start end', got {spec!r}")
    label, start_text, end_text = parts
    if label not in COMPONENT_LABELS:
        raise DataFormatError(path, number, ident, f"unknown label {label!r} (expected {', '.join(COMPONENT_LABELS)})")
    try:
        start, end = int(start_text), int(end_text)
    except ValueError:
        raise DataFormatError(path, number, ident, f"offsets must be integers, got {spec!r}") from None
    if not 0 <= start < end <= len(text):
        raise DataFormatError(path, number, ident, f"offsets {start}-{end} outside the text (length {len(text)})")
    if text[start:end] != surface:
        raise DataFormatError(
            path, number, ident, f"text at {start}-{end} is {text[start:end][:40]!r}, annotation says {surface[:40]!r}"
        )
    return EssayComponent(ident, label, start, end, surface)


def _stance(raw: str, path: Path, number: int) -> tuple[str, str]:
    fields = _fields(raw, path, number)
    parts = fields[1].split()
    if len(parts) != 3 or parts[0] != "Stance" or parts[2] not in STANCES:
        raise DataFormatError(path, number, fields[0], f"expected 'Stance T<n> For|Against', got {fields[1]!r}")
    return parts[1], parts[2]


def _relation(raw: str, path: Path, number: int) -> EssayRelation:
    fields = _fields(raw, path, number)
    parts = fields[1].split()
    if (
        len(parts) != 3
        or parts[0] not in RELATION_TYPES
        or not parts[1].startswith("Arg1:")
        or not parts[2].startswith("Arg2:")
    ):
        raise DataFormatError(
            path, number, fields[0], f"expected 'supports|attacks Arg1:T<i> Arg2:T<j>', got {fields[1]!r}"
        )
    return EssayRelation(fields[0], parts[0], parts[1][5:], parts[2][5:])

