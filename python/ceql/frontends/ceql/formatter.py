"""Canonical CEQL text for an AST: ``parse(format_query(q)) == q``.

The printer follows CEQL's precedence (tightest first):

* formulas: atoms and parentheses; postfix ``+``, ``:+``, ``AS x``; prefix ``NOT`` (so
  ``NOT B AS n`` is ``NOT (B AS n)``); ``;`` and ``:`` (one level, left-associative); ``AND``;
  ``OR``; ``FILTER cond`` (loosest);
* FILTER conditions: ``X[pred]``, ``S>T[pred]`` and match conditions ``[pred]``; ``AND``;
  ``OR``;
* predicates: comparisons, ``LIKE``, ``IN``; ``NOT``; ``AND``; ``OR``;
* arithmetic: atoms (attributes, ``y.attr``, ``PREV(attr)``, ``COUNT(y)``, ``SUM(y.attr)`` …,
  literals); unary minus; ``* / %``; ``+ -``.

A child is parenthesized whenever its own operator binds more loosely than its position allows,
and in a few places where leaving the parentheses out would rely on details of the grammar (a
postfix operator applied to a postfix operator, ``NOT`` and unary minus applied to anything but
a name, negative numbers as operands of arithmetic).

Names that are keywords or not plain identifiers are written in backquotes, each part of a
qualified name on its own (`` `odd v`.`odd a` ``, `` S>`odd T` ``). The one AST the
parser never produces, unary minus on a number literal, is written ``-(1)`` and reads back as
the literal ``-1`` (the same value).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from decimal import Decimal
from fractions import Fraction

from ...constants import CONSUME_NONE, WITHIN_ATTR, WITHIN_EVENTS, WITHIN_TIME
from ...ir import nodes as A

__all__ = ["format_expr", "format_filter", "format_formula", "format_name", "format_pred",
           "format_query"]

_IDENT = re.compile(r"[^\W\d]\w*\Z")
_KEYWORDS = frozenset("""
    select from where partition by within consume limit all any next last max strict none as
    filter or and not like in range true false events event interval hours hour minutes minute
    seconds second milliseconds millisecond null
