"""Static checks of a parsed CEQL query: names, scopes, types and clause values.

:func:`validate` raises the first problem in text order as a subclass of
:class:`~ceql.errors.CeqlValidationError`, located (line, column, caret) at the offending node.
Schemas are read by :mod:`ceql.analysis.schema`.

All walks over the AST use explicit stacks, so arbitrarily deep queries are fine.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import functools
import itertools
import re
import sys
from collections.abc import Iterable, Mapping

from ..constants import CONSUME_NONE, WITHIN_ATTR, WITHIN_EVENTS, WITHIN_KINDS
from ..errors import (
    CeqlValidationError,
    NegatedVariableError,
    NegationError,
    TypeClashError,
    UnknownAttributeError,
    UnknownStreamError,
    UnknownVariableError,
    UnsafeVariableError,
    caret_snippet,
)
from ..frontends.ceql.formatter import (
    format_expr,
    format_filter,
    format_formula,
    format_name,
    format_pred,
)
from ..ir import (
    bound_variables,
    condition_refs,
    expr_nodes,
    filter_leaves,
    formula_nodes,
    most_events,
    negated_variables,
    positive_variables,
    seq_elements,
    stream_views,
    top_sequence,
)
from ..ir import nodes as A
from .schema import normalize_schema

__all__ = ["validate"]

def _names_list(names: Iterable[str]) -> str:
    ordered = sorted(set(names), key=lambda n: (n.lower(), n))
    return ", ".join(ordered) if ordered else "nothing"


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, sorted(set(known)), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _and_list(names: Iterable[str]) -> str:
    """``'a'``, ``'a' and 'b'``, ``'a', 'b' and 'c'``."""
    quoted = [f"'{n}'" for n in names]
    if len(quoted) <= 1:
        return "".join(quoted)
    return f"{', '.join(quoted[:-1])} and {quoted[-1]}"


_NAME_TOKEN = re.compile(r"`[^`\n]*(?:``[^`\n]*)*`|[^\W\d]\w*")


def _written_name(text: str, start: int) -> int:
    """The length of the name (bare or backquoted) written at ``text[start:]``, 0 if none."""
    m = _NAME_TOKEN.match(text, start)
    return m.end() - start if m else 0


# ---------------------------------------------------------------- the checker

class _Checker:
    def __init__(self, query: A.Query, text: str, schema: dict[str, str] | None) -> None:
        self.query = query
        self.text = text
        self.schema = schema
        self.errors: list[tuple[int, int, CeqlValidationError]] = []
        self.aliases = {n.var for n in formula_nodes(query.where) if isinstance(n, A.As)}
        self.bound = bound_variables(query.where)
        # the names only a NOT binds (its AS name, types written only under NOT) → the NOT
        self.negated = negated_variables(query.where)
        # S>T named where WHERE has T leaves but no S>T leaf (S in FROM): the events of T
        # from stream S (where WHERE writes S>T, S>T names those leaves' events)
        self.views = {f"{s}>{t}": t for t, streams in stream_views(query).items()
                      for s in streams if s in query.streams and t in self.bound}
        for name, t in self.views.items():
            self.bound.add(name)
            if t in self.negated:
                self.negated.setdefault(name, self.negated[t])
        self.parents = _parents(query.where)
        # the FILTER leaf being checked (X[P] or [P]), its FILTER and what that FILTER's
        # formula binds
        self.leaf: A.FilterAtom | A.FilterMatch | None = None
        self.filter: A.Filter | None = None
        self.inside: set[str] = set()
        #: the ids of the leaves under OR in the FILTER being checked
        self.under_or: set[int] = set()
        self.reported: set[tuple[int, str]] = set()  # (leaf, variable) already reported

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
        self.check_clauses()
        bound = self.bound
        self.check_negations()
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
                self.report(UnknownVariableError, self.unknown_variable(name, "SELECT"), span,
                            self.head_width(name, span))
            elif name in self.negated:
                kept = positive_variables(q.where)
                self.report(NegatedVariableError,
                            f"'{name}' cannot be selected: it is a negated variable "
                            f"({self.negation_text(self.negated[name])}), and no match holds "
                            f"an event of it. Select variables of the match: "
                            f"{_names_list(kept)}", span, self.head_width(name, span))
            seen.add(name)

    def unknown_variable(self, name: str, where: str) -> str:
        """The message for a variable ``name`` (in SELECT, FILTER) that WHERE does not bind."""
        bound = self.bound
        stream, sep, event_type = name.partition(">")
        if sep and stream and event_type:
            leaves = sorted({n.name if n.stream is None else f"{n.stream}>{n.name}"
                             for n in formula_nodes(self.query.where)
                             if isinstance(n, A.EventType)}, key=lambda n: (n.lower(), n))
            if stream not in self.query.streams:
                return (f"Unknown variable '{name}' in {where}: {name} means the {event_type} "
                        f"events from stream {stream}, and FROM lists "
                        f"{_names_list(self.query.streams)}; add {stream} to FROM or fix the "
                        f"name{_did_you_mean(name, bound)}")
            return (f"Unknown variable '{name}' in {where}: {name} means the {event_type} "
                    f"events from stream {stream}, and WHERE has no {event_type} (it has "
                    f"{', '.join(leaves)}); write {event_type} or {name} in the formula or fix "
                    f"the name{_did_you_mean(name, bound)}")
        return (f"Unknown variable '{name}' in {where}: the WHERE formula binds "
                f"{_names_list(bound)}; bind it with AS or fix the name"
                f"{_did_you_mean(name, bound)}")

    def head_width(self, name: str, span: A.Span) -> int:
        """How many columns the variable ``name`` written at ``span`` takes (``S1 > BUY``)."""
        if not span.line or span.start >= len(self.text):
            return len(name)
        first = _written_name(self.text, span.start)
        if ">" not in name or not first:
            return max(first, len(name)) if first else len(name)
        at = span.start + first
        gap = re.compile(r"\s*>\s*").match(self.text, at)
        if gap is None:
            return len(name)
        second = _written_name(self.text, gap.end())
        return gap.end() + second - span.start if second else len(name)

    def check_formula(self, bound: set[str]) -> None:
        for node in formula_nodes(self.query.where):
            if not isinstance(node, A.Filter):
                continue
            self.filter = node
            # what can hold events here: the positive variables, and the negated ones whose
            # NOT this FILTER covers (for their own conditions)
            self.inside = positive_variables(node.formula) | (
                bound_variables(node.formula) & self.negated.keys())
            self.inside |= {v for v, t in self.views.items() if t in self.inside}
            under_or = self.under_or = _under_or(node.cond)
            for leaf in filter_leaves(node.cond):
                if isinstance(leaf, A.FilterAtom) and not self.check_head(leaf):
                    continue
                if isinstance(leaf, A.FilterAtom) and leaf.var in self.negated \
                        and id(leaf) in under_or:
                    self.report(NegatedVariableError,
                                f"{self.leaf_text(leaf)} is under OR: a condition on the "
                                f"negated variable '{leaf.var}' says which {leaf.var} events "
                                "the NOT forbids, so it must be a plain condition of the "
                                "FILTER, joined by AND. Join it with AND, or write the "
                                f"alternatives inside its brackets: {leaf.var}[… OR …]",
                                leaf.span, self.head_width(leaf.var, leaf.span))
                self.leaf = leaf
                self.check_pred(leaf.pred)
                if isinstance(leaf, A.FilterAtom):
                    self.check_prev(leaf)
            self.leaf = None

    def check_head(self, atom: A.FilterAtom) -> bool:
        """Check the variable of ``atom``; False when its predicate is not worth checking."""
        width = self.head_width(atom.var, atom.span)
        if atom.var not in self.bound:
            self.report(UnknownVariableError, self.unknown_variable(atom.var, "FILTER"),
                        atom.span, width)
            return False
        not_node = self.negated.get(atom.var)
        if not_node is not None and atom.var not in _not_aliases(not_node):
            pred = self.text_at(atom.pred.span) or format_pred(atom.pred)
            named = f"NOT {format_formula(A.As(_strip_as(not_node.formula), 'n'))}"
            self.report(NegatedVariableError,
                        f"{self.leaf_text(atom)} tests the {atom.var} events of the match, and "
                        f"{atom.var} stands only under NOT "
                        f"({self.negation_text(not_node)}), so no match has one. To put a "
                        "condition on the events the NOT forbids, name them and test that "
                        f"name: {named} … FILTER n[{' '.join(pred.split())}]", atom.span, width)
            return False
        if not_node is not None and atom.var not in self.inside:
            self.report(UnsafeVariableError,
                        f"{self.leaf_text(atom)} is not in a FILTER that covers "
                        f"{self.negation_text(not_node)}: a condition on a negated variable "
                        "must be in a FILTER applied to a formula that holds its NOT (this one "
                        f"binds only {_names_list(self.inside)}). Move it to a FILTER after "
                        "the sequence that holds the NOT", atom.span, width)
            return True
        if atom.var not in self.inside:
            self.report(UnsafeVariableError,
                        f"FILTER on '{atom.var}' can never reject anything: "
                        f"'{atom.var}' is bound outside the formula this FILTER applies "
                        f"to (which binds only {_names_list(self.inside)}). Move the FILTER "
                        f"after the part of the formula that binds '{atom.var}', or add "
                        f"parentheses so that the FILTER covers it", atom.span, width)
        return True

    # -- conditions between events

    def leaf_text(self, leaf: A.FilterAtom | A.FilterMatch) -> str:
        text = self.text_at(leaf.span)
        return " ".join(text.split()) if text else format_filter(leaf)

    def check_ref(self, var: str, node: A.Attr | A.Agg) -> None:
        """``var``, read by a qualified attribute or an aggregate ``node`` of the current
        leaf, must be bound in the formula the FILTER applies to."""
        leaf = self.leaf
        if leaf is None:
            return
        own = isinstance(leaf, A.FilterAtom) and var == leaf.var
        if own and not (isinstance(node, A.Agg) and var in self.negated):
            return
        key = (id(leaf), var)
        if key in self.reported:
            return
        span, width = self.ref_span(var, node)
        if var in self.negated:
            self.reported.add(key)
            self.negated_ref(var, node, leaf, span, width)
            return
        if var not in self.bound:
            self.reported.add(key)
            self.report(UnknownVariableError, self.unknown_variable(var, "FILTER"), span, width)
            return
        if var in self.inside:
            return
        self.reported.add(key)
        head = leaf.var if isinstance(leaf, A.FilterAtom) else None
        wanted = set(condition_refs(head, leaf.pred)) | {var} | ({head} if head else set())
        order = {name: i for i, name in enumerate(_written_order(self.query.where))}
        need = sorted(wanted, key=lambda n: (order.get(n, len(order)), n))
        both = ("both " if len(need) == 2 else "") + _and_list(need)
        example = self.moved_filter(leaf, set(need))
        advice = (f"Put the FILTER after the formula that binds {both}, e.g. {example}"
                  if example else
                  f"Put the FILTER after the formula that binds {both}, or add parentheses "
                  "so that the FILTER covers it")
        self.report(UnsafeVariableError,
                    f"{self.leaf_text(leaf)}: '{var}' is not bound in the formula this FILTER "
                    f"applies to (which binds only {_names_list(self.inside)}), so it has no "
                    f"events there. {advice}", span, width)

    def ref_span(self, var: str, node: A.Attr | A.Agg) -> tuple[A.Span, int | None]:
        """Where the variable ``var`` of ``node`` (``a.price``, ``COUNT(a)``) is written."""
        s = node.span
        if not s.line or s.end_line != s.line or not 0 <= s.start < s.end <= len(self.text):
            return s, None
        at = s.start
        if isinstance(node, A.Agg):
            paren = self.text.find("(", s.start, s.end)
            if paren < 0:
                return s, None
            at = paren + 1
            while at < s.end and self.text[at].isspace():
                at += 1
        width = _written_name(self.text, at)
        if not width:
            return s, None
        column = s.column + (at - s.start)
        return A.Span(s.line, column, s.line, column + width, at, at + width), width

    def moved_filter(self, leaf: A.FilterAtom | A.FilterMatch, need: set[str]) -> str | None:
        """``(φ) FILTER leaf``: the smallest formula around the current FILTER that binds
        every variable of ``need``, with ``leaf`` moved from the FILTER to it (None when too
        long to be an example)."""
        fil = self.filter
        if fil is None:
            return None
        parents = _parents(self.query.where)
        path: list[A.Formula] = [fil]
        while not need <= bound_variables(path[-1]):
            parent = parents.get(id(path[-1]))
            if parent is None:
                return None
            path.append(parent)
        if sum(1 for _ in formula_nodes(path[-1])) > 40:
            return None
        rest = _without_leaf(fil.cond, leaf)
        moved: A.FilterExpr = leaf if rest is not None or fil.cond is leaf else fil.cond
        new: A.Formula = fil.formula if rest is None else A.Filter(fil.formula, rest)
        for old, parent in itertools.pairwise(path):
            new = _replace_child(parent, old, new)
        head = format_formula(new)
        if isinstance(new, A.Seq | A.Or | A.Filter):
            head = f"({head})"
        example = f"{head} FILTER {format_filter(moved)}"
        return example if len(example) <= 120 else None

    def check_prev(self, atom: A.FilterAtom) -> None:
        """``PREV`` in ``atom`` needs a positive variable (a negated one has no previous
        event)."""
        prev = next((e for e in expr_nodes(atom.pred) if isinstance(e, A.Prev)), None)
        fil = self.filter
        # (PREV of a positive variable with at most one event never rejects: valid, with a
        # warning, see ceql.analysis.hints)
        if prev is not None and fil is not None and atom.var in self.negated:
            match_var = next((v for v in _written_order(fil.formula)
                              if v in self.aliases and v not in self.negated), "a")
            attr = format_name(prev.name)
            self.report(NegatedVariableError,
                        f"{self.show(prev)} in {self.leaf_text(atom)} has nothing to read: "
                        f"'{atom.var}' is a negated variable, and each event its NOT forbids "
                        f"is tested on its own, with no previous {atom.var} event. Compare it "
                        f"with an event of the match instead, e.g. "
                        f"{format_name(atom.var)}[{attr} > {format_name(match_var)}.{attr}]",
                        prev.span)

    # -- negation

    def negation_text(self, node: A.Not) -> str:
        """A NOT as written (``NOT B AS n``), on one line."""
        text = self.text_at(node.span)
        return " ".join(text.split()) if text else format_formula(node)

    def formula_text(self, node: A.Formula) -> str:
        text = self.text_at(node.span)
        return " ".join(text.split()) if text else format_formula(node)

    def check_negations(self) -> None:
        """Where each NOT stands and what it negates; names of negated variables."""
        where = self.query.where
        top = top_sequence(where)
        nots = [n for n in formula_nodes(where) if isinstance(n, A.Not)]
        if not nots:
            return
        for node in nots:
            if self.check_negated(node):
                self.check_place(node)
        for f in formula_nodes(where):
            parent = self.parents.get(id(f))
            if isinstance(f, A.Seq) and not (isinstance(parent, A.Seq) and parent.left is f):
                elems = seq_elements(f)  # a whole chain: f is not the left part of another
                if any(isinstance(e, A.Not) for e, _ in elems):
                    self.check_chain(elems, f is top)
        self.check_negated_names(nots)

    def check_negated(self, node: A.Not) -> bool:
        """``NOT β``: β is one event (a type, ``S>T``, an OR of those), named at most once.
        False (reported) when it is not."""
        shown = self.negation_text(node)
        beta = _strip_as(node.formula)
        kinds = [n for n in formula_nodes(beta) if not isinstance(n, A.Or | A.EventType)]
        if not kinds:
            return True
        inner = kinds[0]
        single = ("NOT takes one event: an event type, S>T, or an OR of those, named at most "
                  "once (NOT B, NOT (B OR C) AS n)")
        if isinstance(inner, A.As):
            names = [n.var for n in formula_nodes(node.formula) if isinstance(n, A.As)]
            plain = _drop_as(node.formula)
            message = (f"{shown} names parts of the negated event: {single}, so write "
                       f"NOT {format_formula(A.As(plain, names[0]))}")
        elif isinstance(inner, A.Not):
            message = (f"{shown}: NOT cannot negate a NOT. A NOT is the absence of an event in "
                       "a gap of a ';' sequence (A ; NOT B ; C: no B between A and C); write "
                       f"the event itself ({self.formula_text(_strip_as(inner.formula))}) or "
                       "one NOT")
        elif isinstance(inner, A.Plus) and inner is beta:
            body = _drop_as(_strip_as(inner.formula)) if not any(
                not isinstance(n, A.Or | A.EventType | A.As)
                for n in formula_nodes(inner.formula)) else None
            if body is not None:
                name = node.formula.var if isinstance(node.formula, A.As) else None
                fixed = format_formula(A.Not(body if name is None else A.As(body, name)))
                message = (f"{shown} negates an iteration: NOT is the absence of an event, and "
                           f"{fixed} already forbids every such event in its gap (A ; NOT B ; "
                           f"C: no B between A and C); write {fixed}")
            else:
                message = (f"{shown} negates an iteration, which is not one event: {single}. "
                           f"{_CORE_NOT}")
        elif isinstance(inner, A.Filter) and inner is beta:
            name = node.formula.var if isinstance(node.formula, A.As) else None
            body = inner.formula
            var = name or next((n.var for n in formula_nodes(body) if isinstance(n, A.As)), "n")
            plain = _drop_as(body)
            own = bound_variables(body) | ({name} if name else set())
            written = self.text_at(inner.cond.span)
            small = sum(1 for leaf in filter_leaves(inner.cond)
                        for _ in expr_nodes(leaf.pred)) <= 40
            cond = (format_filter(_renamed(inner.cond, own, var)) if small or not written
                    else " ".join(written.split()))
            message = (f"{shown} holds a FILTER: {single}, and the conditions on the events it "
                       "forbids go in a FILTER around the whole sequence that holds it: "
                       f"NOT {format_formula(A.As(plain, var))} … FILTER {cond}")
        else:
            message = f"{shown} negates more than one event: {single}. {_CORE_NOT}"
        self.report(NegationError, message, node.span)
        return False

    def check_place(self, node: A.Not) -> None:
        """A NOT stands as an element of a ``;`` chain (the chain itself: check_chain)."""
        parent = self.parents.get(id(node))
        if isinstance(parent, A.Seq | A.Not):  # in a chain, or reported with the outer NOT
            return
        shown = self.negation_text(node)
        above: A.Formula | None = parent
        while isinstance(above, A.Filter):
            above = self.parents.get(id(above))
        if above is None:
            message = f"{shown} cannot be the whole WHERE formula: {_NOT_PLACES}"
        elif isinstance(parent, A.Filter):
            name = node.formula.var if isinstance(node.formula, A.As) else "n"
            plain = format_formula(A.As(_drop_as(node.formula), name))
            message = (f"{shown} cannot be filtered on its own: {_NOT_PLACES}. Put the "
                       f"FILTER after the whole sequence: A ; NOT {plain} ; C FILTER "
                       f"{format_name(name)}[…]")
        elif isinstance(parent, A.As):
            plain = format_formula(A.Not(A.As(_drop_as(node.formula), parent.var)))
            message = (f"{self.formula_text(parent)}: name the negated event inside the NOT, "
                       f"{plain}; a NOT cannot be named as a whole (it matches no event). "
                       f"{_NOT_PLACES}")
        elif isinstance(parent, A.Plus):
            message = (f"{shown} cannot be iterated: + repeats events that occur, and a NOT "
                       f"is an absence. {_NOT_PLACES}; to repeat a sequence with a NOT, "
                       "iterate the whole sequence: (A ; NOT B ; C)+")
        elif isinstance(parent, A.And):
            message = (f"{shown} cannot be an operand of AND: {_NOT_PLACES}. Write it inside "
                       "one operand's sequence, e.g. (A ; NOT B ; C) AND D")
        else:
            message = (f"{shown} cannot be an alternative of OR: {_NOT_PLACES}. Write it "
                       "inside a sequence, e.g. A ; NOT (B OR C) ; D")
        self.report(NegationError, message, node.span)

    def check_chain(self, elems: list[tuple[A.Formula, bool]], top: bool) -> None:
        """The NOT elements of one ``;``/``:`` chain (``top``: the WHERE formula's own)."""
        q = self.query
        last = len(elems) - 1
        for i, (e, contiguous) in enumerate(elems):
            if not isinstance(e, A.Not):
                continue
            shown = self.negation_text(e)
            if contiguous or (i < last and elems[i + 1][1]):
                self.report(NegationError,
                            f"{shown} cannot stand in a ':' sequence: ':' makes the next "
                            "element follow at once, and a NOT matches no event. Write ';' on "
                            f"both sides of it{self.chain_example(elems, i)}", e.span)
                continue
            if i > 0 and isinstance(elems[i - 1][0], A.Not):
                first = elems[i - 1][0]
                assert isinstance(first, A.Not)
                self.report(NegationError,
                            f"Two NOTs in a row ({self.negation_text(first)} ; {shown}): "
                            "write one NOT over an OR of the events, "
                            f"{_merged_not(first, e)}, which forbids each of them in the "
                            "gap", e.span)
                continue
            if i not in (0, last):
                continue
            end = "start" if i == 0 else "end"
            if not top:
                self.report(NegationError,
                            f"{shown} cannot {end} this sequence: a NOT may {end} only the "
                            f"whole WHERE formula's sequence (with WITHIN); inside it, a NOT "
                            "stands between two elements (A ; NOT B ; C)", e.span)
                continue
            if q.within is None:
                if i == 0:
                    what = ("before the match's first event, as far back as the WITHIN "
                            "window reaches")
                else:
                    what = ("after the match's last event, as far as the WITHIN window "
                            "reaches (the match is reported once its window has passed)")
                self.report(NegationError,
                            f"{shown} at the {end} of the pattern needs WITHIN: it forbids "
                            f"{_negated_types(e)} events {what}, and without WITHIN there is "
                            "no window. Add one, e.g. WITHIN 10 SECONDS or WITHIN 100 EVENTS",
                            e.span)
                continue
            if i == last and q.consume != CONSUME_NONE:
                self.report(NegationError,
                            f"{shown} at the end of the pattern cannot be used with CONSUME BY "
                            f"{q.consume}: a match that ends with a NOT is known only once its "
                            "WITHIN window has passed, and CONSUME BY decides at each event "
                            "which later matches to drop. Leave CONSUME BY out, or end the "
                            "pattern with an event", e.span)

    def chain_example(self, elems: list[tuple[A.Formula, bool]], at: int) -> str:
        """The chain ``elems`` written with ``;`` on both sides of element ``at`` (as ``:
        A ; NOT B ; C``), or '' when too long."""
        parts: list[str] = []
        for i, (e, contiguous) in enumerate(elems):
            if i:
                parts.append(";" if i in (at, at + 1) or not contiguous else ":")
            text = self.formula_text(e)
            if isinstance(e, A.Seq | A.And | A.Or | A.Filter):
                text = f"({text})"
            parts.append(text)
        example = " ".join(parts)
        return f": {example}" if len(example) <= 100 else ""

    def check_negated_names(self, nots: list[A.Not]) -> None:
        """A NOT's AS name names nothing else: no event of the match, no other NOT."""
        where = self.query.where
        positive = positive_variables(where)
        owner: dict[str, A.Not] = {}
        for node in nots:
            for n in formula_nodes(node.formula):
                if not isinstance(n, A.As):
                    continue
                if n.var in positive:
                    self.report(NegatedVariableError,
                                f"'{n.var}' names both the events {self.negation_text(node)} "
                                "forbids and events of the match: a negated variable needs a "
                                "name of its own. Rename one of them", n.span)
                elif n.var in owner and owner[n.var] is not node:
                    self.report(NegatedVariableError,
                                f"'{n.var}' names two NOTs "
                                f"({self.negation_text(owner[n.var])} and "
                                f"{self.negation_text(node)}): give each NOT its own name",
                                n.span)
                owner.setdefault(n.var, node)

    def negated_ref(self, var: str, node: A.Attr | A.Agg, leaf: A.FilterAtom | A.FilterMatch,
                    span: A.Span, width: int | None) -> None:
        """``var`` (negated) read by ``node`` of ``leaf``, which is not ``var[…]`` itself (or is,
        through an aggregate)."""
        not_node = self.negated[var]
        not_text = self.negation_text(not_node)
        if var in _not_aliases(not_node):
            name, own = var, f"{format_name(var)}[…]"
        else:  # a type only under NOT: its conditions need a name
            name = "n"
            own = f"n[…], naming it NOT {format_formula(A.As(_strip_as(not_node.formula), 'n'))}"
        what = (f"{self.show(node)} aggregates" if isinstance(node, A.Agg)
                else f"{self.leaf_text(leaf)} reads")
        head = (f"{what} the negated variable '{var}' ({not_text}), whose events are in no "
                "match")
        if isinstance(node, A.Agg):
            self.report(NegatedVariableError,
                        f"{head}: aggregate variables of the match instead; a condition on "
                        f"each event the NOT forbids goes in {own}", span, width)
            return
        head_var = leaf.var if isinstance(leaf, A.FilterAtom) else None
        if head_var is not None and head_var in self.negated:
            self.report(NegatedVariableError,
                        f"{self.leaf_text(leaf)} relates two negated variables, "
                        f"'{head_var}' and '{var}': the events a NOT forbids are tested one "
                        "at a time, against the events of the match only. Compare each with "
                        f"events of the match, e.g. {format_name(head_var)}[price > a.price]",
                        span, width)
            return
        if head_var is not None and var in _not_aliases(not_node):
            # another variable's condition naming n is a condition on n (c[price > n.price]
            # is n[price < c.price]): a plain conjunct of a FILTER that covers the NOT
            if id(leaf) in self.under_or:
                self.report(NegatedVariableError,
                            f"{self.leaf_text(leaf)} reads the negated variable '{var}' "
                            f"({not_text}) under OR: a condition on a negated variable says "
                            "which events the NOT forbids, so it must be a plain condition of "
                            "the FILTER, joined by AND. Join it with AND, or write the "
                            f"alternatives inside its brackets: {own}", span, width)
            elif var not in self.inside:
                self.report(UnsafeVariableError,
                            f"{self.leaf_text(leaf)} reads the negated variable '{var}' in a "
                            f"FILTER that does not cover {not_text}: a condition on a negated "
                            "variable must be in a FILTER applied to a formula that holds its "
                            "NOT. Move it to a FILTER after the sequence that holds the NOT",
                            span, width)
            return
        rewrite = _moved_to(leaf, var, set(self.negated), name)
        advice = (f"write it in {own}: {rewrite}" if rewrite else
                  f"write it in {own}, with the other variables' attributes qualified, "
                  f"e.g. {format_name(name)}[price > a.price]")
        why = ("a match condition may not name it (it is checked once per match)"
               if isinstance(leaf, A.FilterMatch) else
               "an unnamed NOT has no conditions (a FILTER's B[…] and B.attr are about the "
               "B events of the match)")
        self.report(NegatedVariableError,
                    f"{head}: {why}. To relate the events the NOT forbids to the match, "
                    f"{advice}", span, width)

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
        (an AS name) that the schema, if any, does not list as an attribute, or a plain
        attribute in a match condition."""
        if node.var is None and self.text_at(node.span).upper() == "NULL" and (
                self.schema is None or node.name not in self.schema):
            self.report(CeqlValidationError,
                        "NULL is not a value in CEQL: a comparison with a missing or NULL "
                        "attribute is false, so no test for NULL can hold; write `NULL` in "
                        "backquotes for an attribute of that name", node.span)
            return None
        leaf = self.leaf
        if node.var is not None:
            self.check_ref(node.var, node)
            return self.attr_kind(node.name, node.span, "FILTER")
        if isinstance(leaf, A.FilterMatch):
            self.plain_in_match(node, leaf)
            return None
        if node.name not in self.aliases or (
                self.schema is not None and node.name in self.schema):
            return self.attr_kind(node.name, node.span, "FILTER")
        owner = leaf.var if leaf is not None else "x"
        other = next((a.name for a in _attrs(leaf.pred)
                      if a.var is None and a.name not in self.aliases), "attr") \
            if leaf is not None else "attr"
        if owner == node.name:
            how = (f"write the attribute's name alone ({other}) or qualified "
                   f"({node.name}.{other})")
        else:
            how = (f"to compare with an attribute of {node.name}'s events, qualify it: "
                   f"{owner}[{other} > {node.name}.{other}]")
        self.report(CeqlValidationError,
                    f"'{node.name}' is a variable of this query, not an attribute: inside "
                    f"{owner}[…] a plain name is an attribute of {owner}'s events; {how}. If "
                    f"the events have an attribute '{node.name}', rename the variable (AS "
                    f"{node.name}1) or compile with a schema that lists the attribute",
                    node.span)
        return None

    def plain_in_match(self, node: A.Attr, leaf: A.FilterMatch) -> None:
        """A plain name in a match condition ``[P]``: the error, with the qualified form."""
        var = self.example_variable(leaf)
        name = format_expr(node)
        if node.name in self.bound:
            self.report(CeqlValidationError,
                        f"'{node.name}' in the match condition {self.leaf_text(leaf)} is a "
                        f"variable, not a value: write COUNT({name}) for its number of "
                        f"events, or {name}.attr for an attribute of its events", node.span)
            return
        self.report(CeqlValidationError,
                    f"Attribute '{node.name}' in the match condition {self.leaf_text(leaf)} "
                    "needs a variable: a match condition is checked once per match, not on "
                    f"one event. Write {var}.{name} (true when every {var} event passes), an "
                    f"aggregate such as MAX({var}.{name}), or put the condition in "
                    f"{var}[…]", node.span)

    def example_variable(self, leaf: A.FilterMatch) -> str:
        """A variable to show in advice about ``leaf``: one it reads, else one of its FILTER's
        formula (an AS name first), else ``b``."""
        refs = [e.var for e in expr_nodes(leaf.pred)
                if isinstance(e, A.Agg) or (isinstance(e, A.Attr) and e.var is not None)]
        if refs and refs[0] is not None:
            return format_name(refs[0])
        fil = self.filter
        names = _written_order(fil.formula) if fil is not None else []
        name = next((v for v in names if v in self.aliases), names[0] if names else "b")
        return format_name(name)

    def prev_kind(self, node: A.Prev) -> str | None:
        leaf = self.leaf
        if isinstance(leaf, A.FilterMatch):
            fil = self.filter
            runs = [] if fil is None else [v for v in _written_order(fil.formula)
                                           if most_events(fil.formula, v) > 1]
            var = format_name(next((v for v in runs if v in self.aliases), runs[0])) if runs \
                else self.example_variable(leaf)
            self.report(CeqlValidationError,
                        f"{self.show(node)} cannot stand in the match condition "
                        f"{self.leaf_text(leaf)}: "
                        "PREV reads the previous event of the variable whose brackets it is "
                        f"in, and a match condition [...] has no variable. Write it inside a "
                        f"variable's brackets, e.g. {var}[{format_name(node.name)} > "
                        f"{self.show(node)}]", node.span)
            return None
        return self.attr_kind(node.name, node.span, "FILTER")

    def agg_kind(self, node: A.Agg) -> str | None:
        self.check_ref(node.var, node)
        if node.attr is None:
            return "number"
        kind = self.attr_kind(node.attr, node.span, "FILTER")
        if node.func == "COUNT":  # COUNT(DISTINCT y.attr)
            return "number"
        if node.func in ("SUM", "AVG") and kind not in (None, "number", "other"):
            does = "adds" if node.func == "SUM" else "averages"
            self.report(TypeClashError,
                        f"Type clash in {self.show(node)}: {node.func} {does} numbers, but "
                        f"{node.attr} is {kind}", node.span)
            return None
        return kind

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
        what = f"comparison {self.show(node.left)} {node.op} {self.show(node.right)}"
        if self.clash(what, node.left, lk, node.right, rk, node.span):
            return
        for e, k, other in ((node.left, lk, rk), (node.right, rk, lk)):
            if other == "timestamp" and k == "string" and isinstance(e, A.Literal) \
                    and isinstance(e.value, str) and not _writes_time(e.value):
                self.report(TypeClashError,
                            f"Type clash in {what}: a timestamp compares with a string only "
                            f"when it writes a time in ISO 8601 (such as '2024-05-01 "
                            f"09:00:00'), and {self.show(e)} does not", node.span)
                return

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
        timed = _time_arith_kind(node.op, lk, rk)
        if timed is not None:
            return timed or None
        times = (" (or times and durations: time - time, time ± seconds or INTERVAL, "
                 "duration * or / number)" if {lk, rk} & {"timestamp", "duration"} else "")
        self.report(TypeClashError,
                    f"Type clash in arithmetic {self.show(node)}: '{node.op}' needs "
                    f"numbers{times}, but "
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


_NOT_PLACES = ("NOT stands only as an element of a ';' sequence: between two of its elements "
               "(A ; NOT B ; C), or first or last of the WHERE formula's sequence with WITHIN "
               "(NOT B ; A, A ; NOT B)")
_CORE_NOT = ("In CEQL, NOT is the absence of an event: A ; NOT B ; C matches A then C with no B "
             "between them. (CORE's NOT(φ), one event that does not match φ, is another "
             "operator, which CEQL does not have; for an event that fails a condition, negate "
             "the condition: B AS x FILTER x[NOT (price > 10)].)")


def _strip_as(f: A.Formula) -> A.Formula:
    """``f`` without one ``AS`` around it."""
    return f.formula if isinstance(f, A.As) else f


def _drop_as(f: A.Formula) -> A.Formula:
    """``f`` (event types, OR, AS) without any AS."""
    leaves = [n for n in formula_nodes(f) if isinstance(n, A.EventType)]
    out: A.Formula = leaves[0]
    for leaf in leaves[1:]:
        out = A.Or(out, leaf)
    return out


def _not_aliases(node: A.Not) -> set[str]:
    """The AS names inside a NOT."""
    return {n.var for n in formula_nodes(node.formula) if isinstance(n, A.As)}


def _negated_types(node: A.Not) -> str:
    """The event types a NOT forbids, as words: ``B``, ``B or C``, ``S>B``."""
    names = [format_formula(n) for n in formula_nodes(node.formula)
             if isinstance(n, A.EventType)]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _merged_not(first: A.Not, second: A.Not) -> str:
    """One NOT for two in a row: ``NOT (B OR C)``, named as the first named one."""
    names = [f.formula.var for f in (first, second) if isinstance(f.formula, A.As)]
    both = _drop_as(A.Or(first.formula, second.formula))
    return format_formula(A.Not(A.As(both, names[0]) if names else both))


def _moved_to(leaf: A.FilterAtom | A.FilterMatch, var: str, negated: set[str],
              name: str) -> str | None:
    """``leaf`` — a comparison that reads ``var``'s attributes — rewritten as ``name[…]``
    (``name`` for ``var``): ``a[x > n.y]`` as ``n[y < a.x]``, ``[n.x > 1]`` as ``n[x > 1]``;
    None when it is not that simple (aggregates, PREV, another negated variable, ``var`` on
    both sides)."""
    p = leaf.pred
    head = leaf.var if isinstance(leaf, A.FilterAtom) else None
    if not isinstance(p, A.Compare) or sum(1 for _ in expr_nodes(p)) > 40:
        return None

    def side(e: A.Expr) -> tuple[A.Expr, bool] | None:
        """``e`` as written inside ``var[…]``, and whether it reads ``var``."""
        reads = False
        for x in expr_nodes(A.Compare("=", e, e)):
            if isinstance(x, A.Prev | A.Agg):
                return None
            if isinstance(x, A.Attr):
                owner = x.var or head
                if owner is None or (owner != var and owner in negated):
                    return None
                reads = reads or owner == var
        return _requalified(e, head, var), reads

    left, right = side(p.left), side(p.right)
    if left is None or right is None:
        return None
    (lt, lr), (rt, rr) = left, right
    if lr and rr:
        return None
    if rr and not lr:
        flip = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
        return f"{format_name(name)}[{format_pred(A.Compare(flip[p.op], rt, lt))}]"
    return f"{format_name(name)}[{format_pred(A.Compare(p.op, lt, rt))}]"


def _requalified(e: A.Expr, head: str | None, var: str) -> A.Expr:
    """``e`` of ``head[…]`` as written in ``var[…]``: ``var``'s attributes plain, the others
    qualified by their variable."""
    if isinstance(e, A.Attr):
        owner = e.var or head
        return A.Attr(e.name) if owner == var else A.Attr(e.name, var=owner)
    if isinstance(e, A.Arith):
        return A.Arith(e.op, _requalified(e.left, head, var), _requalified(e.right, head, var))
    if isinstance(e, A.Neg):
        return A.Neg(_requalified(e.operand, head, var))
    return e


def _renamed(cond: A.FilterExpr, names: set[str], var: str) -> A.FilterExpr:
    """``cond`` with the atoms on any of ``names`` put on ``var`` (and qualified attributes of
    ``names`` made ``var``'s)."""
    def expr(e: A.Expr) -> A.Expr:
        if isinstance(e, A.Attr) and e.var in names:
            return A.Attr(e.name, var=var)
        if isinstance(e, A.Arith):
            return A.Arith(e.op, expr(e.left), expr(e.right))
        if isinstance(e, A.Neg):
            return A.Neg(expr(e.operand))
        if isinstance(e, A.Agg) and e.var in names:
            return A.Agg(e.func, var, e.attr, distinct=e.distinct)
        return e

    def pred(p: A.Pred) -> A.Pred:
        if isinstance(p, A.PAnd | A.POr):
            return dataclasses.replace(p, left=pred(p.left), right=pred(p.right))
        if isinstance(p, A.PNot):
            return A.PNot(pred(p.operand))
        if isinstance(p, A.Compare):
            return A.Compare(p.op, expr(p.left), expr(p.right))
        if isinstance(p, A.Like | A.InSet):
            return dataclasses.replace(p, expr=expr(p.expr))
        if isinstance(p, A.InRange):
            return A.InRange(expr(p.expr), expr(p.lo), expr(p.hi))
        return p

    def walk(c: A.FilterExpr) -> A.FilterExpr:
        if isinstance(c, A.FilterAnd | A.FilterOr):
            return dataclasses.replace(c, left=walk(c.left), right=walk(c.right))
        if isinstance(c, A.FilterAtom):
            return A.FilterAtom(var if c.var in names else c.var, pred(c.pred))
        return A.FilterMatch(pred(c.pred))

    return walk(cond)


def _under_or(cond: A.FilterExpr) -> set[int]:
    """The ids of the leaves of ``cond`` that stand under an OR."""
    out: set[int] = set()
    todo: list[tuple[A.FilterExpr, bool]] = [(cond, False)]
    while todo:
        node, under = todo.pop()
        if isinstance(node, A.FilterOr | A.FilterAnd):
            inner = under or isinstance(node, A.FilterOr)
            todo += [(node.right, inner), (node.left, inner)]
        elif under:
            out.add(id(node))
    return out


def _parents(root: A.Formula) -> dict[int, A.Formula]:
    """Each formula node below ``root`` (by ``id``) → its parent."""
    out: dict[int, A.Formula] = {}
    for node in formula_nodes(root):
        if isinstance(node, A.Seq | A.Or | A.And):
            out[id(node.left)] = out[id(node.right)] = node
        elif isinstance(node, A.As | A.Plus | A.Filter | A.Not):
            out[id(node.formula)] = node
    return out


def _replace_child(parent: A.Formula, old: A.Formula, new: A.Formula) -> A.Formula:
    """``parent`` with its child ``old`` (by identity) replaced by ``new``."""
    if isinstance(parent, A.Seq | A.Or | A.And):
        if parent.left is old:
            return dataclasses.replace(parent, left=new)
        return dataclasses.replace(parent, right=new)
    if isinstance(parent, A.As | A.Plus | A.Filter | A.Not):
        return dataclasses.replace(parent, formula=new)
    return parent


def _without_leaf(cond: A.FilterExpr, leaf: A.FilterAtom | A.FilterMatch
                  ) -> A.FilterExpr | None:
    """``cond`` without ``leaf`` when ``leaf`` is one of its AND-ed conditions; ``None`` when
    nothing is left or when ``leaf`` is under an OR (then the whole condition moves)."""
    if cond is leaf:
        return None
    # the AND chain's conditions, in text order
    parts: list[A.FilterExpr] = []
    todo: list[A.FilterExpr] = [cond]
    while todo:
        node = todo.pop()
        if isinstance(node, A.FilterAnd):
            todo += [node.right, node.left]
        else:
            parts.append(node)
    if not any(p is leaf for p in parts):
        return None
    rest = [p for p in parts if p is not leaf]
    out = rest[0]
    for p in rest[1:]:
        out = A.FilterAnd(out, p)
    return out


def _written_order(root: A.Formula) -> list[str]:
    """The variables of ``root`` in the order the text names them (an AS name after its
    formula)."""
    out: dict[str, None] = {}
    todo: list[tuple[A.Formula, bool]] = [(root, False)]
    while todo:
        node, leaving = todo.pop()
        if isinstance(node, A.EventType):
            out.setdefault(node.name if node.stream is None else f"{node.stream}>{node.name}")
        elif isinstance(node, A.As):
            if leaving:
                out.setdefault(node.var)
            else:
                todo += [(node, True), (node.formula, False)]
        elif isinstance(node, A.Seq | A.Or | A.And):
            todo += [(node.right, False), (node.left, False)]
        elif isinstance(node, A.Plus | A.Filter | A.Not):
            todo.append((node.formula, False))
    return list(out)


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


# Arithmetic on times (docs/language.md): the kind of ``l op r``, given the kinds of ``l`` and
# ``r`` (None unknown); "" when unknown; None when it has no value (a clash).
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


def validate(query: A.Query, text: str,
             schema: Mapping[str, object] | object | None = None) -> A.Query:
    """Check ``query`` (parsed from ``text``) and return it unchanged if it is sound.

    Checks variables (every FILTER ``X[...]`` and SELECT name is bound by the WHERE formula,
    ``S>T`` there names leaves written ``S>T``, and a FILTER only tests variables bound in the
    formula it applies to), conditions between events (the variable of ``Y.attr`` or of an
    aggregate is bound in the formula the FILTER applies to; ``PREV`` stands only inside
    ``X[…]``, for an ``X`` that can bind two events; a match condition ``[P]`` reads no plain
    attribute; SUM and AVG of numbers only, with a schema), streams (``S>T`` names a FROM
    stream; no stream twice), duplicates in SELECT and PARTITION BY, clause values (LIMIT ≥ 0,
    WITHIN amounts) and LIKE patterns (valid RE2). A name inside ``x[…]`` that is an AS
    variable of the query (``b[temp > a]``, most likely meant as ``a.temp``) is refused unless
    the schema lists it as an attribute, and so is an unquoted ``NULL``. Literal types must
    agree among themselves; with a ``schema`` (anything :func:`normalize_schema` reads),
    attributes must exist and types must agree (no string compared with a number, LIKE on
    strings only, arithmetic on numbers only, SUM and AVG on numbers, WITHIN ``[attr]`` on a
    number or timestamp).

    Raises the first problem in text order as a :class:`~ceql.errors.CeqlValidationError`
    subclass carrying line, column and a caret snippet.
    """
    kinds = None if schema is None else normalize_schema(schema)
    checker = _Checker(query, text, kinds)
    checker.run()
    if checker.errors:
        raise min(checker.errors, key=lambda e: (e[0], e[1]))[2]
    return query
