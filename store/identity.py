"""The one name rule of a judge, from its structured identity.

Defined in the store, not the engine, so schema migrations name old judges exactly as
the engine names new ones. A judge is its backend profile, model and variant plus three
digests: of the options that change answers, of the requests it sends and of the
sampling its profile adds to every call.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def options_digest(options: dict[str, Any]) -> str:
    """A short stable digest of judge options ("" for none)."""
    if not options:
        return ""
    payload = json.dumps(options, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:8]


def identity_digest(options: str = "", prompts: str = "", sampling: str = "") -> str:
    """The one digest a judge's name carries: its options digest alone while neither prompts nor
    sampling are digested (the names judges had before those were), else a digest of all three."""
    if not (prompts or sampling):
        return options
    return hashlib.sha256(f"{options}|{prompts}|{sampling}".encode()).hexdigest()[:8]


def judge_name(profile: str, model: str, variant: str, options: str = "", prompts: str = "", sampling: str = "") -> str:
    """The one short name of a judge: "model@profile variant", "#digest" when anything beyond those is digested."""
    base = f"{model}@{profile} {variant}"
    digest = identity_digest(options, prompts, sampling)
    return f"{base} #{digest}" if digest else base
