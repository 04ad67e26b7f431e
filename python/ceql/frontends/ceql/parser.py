"""CEQL text → :class:`ceql.ir.Query`.

The grammar lives in ``grammar/ceql.lark`` (package data; see its header for the precedence
table). It is compiled once into an LALR(1) parser with a basic (context-free) lexer, so
keywords are always keywords and errors point at the first token that cannot continue the query.
The parse tree is turned into the AST without recursion, so deeply nested queries do not hit
Python's recursion limit.

Errors are :class:`~ceql.errors.CeqlSyntaxError` with line, column, a caret snippet and the
tokens that would have been accepted, in plain words.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import NoReturn, TypeVar, cast

from lark import Token, Tree
from lark.exceptions import LarkError

from ...constants import (
    CONSUME_NONE,
    STRATEGY_ANY,
    WITHIN_ATTR,
    WITHIN_EVENTS,
    WITHIN_TIME,
    WITHIN_UNIT_MILLIS,
)
from ...errors import CeqlTypeError
from ...ir import nodes as A
from ..syntax import syntax_error
from ..trees import fold_tree, meta_span, token_span
from .diagnostics import SOFT_KEYWORDS, diagnose
from .lalr import grammar_text, lalr

__all__ = ["SOFT_KEYWORDS", "grammar_text", "parse"]

_T = TypeVar("_T")

def parse(text: str) -> A.Query:
    """Parse CEQL ``text`` into a :class:`~ceql.ir.Query` (names and structure unchecked).

    Raises :class:`~ceql.errors.CeqlSyntaxError` on any text that is not CEQL. Use
    :func:`ceql.analysis.validate` afterwards to check names and types.
    """
    if not isinstance(text, str):
        raise CeqlTypeError(f"A CEQL query must be a string, not {type(text).__name__}.")
    try:
        tree = lalr().parse(text)
    except LarkError as exc:
        raise diagnose(text, exc) from None
    return _Builder(text).build(tree)


# ---------------------------------------------------------------- spans and small helpers

def _join_spans(first: A.Span, last: A.Span) -> A.Span:
    return A.Span(first.line, first.column, last.end_line, last.end_column, first.start, last.end)


_NUMBER_TEXT = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_TIME_UNITS: dict[str, Fraction] = {u: Fraction(ms, 1000) for u, ms in WITHIN_UNIT_MILLIS.items()}


@dataclass(frozen=True)
class _Name:
    text: str
    span: A.Span


@dataclass(frozen=True)
class _Amount:
    value: Fraction
    span: A.Span


@dataclass(frozen=True)
class _SelectList:
    names: tuple[_Name, ...] | None


@dataclass(frozen=True)
class _Select:
    strategy: str
    names: tuple[_Name, ...] | None


@dataclass(frozen=True)
class _From:
    names: tuple[_Name, ...]


@dataclass(frozen=True)
class _Where:
    formula: A.Formula


@dataclass(frozen=True)
class _Partition:
    names: tuple[_Name, ...]


@dataclass(frozen=True)
class _WithinSpec:
    kind: str
    amount: Fraction
    attr: str | None


@dataclass(frozen=True)
class _Consume:
    policy: str


@dataclass(frozen=True)
class _Limit:
    value: int
    span: A.Span


@dataclass(frozen=True)
class _Windows:
    clauses: tuple[object, ...]


def _is(value: object, cls: type[_T]) -> _T:
    if not isinstance(value, cls):  # pragma: no cover - grammar and builder disagree
        raise AssertionError(f"internal parser error: expected {cls.__name__}, got {value!r}")
    return value


# ---------------------------------------------------------------- parse tree → AST

_Handler = Callable[["_Builder", Tree[Token], list[object]], object]
_HANDLERS: dict[str, _Handler] = {}


def _rule(*names: str) -> Callable[[_Handler], _Handler]:
    def register(fn: _Handler) -> _Handler:
        for name in names:
            _HANDLERS[name] = fn
        return fn
    return register


class _Builder:
    """Turns a lark parse tree into AST nodes, bottom-up and without recursion."""

    def __init__(self, text: str) -> None:
        self.text = text

    def build(self, tree: Tree[Token]) -> A.Query:
        root = fold_tree(tree, lambda node, args: _HANDLERS[str(node.data)](self, node, args))
        return _is(root, A.Query)

    def error(self, message: str, tok: Token | A.Span) -> NoReturn:
        span = token_span(tok) if isinstance(tok, Token) else tok
        width = span.end - span.start if span.end_line == span.line else 1
        raise syntax_error(self.text, message, span.line, span.column, max(1, width))

    # -- literals

    def number(self, tok: Token, negative: bool = False) -> int | float:
        text = str(tok)
        if re.fullmatch(r"\d+", text):
            value: int | float = self.integer(tok)
        else:
            value = float(text)
            if not math.isfinite(value):
                self.error(f"Number {text} is too large", tok)
        return -value if negative else value

    def integer(self, tok: Token) -> int:
        try:
            return int(str(tok))
        except ValueError:  # more digits than int() accepts
            self.error(f"Number is too long ({len(tok)} digits)", tok)

    def fraction(self, text: str, where: Token | A.Span) -> Fraction:
        try:
            return Fraction(text)
        except ValueError:  # more digits than int() accepts
            self.error(f"Number is too long ({len(text)} digits)", where)


def _string_value(tok: Token) -> str:
    return str(tok)[1:-1].replace("''", "'")


@_rule("name", "attr_name")
def _b_name(b: _Builder, t: Tree[Token], a: list[object]) -> _Name:
    tok = _is(a[0], Token)
    text = str(tok)
    if tok.type == "QUOTED_NAME":
        text = text[1:-1].replace("``", "`")
        if not text:
            b.error("Empty name: a backquoted name needs at least one character", tok)
    return _Name(text, token_span(tok))


@_rule("var_name")
def _b_var_name(b: _Builder, t: Tree[Token], a: list[object]) -> _Name:
    return _is(a[0], _Name)


@_rule("qualified_name")
def _b_qualified_name(b: _Builder, t: Tree[Token], a: list[object]) -> _Name:
    return _Name(f"{_is(a[0], _Name).text}>{_is(a[2], _Name).text}", meta_span(t.meta))


# -- formulas

@_rule("f_type")
def _b_type(b: _Builder, t: Tree[Token], a: list[object]) -> A.EventType:
    return A.EventType(_is(a[0], _Name).text, span=meta_span(t.meta))


@_rule("f_qtype")
def _b_qtype(b: _Builder, t: Tree[Token], a: list[object]) -> A.EventType:
    return A.EventType(_is(a[2], _Name).text, _is(a[0], _Name).text, span=meta_span(t.meta))


@_rule("paren")
def _b_paren(b: _Builder, t: Tree[Token], a: list[object]) -> object:
    return a[1]


@_rule("f_as")
def _b_as(b: _Builder, t: Tree[Token], a: list[object]) -> A.As:
    return A.As(cast(A.Formula, a[0]), _is(a[2], _Name).text, span=meta_span(t.meta))


@_rule("f_plus", "f_cplus")
def _b_plus(b: _Builder, t: Tree[Token], a: list[object]) -> A.Plus:
    return A.Plus(cast(A.Formula, a[0]), t.data == "f_cplus", span=meta_span(t.meta))


@_rule("f_seq", "f_cseq")
def _b_seq(b: _Builder, t: Tree[Token], a: list[object]) -> A.Seq:
    return A.Seq(cast(A.Formula, a[0]), cast(A.Formula, a[2]), t.data == "f_cseq",
                 span=meta_span(t.meta))


@_rule("f_and")
def _b_and(b: _Builder, t: Tree[Token], a: list[object]) -> A.And:
    return A.And(cast(A.Formula, a[0]), cast(A.Formula, a[2]), span=meta_span(t.meta))


@_rule("f_not")
def _b_not(b: _Builder, t: Tree[Token], a: list[object]) -> A.Not:
    return A.Not(cast(A.Formula, a[1]), span=meta_span(t.meta))


@_rule("f_or")
def _b_or(b: _Builder, t: Tree[Token], a: list[object]) -> A.Or:
    return A.Or(cast(A.Formula, a[0]), cast(A.Formula, a[2]), span=meta_span(t.meta))


@_rule("f_filter")
def _b_filter(b: _Builder, t: Tree[Token], a: list[object]) -> A.Filter:
    return A.Filter(cast(A.Formula, a[0]), cast(A.FilterExpr, a[2]), span=meta_span(t.meta))


# -- FILTER conditions

@_rule("c_atom")
def _b_catom(b: _Builder, t: Tree[Token], a: list[object]) -> A.FilterAtom:
    return A.FilterAtom(_is(a[0], _Name).text, cast(A.Pred, a[2]), span=meta_span(t.meta))


@_rule("c_match")
def _b_cmatch(b: _Builder, t: Tree[Token], a: list[object]) -> A.FilterMatch:
    return A.FilterMatch(cast(A.Pred, a[1]), span=meta_span(t.meta))


@_rule("c_and")
def _b_cand(b: _Builder, t: Tree[Token], a: list[object]) -> A.FilterAnd:
    return A.FilterAnd(cast(A.FilterExpr, a[0]), cast(A.FilterExpr, a[2]),
                       span=meta_span(t.meta))


@_rule("c_or")
def _b_cor(b: _Builder, t: Tree[Token], a: list[object]) -> A.FilterOr:
    return A.FilterOr(cast(A.FilterExpr, a[0]), cast(A.FilterExpr, a[2]),
                      span=meta_span(t.meta))


# -- predicates

_CMP_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">",
            ">=": ">="}


@_rule("cmp_op")
def _b_cmp_op(b: _Builder, t: Tree[Token], a: list[object]) -> str:
    return _CMP_OPS[str(a[0])]


@_rule("p_cmp")
def _b_cmp(b: _Builder, t: Tree[Token], a: list[object]) -> A.Compare:
    return A.Compare(_is(a[1], str), cast(A.Expr, a[0]), cast(A.Expr, a[2]),
                     span=meta_span(t.meta))


@_rule("p_like")
def _b_like(b: _Builder, t: Tree[Token], a: list[object]) -> A.Like:
    return A.Like(cast(A.Expr, a[0]), _string_value(_is(a[2], Token)), span=meta_span(t.meta))


@_rule("p_not_like")
def _b_not_like(b: _Builder, t: Tree[Token], a: list[object]) -> A.PNot:
    span = meta_span(t.meta)
    return A.PNot(A.Like(cast(A.Expr, a[0]), _string_value(_is(a[3], Token)), span=span),
                  span=span)


@_rule("p_in", "p_not_in")
def _b_in(b: _Builder, t: Tree[Token], a: list[object]) -> A.InSet:
    values = next(x for x in a if isinstance(x, tuple))
    return A.InSet(cast(A.Expr, a[0]), values, t.data == "p_not_in", span=meta_span(t.meta))


@_rule("p_range", "p_not_range")
def _b_range(b: _Builder, t: Tree[Token], a: list[object]) -> A.Pred:
    exprs = [x for x in a if not isinstance(x, Token)]
    span = meta_span(t.meta)
    node = A.InRange(cast(A.Expr, exprs[0]), cast(A.Expr, exprs[1]), cast(A.Expr, exprs[2]),
                     span=span)
    return A.PNot(node, span=span) if t.data == "p_not_range" else node


@_rule("p_not")
def _b_pnot(b: _Builder, t: Tree[Token], a: list[object]) -> A.PNot:
    return A.PNot(cast(A.Pred, a[1]), span=meta_span(t.meta))


@_rule("p_and")
def _b_pand(b: _Builder, t: Tree[Token], a: list[object]) -> A.PAnd:
    return A.PAnd(cast(A.Pred, a[0]), cast(A.Pred, a[2]), span=meta_span(t.meta))


@_rule("p_or")
def _b_por(b: _Builder, t: Tree[Token], a: list[object]) -> A.POr:
    return A.POr(cast(A.Pred, a[0]), cast(A.Pred, a[2]), span=meta_span(t.meta))


@_rule("value_list")
def _b_values(b: _Builder, t: Tree[Token], a: list[object]) -> tuple[A.Literal, ...]:
    return tuple(x for x in a if isinstance(x, A.Literal))


@_rule("value")
def _b_value(b: _Builder, t: Tree[Token], a: list[object]) -> A.Literal:
    tok = _is(a[-1], Token)
    span = meta_span(t.meta)
    if tok.type == "NUMBER":
        return A.Literal(b.number(tok, negative=len(a) == 2), span=span)
    if tok.type == "STRING":
        return A.Literal(_string_value(tok), span=span)
    return A.Literal(tok.type == "TRUE", span=span)


# -- expressions

@_rule("e_attr")
def _b_attr(b: _Builder, t: Tree[Token], a: list[object]) -> A.Attr:
    return A.Attr(_is(a[0], _Name).text, span=meta_span(t.meta))


@_rule("e_qattr")
def _b_qattr(b: _Builder, t: Tree[Token], a: list[object]) -> A.Attr:
    return A.Attr(_is(a[2], _Name).text, span=meta_span(t.meta), var=_is(a[0], _Name).text)


@_rule("func_name")
def _b_func_name(b: _Builder, t: Tree[Token], a: list[object]) -> Token:
    return _is(a[0], Token)


_FUNCTIONS = ("PREV", *A.AGGREGATES)


@_rule("e_call")
def _b_call(b: _Builder, t: Tree[Token], a: list[object]) -> A.Expr:
    tok = _is(a[0], Token)
    func = str(tok).upper()
    arg = a[2]
    span = meta_span(t.meta)
    if func not in _FUNCTIONS:
        b.error(f"Unknown function {tok}: the functions are PREV(attr), COUNT(Y) and "
                "SUM, AVG, MIN, MAX, FIRST, LAST of Y.attr", tok)
    if func == "PREV":
        if isinstance(arg, A.Attr) and arg.var is not None:
            b.error(f"PREV takes an attribute of the filtered event: write PREV({arg.name}) "
                    f"inside {arg.var}[…] (the previous {arg.var} event of the match; "
                    f"MATCH_RECOGNIZE's PREV({arg.var}.{arg.name}) reads the previous row)",
                    _expr_span(arg, span))
        if not isinstance(arg, A.Attr) or arg.var is not None:
            b.error("PREV takes an attribute of the filtered event, e.g. PREV(price)",
                    _expr_span(arg, span))
        return A.Prev(arg.name, span=span)
    if func == "COUNT":
        if not isinstance(arg, A.Attr) or arg.var is not None:
            b.error("COUNT takes a variable, e.g. COUNT(b)", _expr_span(arg, span))
        return A.Agg(func, arg.name, None, span=span)
    if not isinstance(arg, A.Attr) or arg.var is None:
        example = f"{func}(b.{arg.name})" if isinstance(arg, A.Attr) else f"{func}(b.price)"
        b.error(f"{func} takes a variable's attribute, e.g. {example}", _expr_span(arg, span))
    return A.Agg(func, arg.var, arg.name, span=span)


@_rule("e_call_distinct")
def _b_call_distinct(b: _Builder, t: Tree[Token], a: list[object]) -> A.Expr:
    """``F(DISTINCT y.attr)``: F over the distinct non-NULL values (COUNT, SUM, AVG)."""
    tok = _is(a[0], Token)
    func = str(tok).upper()
    var, attr = _is(a[3], _Name).text, _is(a[5], _Name).text
    span = meta_span(t.meta)
    if func not in A.DISTINCT_AGGREGATES:
        known = func in _FUNCTIONS
        b.error(f"{tok}(DISTINCT …) is not supported: DISTINCT applies to COUNT, SUM and AVG "
                f"(COUNT(DISTINCT b.country))"
                + (f"; write {func}({var}.{attr}), the same value" if func in ("MIN", "MAX")
                   else "" if known else f". Unknown function {tok}"), tok)
    return A.Agg(func, var, attr, span=span, distinct=True)


def _expr_span(e: object, default: A.Span) -> A.Span:
    span = getattr(e, "span", None)
    return span if isinstance(span, A.Span) and span != A.NO_SPAN else default


@_rule("e_number")
def _b_number(b: _Builder, t: Tree[Token], a: list[object]) -> A.Literal:
    return A.Literal(b.number(_is(a[0], Token)), span=meta_span(t.meta))


@_rule("e_string")
def _b_string(b: _Builder, t: Tree[Token], a: list[object]) -> A.Literal:
    return A.Literal(_string_value(_is(a[0], Token)), span=meta_span(t.meta))


@_rule("e_interval")
def _b_interval(b: _Builder, t: Tree[Token], a: list[object]) -> A.Literal:
    span = meta_span(t.meta)
    total = sum((x for x in a if isinstance(x, Fraction)), Fraction(0))
    micros = total * 1_000_000
    if micros.denominator != 1:
        b.error("An INTERVAL counts whole microseconds at the finest", span)
    return A.Literal(dt.timedelta(microseconds=int(micros)), span=span)


@_rule("e_bool")
def _b_bool(b: _Builder, t: Tree[Token], a: list[object]) -> A.Literal:
    return A.Literal(_is(a[0], Token).type == "TRUE", span=meta_span(t.meta))


@_rule("e_neg")
def _b_neg(b: _Builder, t: Tree[Token], a: list[object]) -> A.Expr:
    operand = cast(A.Expr, a[1])
    span = meta_span(t.meta)
    if (isinstance(operand, A.Literal) and isinstance(operand.value, int | float)
            and not isinstance(operand.value, bool)):
        return A.Literal(-operand.value, span=span)
    return A.Neg(operand, span=span)


@_rule("e_arith")
def _b_arith(b: _Builder, t: Tree[Token], a: list[object]) -> A.Arith:
    return A.Arith(str(a[1]), cast(A.Expr, a[0]), cast(A.Expr, a[2]), span=meta_span(t.meta))


# -- clauses

@_rule("strategy", "consume_policy", "time_unit", "event_unit")
def _b_keyword(b: _Builder, t: Tree[Token], a: list[object]) -> str:
    return _is(a[0], Token).type


@_rule("select_all")
def _b_select_all(b: _Builder, t: Tree[Token], a: list[object]) -> _SelectList:
    return _SelectList(None)


@_rule("select_none")
def _b_select_none(b: _Builder, t: Tree[Token], a: list[object]) -> _SelectList:
    return _SelectList(())


@_rule("select_vars")
def _b_select_vars(b: _Builder, t: Tree[Token], a: list[object]) -> _SelectList:
    return _SelectList(tuple(x for x in a if isinstance(x, _Name)))


@_rule("select_clause")
def _b_select(b: _Builder, t: Tree[Token], a: list[object]) -> _Select:
    strategy = next((x for x in a[1:] if isinstance(x, str) and not isinstance(x, Token)),
                    STRATEGY_ANY)
    return _Select(strategy, _is(a[-1], _SelectList).names)


@_rule("from_clause")
def _b_from(b: _Builder, t: Tree[Token], a: list[object]) -> _From:
    return _From(tuple(x for x in a if isinstance(x, _Name)))


@_rule("where_clause")
def _b_where(b: _Builder, t: Tree[Token], a: list[object]) -> _Where:
    return _Where(cast(A.Formula, a[1]))


@_rule("partition_one", "partition_group")
def _b_partition_item(b: _Builder, t: Tree[Token], a: list[object]) -> tuple[_Name, ...]:
    return tuple(x for x in a if isinstance(x, _Name))


@_rule("partition_clause")
def _b_partition(b: _Builder, t: Tree[Token], a: list[object]) -> _Partition:
    names: list[_Name] = []
    for x in a:
        if isinstance(x, tuple):
            names.extend(x)
    return _Partition(tuple(names))


@_rule("amount")
def _b_amount(b: _Builder, t: Tree[Token], a: list[object]) -> _Amount:
    span = meta_span(t.meta)
    if len(a) == 2:
        b.error("A WITHIN amount cannot be negative", span)
    return _Amount(b.fraction(str(a[0]), span), span)


@_rule("time_part")
def _b_time_part(b: _Builder, t: Tree[Token], a: list[object]) -> Fraction:
    return _is(a[0], _Amount).value * _TIME_UNITS[_is(a[1], str)]


@_rule("interval_part")
def _b_interval_part(b: _Builder, t: Tree[Token], a: list[object]) -> Fraction:
    unit = _TIME_UNITS[_is(a[1], str)]
    if isinstance(a[0], _Amount):
        return a[0].value * unit
    tok = _is(a[0], Token)
    content = _string_value(tok).strip()
    if content.startswith("-"):
        b.error("An INTERVAL cannot be negative", tok)
    if not _NUMBER_TEXT.fullmatch(content.removeprefix("+")):
        b.error(f"INTERVAL needs a number in quotes, e.g. INTERVAL '10' SECOND; "
                f"found {tok}", tok)
    return b.fraction(content.removeprefix("+"), tok) * unit


@_rule("w_events")
def _b_w_events(b: _Builder, t: Tree[Token], a: list[object]) -> _WithinSpec:
    amount = _is(a[0], _Amount)
    if amount.value.denominator != 1:
        shown = b.text[amount.span.start:amount.span.end]
        b.error(f"WITHIN ... EVENTS needs a whole number of events, not {shown}", amount.span)
    return _WithinSpec(WITHIN_EVENTS, amount.value, None)


@_rule("w_time")
def _b_w_time(b: _Builder, t: Tree[Token], a: list[object]) -> _WithinSpec:
    total = sum((x for x in a if isinstance(x, Fraction)), Fraction(0))
    return _WithinSpec(WITHIN_TIME, total, None)


@_rule("w_attr")
def _b_w_attr(b: _Builder, t: Tree[Token], a: list[object]) -> _WithinSpec:
    return _WithinSpec(WITHIN_ATTR, _is(a[0], _Amount).value, _is(a[2], _Name).text)


@_rule("within_clause")
def _b_within(b: _Builder, t: Tree[Token], a: list[object]) -> A.Within:
    spec = _is(a[1], _WithinSpec)
    return A.Within(spec.kind, spec.amount, spec.attr, span=meta_span(t.meta))


@_rule("windows")
def _b_windows(b: _Builder, t: Tree[Token], a: list[object]) -> _Windows:
    return _Windows(tuple(a))


@_rule("consume_clause")
def _b_consume(b: _Builder, t: Tree[Token], a: list[object]) -> _Consume:
    return _Consume(_is(a[2], str))


@_rule("limit_clause")
def _b_limit(b: _Builder, t: Tree[Token], a: list[object]) -> _Limit:
    tok = _is(a[1], Token)
    if not re.fullmatch(r"\d+", str(tok)):
        b.error(f"LIMIT needs a whole number, not {tok}", tok)
    return _Limit(b.integer(tok), token_span(tok))


@_rule("query")
def _b_query(b: _Builder, t: Tree[Token], a: list[object]) -> A.Query:
    parts: list[object] = []
    for x in a:
        parts.extend(x.clauses if isinstance(x, _Windows) else (x,))
    select = next(x for x in parts if isinstance(x, _Select))
    streams = next(x for x in parts if isinstance(x, _From))
    where = next(x for x in parts if isinstance(x, _Where))
    partition = next((x for x in parts if isinstance(x, _Partition)), _Partition(()))
    within = next((x for x in parts if isinstance(x, A.Within)), None)
    consume = next((x for x in parts if isinstance(x, _Consume)), _Consume(CONSUME_NONE))
    limit = next((x for x in parts if isinstance(x, _Limit)), None)
    names = select.names
    return A.Query(
        strategy=select.strategy,
        select=None if names is None else tuple(n.text for n in names),
        streams=tuple(n.text for n in streams.names),
        where=where.formula,
        partition_by=tuple(n.text for n in partition.names),
        within=within,
        consume=consume.policy,
        limit=None if limit is None else limit.value,
        span=meta_span(t.meta),
        select_spans=() if names is None else tuple(n.span for n in names),
        stream_spans=tuple(n.span for n in streams.names),
        partition_spans=tuple(n.span for n in partition.names),
        limit_span=A.NO_SPAN if limit is None else limit.span,
    )
