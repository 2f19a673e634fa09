"""The one guard of a screen's actions and of its threads' results: none runs while the screen's
widgets are not there.

A screen becomes the current one before its widgets are mounted (`App.switch_screen` mounts
them afterwards), so a key pressed during the hand-over (F4 right after Enter in the New-debate
dialog) reaches a screen whose side panel does not exist yet; a removed screen has none any
more. Textual asks `check_action` before it runs any action (a key, the palette, the footer)
and the footer asks it to show a key: a `MountedScreen` answers no until its widgets are there,
so each screen's own `check_action` and actions may query its widgets.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.screen import Screen


def call_from_thread(screen: Screen, callback: Callable[..., object], *args: object, **kwargs: object) -> None:
    """Runs `callback` on the app's loop from a worker thread, if `screen` is still mounted and
    attached then: Textual cancels a left screen's thread workers but cannot stop a thread, so one
    that finishes after the user left (Esc while the leaderboard fits) would query widgets that are gone."""

    def if_shown() -> None:
        # `display` turns false once Textual starts taking the screen down (on leaving or quitting),
        # before its widgets are gone; a screen is never hidden otherwise.
        if screen.is_mounted and screen.is_attached and screen.display:
            callback(*args, **kwargs)

    screen.app.call_from_thread(if_shown)


class MountedScreen(Screen):
    """A screen whose actions run, and whose keys show, only while it is mounted and attached.
    A subclass's `check_action` asks this one first."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.is_mounted and self.is_attached

    def on_mount(self) -> None:
        # The footer asked before the widgets were there and hid the keys: it asks again.
        self.call_after_refresh(self.refresh_bindings)
