"""CEQL text → :class:`ceql._ast.Query`.

The grammar lives in ``grammar/ceql.lark`` (package data; see its header for the precedence
table). It is compiled once into an LALR(1) parser with a basic (context-free) lexer, so
keywords are always keywords and errors point at the first token that cannot continue the query.
The parse tree is turned into the AST without recursion, so deeply nested queries do not hit
Python's recursion limit.

Errors are :class:`~ceql.errors.CeqlSyntaxError` with line, column, a caret snippet and the
tokens that would have been accepted, in plain words.
"""

from __future__ import annotations

import copy
import functools
import importlib.resources
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import NoReturn, TypeVar, cast

from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.parsers.lalr_interactive_parser import InteractiveParser
from lark.tree import Meta

from . import _ast as A
from .errors import CeqlSyntaxError, caret_snippet

__all__ = ["SOFT_KEYWORDS", "grammar_text", "parse"]

_T = TypeVar("_T")

# ---------------------------------------------------------------- the lark parser


def grammar_text() -> str:
    """The text of the CEQL grammar (lark syntax), as shipped in the package."""
    res = importlib.resources.files("ceql") / "grammar" / "ceql.lark"
    return res.read_text(encoding="utf-8")


@functools.cache
def _lark() -> Lark:
    """The LALR parser, built on first use and shared afterwards."""
    return Lark(
        grammar_text(),
        start="query",
        parser="lalr",
        lexer="basic",
        propagate_positions=True,
        maybe_placeholders=False,
    )


