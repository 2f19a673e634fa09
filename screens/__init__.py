"""Textual screens and widgets. Presentation only: they call engines and render results."""
