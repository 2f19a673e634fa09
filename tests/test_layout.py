"""The dependency rule of SPEC §2, checked on the source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {
    "engines": {"textual", "screens", "argtui"},
    "store": {"textual", "screens", "engines", "argtui"},
    "screens": {"argtui"},
}


def imported_top_levels(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_downward(package):
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_top_levels(path) & FORBIDDEN[package])
        for path in (ROOT / package).rglob("*.py")
    }
    offenders = {path: names for path, names in offenders.items() if names}
    assert not offenders, f"{package}/ imports upward: {offenders}"
