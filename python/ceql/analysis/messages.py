"""The wording and placing of validation errors: a :class:`Reporter` collects them located at
their node (line, column, caret) and shows the query's own text in them; the small helpers word
lists of names.

Used by the checks of :mod:`ceql.analysis.validate` (scopes, negations, kinds).
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Iterable

from ..errors import CeqlValidationError, caret_snippet
from ..frontends.ceql.formatter import format_expr, format_filter, format_formula
from ..ir import nodes as A

__all__ = ["Reporter", "and_list", "did_you_mean", "names_list", "written_name"]

def names_list(names: Iterable[str]) -> str:
    """``names`` sorted and joined by commas ('nothing' when none)."""
    ordered = sorted(set(names), key=lambda n: (n.lower(), n))
    return ", ".join(ordered) if ordered else "nothing"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the name of ``known`` closest to ``name``, or ''."""
    close = difflib.get_close_matches(name, sorted(set(known)), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def and_list(names: Iterable[str]) -> str:
    """``'a'``, ``'a' and 'b'``, ``'a', 'b' and 'c'``."""
    quoted = [f"'{n}'" for n in names]
    if len(quoted) <= 1:
        return "".join(quoted)
    return f"{', '.join(quoted[:-1])} and {quoted[-1]}"


_NAME_TOKEN = re.compile(r"`[^`\n]*(?:``[^`\n]*)*`|[^\W\d]\w*")


def written_name(text: str, start: int) -> int:
    """The length of the name (bare or backquoted) written at ``text[start:]``, 0 if none."""
    m = _NAME_TOKEN.match(text, start)
    return m.end() - start if m else 0


class Reporter:
    """The errors found in one query's ``text``, and how its nodes are shown in them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.errors: list[tuple[int, int, CeqlValidationError]] = []

    def first(self) -> CeqlValidationError | None:
        """The first error in text order (the first reported among those at one place)."""
        return min(self.errors, key=lambda e: (e[0], e[1]))[2] if self.errors else None

    def report(self, cls: type[CeqlValidationError], message: str, span: A.Span,
               width: int | None = None) -> None:
        """Add an error ``cls(message)`` located at ``span`` (caret ``width`` columns wide, by
        default the span's)."""
        if span.line:
            if width is None:
                width = span.end - span.start if span.end_line == span.line else 10**6
            err = cls(message, line=span.line, column=span.column,
                      snippet=caret_snippet(self.text, span.line, span.column, max(1, width)))
            key = span.start
        else:
            err = cls(message)
            key = sys.maxsize
        self.errors.append((key, len(self.errors), err))

    def show(self, expr: A.Expr) -> str:
        """``expr`` as the query writes it, on one line (formatted when its text is unknown)."""
        s = expr.span
        if s.line and 0 <= s.start < s.end <= len(self.text):
            return " ".join(self.text[s.start:s.end].split())
        return format_expr(expr)

    def text_at(self, span: A.Span) -> str:
        """The query text under ``span`` ('' when unknown)."""
        if span.line and 0 <= span.start < span.end <= len(self.text):
            return self.text[span.start:span.end]
        return ""

    def leaf_text(self, leaf: A.FilterAtom | A.FilterMatch) -> str:
        """A FILTER condition as written (``b[price > a.price]``), on one line."""
        text = self.text_at(leaf.span)
        return " ".join(text.split()) if text else format_filter(leaf)

    def negation_text(self, node: A.Not) -> str:
        """A NOT as written (``NOT B AS n``), on one line."""
        text = self.text_at(node.span)
        return " ".join(text.split()) if text else format_formula(node)

    def formula_text(self, node: A.Formula) -> str:
        """A formula as written, on one line."""
        text = self.text_at(node.span)
        return " ".join(text.split()) if text else format_formula(node)

    def head_width(self, name: str, span: A.Span) -> int:
        """How many columns the variable ``name`` written at ``span`` takes (``S1 > BUY``)."""
        if not span.line or span.start >= len(self.text):
            return len(name)
        first = written_name(self.text, span.start)
        if ">" not in name or not first:
            return max(first, len(name)) if first else len(name)
        at = span.start + first
        gap = re.compile(r"\s*>\s*").match(self.text, at)
        if gap is None:
            return len(name)
        second = written_name(self.text, gap.end())
        return gap.end() + second - span.start if second else len(name)

    def ref_span(self, var: str, node: A.Attr | A.Agg) -> tuple[A.Span, int | None]:
        """Where the variable ``var`` of ``node`` (``a.price``, ``COUNT(a)``) is written."""
        s = node.span
        if not s.line or s.end_line != s.line or not 0 <= s.start < s.end <= len(self.text):
            return s, None
        at = s.start
        if isinstance(node, A.Agg):
            paren = self.text.find("(", s.start, s.end)
            if paren < 0:
                return s, None
            at = paren + 1
            while at < s.end and self.text[at].isspace():
                at += 1
        width = written_name(self.text, at)
        if not width:
            return s, None
        column = s.column + (at - s.start)
        return A.Span(s.line, column, s.line, column + width, at, at + width), width

    def pattern_span(self, node: A.Like) -> tuple[A.Span, int | None]:
        """Where the pattern literal of ``node`` stands (the whole LIKE if unknown)."""
        s = node.span
        length = len(node.pattern) + node.pattern.count("'") + 2
        start = s.end - length
        if (not s.line or s.end_line != s.line or start < s.start
                or self.text[start:start + 1] != "'"):
            return s, None
        column = s.end_column - length
        return A.Span(s.line, column, s.line, s.end_column, start, s.end), length
