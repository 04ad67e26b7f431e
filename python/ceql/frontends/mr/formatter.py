"""Syntax tree → MATCH_RECOGNIZE text that parses back to an equal tree (names that could be
read as keywords, or are not plain identifiers, in backquotes; parentheses where precedence
needs them)."""

from __future__ import annotations

import datetime
import functools
import re
from decimal import Decimal

from . import ast as A
from .lalr import grammar_text

__all__ = [
    "ExprWriter", "format_body", "format_expr", "format_name", "format_pattern", "format_query",
]

_IDENT = re.compile(r"[^\W\d]\w*\Z")
@functools.cache
def _keywords() -> frozenset[str]:
    """The grammar's keywords (read on first use: importing ceql reads no grammar)."""
    return frozenset(m.group(1).upper() for m in re.finditer(
        r'^[A-Z_]+: "([a-z_]+)"i$', grammar_text(), re.M))

# expression precedence, loosest first
_OR, _AND, _NOT, _PRED, _CONCAT, _ADD, _MUL, _UNARY, _ATOM = range(1, 10)
_BINARY = {"OR": _OR, "AND": _AND, "||": _CONCAT, "+": _ADD, "-": _ADD, "*": _MUL, "/": _MUL,
           "%": _MUL, "=": _PRED, "<>": _PRED, "<": _PRED, "<=": _PRED, ">": _PRED,
           ">=": _PRED}
_UNITS = (("DAY", datetime.timedelta(days=1)), ("HOUR", datetime.timedelta(hours=1)),
          ("MINUTE", datetime.timedelta(minutes=1)), ("SECOND", datetime.timedelta(seconds=1)),
          ("MILLISECOND", datetime.timedelta(milliseconds=1)))


def format_name(name: str) -> str:
    """A column, measure or alias name as written: backquoted unless a plain identifier that
    is no keyword."""
    if _IDENT.match(name) and name.upper() not in _keywords():
        return name
    return "`" + name.replace("`", "``") + "`"


def _var(name: str) -> str:
    """A row pattern variable (canonical: unquoted names are upper case)."""
    if name == name.upper() and _IDENT.match(name) and name not in _keywords():
        return name
    return "`" + name.replace("`", "``") + "`"


