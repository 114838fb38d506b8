"""The one escaping rule for user-controlled text (paths, keys, labels, titles, model names, converter messages).

Such text is data, never markup. Escape it at the one place each format is written:

- terminal (Rich): ``term`` inside a markup string, ``text`` as a ``rich.text.Text`` (table cells, titles);
  both show control characters and bidirectional overrides as visible escapes (``\\x1b``), so a file name
  cannot move the cursor, recolour the terminal or reorder what is shown;
- HTML: ``html_text`` (``& < > " '`` as entities);
- Markdown: ``md`` = the same HTML escape, plus a backslash before the characters Markdown would act on
  (``\\ ` * _ [ ] ~ |``), and newlines as spaces, so a table cell stays one cell on one row.
"""

from __future__ import annotations

import html
import re

from rich.markup import escape
from rich.text import Text

# C0 controls (except tab and newline), DEL, C1 controls, bidi embeddings/overrides/isolates, BOM/zero-width marks
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_MD_SPECIALS = frozenset("\\`*_[]~|")


def _visible_char(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(value: object) -> str:
    """``str(value)`` with control and invisible direction characters shown as ``\\xNN`` / ``\\uNNNN``."""
    return _INVISIBLE.sub(_visible_char, str(value))


def term(value: object) -> str:
    """``value`` for a Rich markup string: visible, with ``[`` escaped so it is never read as a tag."""
    return escape(visible(value))


def text(value: object, style: str = ""):
    """``value`` as a ``rich.text.Text`` (printed verbatim, never parsed as markup)."""
    return Text(visible(value), style=style)


def html_text(value: object) -> str:
    """``value`` for HTML text or a quoted attribute."""
    return html.escape(str(value), quote=True)


def md(value: object) -> str:
    """``value`` for Markdown text and table cells: HTML-escaped, Markdown specials backslashed, one line."""
    out = []
    for ch in visible(value).replace("\r\n", "\n"):
        if ch == "\n":
            out.append(" ")
        elif ch in "&<>\"'":
            out.append(html.escape(ch, quote=True))
        elif ch in _MD_SPECIALS:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def md_row(cells) -> str:
    """One Markdown table row of escaped cells."""
    return "| " + " | ".join(md(c) for c in cells) + " |"
