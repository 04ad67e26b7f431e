"""The CEQL grammar (package data ``grammar/ceql.lark``) and the LALR(1) parser built from it.

A basic (context-free) lexer, so keywords are always keywords and errors point at the first
token that cannot continue the query. ``sql_grammar/ceql.lark`` in the repository is the single
source; the copy shipped here is checked against it by a test.
"""

from __future__ import annotations

import functools
import importlib.resources

from lark import Lark

__all__ = ["grammar_text", "lalr"]


def grammar_text() -> str:
    """The text of the CEQL grammar (lark syntax), as shipped in the package."""
    res = importlib.resources.files(__package__ or "ceql.frontends.ceql") / "grammar" / "ceql.lark"
    return res.read_text(encoding="utf-8")


@functools.cache
def lalr() -> Lark:
    """The LALR parser, built on first use and shared afterwards."""
    return Lark(
        grammar_text(),
        start="query",
        parser="lalr",
        lexer="basic",
        propagate_positions=True,
        maybe_placeholders=False,
    )
