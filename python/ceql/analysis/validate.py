"""Static checks of a parsed CEQL query: names, scopes, types and clause values.

:func:`validate` raises the first problem in text order as a subclass of
:class:`~ceql.errors.CeqlValidationError`, located (line, column, caret) at the offending node.
Schemas are read by :mod:`ceql.analysis.schema`.

All walks over the AST use explicit stacks, so arbitrarily deep queries are fine.
"""

from __future__ import annotations

import difflib
import functools
import sys
from collections.abc import Iterable, Mapping

from ..constants import WITHIN_ATTR, WITHIN_EVENTS, WITHIN_KINDS
from ..errors import (
    CeqlValidationError,
    TypeClashError,
    UnknownAttributeError,
    UnknownStreamError,
    UnknownVariableError,
    UnsafeVariableError,
    caret_snippet,
)
from ..frontends.ceql.formatter import format_expr
from ..ir import nodes as A
from ..ir.walks import bound_variables, filter_atoms, formula_nodes
from .schema import normalize_schema

__all__ = ["validate"]

def _names_list(names: Iterable[str]) -> str:
    ordered = sorted(set(names), key=lambda n: (n.lower(), n))
    return ", ".join(ordered) if ordered else "nothing"


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, sorted(set(known)), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


# ---------------------------------------------------------------- the checker