def _literal(value: A.Value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        text = f"{value:f}"
        return text if "." in text else text + "."
    if isinstance(value, float):
        text = repr(value)
        return text if "e" in text else text + "e0"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, datetime.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    micros = value // datetime.timedelta(microseconds=1)
    for unit, size in _UNITS:
        step = size // datetime.timedelta(microseconds=1)
        if micros % step == 0:
            return f"INTERVAL '{micros // step}' {unit}"
    return f"INTERVAL '{micros}' MICROSECOND"


def _prec(expr: A.Expr) -> int:
    if isinstance(expr, A.Binary):
        return _BINARY[expr.op]
    if isinstance(expr, A.Not):
        return _NOT
    if isinstance(expr, (A.IsNull, A.Between, A.InList, A.Like)):
        return _PRED
    if isinstance(expr, A.Negate):
        return _UNARY
    if isinstance(expr, A.Literal) and isinstance(expr.value, (int, Decimal, float)) and (
            not isinstance(expr.value, bool)) and expr.value < 0:
        return _UNARY
    return _ATOM


def _sem(sem: A.Semantics | None) -> str:
    return f"{sem} " if sem else ""


class ExprWriter:
    """Writes an expression as MATCH_RECOGNIZE text, with the parentheses precedence needs.

    A dialect changes what differs: how a literal, a column or a function name is written and
    where parentheses go (:mod:`ceql.spark.udtf.mr_split` writes Spark SQL with this).
    """

    def literal(self, value: A.Value) -> str:
        """A constant."""
        return _literal(value)

    def column(self, expr: A.Column) -> str:
        """A column reference."""
        col = format_name(expr.name)
        return col if expr.var is None else f"{_var(expr.var)}.{col}"

    def function(self, name: str) -> str:
        """A function's name."""
        return name if _IDENT.match(name) and name == name.upper() \
            else "`" + name.replace("`", "``") + "`"

    def wrap(self, expr: A.Expr, least: int) -> str:
        """``expr`` as an operand of an operator of precedence ``least``."""
        text = self.write(expr)
        return f"({text})" if _prec(expr) < least else text

    def write(self, expr: A.Expr) -> str:
        """``expr`` as text."""
        w, wrap = self.write, self.wrap
        if isinstance(expr, A.Literal):
            return self.literal(expr.value)
        if isinstance(expr, A.Column):
            return self.column(expr)
        if isinstance(expr, A.Negate):
            return f"- {wrap(expr.operand, _UNARY)}"
        if isinstance(expr, A.Binary):
            own = _BINARY[expr.op]
            if own == _PRED:
                return f"{wrap(expr.left, _CONCAT)} {expr.op} {wrap(expr.right, _CONCAT)}"
            return f"{wrap(expr.left, own)} {expr.op} {wrap(expr.right, own + 1)}"
        if isinstance(expr, A.Not):
            return f"NOT {wrap(expr.operand, _NOT)}"
        if isinstance(expr, (A.IsNull, A.Between, A.InList, A.Like)):
            return self.predicate(expr, "NOT " if expr.negated else "")
        if isinstance(expr, A.Case):
            parts = ["CASE"] if expr.operand is None else ["CASE", w(expr.operand)]
            parts += [f"WHEN {w(cond)} THEN {w(value)}" for cond, value in expr.whens]
            if expr.default is not None:
                parts.append(f"ELSE {w(expr.default)}")
            return " ".join([*parts, "END"])
        if isinstance(expr, A.Cast):
            return f"CAST({w(expr.operand)} AS {expr.type_name})"
        if isinstance(expr, A.Call):
            return f"{self.function(expr.name)}({', '.join(w(a) for a in expr.args)})"
        return self.relating(expr)

    def predicate(self, expr: A.IsNull | A.Between | A.InList | A.Like, negated: str) -> str:
        """``IS [NOT] NULL``, ``[NOT] BETWEEN``, ``[NOT] IN``, ``[NOT] LIKE``."""
        operand = self.wrap(expr.operand, _CONCAT)
        if isinstance(expr, A.IsNull):
            return f"{operand} IS {negated}NULL"
        if isinstance(expr, A.Between):
            return (f"{operand} {negated}BETWEEN {self.wrap(expr.low, _CONCAT)} AND "
                    f"{self.wrap(expr.high, _CONCAT)}")
        if isinstance(expr, A.InList):
            return f"{operand} {negated}IN ({', '.join(self.write(i) for i in expr.items)})"
        return f"{operand} {negated}LIKE {self.wrap(expr.pattern, _CONCAT)}"

    def relating(self, expr: A.Expr) -> str:
        """What relates rows: navigation, aggregates, ``CLASSIFIER()``, ``MATCH_NUMBER()``."""
        if isinstance(expr, A.Navigation):
            default = 1 if expr.kind in ("PREV", "NEXT") else 0
            offset = "" if expr.offset == default else f", {expr.offset}"
            return f"{_sem(expr.semantics)}{expr.kind}({self.write(expr.arg)}{offset})"
        if isinstance(expr, A.Aggregate):
            if expr.arg is None:
                arg = "*" if expr.star_var is None else f"{_var(expr.star_var)}.*"
            else:
                arg = f"{'DISTINCT ' if expr.distinct else ''}{self.write(expr.arg)}"
            return f"{_sem(expr.semantics)}{expr.name}({arg})"
        if isinstance(expr, A.Classifier):
            arg = "" if expr.var is None else _var(expr.var)
            return f"{_sem(expr.semantics)}CLASSIFIER({arg})"
        return "MATCH_NUMBER()"


_WRITER = ExprWriter()


def format_expr(expr: A.Expr) -> str:
    """An expression as text."""
    return _WRITER.write(expr)


# ---------------------------------------------------------------- patterns

def _pprec(node: A.Pattern) -> int:
    if isinstance(node, A.Alternation):
        return 1
    if isinstance(node, A.Concatenation):
        return 2
    if isinstance(node, A.Quantified):
        return 3
    return 4


def _pwrap(node: A.Pattern, least: int) -> str:
    text = format_pattern(node)
    return f"({text})" if _pprec(node) < least else text


def _quantifier(q: A.Quantified) -> str:
    low, high = q.low, q.high
    if (low, high) == (0, None):
        text = "*"
    elif (low, high) == (1, None):
        text = "+"
    elif (low, high) == (0, 1):
        text = "?"
    elif low == high:
        text = f"{{{low}}}"
    elif high is None:
        text = f"{{{low},}}"
    else:
        text = f"{{{low},{high}}}"
    return text if q.greedy else text + "?"


def format_pattern(node: A.Pattern) -> str:
    """A row pattern as text (the empty pattern is ``()``)."""
    if isinstance(node, A.PatternVar):
        return _var(node.name)
    if isinstance(node, A.EmptyPattern):
        return "()"
    if isinstance(node, A.Anchor):
        return node.kind
    if isinstance(node, A.Concatenation):
        return " ".join(_pwrap(i, 3) for i in node.items)
    if isinstance(node, A.Alternation):
        return " | ".join(_pwrap(i, 2) for i in node.items)
    if isinstance(node, A.Quantified):
        return _pwrap(node.item, 4) + _quantifier(node)
    if isinstance(node, A.Permute):
        return f"PERMUTE({', '.join(format_pattern(i) for i in node.items)})"
    return f"{{- {format_pattern(node.item)} -}}"


# ---------------------------------------------------------------- clauses

def format_body(mr: A.MatchRecognize) -> str:
    """The clause's body (what goes between ``MATCH_RECOGNIZE (`` and ``)``), one clause a
    line."""
    lines: list[str] = []
    if mr.partition_by:
        lines.append("PARTITION BY " + ", ".join(format_name(c) for c in mr.partition_by))
    if mr.order_by:
        keys = []
        for k in mr.order_by:
            text = format_name(k.column) + (" DESC" if k.descending else "")
            if k.nulls_first is not None:
                text += " NULLS FIRST" if k.nulls_first else " NULLS LAST"
            keys.append(text)
        lines.append("ORDER BY " + ", ".join(keys))
    if mr.measures:
        lines.append("MEASURES " + ",\n  ".join(
            f"{format_expr(m.expr)} AS {format_name(m.name)}" for m in mr.measures))
    rows = mr.rows_per_match
    lines.append("ONE ROW PER MATCH" if rows == "ONE" else f"ALL ROWS PER MATCH {rows.mode}")
    skip = mr.skip
    lines.append("AFTER MATCH SKIP " + (
        skip.kind if skip.var is None else f"{skip.kind} {_var(skip.var)}"))
    pattern = "" if isinstance(mr.pattern, A.EmptyPattern) else format_pattern(mr.pattern)
    lines.append(f"PATTERN ({pattern})")
    if mr.within is not None:
        lines.append(f"WITHIN {_literal(mr.within)}")
    if mr.subsets:
        lines.append("SUBSET " + ", ".join(
            f"{_var(s.name)} = ({', '.join(_var(m) for m in s.members)})" for s in mr.subsets))
    if mr.defines:
        lines.append("DEFINE " + ",\n  ".join(
            f"{_var(d.var)} AS {format_expr(d.condition)}" for d in mr.defines))
    return "\n".join(lines)


def format_query(query: A.Query) -> str:
    """A whole ``SELECT … FROM source MATCH_RECOGNIZE ( … ) [AS alias]``."""
    if not query.select:
        select = "*"
    else:
        items = []
        for item in query.select:
            if item.expr is None:
                items.append(f"{format_name(item.star_qualifier or '')}.*")
            else:
                alias = f" AS {format_name(item.alias)}" if item.alias else ""
                items.append(format_expr(item.expr) + alias)
        select = ", ".join(items)
    source = ".".join(format_name(s) for s in query.source)
    alias = f" AS {format_name(query.alias)}" if query.alias else ""
    body = "\n  ".join(format_body(query.body).split("\n"))
    return f"SELECT {select}\nFROM {source} MATCH_RECOGNIZE (\n  {body}\n){alias}"
