"""Control and invisible direction characters made visible: the standard library only, so the build backend
(``build_support/edgetool_build.py``, which runs in an isolated environment without rich) can use it through
``edge_tool.demo.vendor``; ``core.textsafe`` builds the terminal, HTML and Markdown escapes on it."""

from __future__ import annotations

import re

# C0 controls (except tab and newline), DEL, C1 controls, bidi embeddings/overrides/isolates, BOM/zero-width marks
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _visible_char(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(value: object) -> str:
    """``str(value)`` with control and invisible direction characters shown as ``\\xNN`` / ``\\uNNNN``."""
    return _INVISIBLE.sub(_visible_char, str(value))


LONG_TEXT = 2000  # characters kept of any message or reason built from data edgetool did not write


def cap(text: str, limit: int = LONG_TEXT) -> str:
    """``text`` if it holds at most ``limit`` characters, else its beginning and its end (where a message says what
    to do) around a note of how much was cut: the one rule for every message built from user or device data."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 3
    return f"{text[:head]} … ({len(text) - head - tail:,} characters cut) … {text[-tail:]}"


def capped(value: object, limit: int = LONG_TEXT) -> str:
    """``visible(value)``, capped (``cap``)."""
    return cap(visible(value), limit)