class _Checker:
    def __init__(self, query: A.Query, text: str, schema: dict[str, str] | None) -> None:
        self.query = query
        self.text = text
        self.schema = schema
        self.errors: list[tuple[int, int, CeqlValidationError]] = []
        self.aliases = {n.var for n in formula_nodes(query.where) if isinstance(n, A.As)}
        self.atom: A.FilterAtom | None = None  # the FILTER atom being checked

    # -- reporting

    def report(self, cls: type[CeqlValidationError], message: str, span: A.Span,
               width: int | None = None) -> None:
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
        s = expr.span
        if s.line and 0 <= s.start < s.end <= len(self.text):
            return " ".join(self.text[s.start:s.end].split())
        return format_expr(expr)

    # -- the checks

    def run(self) -> None:
        q = self.query
        self.check_clauses()
        bound = bound_variables(q.where)
        self.check_streams()
        self.check_select(bound)
        self.check_formula(bound)
        self.check_partition()
        self.check_within()

    def check_clauses(self) -> None:
        q = self.query
        if q.strategy not in A.STRATEGIES:
            self.report(CeqlValidationError, f"Unknown selection strategy {q.strategy!r}: use "
                        f"one of {', '.join(A.STRATEGIES)}", q.span)
        if q.consume not in A.CONSUME_POLICIES:
            self.report(CeqlValidationError, f"Unknown CONSUME BY policy {q.consume!r}: use one "
                        f"of {', '.join(A.CONSUME_POLICIES)}", q.span)
        if q.limit is not None and q.limit < 0:  # (the grammar reads digits only)
            self.report(CeqlValidationError, f"LIMIT {q.limit} is negative: LIMIT needs a "
                        "whole number, 0 or more (leave it out for no limit)", q.limit_span)

    def check_streams(self) -> None:
        q = self.query
        spans = q.stream_spans if len(q.stream_spans) == len(q.streams) else ()
        seen: set[str] = set()
        for i, name in enumerate(q.streams):
            if name in seen:
                self.report(CeqlValidationError, f"Stream '{name}' is listed twice in FROM",
                            spans[i] if spans else q.span)
            seen.add(name)
        for node in formula_nodes(q.where):
            if isinstance(node, A.EventType) and node.stream is not None \
                    and node.stream not in seen:
                self.report(UnknownStreamError,
                            f"Unknown stream '{node.stream}' in '{node.stream}>{node.name}': "
                            f"FROM lists {_names_list(q.streams)}; add it to FROM or fix the "
                            f"name{_did_you_mean(node.stream, q.streams)}",
                            node.span, len(node.stream))

    def check_select(self, bound: set[str]) -> None:
        q = self.query
        if q.select is None:
            return
        spans = q.select_spans if len(q.select_spans) == len(q.select) else ()
        seen: set[str] = set()
        for i, name in enumerate(q.select):
            span = spans[i] if spans else q.span
            if name in seen:
                self.report(CeqlValidationError, f"Variable '{name}' is selected twice", span)
            elif name not in bound:
                self.report(UnknownVariableError,
                            f"Unknown variable '{name}' in SELECT: the WHERE formula binds "
                            f"{_names_list(bound)}; bind it with AS or fix the name"
                            f"{_did_you_mean(name, bound)}", span)
            seen.add(name)

    def check_formula(self, bound: set[str]) -> None:
        for node in formula_nodes(self.query.where):
            if not isinstance(node, A.Filter):
                continue
            inside: set[str] | None = None
            for atom in filter_atoms(node.cond):
                if atom.var not in bound:
                    self.report(UnknownVariableError,
                                f"Unknown variable '{atom.var}' in FILTER: the WHERE formula "
                                f"binds {_names_list(bound)}; bind it with AS or fix the name"
                                f"{_did_you_mean(atom.var, bound)}", atom.span, len(atom.var))
                    continue
                if inside is None:
                    inside = bound_variables(node.formula)
                if atom.var not in inside:
                    self.report(UnsafeVariableError,
                                f"FILTER on '{atom.var}' can never reject anything: "
                                f"'{atom.var}' is bound outside the formula this FILTER applies "
                                f"to (which binds only {_names_list(inside)}). Move the FILTER "
                                f"after the part of the formula that binds '{atom.var}', or add "
                                f"parentheses so that the FILTER covers it", atom.span,
                                len(atom.var))
                self.atom = atom
                self.check_pred(atom.pred)

    # -- schema checks

    def attr_kind(self, name: str, span: A.Span, where: str) -> str | None:
        if self.schema is None:
            return None
        kind = self.schema.get(name)
        if kind is None:
            self.report(UnknownAttributeError,
                        f"Unknown attribute '{name}' in {where}: the schema has "
                        f"{_names_list(self.schema)}{_did_you_mean(name, self.schema)}", span)
        return kind

    def attr_or_variable(self, node: A.Attr) -> str | None:
        """The kind of attribute ``node``; an error when it is one of the query's variables
        (an AS name) that the schema, if any, does not list as an attribute."""
        if self.text_at(node.span).upper() == "NULL" and (
                self.schema is None or node.name not in self.schema):
            self.report(CeqlValidationError,
                        "NULL is not a value in CEQL: a comparison with a missing or NULL "
                        "attribute is false, so no test for NULL can hold; write `NULL` in "
                        "backquotes for an attribute of that name", node.span)
            return None
        if node.var is not None or node.name not in self.aliases or (
                self.schema is not None and node.name in self.schema):
            return self.attr_kind(node.name, node.span, "FILTER")
        atom = self.atom
        owner = atom.var if atom is not None else "x"
        other = next((a.name for a in _attrs(atom.pred) if a.name not in self.aliases),
                     "attr") if atom is not None else "attr"
        self.report(CeqlValidationError,
                    f"'{node.name}' is a variable of this query, not an attribute: inside "
                    f"{owner}[…] names are attributes of {owner}'s events, and comparing with "
                    f"another event's attribute ({node.name}.{other}) is not supported yet. If "
                    f"the events have an attribute '{node.name}', rename the variable (AS "
                    f"{node.name}1) or compile with a schema that lists the attribute",
                    node.span)
        return None

    def text_at(self, span: A.Span) -> str:
        """The query text under ``span`` ('' when unknown)."""
        if span.line and 0 <= span.start < span.end <= len(self.text):
            return self.text[span.start:span.end]
        return ""

    def check_partition(self) -> None:
        q = self.query
        spans = q.partition_spans if len(q.partition_spans) == len(q.partition_by) else ()
        seen: set[str] = set()
        for i, name in enumerate(q.partition_by):
            span = spans[i] if spans else q.span
            if name in seen:
                self.report(CeqlValidationError,
                            f"Attribute '{name}' is listed twice in PARTITION BY", span)
            seen.add(name)
            self.attr_kind(name, span, "PARTITION BY")

    def check_within(self) -> None:
        w = self.query.within
        if w is None:
            return
        if w.kind not in WITHIN_KINDS:
            self.report(CeqlValidationError, f"Unknown WITHIN kind {w.kind!r}", w.span)
        if w.amount < 0:
            self.report(CeqlValidationError, "A WITHIN amount cannot be negative", w.span)
        if w.kind == WITHIN_EVENTS and w.amount.denominator != 1:
            self.report(CeqlValidationError,
                        "WITHIN ... EVENTS needs a whole number of events", w.span)
        if w.kind == WITHIN_ATTR:
            if not w.attr:
                self.report(CeqlValidationError, "WITHIN n [attr] needs an attribute", w.span)
                return
            kind = self.attr_kind(w.attr, w.span, "WITHIN")
            if kind is not None and kind not in ("number", "timestamp"):
                self.report(TypeClashError,
                            f"WITHIN ... [{w.attr}] needs a number or timestamp attribute, "
                            f"but '{w.attr}' is {kind}", w.span)

    def check_pred(self, pred: A.Pred) -> None:
        todo: list[A.Pred] = [pred]
        while todo:
            node = todo.pop()
            if isinstance(node, A.PAnd | A.POr):
                todo.extend((node.right, node.left))
            elif isinstance(node, A.PNot):
                todo.append(node.operand)
            elif isinstance(node, A.Compare):
                self.check_compare(node)
            elif isinstance(node, A.Like):
                self.check_like(node)
            elif isinstance(node, A.InSet):
                self.check_in_set(node)
            else:
                self.check_in_range(node)

    def clash(self, what: str, left: A.Expr, lk: str | None, right: A.Expr,
              rk: str | None, span: A.Span) -> bool:
        """Report a TypeClashError if kinds ``lk`` and ``rk`` cannot be compared."""
        if _comparable(lk, rk):
            return False
        self.report(TypeClashError,
                    f"Type clash in {what}: {self.show(left)} is {lk} but {self.show(right)} is "
                    f"{rk}", span)
        return True

    def check_compare(self, node: A.Compare) -> None:
        lk, rk = self.expr_kind(node.left), self.expr_kind(node.right)
        if "other" in (lk, rk):
            return
        self.clash(f"comparison {self.show(node.left)} {node.op} {self.show(node.right)}",
                   node.left, lk, node.right, rk, node.span)

    def check_like(self, node: A.Like) -> None:
        kind = self.expr_kind(node.expr)
        if kind not in (None, "string", "other"):
            self.report(TypeClashError,
                        f"LIKE needs a string, but {self.show(node.expr)} is {kind}", node.span)
        problem = _regex_problem(node.pattern)
        if problem is not None:
            self.report(CeqlValidationError,
                        f"Invalid regular expression in LIKE: {problem}. LIKE patterns use RE2 "
                        "syntax, which has no backreferences and no lookaround",
                        *self.pattern_span(node))

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

    def check_in_set(self, node: A.InSet) -> None:
        if not node.values:
            self.report(CeqlValidationError, "An IN set needs at least one value", node.span)
            return
        kinds = [(v, _literal_kind(v)) for v in node.values]
        first_value, first_kind = kinds[0]
        for value, value_kind in kinds[1:]:
            if not _comparable(first_kind, value_kind):
                self.report(TypeClashError,
                            f"Type clash in IN set: {self.show(first_value)} is {first_kind} "
                            f"but {self.show(value)} is {value_kind}", value.span)
                return
        kind = self.expr_kind(node.expr)
        if kind != "other":
            self.clash("IN", node.expr, kind, first_value, first_kind, node.span)

    def check_in_range(self, node: A.InRange) -> None:
        kind = self.expr_kind(node.expr)
        lo, hi = self.expr_kind(node.lo), self.expr_kind(node.hi)
        if "other" in (kind, lo, hi):
            return
        if self.clash("IN RANGE", node.expr, kind, node.lo, lo, node.span) or \
                self.clash("IN RANGE", node.expr, kind, node.hi, hi, node.span) or \
                self.clash("RANGE bounds", node.lo, lo, node.hi, hi, node.span):
            return
        if isinstance(node.lo, A.Literal) and isinstance(node.hi, A.Literal) \
                and lo == hi and lo in ("number", "string"):
            if node.lo.value > node.hi.value:  # type: ignore[operator]
                self.report(CeqlValidationError,
                            f"RANGE({self.show(node.lo)}, {self.show(node.hi)}) is empty: its "
                            "lower bound is above its upper bound, so the test never holds",
                            node.span)

    def expr_kind(self, expr: A.Expr) -> str | None:
        """The kind of ``expr`` (``None`` if unknown), reporting unknown attributes and clashes."""
        out: list[str | None] = []
        todo: list[tuple[A.Expr, bool]] = [(expr, False)]
        while todo:
            node, ready = todo.pop()
            if isinstance(node, A.Attr):
                out.append(self.attr_or_variable(node))
            elif isinstance(node, A.Literal):
                out.append(_literal_kind(node))
            elif not ready:
                todo.append((node, True))
                if isinstance(node, A.Neg):
                    todo.append((node.operand, False))
                else:
                    todo.extend(((node.right, False), (node.left, False)))
            elif isinstance(node, A.Neg):
                operand = out.pop()
                out.append(self.neg_kind(node, operand))
            else:
                right = out.pop()
                left = out.pop()
                out.append(self.arith_kind(node, left, right))
        return out[0]

    def neg_kind(self, node: A.Neg, kind: str | None) -> str | None:
        if kind in (None, "number", "other"):
            return kind
        self.report(TypeClashError,
                    f"Type clash in unary minus: {self.show(node.operand)} is {kind}, not a "
                    "number", node.span)
        return None

    def arith_kind(self, node: A.Arith, lk: str | None, rk: str | None) -> str | None:
        if node.op in ("/", "%") and isinstance(node.right, A.Literal) \
                and not isinstance(node.right.value, bool | str) and node.right.value == 0:
            self.report(CeqlValidationError, f"Division by zero in {self.show(node)}", node.span)
            return None
        if "other" in (lk, rk):
            return "other"
        if lk in (None, "number") and rk in (None, "number"):
            return "number" if lk == rk == "number" else None
        if "timestamp" in (lk, rk) and node.op in ("+", "-") \
                and lk in (None, "number", "timestamp") and rk in (None, "number", "timestamp"):
            return None  # date arithmetic: left to the engine
        self.report(TypeClashError,
                    f"Type clash in arithmetic {self.show(node)}: '{node.op}' needs numbers, but "
                    f"{self.show(node.left)} is {lk or 'of unknown type'} and "
                    f"{self.show(node.right)} is {rk or 'of unknown type'}", node.span)
        return None


