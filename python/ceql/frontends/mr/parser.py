"""MATCH_RECOGNIZE text → :class:`~ceql.frontends.mr.ast.Query` or
:class:`~ceql.frontends.mr.ast.MatchRecognize`.

The LALR parser of :mod:`.lalr` gives a lark tree; :class:`_Builder` folds it into the syntax
tree without recursion (names canonical, calls resolved into navigation, aggregates,
CLASSIFIER and MATCH_NUMBER, literals typed); :mod:`.checks` then applies the standard's rules.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import NoReturn, TypeVar, cast

from lark import Token, Tree
from lark.exceptions import LarkError

from ...errors import CeqlTypeError, CeqlValidationError, caret_snippet
from ...ir.nodes import Span
from ..trees import fold_tree, meta_span, token_span
from . import ast as A
from .checks import check
from .diagnostics import diagnose
from .errors import AggregateError, ClauseError, NavigationError, PatternError
from .lalr import lalr

__all__ = ["INTERVAL_UNITS", "parse", "parse_body"]

_T = TypeVar("_T")

#: INTERVAL units (singular or plural) and their length.
INTERVAL_UNITS: dict[str, datetime.timedelta] = {
    "DAY": datetime.timedelta(days=1),
    "HOUR": datetime.timedelta(hours=1),
    "MINUTE": datetime.timedelta(minutes=1),
    "SECOND": datetime.timedelta(seconds=1),
    "MILLISECOND": datetime.timedelta(milliseconds=1),
    "MICROSECOND": datetime.timedelta(microseconds=1),
}

_COMPARISON = {"<>": "<>", "!=": "<>", "<=": "<=", ">=": ">=", "<": "<", ">": ">", "==": "=",
               "=": "="}


def parse(text: str) -> A.Query | A.MatchRecognize:
    """Parse and check MATCH_RECOGNIZE ``text``: a whole ``SELECT … FROM t MATCH_RECOGNIZE
    ( … ) [AS x]`` (a :class:`~.ast.Query`) or the clause's body alone, with or without its
    parentheses and ``MATCH_RECOGNIZE`` (a :class:`~.ast.MatchRecognize`).

    Raises :class:`~ceql.errors.CeqlSyntaxError` for text that is not MATCH_RECOGNIZE and a
    :class:`~ceql.errors.CeqlValidationError` subclass for a query the standard refuses, both
    with line, column and a caret.
    """
    if not isinstance(text, str):
        raise CeqlTypeError(f"A MATCH_RECOGNIZE query must be a string, not "
                            f"{type(text).__name__}.")
    try:
        tree = lalr().parse(text)
    except LarkError as exc:
        raise diagnose(text, exc) from None
    out = _Builder(text).build(tree)
    check(out.body if isinstance(out, A.Query) else out)
    return out


def parse_body(text: str) -> A.MatchRecognize:
    """Parse and check MATCH_RECOGNIZE ``text`` and return the clause's body (of a whole query
    too)."""
    out = parse(text)
    return out.body if isinstance(out, A.Query) else out


# ---------------------------------------------------------------- helpers

def _is(value: object, cls: type[_T]) -> _T:
    if not isinstance(value, cls):  # pragma: no cover - grammar and builder disagree
        raise AssertionError(f"internal parser error: expected {cls.__name__}, got {value!r}")
    return value


@dataclass(frozen=True)
class _Name:
    text: str
    quoted: bool
    span: Span

    @property
    def var(self) -> str:
        """As a row pattern variable: unquoted names fold to upper case."""
        return self.text if self.quoted else self.text.upper()


@dataclass(frozen=True)
class _Star:
    var: _Name | None


@dataclass(frozen=True)
class _Distinct:
    arg: A.Expr


@dataclass(frozen=True)
class _Quant:
    low: int
    high: int | None
    greedy: bool


@dataclass(frozen=True)
class _Clause:
    kind: str
    value: object
    span: Span


def _number(text: str) -> int | Decimal | float:
    if "e" in text.lower():
        return float(text)
    if "." in text:
        return Decimal(text)
    return int(text)


def _string(tok: Token) -> str:
    return str(tok)[1:-1].replace("''", "'")


# ---------------------------------------------------------------- the builder

class _Builder:
    def __init__(self, text: str) -> None:
        self.text = text
        self.handlers: dict[str, Callable[[Tree[Token], list[object], Span], object]] = {}
        for attr in dir(self):
            if attr.startswith("r_"):
                self.handlers[attr[2:]] = getattr(self, attr)

    def fail(self, cls: type[CeqlValidationError], message: str, span: Span) -> NoReturn:
        width = (span.end_column - span.column) if span.end_line == span.line else 1
        raise cls(message, line=span.line, column=span.column,
                  snippet=caret_snippet(self.text, span.line, span.column, max(1, width)))

    def build(self, tree: Tree[Token]) -> A.Query | A.MatchRecognize:
        def handle(node: Tree[Token], values: list[object]) -> object:
            rule = str(node.data)
            fn = self.handlers.get(rule)
            if fn is None:  # pragma: no cover - every rule has a handler
                raise AssertionError(f"internal parser error: no handler for {rule}")
            return fn(node, values, meta_span(node.meta))
        out = fold_tree(tree, handle)
        if isinstance(out, (A.Query, A.MatchRecognize)):
            return out
        raise AssertionError(f"internal parser error: {out!r}")  # pragma: no cover

    @staticmethod
    def drop_tokens(values: list[object]) -> list[object]:
        return [v for v in values if not isinstance(v, Token)]

    # ------------------------------------------------------------ top level
    def r_start(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return v[0]

    def r_select_query(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = self.drop_tokens(v)
        select = cast(tuple[A.SelectItem, ...], items[0])
        source = cast(tuple[str, ...], items[1])
        body = _is(items[2], A.MatchRecognize)
        alias = cast(_Name, items[3]).text if len(items) > 3 else None
        return A.Query(body, source, select, alias, span)

    def r_paren_body(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return self.drop_tokens(v)[0]

    def r_keyword_body(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return self.drop_tokens(v)[0]

    def r_alias(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return self.drop_tokens(v)[0]

    def r_select_star(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return ()

    def r_select_items(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return tuple(_is(x, A.SelectItem) for x in self.drop_tokens(v))

    def r_select_expr(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = self.drop_tokens(v)
        alias = cast(_Name, items[1]).text if len(items) > 1 else None
        return A.SelectItem(cast(A.Expr, items[0]), alias, None, span)

    def r_select_var_star(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.SelectItem(None, None, cast(_Name, v[0]).text, span)

    def r_source(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return tuple(cast(_Name, x).text for x in self.drop_tokens(v))

    def r_name(self, node: Tree[Token], v: list[object], span: Span) -> object:
        tok = _is(v[0], Token)
        if tok.type == "QUOTED_NAME":
            return _Name(str(tok)[1:-1].replace("``", "`"), True, token_span(tok))
        return _Name(str(tok), False, token_span(tok))

    def r_mr_body(self, node: Tree[Token], v: list[object], span: Span) -> object:
        clauses: dict[str, object] = {}
        pattern: A.Pattern | None = None
        for x in v:
            if isinstance(x, _Clause):
                clauses[x.kind] = x.value
            elif not isinstance(x, Token):
                pattern = cast(A.Pattern, x)
        assert pattern is not None
        within = clauses.get("within")
        if within is not None and "order" not in clauses:
            where = next(x.span for x in v if isinstance(x, _Clause) and x.kind == "within")
            self.fail(ClauseError, "WITHIN measures time along ORDER BY's first column: add "
                      "ORDER BY <time column>", where)
        return A.MatchRecognize(
            pattern=pattern,
            partition_by=cast(tuple[str, ...], clauses.get("partition", ())),
            order_by=cast(tuple[A.SortKey, ...], clauses.get("order", ())),
            measures=cast(tuple[A.Measure, ...], clauses.get("measures", ())),
            rows_per_match=cast(A.RowsPerMatch, clauses.get("rows", "ONE")),
            skip=cast(A.Skip, clauses.get("skip", A.Skip())),
            within=cast(datetime.timedelta | None, within),
            subsets=cast(tuple[A.Subset, ...], clauses.get("subset", ())),
            defines=cast(tuple[A.Define, ...], clauses.get("define", ())),
            text=self.text, span=span)

    # ------------------------------------------------------------ clauses
    def r_partition_clause(self, node: Tree[Token], v: list[object], span: Span) -> object:
        names = [cast(_Name, x) for x in self.drop_tokens(v)]
        seen: set[str] = set()
        for n in names:
            if n.text.lower() in seen:
                self.fail(ClauseError, f"PARTITION BY names column {n.text!r} twice", n.span)
            seen.add(n.text.lower())
        return _Clause("partition", tuple(n.text for n in names), span)

    def r_order_clause(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return _Clause("order", tuple(_is(x, A.SortKey) for x in self.drop_tokens(v)), span)

    def r_sort_key(self, node: Tree[Token], v: list[object], span: Span) -> object:
        name = cast(_Name, v[0])
        descending = False
        nulls_first: bool | None = None
        for x in v[1:]:
            if isinstance(x, str) and x in ("ASC", "DESC"):
                descending = x == "DESC"
            elif isinstance(x, bool):
                nulls_first = x
        return A.SortKey(name.text, descending, nulls_first, span)

    def r_direction(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return str(_is(v[0], Token)).upper()

    def r_nulls_first(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return True

    def r_nulls_last(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return False

    def r_measures_clause(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return _Clause("measures", tuple(_is(x, A.Measure) for x in self.drop_tokens(v)), span)

    def r_measure(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = self.drop_tokens(v)
        return A.Measure(cast(A.Expr, items[0]), cast(_Name, items[1]).text, span)

    def r_one_row(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return _Clause("rows", "ONE", span)

    def r_all_rows(self, node: Tree[Token], v: list[object], span: Span) -> object:
        modes = [x for x in v if isinstance(x, str) and not isinstance(x, Token)]
        return _Clause("rows", A.AllRows(cast(
            A.EmptyMode, modes[0]) if modes else "SHOW EMPTY MATCHES",
            span), span)

    def r_show_empty(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return "SHOW EMPTY MATCHES"

    def r_omit_empty(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return "OMIT EMPTY MATCHES"

    def r_with_unmatched(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return "WITH UNMATCHED ROWS"

    def r_skip_clause(self, node: Tree[Token], v: list[object], span: Span) -> object:
        skip = _is(self.drop_tokens(v)[0], A.Skip)
        return _Clause("skip", replace(skip, span=span), span)

    def r_skip_past_last(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Skip("PAST LAST ROW")

    def r_skip_next_row(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Skip("TO NEXT ROW")

    def r_skip_first(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Skip("TO FIRST", cast(_Name, self.drop_tokens(v)[0]).var)

    def r_skip_last(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Skip("TO LAST", cast(_Name, self.drop_tokens(v)[0]).var)

    def r_skip_to_var(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Skip("TO LAST", cast(_Name, self.drop_tokens(v)[0]).var)

    def r_within_clause(self, node: Tree[Token], v: list[object], span: Span) -> object:
        lit = _is(self.drop_tokens(v)[0], A.Literal)
        value = _is(lit.value, datetime.timedelta)
        if value <= datetime.timedelta(0):
            self.fail(ClauseError, "WITHIN needs an interval longer than 0, e.g. WITHIN "
                      "INTERVAL '10' SECOND", lit.span)
        return _Clause("within", value, span)

    def r_subset_clause(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return _Clause("subset", tuple(_is(x, A.Subset) for x in self.drop_tokens(v)), span)

    def r_subset_item(self, node: Tree[Token], v: list[object], span: Span) -> object:
        names = [cast(_Name, x) for x in self.drop_tokens(v)]
        return A.Subset(names[0].var, tuple(n.var for n in names[1:]), span)

    def r_define_clause(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return _Clause("define", tuple(_is(x, A.Define) for x in self.drop_tokens(v)), span)

    def r_define_item(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = self.drop_tokens(v)
        name = cast(_Name, items[0])
        return A.Define(name.var, cast(A.Expr, items[1]), name.span)

    # ------------------------------------------------------------ row patterns
    def r_pattern(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return cast(A.Pattern, v[0]) if v else A.EmptyPattern(span)

    def r_alternation(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = tuple(cast(A.Pattern, x) for x in self.drop_tokens(v))
        return items[0] if len(items) == 1 else A.Alternation(items, span)

    def r_concatenation(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = tuple(cast(A.Pattern, x) for x in v)
        return items[0] if len(items) == 1 else A.Concatenation(items, span)

    def r_quantified(self, node: Tree[Token], v: list[object], span: Span) -> object:
        item = cast(A.Pattern, v[0])
        if len(v) == 1:
            return item
        q = _is(v[1], _Quant)
        return A.Quantified(item, q.low, q.high, q.greedy, span)

    def r_pvar(self, node: Tree[Token], v: list[object], span: Span) -> object:
        name = cast(_Name, v[0])
        return A.PatternVar(name.var, name.span)

    def r_group(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return self.drop_tokens(v)[0]

    def r_empty_group(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.EmptyPattern(span)

    def r_anchor_start(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Anchor("^", span)

    def r_anchor_end(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Anchor("$", span)

    def r_exclusion(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Exclusion(cast(A.Pattern, self.drop_tokens(v)[0]), span)

    def r_permute(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Permute(tuple(cast(A.Pattern, x) for x in self.drop_tokens(v)), span)

    def r_quantifier(self, node: Tree[Token], v: list[object], span: Span) -> object:
        q = _is(v[0], _Quant)
        return replace(q, greedy=len(v) == 1)

    def r_q_star(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return _Quant(0, None, True)

    def r_q_plus(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return _Quant(1, None, True)

    def r_q_opt(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return _Quant(0, 1, True)

    def _bound(self, tok: Token) -> int:
        if not re.fullmatch(r"\d+", str(tok)):
            self.fail(PatternError, f"A quantifier's bound must be a whole number, not "
                      f"{tok}", token_span(tok))
        return int(str(tok))

    def r_q_exact(self, node: Tree[Token], v: list[object], span: Span) -> object:
        n = self._bound(_is(v[1], Token))
        if n == 0:
            self.fail(PatternError, "{0} repeats nothing: write () for the empty pattern, or "
                      "leave the item out", span)
        return _Quant(n, n, True)

    def r_q_range(self, node: Tree[Token], v: list[object], span: Span) -> object:
        low: int | None = None
        high: int | None = None
        seen_comma = False
        for x in v:
            tok = _is(x, Token)
            if tok.type == "COMMA":
                seen_comma = True
            elif tok.type == "NUMBER":
                if seen_comma:
                    high = self._bound(tok)
                else:
                    low = self._bound(tok)
        if high is not None and high == 0:
            self.fail(PatternError, f"{{{'' if low is None else low},0}} repeats nothing: "
                      "write () for the empty pattern, or leave the item out", span)
        if low is not None and high is not None and low > high:
            self.fail(PatternError, f"{{{low},{high}}}: the lower bound is above the upper "
                      "one", span)
        return _Quant(low or 0, high, True)

    # ------------------------------------------------------------ expressions
    def r_binary(self, node: Tree[Token], v: list[object], span: Span) -> object:
        op = _is(v[1], Token)
        text = str(op).upper()
        return A.Binary(_COMPARISON.get(text, text), cast(A.Expr, v[0]), cast(A.Expr, v[2]),
                        span)

    def r_not_(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Not(cast(A.Expr, v[1]), span)

    def r_is_null(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.IsNull(cast(A.Expr, v[0]), False, span)

    def r_is_not_null(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.IsNull(cast(A.Expr, v[0]), True, span)

    def _between(self, v: list[object], span: Span, negated: bool) -> A.Between:
        items = self.drop_tokens(v)
        return A.Between(cast(A.Expr, items[0]), cast(A.Expr, items[1]),
                         cast(A.Expr, items[2]), negated, span)

    def r_between(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return self._between(v, span, False)

    def r_not_between(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return self._between(v, span, True)

    def r_in_list(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = [cast(A.Expr, x) for x in self.drop_tokens(v)]
        return A.InList(items[0], tuple(items[1:]), False, span)

    def r_not_in_list(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = [cast(A.Expr, x) for x in self.drop_tokens(v)]
        return A.InList(items[0], tuple(items[1:]), True, span)

    def r_like(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = self.drop_tokens(v)
        return A.Like(cast(A.Expr, items[0]), cast(A.Expr, items[1]), False, span)

    def r_not_like(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = self.drop_tokens(v)
        return A.Like(cast(A.Expr, items[0]), cast(A.Expr, items[1]), True, span)

    def r_negate(self, node: Tree[Token], v: list[object], span: Span) -> object:
        operand = cast(A.Expr, v[1])
        if isinstance(operand, A.Literal) and isinstance(operand.value, (int, Decimal, float)) \
                and not isinstance(operand.value, bool):
            return A.Literal(-operand.value, span)
        return A.Negate(operand, span)

    def r_plus(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return v[1]

    def r_number(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Literal(_number(str(v[0])), span)

    def r_string(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Literal(_string(_is(v[0], Token)), span)

    def r_true(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Literal(True, span)

    def r_false(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Literal(False, span)

    def r_null(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Literal(None, span)

    def r_column(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return A.Column(None, cast(_Name, v[0]).text, span)

    def r_qualified_column(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = self.drop_tokens(v)
        return A.Column(cast(_Name, items[0]).var, cast(_Name, items[1]).text, span)

    def r_paren(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return self.drop_tokens(v)[0]

    def _semantics(self, v: list[object], span: Span, kind: str) -> A.Expr:
        call = cast(A.Expr, v[1])
        sem = cast(A.Semantics, kind)
        if isinstance(call, A.Navigation):
            if call.kind in ("FIRST", "LAST"):
                return replace(call, semantics=sem, span=span)
            if isinstance(call.arg, A.Navigation) and call.arg.kind in ("FIRST", "LAST"):
                return replace(call, arg=replace(call.arg, semantics=sem), span=span)
        if isinstance(call, (A.Aggregate, A.Classifier)):
            return replace(call, semantics=sem, span=span)
        self.fail(NavigationError, f"{kind} applies to FIRST, LAST, an aggregate or "
                  "CLASSIFIER() (or PREV/NEXT around FIRST or LAST), not to this call", span)

    def r_running(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return self._semantics(v, span, "RUNNING")

    def r_final(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return self._semantics(v, span, "FINAL")

    def r_searched_case(self, node: Tree[Token], v: list[object], span: Span) -> object:
        whens = tuple(cast(tuple[A.Expr, A.Expr], x) for x in v if isinstance(x, tuple))
        default = next((x.expr for x in v if isinstance(x, _Else)), None)
        return A.Case(None, whens, default, span)

    def r_simple_case(self, node: Tree[Token], v: list[object], span: Span) -> object:
        operand = cast(A.Expr, v[1])
        whens = tuple(cast(tuple[A.Expr, A.Expr], x) for x in v[2:] if isinstance(x, tuple))
        default = next((x.expr for x in v if isinstance(x, _Else)), None)
        return A.Case(operand, whens, default, span)

    def r_when_clause(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = self.drop_tokens(v)
        return (cast(A.Expr, items[0]), cast(A.Expr, items[1]))

    def r_else_clause(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return _Else(cast(A.Expr, self.drop_tokens(v)[0]))

    def r_cast(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = self.drop_tokens(v)
        return A.Cast(cast(A.Expr, items[0]), cast(str, items[1]), span)

    def r_type_name(self, node: Tree[Token], v: list[object], span: Span) -> object:
        name = cast(_Name, v[0]).text.upper()
        params = [str(x) for x in v[1:] if isinstance(x, Token) and x.type == "NUMBER"]
        return f"{name}({','.join(params)})" if params else name

    def r_interval(self, node: Tree[Token], v: list[object], span: Span) -> object:
        toks = [x for x in v if isinstance(x, Token)]
        unit = cast(_Name, v[-1])
        word = unit.text.upper()
        base = INTERVAL_UNITS.get(word[:-1] if word.endswith("S") else word)
        if base is None:
            known = ", ".join(INTERVAL_UNITS)
            extra = (": months and years have no fixed length; write days"
                     if word.rstrip("S") in ("MONTH", "YEAR") else "")
            self.fail(ClauseError, f"Unknown INTERVAL unit {unit.text!r}{extra} (units: "
                      f"{known}, singular or plural)", unit.span)
        sign = -1 if any(t.type == "MINUS" for t in toks) else 1
        raw = next(t for t in toks if t.type in ("STRING", "NUMBER"))
        text = _string(raw) if raw.type == "STRING" else str(raw)
        try:
            amount = Decimal(text.strip())
        except ArithmeticError:
            self.fail(ClauseError, f"INTERVAL {raw!s} {unit.text}: write a number, e.g. "
                      f"INTERVAL '10' {word}", token_span(raw))
        micros = amount * sign * Decimal(base // datetime.timedelta(microseconds=1))
        if micros != micros.to_integral_value():
            self.fail(ClauseError, f"INTERVAL {raw!s} {unit.text} is not a whole number "
                      "of microseconds", token_span(raw))
        return A.Literal(datetime.timedelta(microseconds=int(micros)), span)

    def r_timestamp(self, node: Tree[Token], v: list[object], span: Span) -> object:
        raw = _is(v[1], Token)
        try:
            value = datetime.datetime.fromisoformat(_string(raw))
        except ValueError:
            self.fail(ClauseError, f"TIMESTAMP {raw}: write 'YYYY-MM-DD[ HH:MM:SS[.ffffff]]'",
                      token_span(raw))
        return A.Literal(value, span)

    # ------------------------------------------------------------ calls
    def r_call_none(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return self._call(cast(_Name, v[0]), [], span)

    def r_call_args(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = self.drop_tokens(v)
        return self._call(cast(_Name, items[0]), [cast(A.Expr, x) for x in items[1:]], span)

    def r_call_star(self, node: Tree[Token], v: list[object], span: Span) -> object:
        return self._call(cast(_Name, v[0]), [_Star(None)], span)

    def r_call_var_star(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = self.drop_tokens(v)
        return self._call(cast(_Name, items[0]), [_Star(cast(_Name, items[1]))], span)

    def r_call_distinct(self, node: Tree[Token], v: list[object], span: Span) -> object:
        items = self.drop_tokens(v)
        return self._call(cast(_Name, items[0]), [_Distinct(cast(A.Expr, items[1]))], span)

    def _offset(self, name: str, arg: object, span: Span) -> int:
        if (isinstance(arg, A.Literal) and isinstance(arg.value, int)
                and not isinstance(arg.value, bool) and arg.value >= 0):
            return arg.value
        where = getattr(arg, "span", span)
        self.fail(NavigationError, f"The offset of {name} must be a whole number of rows, 0 "
                  "or more, written as a literal (e.g. 2)", where if where.line else span)

    def _call(self, name: _Name, args: list[object], span: Span) -> A.Expr:
        fn = name.text.upper() if not name.quoted else name.text
        star = [a for a in args if isinstance(a, _Star)]
        distinct = [a for a in args if isinstance(a, _Distinct)]
        if fn in A.NAVIGATIONS:
            if star or distinct or not 1 <= len(args) <= 2:
                self.fail(NavigationError, f"{fn} takes a value and an optional offset: "
                          f"{fn}(price) or {fn}(price, 2)", span)
            default = 1 if fn in ("PREV", "NEXT") else 0
            offset = self._offset(fn, args[1], span) if len(args) == 2 else default
            kind = cast(A.NavKind, fn)
            return A.Navigation(kind, cast(A.Expr, args[0]), offset, None, span)
        if fn in A.AGGREGATES:
            if len(args) != 1:
                self.fail(AggregateError, f"{fn} takes one argument", span)
            if star:
                if fn != "COUNT":
                    self.fail(AggregateError, f"{fn}(*): only COUNT counts rows; write "
                              f"{fn}(A.column)", span)
                var = star[0].var
                return A.Aggregate("COUNT", None, False, var.var if var else None, None, span)
            if distinct:
                return A.Aggregate(fn, distinct[0].arg, True, None, None, span)
            return A.Aggregate(fn, cast(A.Expr, args[0]), False, None, None, span)
        if star or distinct:
            self.fail(AggregateError, f"{'*' if star else 'DISTINCT'} is only for aggregates "
                      f"(COUNT, SUM, AVG, MIN, MAX), not {name.text}", span)
        exprs = [cast(A.Expr, a) for a in args]
        if fn == "CLASSIFIER":
            if not exprs:
                return A.Classifier(None, None, span)
            arg = exprs[0]
            if len(exprs) > 1 or not isinstance(arg, A.Column) or arg.var is not None:
                self.fail(ClauseError, "CLASSIFIER takes no argument or one row pattern "
                          "variable: CLASSIFIER() or CLASSIFIER(U)", span)
            quoted = self.text[arg.span.start:arg.span.start + 1] == "`"
            return A.Classifier(arg.name if quoted else arg.name.upper(), None, span)
        if fn == "MATCH_NUMBER":
            if exprs:
                self.fail(ClauseError, "MATCH_NUMBER takes no argument: MATCH_NUMBER()", span)
            return A.MatchNumber(span)
        return A.Call(fn, tuple(exprs), span)


@dataclass(frozen=True)
class _Else:
    expr: A.Expr
