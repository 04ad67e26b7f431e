"""How deep a query nests at least, read from its text in one linear pass, without parsing.

Parsing a query of 100 000 terms takes seconds, and a query that deep is refused anyway
(:data:`ceql.ir.MAX_DEPTH`), so :func:`depth_floor` lets the compiler refuse it first. The scan
is an operator-precedence pass over the tokens, one level per pair of brackets: it nests
binary operators (``;`` ``:`` ``AND`` ``OR`` ``FILTER``, comparisons, arithmetic), postfix
ones (``+`` ``:+`` ``AS x``), prefix ``NOT`` (in formulas and predicates) and groups as the
grammar does, and counts nothing it is not sure of (unary minus, which a number absorbs), so
it never exceeds :func:`ceql.ir.depth` of the parsed query.
For a WHERE formula without FILTER it is exact.
"""

from __future__ import annotations

import functools
import re

from .lalr import grammar_text

__all__ = ["depth_floor"]

_TOKEN = re.compile(
    r"(?P<skip>\s+|--[^\n]*|/\*[\s\S]*?\*/)"
    r"|(?P<atom>'[^']*+(?:''[^']*+)*+'|`[^`\n]*+(?:``[^`\n]*+)*+`"
    r"|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<word>[^\W\d]\w*)"
    r"|(?P<op>:\+|<>|<=|>=|==|!=|[;:+\-*/%()\[\]{},=<>])"
    r"|(?P<other>.)",
    re.DOTALL,
)
# Binary operators by precedence (higher binds tighter), in a formula (FILTER conditions
# included) and inside X[...]; all left-associative, as in the grammar.
# In a formula AND is conjunction (between OR and ``;``); in a FILTER condition it joins
# conditions, again just above OR.
_FORMULA_OPS = {"FILTER": 0, "OR": 1, "AND": 2, ";": 3, ":": 3}
_FORMULA_NOT = 4  # prefix NOT in a formula: tighter than ``;``, looser than postfix operators
_PRED_OPS = {"OR": 1, "AND": 2, "=": 4, "==": 4, "!=": 4, "<>": 4, "<": 4, "<=": 4, ">": 4,
             ">=": 4, "LIKE": 4, "IN": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}
_PRED_SKIP = frozenset({"NOT", "RANGE"})  # NOT is a prefix operator only before an operand
_NOT = 3
_CLAUSES = frozenset({"SELECT", "FROM", "WHERE", "PARTITION", "BY", "WITHIN", "CONSUME",
                      "LIMIT"})
_LEAF = 2  # an event type, attribute or literal, and its span


@functools.cache
def _keywords() -> frozenset[str]:
    """The grammar's keywords (its terminals ``NAME: "name"i``), without building the parser."""
    return frozenset(m.upper() for m in re.findall(r'(?m)^[A-Z]+: "([a-z]+)"i$', grammar_text()))


class _Level:
    """The scan inside one pair of brackets (or at the top): an operand and an operator
    stack, as in Dijkstra's shunting-yard, holding subtree depths and (precedence, prefix)."""

    __slots__ = ("best", "expect", "formula", "ops", "vals")

    def __init__(self, formula: bool) -> None:
        self.formula = formula  # a formula or FILTER condition (else a predicate or a list)
        self.best = 0  # the deepest subtree met at this level
        self.vals: list[int] = []
        self.ops: list[tuple[int, bool]] = []
        self.expect = True  # an operand comes next

    def _reduce(self, rank: int) -> bool:
        """Apply the last operator if it binds at least as tightly as ``rank``."""
        if not self.ops or self.ops[-1][0] < rank:
            return False
        prefix = self.ops[-1][1]
        if len(self.vals) < (1 if prefix else 2):
            return False
        self.ops.pop()
        right = self.vals.pop()
        d = 1 + (right if prefix else max(self.vals.pop(), right))
        self.vals.append(d)
        self.best = max(self.best, d)
        return True

    def finish(self) -> None:
        """End the expression here (a comma, a keyword, something the scan does not nest)."""
        while self._reduce(0):
            pass
        self.vals.clear()
        self.ops.clear()
        self.expect = True

    def operand(self, d: int) -> None:
        if not self.expect:
            self.finish()
        self.vals.append(d)
        self.best = max(self.best, d)
        self.expect = False

    def binary(self, rank: int) -> None:
        if self.expect:  # no left operand: a prefix use (unary minus) or an error
            return
        while self._reduce(rank):
            pass
        self.ops.append((rank, False))
        self.expect = True

    def prefix(self, rank: int) -> None:
        if self.expect:  # else NOT LIKE / NOT IN, counted as their positive form
            self.ops.append((rank, True))

    def postfix(self) -> None:
        if not self.expect:
            self.vals[-1] += 1
            self.best = max(self.best, self.vals[-1])


def depth_floor(text: str) -> tuple[int, bool]:
    """A lower bound of ``ceql.ir.depth(parse(text))``, and whether it is exact.

    Meaningful for text that parses; for any other text it is some number (parsing it fails).
    """
    keywords = _keywords()
    top = _Level(False)
    stack = [top]
    deepest = 0
    absorb = False  # the next name is part of what came before (S>T's T, AS x's x)
    where = filtered = False
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "skip":
            continue
        lv = stack[-1]
        tok = m.group()
        word = tok.upper() if kind == "word" else ""
        if absorb:
            absorb = False
            if kind in ("atom", "word"):
                continue
        if lv is top and word in _CLAUSES:
            top.finish()
            top.formula = word == "WHERE"
            where = where or top.formula
        elif kind == "atom" or word in ("TRUE", "FALSE"):
            lv.operand(_LEAF)
        elif kind == "word" and (word not in keywords if lv.formula else
                                 word not in _PRED_OPS and word not in _PRED_SKIP):
            lv.operand(_LEAF)
        elif lv.formula and (word == "AS" or tok in ("+", ":+")):
            lv.postfix()
            absorb = word == "AS"
        elif lv.formula and tok == ">":
            absorb = not lv.expect  # S>T is one event type
        elif (word or tok) in (_FORMULA_OPS if lv.formula else _PRED_OPS):
            filtered = filtered or (lv.formula and word == "FILTER")
            lv.binary((_FORMULA_OPS if lv.formula else _PRED_OPS)[word or tok])
        elif word == "NOT":
            lv.prefix(_FORMULA_NOT if lv.formula else _NOT)
        elif word in _PRED_SKIP and not lv.formula:
            pass
        elif tok in ("(", "[", "{"):
            stack.append(_Level(lv.formula and tok == "("))
        elif tok in (")", "]", "}") and len(stack) > 1:
            inner = stack.pop()
            inner.finish()
            deepest = max(deepest, inner.best)
            outer = stack[-1]
            if tok == "]" and outer.formula and not outer.expect:  # X[P]: a FILTER atom over P
                outer.vals[-1] = max(outer.vals[-1], 1 + inner.best)
                outer.best = max(outer.best, outer.vals[-1])
            else:
                outer.operand(max(inner.best, _LEAF))
        else:
            lv.finish()
    for lv in stack:
        lv.finish()
        deepest = max(deepest, lv.best)
    # the Query node above; exact when the formula nests deeper than any other clause can
    return 1 + deepest, where and not filtered and deepest > 4
