"""The notice shown wherever scores appear while the embedded tiny model is the backend."""

from __future__ import annotations

from textual.widgets import Static

DEMO_NOTICE = (
    "Demo backend: the embedded SmolLM2-135M model answers. Its judgments are near random "
    "and for demonstration only. Point argtui at a vLLM server for real judging (see Help)."
)
DEMO_NOTICE_LINE = "Demo backend: tiny model, judgments near random"


class DemoNotice(Static):
    """Hidden unless the embedded model answers. A compact notice is one line; `expand_key`
    (a key its screen binds to `toggle()`) shows the whole text."""

    def __init__(self, compact: bool = False, expand_key: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self.compact = compact
        self.expand_key = expand_key
        self.add_class("-hidden")
        self._show()

    def on_mount(self) -> None:
        self.watch(self.app, "backend_status", self._follow, init=True)

    def _follow(self, status) -> None:
        self.set_class(not (status is not None and status.embedded), "-hidden")

    def toggle(self) -> None:
        self.compact = not self.compact
        self._show()

    def _show(self) -> None:
        self.set_class(self.compact, "-compact")
        more = f" ({self.expand_key}: more)" if self.expand_key else ""
        self.update(DEMO_NOTICE_LINE + more if self.compact else DEMO_NOTICE)
