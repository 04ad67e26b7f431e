"""Kind (type) inference of CEQL conditions: the kind of each expression (number, string,
bool, timestamp, duration; from the literals and, with a schema, the attributes), type clashes,
LIKE patterns, IN sets and ranges, and the attributes of PARTITION BY and WITHIN.
"""

from __future__ import annotations

import datetime as dt
import functools

from ..constants import WITHIN_ATTR, WITHIN_EVENTS, WITHIN_KINDS
from ..errors import CeqlValidationError, TypeClashError, UnknownAttributeError
from ..frontends.ceql.formatter import format_expr, format_name
from ..ir import most_events
from ..ir import nodes as A
from .messages import Reporter, did_you_mean, names_list
from .scopes import Scope, written_order

__all__ = ["Kinds"]


class Kinds:
    """The kinds of the expressions of ``query`` against ``schema`` (attribute → kind, None
    without one); qualified names and aggregates are checked against ``scope``."""

    def __init__(self, query: A.Query, out: Reporter, scope: Scope,
                 schema: dict[str, str] | None) -> None:
        self.query = query
        self.out = out
        self.scope = scope
        self.schema = schema

    def attr_kind(self, name: str, span: A.Span, where: str) -> str | None:
        if self.schema is None:
            return None
        kind = self.schema.get(name)
        if kind is None:
            self.out.report(UnknownAttributeError,
                            f"Unknown attribute '{name}' in {where}: the schema has "
                            f"{names_list(self.schema)}{did_you_mean(name, self.schema)}", span)
        return kind

    def attr_or_variable(self, node: A.Attr) -> str | None:
        """The kind of attribute ``node``; an error when it is one of the query's variables
        (an AS name) that the schema, if any, does not list as an attribute, or a plain
        attribute in a match condition."""
        if node.var is None and self.out.text_at(node.span).upper() == "NULL" and (
                self.schema is None or node.name not in self.schema):
            self.out.report(CeqlValidationError,
                            "NULL is not a value in CEQL: a comparison with a missing or NULL "
                            "attribute is false, so no test for NULL can hold; write `NULL` in "
                            "backquotes for an attribute of that name", node.span)
            return None
        leaf = self.scope.leaf
        if node.var is not None:
            self.scope.check_ref(node.var, node)
            return self.attr_kind(node.name, node.span, "FILTER")
        if isinstance(leaf, A.FilterMatch):
            self.plain_in_match(node, leaf)
            return None
        if node.name not in self.scope.aliases or (
                self.schema is not None and node.name in self.schema):
            return self.attr_kind(node.name, node.span, "FILTER")
        owner = leaf.var if leaf is not None else "x"
        other = next((a.name for a in _attrs(leaf.pred)
                      if a.var is None and a.name not in self.scope.aliases), "attr") \
            if leaf is not None else "attr"
        if owner == node.name:
            how = (f"write the attribute's name alone ({other}) or qualified "
                   f"({node.name}.{other})")
        else:
            how = (f"to compare with an attribute of {node.name}'s events, qualify it: "
                   f"{owner}[{other} > {node.name}.{other}]")
        self.out.report(CeqlValidationError,
                        f"'{node.name}' is a variable of this query, not an attribute: inside "
                        f"{owner}[…] a plain name is an attribute of {owner}'s events; {how}. If "
                        f"the events have an attribute '{node.name}', rename the variable (AS "
                        f"{node.name}1) or compile with a schema that lists the attribute",
                        node.span)
        return None

    def plain_in_match(self, node: A.Attr, leaf: A.FilterMatch) -> None:
        """A plain name in a match condition ``[P]``: the error, with the qualified form."""
        var = self.scope.example_variable(leaf)
        name = format_expr(node)
        if node.name in self.scope.bound:
            self.out.report(CeqlValidationError,
                            f"'{node.name}' in the match condition {self.out.leaf_text(leaf)} is a "
                            f"variable, not a value: write COUNT({name}) for its number of "
                            f"events, or {name}.attr for an attribute of its events", node.span)
            return
        self.out.report(CeqlValidationError,
                        f"Attribute '{node.name}' in the match condition "
                        f"{self.out.leaf_text(leaf)} "
                        "needs a variable: a match condition is checked once per match, not on "
                        f"one event. Write {var}.{name} (true when every {var} event passes), an "
                        f"aggregate such as MAX({var}.{name}), or put the condition in "
                        f"{var}[…]", node.span)

    def prev_kind(self, node: A.Prev) -> str | None:
        leaf = self.scope.leaf
        if isinstance(leaf, A.FilterMatch):
            fil = self.scope.filter
            runs = [] if fil is None else [v for v in written_order(fil.formula)
                                           if most_events(fil.formula, v) > 1]
            var = format_name(next((v for v in runs if v in self.scope.aliases), runs[0])) if runs \
                else self.scope.example_variable(leaf)
            self.out.report(CeqlValidationError,
                            f"{self.out.show(node)} cannot stand in the match condition "
                            f"{self.out.leaf_text(leaf)}: "
                            "PREV reads the previous event of the variable whose brackets it is "
                            f"in, and a match condition [...] has no variable. Write it inside a "
                            f"variable's brackets, e.g. {var}[{format_name(node.name)} > "
                            f"{self.out.show(node)}]", node.span)
            return None
        return self.attr_kind(node.name, node.span, "FILTER")

    def agg_kind(self, node: A.Agg) -> str | None:
        self.scope.check_ref(node.var, node)
        if node.attr is None:
            return "number"
        kind = self.attr_kind(node.attr, node.span, "FILTER")
        if node.func == "COUNT":  # COUNT(DISTINCT y.attr)
            return "number"
        if node.func in ("SUM", "AVG") and kind not in (None, "number", "other"):
            does = "adds" if node.func == "SUM" else "averages"
            self.out.report(TypeClashError,
                            f"Type clash in {self.out.show(node)}: {node.func} {does} numbers, but "
                            f"{node.attr} is {kind}", node.span)
            return None
        return kind

    def check_partition(self) -> None:
        q = self.query
        spans = q.partition_spans if len(q.partition_spans) == len(q.partition_by) else ()
        seen: set[str] = set()
        for i, name in enumerate(q.partition_by):
            span = spans[i] if spans else q.span
            if name in seen:
                self.out.report(CeqlValidationError,
                                f"Attribute '{name}' is listed twice in PARTITION BY", span)
            seen.add(name)
            self.attr_kind(name, span, "PARTITION BY")

    def check_within(self) -> None:
        w = self.query.within
        if w is None:
            return
        if w.kind not in WITHIN_KINDS:
            self.out.report(CeqlValidationError, f"Unknown WITHIN kind {w.kind!r}", w.span)
        if w.amount < 0:
            self.out.report(CeqlValidationError, "A WITHIN amount cannot be negative", w.span)
        if w.kind == WITHIN_EVENTS and w.amount.denominator != 1:
            self.out.report(CeqlValidationError,
                            "WITHIN ... EVENTS needs a whole number of events", w.span)
        if w.kind == WITHIN_ATTR:
            if not w.attr:
                self.out.report(CeqlValidationError, "WITHIN n [attr] needs an attribute", w.span)
                return
            kind = self.attr_kind(w.attr, w.span, "WITHIN")
            if kind is not None and kind not in ("number", "timestamp"):
                self.out.report(TypeClashError,
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
        self.out.report(TypeClashError,
                        f"Type clash in {what}: {self.out.show(left)} is {lk} but "
                        f"{self.out.show(right)} is "
                        f"{rk}", span)
        return True

    def check_compare(self, node: A.Compare) -> None:
        lk, rk = self.expr_kind(node.left), self.expr_kind(node.right)
        if "other" in (lk, rk):
            return
        what = f"comparison {self.out.show(node.left)} {node.op} {self.out.show(node.right)}"
        if self.clash(what, node.left, lk, node.right, rk, node.span):
            return
        for e, k, other in ((node.left, lk, rk), (node.right, rk, lk)):
            if other == "timestamp" and k == "string" and isinstance(e, A.Literal) \
                    and isinstance(e.value, str) and not _writes_time(e.value):
                self.out.report(TypeClashError,
                                f"Type clash in {what}: a timestamp compares with a string only "
                                f"when it writes a time in ISO 8601 (such as '2024-05-01 "
                                f"09:00:00'), and {self.out.show(e)} does not", node.span)
                return

    def check_like(self, node: A.Like) -> None:
        kind = self.expr_kind(node.expr)
        if kind not in (None, "string", "other"):
            self.out.report(TypeClashError,
                            f"LIKE needs a string, but {self.out.show(node.expr)} is "
                            f"{kind}", node.span)
        problem = _regex_problem(node.pattern)
        if problem is not None:
            self.out.report(CeqlValidationError,
                            f"Invalid regular expression in LIKE: {problem}. LIKE patterns use RE2 "
                            "syntax, which has no backreferences and no lookaround",
                            *self.out.pattern_span(node))

    def check_in_set(self, node: A.InSet) -> None:
        if not node.values:
            self.out.report(CeqlValidationError, "An IN set needs at least one value", node.span)
            return
        kinds = [(v, _literal_kind(v)) for v in node.values]
        first_value, first_kind = kinds[0]
        for value, value_kind in kinds[1:]:
            if not _comparable(first_kind, value_kind):
                self.out.report(TypeClashError,
                                f"Type clash in IN set: {self.out.show(first_value)} is "
                                f"{first_kind} but {self.out.show(value)} is "
                                f"{value_kind}", value.span)
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
                self.out.report(CeqlValidationError,
                                f"RANGE({self.out.show(node.lo)}, {self.out.show(node.hi)}) is "
                                "empty: its lower bound is above its upper bound, so the test "
                                "never holds",
                                node.span)

    def expr_kind(self, expr: A.Expr) -> str | None:
        """The kind of ``expr`` (``None`` if unknown), reporting unknown attributes and clashes."""
        out: list[str | None] = []
        todo: list[tuple[A.Expr, bool]] = [(expr, False)]
        while todo:
            node, ready = todo.pop()
            if isinstance(node, A.Attr):
                out.append(self.attr_or_variable(node))
            elif isinstance(node, A.Prev):
                out.append(self.prev_kind(node))
            elif isinstance(node, A.Agg):
                out.append(self.agg_kind(node))
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
        if kind in (None, "number", "duration", "other"):
            return kind
        self.out.report(TypeClashError,
                        f"Type clash in unary minus: {self.out.show(node.operand)} is {kind}, not "
                        "a number", node.span)
        return None

    def arith_kind(self, node: A.Arith, lk: str | None, rk: str | None) -> str | None:
        if node.op in ("/", "%") and isinstance(node.right, A.Literal) \
                and not isinstance(node.right.value, bool | str) and node.right.value == 0:
            self.out.report(CeqlValidationError, f"Division by zero in {self.out.show(node)}",
                            node.span)
            return None
        if "other" in (lk, rk):
            return "other"
        if lk in (None, "number") and rk in (None, "number"):
            return "number" if lk == rk == "number" else None
        timed = _time_arith_kind(node.op, lk, rk)
        if timed is not None:
            return timed or None
        times = (" (or times and durations: time - time, time ± seconds or INTERVAL, "
                 "duration * or / number)" if {lk, rk} & {"timestamp", "duration"} else "")
        self.out.report(TypeClashError,
                        f"Type clash in arithmetic {self.out.show(node)}: '{node.op}' needs "
                        f"numbers{times}, but "
                        f"{self.out.show(node.left)} is {lk or 'of unknown type'} and "
                        f"{self.out.show(node.right)} is {rk or 'of unknown type'}", node.span)
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
    return "duration" if isinstance(lit.value, dt.timedelta) else "number"


def _comparable(a: str | None, b: str | None) -> bool:
    if a is None or b is None or a == b or "other" in (a, b):
        return True
    # A timestamp compares with a string that writes one (checked on literals by the caller);
    # a duration with a number of seconds.
    return {a, b} in ({"timestamp", "string"}, {"duration", "number"})


def _writes_time(text: str) -> bool:
    try:
        dt.datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


_TIME_ARITH: dict[tuple[str, str, str], str] = {
    ("-", "timestamp", "timestamp"): "duration",
    ("+", "timestamp", "number"): "timestamp", ("-", "timestamp", "number"): "timestamp",
    ("+", "timestamp", "duration"): "timestamp", ("-", "timestamp", "duration"): "timestamp",
    ("+", "number", "timestamp"): "timestamp", ("+", "duration", "timestamp"): "timestamp",
    ("+", "duration", "duration"): "duration", ("-", "duration", "duration"): "duration",
    ("+", "duration", "number"): "duration", ("-", "duration", "number"): "duration",
    ("+", "number", "duration"): "duration", ("-", "number", "duration"): "duration",
    ("*", "duration", "number"): "duration", ("*", "number", "duration"): "duration",
    ("/", "duration", "number"): "duration", ("/", "duration", "duration"): "number",
}


def _time_arith_kind(op: str, lk: str | None, rk: str | None) -> str | None:
    if lk not in (None, "number", "timestamp", "duration") or \
            rk not in (None, "number", "timestamp", "duration"):
        return None
    if lk is None or rk is None:
        known = lk or rk
        return "" if any(known in (k[1], k[2]) for k in _TIME_ARITH if k[0] == op) else None
    return _TIME_ARITH.get((op, lk, rk))



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
