"""The MATCH_RECOGNIZE grammar (package data ``grammar/mr.lark``) and the LALR(1) parser built
from it, with lark's contextual lexer (a keyword is one only where the grammar takes it)."""

from __future__ import annotations

import functools
import importlib.resources

from lark import Lark

__all__ = ["grammar_text", "lalr"]


def grammar_text() -> str:
    """The text of the MATCH_RECOGNIZE grammar (lark syntax), as shipped in the package."""
    res = importlib.resources.files(__package__ or "ceql.frontends.mr") / "grammar" / "mr.lark"
    return res.read_text(encoding="utf-8")


@functools.cache
def lalr() -> Lark:
    """The LALR parser, built on first use and shared afterwards."""
    return Lark(grammar_text(), start="start", parser="lalr", lexer="contextual",
                propagate_positions=True, maybe_placeholders=False)
