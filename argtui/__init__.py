"""argtui: terminal debate trainer and judge console (the shell: CLI, app, config, wiring)."""

__version__ = "0.1.0"
