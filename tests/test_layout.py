"""The dependency rule of SPEC §2, checked on the source: packages import downward, the layers
inside engines/ too, and no project module imports itself round a circle."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT_PACKAGES = ("argtui", "screens", "engines", "store")
FORBIDDEN = {
    "engines": {"textual", "screens", "argtui"},
    "store": {"textual", "screens", "engines", "argtui"},
    "screens": {"argtui"},
}

# The parts of engines/ (its subpackages and top-level modules), top layer first. A part imports
# the parts of lower layers; one of its own layer only as `SIDEWAYS` says.
ENGINE_LAYERS = (
    {"student"},  # the student coach: ratings, progress, ballots and drills, read from the tasks' judgments
    {"tasks"},  # every judge task, each built on the capabilities below
    {"components", "critiques", "debate", "grice", "inspire", "pairwise"},  # capabilities
    {"judging"},  # the one judgment core: tasks' protocol, runner, verdicts, their store
    {"llm", "retrieval", "metrics"},
    {"datasets"},  # readers of the bundled corpora and of data files (batch files too)
    {"errors", "output", "secrets", "sentences", "terminal_text", "timing"},
)
SIDEWAYS = {
    "debate": {"components", "grice"},  # a live debate labels each turn's components and judges it by Grice
    "output": {"errors"},
}
# Imports made at run time, against the layers on purpose: the task registry finds the tasks by
# walking the package they live in, so that a task module dropped there needs no other edit.
DISCOVERY = {("engines/judging/task.py", "tasks")}


@dataclass(frozen=True)
class Import:
    module: str  # the dotted name imported: a module where one of that name exists, else its package
    line: int
    deferred: bool  # inside a function: made when the function first runs
    type_only: bool  # under `if TYPE_CHECKING:`, never made at run time


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def project_modules() -> dict[str, Path]:
    return {module_name(path): path for package in PROJECT_PACKAGES for path in (ROOT / package).rglob("*.py")}


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@cache
def imports_of(path: Path) -> tuple[Import, ...]:
    """Every import statement of the file, each name of `from x import name` resolved to the
    module `x.name` where that is one of ours."""
    tree = ast.parse(path.read_text(), filename=str(path))
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    known = project_modules()
    found: list[Import] = []

    def visit(node: ast.AST, deferred: bool, type_only: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend(Import(alias.name, node.lineno, deferred, type_only) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.append(Import(target if target in known else base, node.lineno, deferred, type_only))
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, deferred, True)
            for child in node.orelse:
                visit(child, deferred, type_only)
        else:
            inner = deferred or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for child in ast.iter_child_nodes(node):
                visit(child, inner, type_only)

    visit(tree, False, False)
    return tuple(found)


def imported_top_levels(path: Path) -> set[str]:
    return {item.module.split(".")[0] for item in imports_of(path)}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_downward(package):
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_top_levels(path) & FORBIDDEN[package])
        for path in (ROOT / package).rglob("*.py")
    }
    offenders = {path: names for path, names in offenders.items() if names}
    assert not offenders, f"{package}/ imports upward: {offenders}"


def engine_part(module: str) -> str | None:
    """The part of engines/ a dotted name belongs to (None: outside engines/, or the package itself)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "engines" and len(parts) > 1 else None


def test_every_part_of_engines_has_a_layer():
    parts = {engine_part(module_name(path)) for path in (ROOT / "engines").rglob("*.py")} - {None}
    layered = set().union(*ENGINE_LAYERS)
    assert parts - layered == set(), "a part of engines/ with no layer in ENGINE_LAYERS"
    assert layered - parts == set(), "ENGINE_LAYERS names a part engines/ does not have"


def test_engines_layers_import_only_downward():
    """Type-only and deferred imports count too: they name what the code depends on."""
    layer_of = {part: depth for depth, layer in enumerate(ENGINE_LAYERS) for part in layer}
    offenders = []
    for path in sorted((ROOT / "engines").rglob("*.py")):
        here = engine_part(module_name(path))
        if here is None:
            continue
        shown = str(path.relative_to(ROOT))
        for item in imports_of(path):
            there = engine_part(item.module)
            if there is None or there == here or (shown, there) in DISCOVERY:
                continue
            if layer_of[there] < layer_of[here] or (
                layer_of[there] == layer_of[here] and there not in SIDEWAYS.get(here, set())
            ):
                offenders.append(f"{shown}:{item.line} ({here}) imports {item.module} ({there})")
    assert not offenders, "engines/ imports upward or sideways:\n" + "\n".join(offenders)


def import_graph() -> dict[str, set[str]]:
    """Which project module imports which, at run time: type-only imports are left out; deferred
    ones (inside functions) are in, since deferring an import hides a circle, it does not break it."""
    known = project_modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for item in imports_of(path):
            if item.type_only:
                continue
            target = item.module
            while target and target not in known:  # `import a.b.name` of a function or class: its module
                target = target.rpartition(".")[0]
            if target and target != name:
                graph[name].add(target)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                connect(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(groups)


def test_the_cycle_finder_finds_a_circle_and_only_circles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_project_module_imports_itself_round_a_circle():
    graph = import_graph()
    cycles = import_cycles(graph)
    shown = ["\n".join(f"  {name} -> {', '.join(sorted(graph[name] & set(group)))}" for name in group)
             for group in cycles]
    assert not cycles, "import circles:\n" + "\n\n".join(shown)