def _attrs(pred: A.Pred) -> list[A.Attr]:
    """The attributes ``pred`` reads, in text order."""
    out: list[A.Attr] = []
    todo: list[object] = [pred]
    while todo:
        node = todo.pop()
        if isinstance(node, A.Attr):
            out.append(node)
        elif isinstance(node, A.PAnd | A.POr | A.Compare | A.Arith):
            todo += [node.right, node.left]
        elif isinstance(node, A.PNot | A.Neg):
            todo.append(node.operand)
        elif isinstance(node, A.Like):
            todo.append(node.expr)
        elif isinstance(node, A.InSet):
            todo.append(node.expr)
        elif isinstance(node, A.InRange):
            todo += [node.hi, node.lo, node.expr]
    return out


def _literal_kind(lit: A.Literal) -> str:
    if isinstance(lit.value, bool):
        return "bool"
    if isinstance(lit.value, str):
        return "string"
    return "number"


def _comparable(a: str | None, b: str | None) -> bool:
    if a is None or b is None or a == b or "other" in (a, b):
        return True
    # A timestamp may be compared with a string ('2024-01-02 10:00') or a number (epoch).
    return {a, b} in ({"timestamp", "string"}, {"timestamp", "number"})


@functools.lru_cache(maxsize=1024)
def _regex_problem(pattern: str) -> str | None:
    """Why RE2 (as used by pyarrow) rejects ``pattern``, or None if it is fine."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        pc.match_substring_regex(pa.array([""]), pattern=pattern)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        return str(exc).removeprefix("Invalid regular expression: ")
    return None


def validate(query: A.Query, text: str,
             schema: Mapping[str, object] | object | None = None) -> A.Query:
    """Check ``query`` (parsed from ``text``) and return it unchanged if it is sound.

    Checks variables (every FILTER ``X[...]`` and SELECT name is bound by the WHERE formula,
    and a FILTER only tests variables bound in the formula it applies to), streams (``S>T``
    names a FROM stream; no stream twice), duplicates in SELECT and PARTITION BY, clause values
    (LIMIT ≥ 0, WITHIN amounts) and LIKE patterns (valid RE2). A name inside ``x[…]`` that is
    an AS variable of the query (``b[temp > a]``) is refused unless the schema lists it as an
    attribute, and so is an unquoted ``NULL``. Literal types must agree among
    themselves; with a ``schema`` (anything :func:`normalize_schema` reads), attributes must
    exist and types must agree (no string compared with a number, LIKE on strings only,
    arithmetic on numbers only, WITHIN ``[attr]`` on a number or timestamp).

    Raises the first problem in text order as a :class:`~ceql.errors.CeqlValidationError`
    subclass carrying line, column and a caret snippet.
    """
    kinds = None if schema is None else normalize_schema(schema)
    checker = _Checker(query, text, kinds)
    checker.run()
    if checker.errors:
        raise min(checker.errors, key=lambda e: (e[0], e[1]))[2]
    return query
