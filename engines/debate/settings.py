"""How a debate turn is bounded, and what runs beside it: the `[debate]` table of the config file.

Plain data, light to import (the config loads it at start-up).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DebateSettings(BaseModel):
    """The `[debate]` table of the config file; the defaults need no configuration."""

    model_config = ConfigDict(extra="forbid")

    # Long enough for a developed argument, short enough for the bot's prompt and the labelling.
    max_message_words: int = Field(default=250, ge=1)
    # A turn of the embedded model takes about a minute on two cores; a turn past this has hung.
    turn_timeout_s: float = Field(default=180.0, gt=0)
    # The Debate screen's Coach panel scores each student message (InspireScore); off, it makes no calls.
    coach: bool = True
    # Exchanges (a message and the bot's reply) before the debate ends and its ballot is made: a few
    # rounds, as in a school debate, short enough to finish in one sitting.
    max_turns: int = Field(default=5, ge=1)
