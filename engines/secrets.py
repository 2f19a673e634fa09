"""Keeping secrets out of every text argtui stores, logs or shows.

A backend's error message may echo the request (some servers repeat the
Authorization header in a 401), and a URL may carry credentials
(`http://user:key@host`): both are redacted before the text leaves the client.
"""

from __future__ import annotations

import re
from typing import Iterable

MASK = "***"
_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',}]+")
MIN_SECRET_CHARS = 4  # shorter "keys" would mask ordinary words


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with each secret, URL credentials and bearer tokens masked."""
    for secret in secrets:
        if secret and len(secret) >= MIN_SECRET_CHARS:
            text = text.replace(secret, MASK)
    text = _USERINFO.sub(rf"\g<scheme>{MASK}@", text)
    return _BEARER.sub(rf"\g<1>{MASK}", text)


def url_credentials(url: str) -> list[str]:
    """The user and password a URL carries (to redact them wherever they appear alone)."""
    match = re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*://([^/@\s]+)@", url)
    return [part for part in match.group(1).split(":") if part] if match else []
