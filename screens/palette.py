"""The command palette's entries for the screen it opens over: that screen's key actions by their
descriptions, Help, the glossary and each of its terms."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, Iterator

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.screen import Screen

from screens.glossary import GlossaryScreen, glossary
from screens.help import HelpScreen, describe


@dataclass(frozen=True)
class PaletteEntry:
    text: str
    help: str
    run: Callable[[], object]


class ScreenCommands(Provider):
    def entries(self) -> Iterator[PaletteEntry]:
        screen = self.screen
        for active in screen.active_bindings.values():
            if isinstance(active.node, Screen) and active.enabled and not active.binding.system:
                binding = active.binding
                yield PaletteEntry(
                    f"{describe(binding)} ({self.app.get_key_display(binding)})",
                    binding.tooltip or f"{screen.sub_title or 'this screen'}: {binding.action.replace('_', ' ')}",
                    partial(self.app.run_action, binding.action, active.node),
                )
        yield PaletteEntry("Help: the keys of this screen", "Every key in force here, and where config and data live",
                           lambda: self.app.push_screen(HelpScreen(screen)))
        yield PaletteEntry("Glossary", "Maxims, strategies, methods, labels, sources and judge names explained",
                           lambda: self.app.push_screen(GlossaryScreen()))
        for entry in glossary():
            yield PaletteEntry(f"Glossary: {entry.term} · {entry.section}", entry.definition,
                               lambda: self.app.push_screen(GlossaryScreen()))

    async def discover(self) -> Hits:
        for entry in self.entries():
            yield DiscoveryHit(entry.text, entry.run, help=entry.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for entry in self.entries():
            score = matcher.match(entry.text)
            if score > 0:
                yield Hit(score, matcher.highlight(entry.text), entry.run, text=entry.text, help=entry.help)
