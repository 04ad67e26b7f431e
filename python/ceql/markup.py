"""HTML building blocks for notebooks: escaping, value cells, tables, one small style sheet.

Every piece of user-provided text (query text, event values, names) goes through :func:`esc`
or :func:`value`; the other helpers take HTML already built from them.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Iterable, Sequence

__all__ = ["STYLE", "esc", "section", "table", "value", "wrap"]

#: Scoped to ``.ceql`` so that it styles only ceql's output; readable on light and dark themes.
STYLE = (
    "<style>"
    ".ceql{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px}"
    ".ceql pre{font-family:var(--jp-code-font-family,monospace);margin:4px 0;"
    "padding:6px 8px;border-left:3px solid #888;white-space:pre-wrap}"
    ".ceql table{border-collapse:collapse;margin:4px 0;font-size:inherit}"
    ".ceql th,.ceql td{padding:2px 8px;border-bottom:1px solid rgba(128,128,128,.35);"
    "text-align:left;vertical-align:top}"
    ".ceql th{font-weight:600}"
    ".ceql .ceql-note{opacity:.75;font-size:12px}"
    ".ceql h4{margin:8px 0 2px 0;font-size:13px}"
    ".ceql svg{max-width:100%;height:auto}"
    "</style>"
)

_MAX_VALUE_CHARS = 80


def esc(text: object) -> str:
    """``text`` as HTML text (``& < > " '`` escaped)."""
    return html.escape(str(text), quote=True)


def value(x: object) -> str:
    """An event or key value as escaped HTML: ISO times, ``NULL`` for ``None``, long text cut."""
    if x is None:
        return "<i>NULL</i>"
    if isinstance(x, dt.datetime | dt.date | dt.time):
        text = x.isoformat(sep=" ") if isinstance(x, dt.datetime) else x.isoformat()
    elif isinstance(x, str):
        text = x
    else:
        text = repr(x) if isinstance(x, bytes | bytearray) else str(x)
    if len(text) > _MAX_VALUE_CHARS:
        return f'<span title="{esc(text)}">{esc(text[:_MAX_VALUE_CHARS - 1])}…</span>'
    return esc(text)


def table(header: Sequence[str], rows: Iterable[Sequence[str]], *, cls: str = "") -> str:
    """A table; ``header`` is plain text (escaped here), each row's cells are HTML already."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    attr = f' class="{esc(cls)}"' if cls else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def section(title: str, body: str) -> str:
    """A titled part of a larger display; ``title`` is plain text, ``body`` HTML."""
    return f"<h4>{esc(title)}</h4>{body}"


def wrap(body: str, cls: str) -> str:
    """The outermost element of one display, with the style sheet."""
    return f'<div class="ceql {esc(cls)}">{STYLE}{body}</div>'