def parse(text: str) -> A.Query:
    """Parse CEQL ``text`` into a :class:`~ceql._ast.Query` (names and structure unchecked).

    Raises :class:`~ceql.errors.CeqlSyntaxError` on any text that is not CEQL. Use
    :func:`ceql._validate.validate` afterwards to check names and types.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse() needs the query as a str, not {type(text).__name__}")
    try:
        tree = _lark().parse(text)
    except LarkError as exc:
        raise _diagnose(text, exc) from None
    return _Builder(text).build(tree)


# ---------------------------------------------------------------- spans and small helpers

def _meta_span(meta: Meta) -> A.Span:
    if getattr(meta, "empty", True):
        return A.NO_SPAN
    return A.Span(meta.line, meta.column, meta.end_line, meta.end_column,
                  meta.start_pos, meta.end_pos)


def _tok_span(tok: Token) -> A.Span:
    return A.Span(tok.line or 0, tok.column or 0, tok.end_line or 0, tok.end_column or 0,
                  tok.start_pos or 0, tok.end_pos or 0)


def _join_spans(first: A.Span, last: A.Span) -> A.Span:
    return A.Span(first.line, first.column, last.end_line, last.end_column, first.start, last.end)


def _syntax_error(text: str, message: str, line: int, column: int, width: int = 1,
                  expected: tuple[str, ...] = ()) -> CeqlSyntaxError:
    return CeqlSyntaxError(message, line=line, column=column,
                           snippet=caret_snippet(text, line, column, width), expected=expected)


def _token_width(tok: Token) -> int:
    return max(1, len(str(tok).split("\n", 1)[0]))


_NUMBER_TEXT = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_TIME_UNITS: dict[str, Fraction] = {
    "HOURS": Fraction(3600), "HOUR": Fraction(3600),
    "MINUTES": Fraction(60), "MINUTE": Fraction(60),
    "SECONDS": Fraction(1), "SECOND": Fraction(1),
    "MILLISECONDS": Fraction(1, 1000), "MILLISECOND": Fraction(1, 1000),
}


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
        out: list[object] = []
        todo: list[tuple[Tree[Token] | Token, bool]] = [(tree, False)]
        while todo:
            node, ready = todo.pop()
            if isinstance(node, Token):
                out.append(node)
            elif ready:
                n = len(node.children)
                args = out[len(out) - n:] if n else []
                del out[len(out) - n:]
                out.append(_HANDLERS[str(node.data)](self, node, args))
            else:
                todo.append((node, True))
                todo.extend((child, False) for child in reversed(node.children))
        return _is(out[0], A.Query)

    def error(self, message: str, tok: Token | A.Span) -> NoReturn:
        span = _tok_span(tok) if isinstance(tok, Token) else tok
        width = span.end - span.start if span.end_line == span.line else 1
        raise _syntax_error(self.text, message, span.line, span.column, max(1, width))

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
    return _Name(text, _tok_span(tok))


# -- formulas

@_rule("f_type")
def _b_type(b: _Builder, t: Tree[Token], a: list[object]) -> A.EventType:
    return A.EventType(_is(a[0], _Name).text, span=_meta_span(t.meta))


@_rule("f_qtype")
def _b_qtype(b: _Builder, t: Tree[Token], a: list[object]) -> A.EventType:
    return A.EventType(_is(a[2], _Name).text, _is(a[0], _Name).text, span=_meta_span(t.meta))


@_rule("paren")
def _b_paren(b: _Builder, t: Tree[Token], a: list[object]) -> object:
    return a[1]


@_rule("f_as")
def _b_as(b: _Builder, t: Tree[Token], a: list[object]) -> A.As:
    return A.As(cast(A.Formula, a[0]), _is(a[2], _Name).text, span=_meta_span(t.meta))


@_rule("f_plus", "f_cplus")
def _b_plus(b: _Builder, t: Tree[Token], a: list[object]) -> A.Plus:
    return A.Plus(cast(A.Formula, a[0]), t.data == "f_cplus", span=_meta_span(t.meta))


@_rule("f_seq", "f_cseq")
def _b_seq(b: _Builder, t: Tree[Token], a: list[object]) -> A.Seq:
    return A.Seq(cast(A.Formula, a[0]), cast(A.Formula, a[2]), t.data == "f_cseq",
                 span=_meta_span(t.meta))


@_rule("f_or")
def _b_or(b: _Builder, t: Tree[Token], a: list[object]) -> A.Or:
    return A.Or(cast(A.Formula, a[0]), cast(A.Formula, a[2]), span=_meta_span(t.meta))


@_rule("f_filter")
def _b_filter(b: _Builder, t: Tree[Token], a: list[object]) -> A.Filter:
    return A.Filter(cast(A.Formula, a[0]), cast(A.FilterExpr, a[2]), span=_meta_span(t.meta))


# -- FILTER conditions

@_rule("c_atom")
def _b_catom(b: _Builder, t: Tree[Token], a: list[object]) -> A.FilterAtom:
    return A.FilterAtom(_is(a[0], _Name).text, cast(A.Pred, a[2]), span=_meta_span(t.meta))


@_rule("c_and")
def _b_cand(b: _Builder, t: Tree[Token], a: list[object]) -> A.FilterAnd:
    return A.FilterAnd(cast(A.FilterExpr, a[0]), cast(A.FilterExpr, a[2]),
                       span=_meta_span(t.meta))


@_rule("c_or")
def _b_cor(b: _Builder, t: Tree[Token], a: list[object]) -> A.FilterOr:
    return A.FilterOr(cast(A.FilterExpr, a[0]), cast(A.FilterExpr, a[2]),
                      span=_meta_span(t.meta))


# -- predicates

_CMP_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">",
            ">=": ">="}


@_rule("cmp_op")
def _b_cmp_op(b: _Builder, t: Tree[Token], a: list[object]) -> str:
    return _CMP_OPS[str(a[0])]


@_rule("p_cmp")
def _b_cmp(b: _Builder, t: Tree[Token], a: list[object]) -> A.Compare:
    return A.Compare(_is(a[1], str), cast(A.Expr, a[0]), cast(A.Expr, a[2]),
                     span=_meta_span(t.meta))


@_rule("p_like")
def _b_like(b: _Builder, t: Tree[Token], a: list[object]) -> A.Like:
    return A.Like(cast(A.Expr, a[0]), _string_value(_is(a[2], Token)), span=_meta_span(t.meta))


@_rule("p_not_like")
def _b_not_like(b: _Builder, t: Tree[Token], a: list[object]) -> A.PNot:
    span = _meta_span(t.meta)
    return A.PNot(A.Like(cast(A.Expr, a[0]), _string_value(_is(a[3], Token)), span=span),
                  span=span)


@_rule("p_in", "p_not_in")
def _b_in(b: _Builder, t: Tree[Token], a: list[object]) -> A.InSet:
    values = next(x for x in a if isinstance(x, tuple))
    return A.InSet(cast(A.Expr, a[0]), values, t.data == "p_not_in", span=_meta_span(t.meta))


@_rule("p_range", "p_not_range")
def _b_range(b: _Builder, t: Tree[Token], a: list[object]) -> A.Pred:
    exprs = [x for x in a if not isinstance(x, Token)]
    span = _meta_span(t.meta)
    node = A.InRange(cast(A.Expr, exprs[0]), cast(A.Expr, exprs[1]), cast(A.Expr, exprs[2]),
                     span=span)
    return A.PNot(node, span=span) if t.data == "p_not_range" else node


@_rule("p_not")
def _b_pnot(b: _Builder, t: Tree[Token], a: list[object]) -> A.PNot:
    return A.PNot(cast(A.Pred, a[1]), span=_meta_span(t.meta))


@_rule("p_and")
def _b_pand(b: _Builder, t: Tree[Token], a: list[object]) -> A.PAnd:
    return A.PAnd(cast(A.Pred, a[0]), cast(A.Pred, a[2]), span=_meta_span(t.meta))


@_rule("p_or")
def _b_por(b: _Builder, t: Tree[Token], a: list[object]) -> A.POr:
    return A.POr(cast(A.Pred, a[0]), cast(A.Pred, a[2]), span=_meta_span(t.meta))


@_rule("value_list")
def _b_values(b: _Builder, t: Tree[Token], a: list[object]) -> tuple[A.Literal, ...]:
    return tuple(x for x in a if isinstance(x, A.Literal))


@_rule("value")
def _b_value(b: _Builder, t: Tree[Token], a: list[object]) -> A.Literal:
    tok = _is(a[-1], Token)
    span = _meta_span(t.meta)
    if tok.type == "NUMBER":
        return A.Literal(b.number(tok, negative=len(a) == 2), span=span)
    if tok.type == "STRING":
        return A.Literal(_string_value(tok), span=span)
    return A.Literal(tok.type == "TRUE", span=span)


# -- expressions

@_rule("e_attr")
def _b_attr(b: _Builder, t: Tree[Token], a: list[object]) -> A.Attr:
    return A.Attr(_is(a[0], _Name).text, span=_meta_span(t.meta))


@_rule("e_number")
def _b_number(b: _Builder, t: Tree[Token], a: list[object]) -> A.Literal:
    return A.Literal(b.number(_is(a[0], Token)), span=_meta_span(t.meta))


@_rule("e_string")
def _b_string(b: _Builder, t: Tree[Token], a: list[object]) -> A.Literal:
    return A.Literal(_string_value(_is(a[0], Token)), span=_meta_span(t.meta))


@_rule("e_bool")
def _b_bool(b: _Builder, t: Tree[Token], a: list[object]) -> A.Literal:
    return A.Literal(_is(a[0], Token).type == "TRUE", span=_meta_span(t.meta))


@_rule("e_neg")
def _b_neg(b: _Builder, t: Tree[Token], a: list[object]) -> A.Expr:
    operand = cast(A.Expr, a[1])
    span = _meta_span(t.meta)
    if (isinstance(operand, A.Literal) and isinstance(operand.value, int | float)
            and not isinstance(operand.value, bool)):
        return A.Literal(-operand.value, span=span)
    return A.Neg(operand, span=span)


@_rule("e_arith")
def _b_arith(b: _Builder, t: Tree[Token], a: list[object]) -> A.Arith:
    return A.Arith(str(a[1]), cast(A.Expr, a[0]), cast(A.Expr, a[2]), span=_meta_span(t.meta))


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
                    "ANY")
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
    span = _meta_span(t.meta)
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
        b.error(f"WITHIN ... EVENTS needs a whole number of events, not {float(amount.value)}",
                amount.span)
    return _WithinSpec("events", amount.value, None)


@_rule("w_time")
def _b_w_time(b: _Builder, t: Tree[Token], a: list[object]) -> _WithinSpec:
    return _WithinSpec("time", sum((x for x in a if isinstance(x, Fraction)), Fraction(0)), None)


@_rule("w_attr")
def _b_w_attr(b: _Builder, t: Tree[Token], a: list[object]) -> _WithinSpec:
    return _WithinSpec("attr", _is(a[0], _Amount).value, _is(a[2], _Name).text)


@_rule("within_clause")
def _b_within(b: _Builder, t: Tree[Token], a: list[object]) -> A.Within:
    spec = _is(a[1], _WithinSpec)
    return A.Within(spec.kind, spec.amount, spec.attr, span=_meta_span(t.meta))


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
    return _Limit(b.integer(tok), _tok_span(tok))


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
    consume = next((x for x in parts if isinstance(x, _Consume)), _Consume("NONE"))
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
        span=_meta_span(t.meta),
        select_spans=() if names is None else tuple(n.span for n in names),
        stream_spans=tuple(n.span for n in streams.names),
        partition_spans=tuple(n.span for n in partition.names),
        limit_span=A.NO_SPAN if limit is None else limit.span,
    )


# ---------------------------------------------------------------- syntax errors in plain words

_PUNCT = {
    "COLONPLUS": ":+", "SEMICOLON": ";", "COLON": ":", "PLUS": "+", "MINUS": "-", "STAR": "*",
    "SLASH": "/", "PERCENT": "%", "LPAR": "(", "RPAR": ")", "LSQB": "[", "RSQB": "]",
    "LBRACE": "{", "RBRACE": "}", "COMMA": ",", "EQEQ": "==", "EQ": "=", "NE": "!=",
    "LTGT": "<>", "LE": "<=", "GE": ">=", "LT": "<", "GT": ">",
}
_COMPARISONS = frozenset({"EQ", "EQEQ", "NE", "LTGT", "LT", "LE", "GT", "GE"})
_STRATEGIES = ("ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")
_UNITS = ("HOURS", "HOUR", "MINUTES", "MINUTE", "SECONDS", "SECOND", "MILLISECONDS",
          "MILLISECOND")
#: Keywords the grammar also accepts as attribute names (``attr_name``); kept in step by a test.
SOFT_KEYWORDS = frozenset(_STRATEGIES + _UNITS + ("NONE", "EVENTS", "EVENT", "INTERVAL",
                                                  "RANGE"))
_CLAUSE_RANK = {"SELECT": 0, "FROM": 1, "WHERE": 2, "PARTITION": 3, "WITHIN": 3, "CONSUME": 4,
                "LIMIT": 5}
_CLAUSE_NAME = {"PARTITION": "PARTITION BY", "CONSUME": "CONSUME BY"}
_CLAUSE_ORDER = "SELECT, FROM, WHERE, PARTITION BY and WITHIN (either order), CONSUME BY, LIMIT"


def _is_keyword(tok_type: str) -> bool:
    return (tok_type.isalpha() and tok_type.isupper() and tok_type not in _PUNCT
            and tok_type not in ("NAME", "NUMBER", "STRING"))


def _show_token(tok: Token) -> str:
    """A token as it appears in a message: ``'WHERE'``, ``';'``, ``'MSFT'``."""
    text = str(tok).split("\n", 1)[0]
    if len(text) > 30:
        text = text[:27] + "..."
    if tok.type in ("STRING", "QUOTED_NAME"):
        return text
    return f"'{text}'"


def _describe_found(tok: Token | None) -> str:
    if tok is None or tok.type == "$END":
        return "end of query"
    if tok.type == "NAME":
        return f"name {_show_token(tok)}"
    if tok.type == "QUOTED_NAME":
        return f"name {_show_token(tok)}"
    if tok.type == "NUMBER":
        return f"number {tok}"
    if tok.type == "STRING":
        return f"string {_show_token(tok)}"
    if _is_keyword(tok.type):
        return tok.type
    return _show_token(tok)


def _name_role(tokens: Sequence[Token]) -> str:
    """What a NAME would be at the end of ``tokens``: event type, variable, attribute, ..."""
    mode = "START"
    stack: list[str] = []
    for tok in tokens:
        kind = tok.type
        if kind in _CLAUSE_RANK and not (kind == "PARTITION" and mode == "CONSUME"):
            mode = kind
        elif kind == "FILTER":
            mode = "FILTER"
        elif kind in ("LPAR", "LBRACE"):
            stack.append(mode)
        elif kind == "LSQB":
            stack.append(mode)
            mode = "BRACKET"
        elif kind in ("RPAR", "RSQB", "RBRACE") and stack:
            mode = stack.pop()
    last = tokens[-1].type if tokens else ""
    if mode == "WHERE":
        return "a variable name" if last == "AS" else "an event type"
    return {
        "SELECT": "a variable",
        "FROM": "a stream name",
        "FILTER": "a variable",
        "BRACKET": "an attribute",
        "PARTITION": "an attribute",
        "WITHIN": "an attribute",
    }.get(mode, "a name")


def _describe_expected(expected: Iterable[str], tokens: Sequence[Token]) -> tuple[str, ...]:
    """Readable names for a set of lark terminal names, sorted: words, keywords, symbols, end."""
    terms = set(expected)
    words: set[str] = set()
    if "NAME" in terms or "QUOTED_NAME" in terms:
        terms -= {"NAME", "QUOTED_NAME"}
        if SOFT_KEYWORDS <= terms:  # an attribute name: keywords allowed there go unmentioned
            terms -= SOFT_KEYWORDS
        words.add(_name_role(tokens))
    if _COMPARISONS <= terms:
        terms -= _COMPARISONS
        words.add("a comparison (=, !=, <, <=, >, >=)")
    if set(_UNITS) <= terms:
        terms -= set(_UNITS)
        words.add("a time unit (HOURS, MINUTES, SECONDS, MILLISECONDS)")
    if set(_STRATEGIES) <= terms:
        terms -= set(_STRATEGIES)
        words.add("a selection strategy (ALL, ANY, NEXT, LAST, MAX, STRICT)")
    if "NUMBER" in terms:
        terms.discard("NUMBER")
        words.add("a number")
    if "STRING" in terms:
        terms.discard("STRING")
        words.add("a string")
    end = "$END" in terms
    terms.discard("$END")
    keywords = sorted(t for t in terms if t not in _PUNCT)
    symbols = sorted(f"'{_PUNCT[t]}'" for t in terms if t in _PUNCT)
    return (*sorted(words), *keywords, *symbols, *(("end of query",) if end else ()))


def _or_list(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} or {items[-1]}"


def _bare_parser() -> InteractiveParser:
    """A step-by-step parser that builds no tree (faster; used only to explain errors)."""
    ip = _lark().parse_interactive("")
    conf = copy.copy(ip.parser_state.parse_conf)
    conf.callbacks = {}
    ip.parser_state.parse_conf = conf
    return ip


def _diagnose(text: str, original: LarkError) -> CeqlSyntaxError:
    """Re-read ``text`` token by token to explain the first error in plain words."""
    tokens: list[Token] = []
    bad: Token | None = None
    lex_error: UnexpectedCharacters | None = None
    ip = _bare_parser()
    try:
        for tok in _lark().lex(text):
            try:
                ip.feed_token(tok)
            except UnexpectedToken:
                bad = tok
                break
            tokens.append(tok)
    except UnexpectedCharacters as exc:
        lex_error = exc
    if bad is None and lex_error is None:
        try:
            ip.feed_eof()  # type: ignore[no-untyped-call]
        except UnexpectedToken:
            pass
        else:  # pragma: no cover - lark rejected what the step-by-step parse accepts
            line = getattr(original, "line", 1) or 1
            column = getattr(original, "column", 1) or 1
            return _syntax_error(text, f"Invalid query: {original}", line, column)
    state = _bare_parser()
    for tok in tokens:
        state.feed_token(tok)
    expected_terms = {str(t) for t in state.accepts()}  # type: ignore[no-untyped-call]
    expected = _describe_expected(expected_terms, tokens)
    prev = tokens[-1] if tokens else None
    if lex_error is not None:
        return _lexer_error(text, lex_error, prev, expected)
    return _token_error(text, bad, prev, tokens, expected_terms, expected,
                        state.parser_state.value_stack)


def _lexer_error(text: str, exc: UnexpectedInput, prev: Token | None,
                 expected: tuple[str, ...]) -> CeqlSyntaxError:
    pos = exc.pos_in_stream or 0
    line, column = exc.line, exc.column
    char = text[pos] if pos < len(text) else ""
    if char == "'":
        return _syntax_error(text, "Unterminated string: the quote opened here is never closed "
                             "(inside a string, write '' for a quote)", line, column)
    if char == "`":
        return _syntax_error(text, "Unterminated name: the backquote opened here is never "
                             "closed", line, column)
    if char == '"':
        return _syntax_error(text, "Unexpected '\"': write strings in single quotes ('MSFT') "
                             "and odd names in backquotes (`my name`)", line, column,
                             expected=expected)
    if char.isdigit() or (char == "." and text[pos + 1:pos + 2].isdigit()):
        match = re.compile(r"(?:[\w.]|(?<=[eE])[+-])+").match(text, pos)
        bad = match.group(0) if match else char
        return _syntax_error(text, f"Malformed number '{bad}'", line, column, len(bad),
                             expected=expected)
    hints = {"&": "; write AND", "|": "; write OR",
             "!": "; write != for 'not equal' or NOT for negation",
             "\\": "; backslashes have no meaning outside strings"}
    after = f" after {_show_token(prev)}" if prev is not None else ""
    message = f"Unexpected character {char!r}{after}{hints.get(char, '')}"
    if char not in hints and expected:
        message += f": expected {_or_list(expected)}"
    return _syntax_error(text, message, line, column, expected=expected)


def _token_error(text: str, bad: Token | None, prev: Token | None, before: Sequence[Token],
                 expected_terms: set[str], expected: tuple[str, ...],
                 stack: Sequence[object]) -> CeqlSyntaxError:
    if bad is None:  # end of input
        if prev is None:
            return _syntax_error(text, "Empty query: expected SELECT", 1, 1, expected=expected)
        line, column, width = prev.end_line or 1, prev.end_column or 1, 1
    else:
        line, column, width = bad.line or 1, bad.column or 1, _token_width(bad)

    def err(message: str, line: int = line, column: int = column,
            width: int = width) -> CeqlSyntaxError:
        return _syntax_error(text, message, line, column, width, expected)

    found = _describe_found(bad)
    after = f" after {_show_token(prev)}" if prev is not None else " at the start"
    generic = f"Expected {_or_list(expected)}{after}, found {found}"
    kind = bad.type if bad is not None else "$END"

    # An unterminated /* comment lexes as '/' '*'.
    start = bad.start_pos if bad is not None else None
    if bad is not None and text.startswith("/*", start or 0):
        return err("Unterminated comment: '/*' is never closed by '*/'", width=2)
    if (bad is not None and kind == "STAR" and prev is not None and prev.type == "SLASH"
            and prev.end_pos == bad.start_pos):
        return err("Unterminated comment: '/*' is never closed by '*/'",
                   prev.line or 1, prev.column or 1, 2)

    filter_open = any(isinstance(v, Token) and v.type == "FILTER" for v in stack)
    if filter_open and "FILTER" in expected_terms:
        purpose = {"SEMICOLON": "to continue the sequence", "COLON": "to continue the sequence",
                   "PLUS": "to iterate it", "COLONPLUS": "to iterate it",
                   "AS": "to name it with AS"}.get(kind)
        if purpose is not None and bad is not None:
            return err(f"Unexpected {_show_token(bad)} after FILTER condition: wrap the "
                       f"filtered formula in parentheses {purpose}")
    if (filter_open and kind != "LSQB" and "LSQB" in expected_terms and len(before) >= 2
            and before[-1].type in ("NAME", "QUOTED_NAME") and before[-2].type == "OR"):
        return err(f"{generic}: after FILTER, OR joins conditions such as "
                   f"{before[-1]}[...]; to join formulas with OR, wrap the filtered formula in "
                   "parentheses")
    if filter_open and "LSQB" in expected_terms and kind in _COMPARISONS | {"LIKE", "IN", "NOT"}:
        return err(f"{generic}: a FILTER condition is written variable[predicate], "
                   f"e.g. SELL[price > 100]")
    if (prev is not None and prev.type in _STRATEGIES and kind in ("FROM", "COMMA")
            and len(before) == 2):
        return err(f"{generic}: {prev} was read as the selection strategy {prev.type}; write "
                   f"`{prev}` in backquotes to select a variable of that name")
    wants_name = "NAME" in expected_terms and _is_keyword(kind) and bad is not None
    if wants_name and (kind not in _CLAUSE_RANK or (prev is not None and prev.type == "AS")):
        return err(f"{generic}: {bad} is a keyword; write it in backquotes (`{bad}`) to use it "
                   f"as a name")
    if bad is not None and kind in _CLAUSE_RANK and kind not in expected_terms:
        message = _clause_misplaced(bad, before)
        if message:
            return err(message)
    return err(generic)


def _clause_misplaced(bad: Token, before: Sequence[Token]) -> str | None:
    """Explain a clause keyword that repeats a clause or comes after a later clause."""
    seen: list[str] = []
    for i, tok in enumerate(before):
        if tok.type in _CLAUSE_RANK:
            is_policy = tok.type == "PARTITION" and i > 0 and before[i - 1].type == "BY"
            if not is_policy:
                seen.append(tok.type)
    name = _CLAUSE_NAME.get(bad.type, bad.type)
    if bad.type in seen:
        return f"{name} appears twice: each clause may be given at most once"
    later = [s for s in seen if _CLAUSE_RANK[s] > _CLAUSE_RANK[bad.type]]
    if later:
        other = _CLAUSE_NAME.get(later[-1], later[-1])
        return (f"{name} must come before {other}: clauses go in the order {_CLAUSE_ORDER}")
    return None
