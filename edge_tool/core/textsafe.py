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

from rich.markup import escape
from rich.text import Text

from edge_tool.core.visible import visible

_MD_SPECIALS = frozenset("\\`*_[]~|")


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
