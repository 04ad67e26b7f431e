"""The SPAseq grammar (package data ``grammar/spaseq.lark``) and the LALR(1) parser built from
it, with lark's contextual lexer (see the grammar's header)."""

from __future__ import annotations

import functools
import importlib.resources

from lark import Lark

__all__ = ["grammar_text", "lalr"]


def grammar_text() -> str:
    """The text of the SPAseq grammar (lark syntax), as shipped in the package."""
    res = (importlib.resources.files(__package__ or "ceql.frontends.spaseq") / "grammar"
           / "spaseq.lark")
    return res.read_text(encoding="utf-8")


@functools.cache
def lalr() -> Lark:
    """The LALR parser, built on first use and shared afterwards."""
    return Lark(grammar_text(), start="query", parser="lalr", lexer="contextual",
                propagate_positions=True, maybe_placeholders=False)