""".split())  # null: a bare NULL is refused by validation (not a value), `NULL` is a name


def _ident(name: str) -> str:
    """A name as written in CEQL: bare when it can be, else in backquotes."""
    if _IDENT.match(name) and name.lower() not in _KEYWORDS:
        return name
    if not name or "\n" in name:
        raise ValueError(f"cannot write {name!r} as a CEQL name")
    return "`" + name.replace("`", "``") + "`"


def format_name(name: str) -> str:
    """A name (event type, variable, stream, attribute) as written in CEQL: bare when it can
    be, else in backquotes."""
    return _ident(name)


def _var(name: str) -> str:
    """A variable as written in a FILTER head or a SELECT list: ``S>T`` (the events of the
    leaves ``S>T``, each part quoted on its own) when ``name`` holds a ``>`` between two
    non-empty parts, else one name. Both spellings parse to the same string."""
    stream, sep, event_type = name.partition(">")
    if sep and stream and event_type and "\n" not in name:
        return f"{_ident(stream)}>{_ident(event_type)}"
    return _ident(name)


def _fraction(value: Fraction) -> str:
    """``value`` as an exact decimal numeral (``3``, ``1.5``, ``0.001``)."""
    if value.denominator == 1:
        return str(value.numerator)
    rest = value.denominator
    twos = fives = 0
    while rest % 2 == 0:
        rest //= 2
        twos += 1
    while rest % 5 == 0:
        rest //= 5
        fives += 1
    if rest != 1:
        raise ValueError(f"{value} has no finite decimal expansion")
    digits = max(twos, fives)
    scaled = value * 10**digits
    assert scaled.denominator == 1
    sign = "-" if scaled < 0 else ""
    text = str(abs(scaled.numerator)).rjust(digits + 1, "0")
    return f"{sign}{text[:-digits]}.{text[-digits:]}"


def _float(value: float) -> str:
    if not math.isfinite(value):
        raise ValueError(f"cannot write the number {value!r} in CEQL")
    text = repr(value)
    if "e" in text or "E" in text:
        text = format(Decimal(text), "f")
    if "." not in text:
        text += ".0"
    return text


def _string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _literal(lit: A.Literal) -> str:
    value = lit.value
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dt.timedelta):
        micros = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
        text = format(decimal.Decimal(micros).scaleb(-6).normalize(), "f")
        return f"INTERVAL '{text}' SECOND"
    raise TypeError(f"unexpected literal {value!r}")


# ---------------------------------------------------------------- arithmetic

_ADD, _MUL, _UNARY, _ATOM = 1, 2, 3, 4
_ARITH_LEVEL = {"+": _ADD, "-": _ADD, "*": _MUL, "/": _MUL, "%": _MUL}


def _expr_level(e: A.Expr) -> int:
    if isinstance(e, A.Arith):
        return _ARITH_LEVEL[e.op]
    if isinstance(e, A.Neg):
        return _UNARY
    if isinstance(e, A.Literal) and _is_negative_number(e):
        return _UNARY
    return _ATOM


def _is_negative_number(lit: A.Literal) -> bool:
    v = lit.value
    return isinstance(v, (int, float)) and not isinstance(v, bool) and (v < 0 or str(v)[0] == "-")


def _expr(e: A.Expr, need: int = _ADD) -> str:
    text = format_expr(e)
    return f"({text})" if _expr_level(e) < need else text


def format_expr(e: A.Expr) -> str:
    """An arithmetic expression, without surrounding parentheses."""
    if isinstance(e, A.Attr):
        if e.var is not None:
            return f"{_ident(e.var)}.{_ident(e.name)}"
        return _ident(e.name)
    if isinstance(e, A.Literal):
        return _literal(e)
    if isinstance(e, A.Prev):
        return f"PREV({_ident(e.name)})"
    if isinstance(e, A.Agg):
        if e.func not in A.AGGREGATES:
            raise ValueError(f"unknown aggregate {e.func!r}")
        if e.distinct:
            if e.func not in A.DISTINCT_AGGREGATES or e.attr is None:
                raise ValueError(f"{e.func}(DISTINCT …) needs one of "
                                 f"{', '.join(A.DISTINCT_AGGREGATES)} and an attribute")
            return f"{e.func}(DISTINCT {_ident(e.var)}.{_ident(e.attr)})"
        if e.func == "COUNT":
            if e.attr is not None:
                raise ValueError("COUNT takes a variable, not an attribute")
            return f"COUNT({_ident(e.var)})"
        if e.attr is None:
            raise ValueError(f"{e.func} needs an attribute")
        return f"{e.func}({_ident(e.var)}.{_ident(e.attr)})"
    if isinstance(e, A.Neg):
        inner = e.operand
        if isinstance(inner, A.Attr | A.Prev | A.Agg):
            return f"-{format_expr(inner)}"
        # ``-(1)``, ``-(-x)``, ``-(a + b)``: never ``--`` (a comment) and never a bare ``-1``,
        # which a parser may fold into a negative literal.
        return f"-({format_expr(inner)})"
    if isinstance(e, A.Arith):
        if e.op not in _ARITH_LEVEL:
            raise ValueError(f"unknown arithmetic operator {e.op!r}")
        level = _ARITH_LEVEL[e.op]
        # Operands that start with a minus sign are parenthesized: ``a * (-1)``, ``(-a) * b``.
        left = _expr(e.left, max(level, _ATOM if _expr_level(e.left) == _UNARY else level))
        right = _expr(e.right, _ATOM if _expr_level(e.right) == _UNARY else level + 1)
        return f"{left} {e.op} {right}"
    raise TypeError(f"unexpected expression {e!r}")


# ---------------------------------------------------------------- predicates

_P_OR, _P_AND, _P_NOT, _P_ATOM = 1, 2, 3, 4
_COMPARE_OPS = ("=", "!=", "<", "<=", ">", ">=")


def _pred_level(p: A.Pred) -> int:
    if isinstance(p, A.POr):
        return _P_OR
    if isinstance(p, A.PAnd):
        return _P_AND
    if isinstance(p, A.PNot):
        return _P_NOT
    return _P_ATOM


def _pred(p: A.Pred, need: int) -> str:
    text = format_pred(p)
    return f"({text})" if _pred_level(p) < need else text


def _operand(e: A.Expr) -> str:
    """The tested expression of LIKE / IN / IN RANGE: parenthesized unless a name or literal."""
    return _expr(e, _ATOM)


def format_pred(p: A.Pred) -> str:
    """A predicate (the text inside ``X[...]``)."""
    if isinstance(p, A.Compare):
        if p.op not in _COMPARE_OPS:
            raise ValueError(f"unknown comparison {p.op!r}")
        return f"{format_expr(p.left)} {p.op} {format_expr(p.right)}"
    if isinstance(p, A.Like):
        return f"{_operand(p.expr)} LIKE {_string(p.pattern)}"
    if isinstance(p, A.InSet):
        values = ", ".join(_literal(v) for v in p.values)
        keyword = "NOT IN" if p.negated else "IN"
        return f"{_operand(p.expr)} {keyword} {{{values}}}"
    if isinstance(p, A.InRange):
        return f"{_operand(p.expr)} IN RANGE({format_expr(p.lo)}, {format_expr(p.hi)})"
    if isinstance(p, A.PAnd):
        return f"{_pred(p.left, _P_AND)} AND {_pred(p.right, _P_NOT)}"
    if isinstance(p, A.POr):
        return f"{_pred(p.left, _P_OR)} OR {_pred(p.right, _P_AND)}"
    if isinstance(p, A.PNot):
        return f"NOT ({format_pred(p.operand)})"
    raise TypeError(f"unexpected predicate {p!r}")


# ---------------------------------------------------------------- FILTER conditions

_F_OR, _F_AND, _F_ATOM = 1, 2, 3


def _filter_level(c: A.FilterExpr) -> int:
    if isinstance(c, A.FilterOr):
        return _F_OR
    if isinstance(c, A.FilterAnd):
        return _F_AND
    return _F_ATOM


def _filter(c: A.FilterExpr, need: int) -> str:
    text = format_filter(c)
    return f"({text})" if _filter_level(c) < need else text


def format_filter(c: A.FilterExpr) -> str:
    """A FILTER condition (the text after ``FILTER``)."""
    if isinstance(c, A.FilterAtom):
        return f"{_var(c.var)}[{format_pred(c.pred)}]"
    if isinstance(c, A.FilterMatch):
        return f"[{format_pred(c.pred)}]"
    if isinstance(c, A.FilterAnd):
        return f"{_filter(c.left, _F_AND)} AND {_filter(c.right, _F_ATOM)}"
    if isinstance(c, A.FilterOr):
        return f"{_filter(c.left, _F_OR)} OR {_filter(c.right, _F_AND)}"
    raise TypeError(f"unexpected FILTER condition {c!r}")


# ---------------------------------------------------------------- formulas

_FILTER, _OR, _AND, _SEQ, _NOT, _POSTFIX, _FATOM = 0, 1, 2, 3, 4, 5, 6


def _formula_level(f: A.Formula) -> int:
    if isinstance(f, A.Filter):
        return _FILTER
    if isinstance(f, A.Or):
        return _OR
    if isinstance(f, A.And):
        return _AND
    if isinstance(f, A.Seq):
        return _SEQ
    if isinstance(f, A.Not):
        return _NOT
    if isinstance(f, (A.As, A.Plus)):
        return _POSTFIX
    return _FATOM


def _formula(f: A.Formula, need: int) -> str:
    text = format_formula(f)
    return f"({text})" if _formula_level(f) < need else text


def format_formula(f: A.Formula) -> str:
    """A WHERE formula, without surrounding parentheses."""
    if isinstance(f, A.EventType):
        name = _ident(f.name)
        return name if f.stream is None else f"{_ident(f.stream)}>{name}"
    if isinstance(f, A.As):
        # ``A+ AS x`` but ``(A AS x) AS y``.
        need = _FATOM if isinstance(f.formula, A.As) else _POSTFIX
        return f"{_formula(f.formula, need)} AS {_ident(f.var)}"
    if isinstance(f, A.Plus):
        return _formula(f.formula, _FATOM) + (":+" if f.contiguous else "+")
    if isinstance(f, A.Not):
        return f"NOT {_formula(f.formula, _NOT)}"
    if isinstance(f, A.Seq):
        op = ":" if f.contiguous else ";"
        return f"{_formula(f.left, _SEQ)} {op} {_formula(f.right, _NOT)}"
    if isinstance(f, A.And):
        return f"{_formula(f.left, _AND)} AND {_formula(f.right, _SEQ)}"
    if isinstance(f, A.Or):
        return f"{_formula(f.left, _OR)} OR {_formula(f.right, _AND)}"
    if isinstance(f, A.Filter):
        return f"{_formula(f.formula, _OR)} FILTER {format_filter(f.cond)}"
    raise TypeError(f"unexpected formula {f!r}")


# ---------------------------------------------------------------- whole queries


def _within(w: A.Within) -> str:
    amount = _fraction(Fraction(w.amount))
    if w.kind == WITHIN_EVENTS:
        return f"WITHIN {amount} EVENTS"
    if w.kind == WITHIN_TIME:
        return f"WITHIN {amount} SECONDS"
    if w.kind == WITHIN_ATTR:
        if w.attr is None:
            raise ValueError("an attribute window needs an attribute")
        return f"WITHIN {amount} [{_ident(w.attr)}]"
    raise ValueError(f"unknown WITHIN kind {w.kind!r}")


def format_query(q: A.Query) -> str:
    """Canonical CEQL text for ``q``, one clause per line."""
    if q.strategy not in A.STRATEGIES:
        raise ValueError(f"unknown selection strategy {q.strategy!r}")
    if q.consume not in A.CONSUME_POLICIES:
        raise ValueError(f"unknown CONSUME BY policy {q.consume!r}")
    if not q.streams:
        raise ValueError("a query needs at least one stream in FROM")
    if q.select is None:
        select = "*"
    elif not q.select:
        select = "NONE"
    else:
        select = ", ".join(_var(v) for v in q.select)
    lines = [
        f"SELECT {q.strategy} {select} FROM {', '.join(_ident(s) for s in q.streams)}",
        f"WHERE {format_formula(q.where)}",
    ]
    if q.partition_by:
        lines.append(f"PARTITION BY [{', '.join(_ident(a) for a in q.partition_by)}]")
    if q.within is not None:
        lines.append(_within(q.within))
    if q.consume != CONSUME_NONE:
        lines.append(f"CONSUME BY {q.consume}")
    if q.limit is not None:
        lines.append(f"LIMIT {q.limit}")
    return "\n".join(lines)
