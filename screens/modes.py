"""The modes listed on Home. A screen module joins the list by defining `MODE`.

Home lists the modes without importing their screens (each pulls in its
engines): a `MODE = Mode(...)` whose name, title, description and order are
plain literals is read from the module's source, and the module is imported
when its screen is first opened. Any other `MODE` is found by importing.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

from textual.screen import Screen


@dataclass(frozen=True)
class Mode:
    name: str
    title: str
    description: str
    make_screen: Callable[[], Screen]
    order: int = 50


DECLARED_FIELDS = ("name", "title", "description", "order")


def discover_modes() -> list[Mode]:
    import screens

    modes = []
    for info in pkgutil.iter_modules(screens.__path__):
        path = Path(screens.__path__[0]) / f"{info.name}.py"
        declares, mode = _declared_mode(path, f"screens.{info.name}") if path.is_file() else (True, None)
        if declares and mode is None:
            mode = getattr(importlib.import_module(f"screens.{info.name}"), "MODE", None)
        if isinstance(mode, Mode):
            modes.append(mode)
    return sorted(modes, key=lambda mode: (mode.order, mode.title))


def _declared_mode(path: Path, module: str) -> tuple[bool, Mode | None]:
    """Whether the module's source assigns MODE, and the `Mode(...)` it assigns, opening the
    screen on first use; None when it is not made of literals (then the module is imported)."""
    source = path.read_text(encoding="utf-8")
    if "MODE" not in source:
        return False, None
    for node in ast.parse(source).body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None
        )
        if not (isinstance(target, ast.Name) and target.id == "MODE"):
            continue
        call = node.value
        if not isinstance(call, ast.Call) or call.args:
            return True, None
        fields = {k.arg: k.value for k in call.keywords if k.arg in DECLARED_FIELDS}
        if not all(isinstance(value, ast.Constant) for value in fields.values()):
            return True, None
        try:
            return True, Mode(make_screen=partial(_open_declared, module),
                              **{name: value.value for name, value in fields.items()})
        except TypeError:  # a field missing: importing the module shows the real error
            return True, None
    return False, None


def _open_declared(module: str) -> Screen:
    return importlib.import_module(module).MODE.make_screen()
