"""The modes listed on Home. A screen module joins the list by defining `MODE`."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable

from textual.screen import Screen


@dataclass(frozen=True)
class Mode:
    name: str
    title: str
    description: str
    make_screen: Callable[[], Screen]
    order: int = 50


def discover_modes() -> list[Mode]:
    import screens

    modes = []
    for info in pkgutil.iter_modules(screens.__path__):
        module = importlib.import_module(f"screens.{info.name}")
        mode = getattr(module, "MODE", None)
        if isinstance(mode, Mode):
            modes.append(mode)
    return sorted(modes, key=lambda mode: (mode.order, mode.title))
