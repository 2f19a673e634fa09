"""The base of errors a user can act on: the message names what is wrong and where."""


class ArgtuiError(Exception):
    """Shown to the user as is (no traceback) by the CLI and the app."""
