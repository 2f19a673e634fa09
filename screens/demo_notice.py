"""The notice shown wherever scores appear while the embedded tiny model is the backend."""

from __future__ import annotations

from textual.widgets import Static

DEMO_NOTICE = (
    "Demo backend: the embedded SmolLM2-135M model answers. Its judgments are near random "
    "and for demonstration only. Point argtui at a vLLM server for real judging (see Help)."
)


class DemoNotice(Static):
    DEFAULT_CSS = """
    DemoNotice {
        background: $warning 30%;
        color: $text;
        padding: 0 1;
        width: 100%;
        height: auto;
    }
    DemoNotice.-hidden { display: none; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(DEMO_NOTICE, **kwargs)
        self.add_class("-hidden")

    def on_mount(self) -> None:
        self.watch(self.app, "backend_status", self._follow, init=True)

    def _follow(self, status) -> None:
        self.set_class(not (status is not None and status.embedded), "-hidden")
