"""Scope checks of a CEQL query: which names WHERE binds (AS names, event types, ``S>T``
views, negated variables), and where each may be used — SELECT, a FILTER's ``X[…]`` heads, the
variables a condition reads (``Y.attr``, aggregates, ``PREV``).

A :class:`Scope` also holds where the walk over the FILTERs is (the FILTER and leaf being
checked), which :mod:`ceql.analysis.kinds` reads for the attributes it types.
"""

from __future__ import annotations

import dataclasses
import itertools

from ..errors import (
    CeqlValidationError,
    NegatedVariableError,
    UnknownStreamError,
    UnknownVariableError,
    UnsafeVariableError,
)
from ..frontends.ceql.formatter import format_filter, format_formula, format_name, format_pred
from ..ir import (
    bound_variables,
    chain_operands,
    condition_refs,
    expr_nodes,
    formula_nodes,
    negated_variables,
    positive_variables,
    stream_views,
)
from ..ir import nodes as A
from .messages import Reporter, and_list, did_you_mean, names_list

__all__ = ["Scope", "strip_as", "written_order"]


class Scope:
    """The names of ``query`` and the checks of where they are used (reported to ``out``)."""

    def __init__(self, query: A.Query, out: Reporter) -> None:
        self.query = query
        self.out = out
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

    def enter(self, node: A.Filter) -> None:
        """Start checking the conditions of the FILTER ``node``."""
        self.filter = node
        # what can hold events here: the positive variables, and the negated ones whose
        # NOT this FILTER covers (for their own conditions)
        self.inside = positive_variables(node.formula) | (
            bound_variables(node.formula) & self.negated.keys())
        self.inside |= {v for v, t in self.views.items() if t in self.inside}
        self.under_or = _under_or(node.cond)
        self.leaf = None

    def check_leaf(self, leaf: A.FilterAtom | A.FilterMatch) -> bool:
        """Check the head of ``leaf`` and make it the current leaf; False when its predicate
        is not worth checking."""
        if isinstance(leaf, A.FilterAtom):
            if not self.check_head(leaf):
                return False
            if leaf.var in self.negated and id(leaf) in self.under_or:
                self.out.report(
                    NegatedVariableError,
                    f"{self.out.leaf_text(leaf)} is under OR: a condition on the "
                    f"negated variable '{leaf.var}' says which {leaf.var} events "
                    "the NOT forbids, so it must be a plain condition of the "
                    "FILTER, joined by AND. Join it with AND, or write the "
                    f"alternatives inside its brackets: {leaf.var}[… OR …]",
                    leaf.span, self.out.head_width(leaf.var, leaf.span))
        self.leaf = leaf
        return True

    def check_streams(self) -> None:
        q = self.query
        spans = q.stream_spans if len(q.stream_spans) == len(q.streams) else ()
        seen: set[str] = set()
        for i, name in enumerate(q.streams):
            if name in seen:
                self.out.report(CeqlValidationError, f"Stream '{name}' is listed twice in FROM",
                                spans[i] if spans else q.span)
            seen.add(name)
        for node in formula_nodes(q.where):
            if isinstance(node, A.EventType) and node.stream is not None \
                    and node.stream not in seen:
                self.out.report(UnknownStreamError,
                                f"Unknown stream '{node.stream}' in '{node.stream}>{node.name}': "
                                f"FROM lists {names_list(q.streams)}; add it to FROM or fix the "
                                f"name{did_you_mean(node.stream, q.streams)}",
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
                self.out.report(CeqlValidationError, f"Variable '{name}' is selected twice", span)
            elif name not in bound:
                self.out.report(UnknownVariableError, self.unknown_variable(name, "SELECT"), span,
                                self.out.head_width(name, span))
            elif name in self.negated:
                kept = positive_variables(q.where)
                self.out.report(NegatedVariableError,
                                f"'{name}' cannot be selected: it is a negated variable "
                                f"({self.out.negation_text(self.negated[name])}), and no match "
                                "holds an event of it. Select variables of the match: "
                                f"{names_list(kept)}", span, self.out.head_width(name, span))
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
                        f"{names_list(self.query.streams)}; add {stream} to FROM or fix the "
                        f"name{did_you_mean(name, bound)}")
            return (f"Unknown variable '{name}' in {where}: {name} means the {event_type} "
                    f"events from stream {stream}, and WHERE has no {event_type} (it has "
                    f"{', '.join(leaves)}); write {event_type} or {name} in the formula or fix "
                    f"the name{did_you_mean(name, bound)}")
        return (f"Unknown variable '{name}' in {where}: the WHERE formula binds "
                f"{names_list(bound)}; bind it with AS or fix the name"
                f"{did_you_mean(name, bound)}")

    def check_head(self, atom: A.FilterAtom) -> bool:
        """Check the variable of ``atom``; False when its predicate is not worth checking."""
        width = self.out.head_width(atom.var, atom.span)
        if atom.var not in self.bound:
            self.out.report(UnknownVariableError, self.unknown_variable(atom.var, "FILTER"),
                            atom.span, width)
            return False
        not_node = self.negated.get(atom.var)
        if not_node is not None and atom.var not in _not_aliases(not_node):
            pred = self.out.text_at(atom.pred.span) or format_pred(atom.pred)
            named = f"NOT {format_formula(A.As(strip_as(not_node.formula), 'n'))}"
            self.out.report(NegatedVariableError,
                            f"{self.out.leaf_text(atom)} tests the {atom.var} events of the match, "
                            f"and {atom.var} stands only under NOT "
                            f"({self.out.negation_text(not_node)}), so no match has one. To put a "
                            "condition on the events the NOT forbids, name them and test that "
                            f"name: {named} … FILTER n[{' '.join(pred.split())}]", atom.span, width)
            return False
        if not_node is not None and atom.var not in self.inside:
            self.out.report(UnsafeVariableError,
                            f"{self.out.leaf_text(atom)} is not in a FILTER that covers "
                            f"{self.out.negation_text(not_node)}: a condition on a negated "
                            "variable must be in a FILTER applied to a formula that holds its NOT "
                            f"(this one binds only {names_list(self.inside)}). Move it to a FILTER "
                            "after the sequence that holds the NOT", atom.span, width)
            return True
        if atom.var not in self.inside:
            self.out.report(UnsafeVariableError,
                            f"FILTER on '{atom.var}' can never reject anything: "
                            f"'{atom.var}' is bound outside the formula this FILTER applies "
                            f"to (which binds only {names_list(self.inside)}). Move the FILTER "
                            f"after the part of the formula that binds '{atom.var}', or add "
                            f"parentheses so that the FILTER covers it", atom.span, width)
        return True

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
        span, width = self.out.ref_span(var, node)
        if var in self.negated:
            self.reported.add(key)
            self.negated_ref(var, node, leaf, span, width)
            return
        if var not in self.bound:
            self.reported.add(key)
            self.out.report(UnknownVariableError, self.unknown_variable(var, "FILTER"), span, width)
            return
        if var in self.inside:
            return
        self.reported.add(key)
        head = leaf.var if isinstance(leaf, A.FilterAtom) else None
        wanted = set(condition_refs(head, leaf.pred)) | {var} | ({head} if head else set())
        order = {name: i for i, name in enumerate(written_order(self.query.where))}
        need = sorted(wanted, key=lambda n: (order.get(n, len(order)), n))
        both = ("both " if len(need) == 2 else "") + and_list(need)
        example = self.moved_filter(leaf, set(need))
        advice = (f"Put the FILTER after the formula that binds {both}, e.g. {example}"
                  if example else
                  f"Put the FILTER after the formula that binds {both}, or add parentheses "
                  "so that the FILTER covers it")
        self.out.report(UnsafeVariableError,
                        f"{self.out.leaf_text(leaf)}: '{var}' is not bound in the formula this "
                        f"FILTER applies to (which binds only {names_list(self.inside)}), so it "
                        f"has no events there. {advice}", span, width)

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
            match_var = next((v for v in written_order(fil.formula)
                              if v in self.aliases and v not in self.negated), "a")
            attr = format_name(prev.name)
            self.out.report(NegatedVariableError,
                            f"{self.out.show(prev)} in {self.out.leaf_text(atom)} has nothing to "
                            f"read: '{atom.var}' is a negated variable, and each event its NOT "
                            f"forbids is tested on its own, with no previous {atom.var} event. "
                            "Compare it with an event of the match instead, e.g. "
                            f"{format_name(atom.var)}[{attr} > {format_name(match_var)}.{attr}]",
                            prev.span)

    def negated_ref(self, var: str, node: A.Attr | A.Agg, leaf: A.FilterAtom | A.FilterMatch,
                    span: A.Span, width: int | None) -> None:
        """``var`` (negated) read by ``node`` of ``leaf``, which is not ``var[…]`` itself (or is,
        through an aggregate)."""
        not_node = self.negated[var]
        not_text = self.out.negation_text(not_node)
        if var in _not_aliases(not_node):
            name, own = var, f"{format_name(var)}[…]"
        else:  # a type only under NOT: its conditions need a name
            name = "n"
            own = f"n[…], naming it NOT {format_formula(A.As(strip_as(not_node.formula), 'n'))}"
        what = (f"{self.out.show(node)} aggregates" if isinstance(node, A.Agg)
                else f"{self.out.leaf_text(leaf)} reads")
        head = (f"{what} the negated variable '{var}' ({not_text}), whose events are in no "
                "match")
        if isinstance(node, A.Agg):
            self.out.report(NegatedVariableError,
                            f"{head}: aggregate variables of the match instead; a condition on "
                            f"each event the NOT forbids goes in {own}", span, width)
            return
        head_var = leaf.var if isinstance(leaf, A.FilterAtom) else None
        if head_var is not None and head_var in self.negated:
            self.out.report(NegatedVariableError,
                            f"{self.out.leaf_text(leaf)} relates two negated variables, "
                            f"'{head_var}' and '{var}': the events a NOT forbids are tested one "
                            "at a time, against the events of the match only. Compare each with "
                            f"events of the match, e.g. {format_name(head_var)}[price > a.price]",
                            span, width)
            return
        if head_var is not None and var in _not_aliases(not_node):
            # another variable's condition naming n is a condition on n (c[price > n.price]
            # is n[price < c.price]): a plain conjunct of a FILTER that covers the NOT
            if id(leaf) in self.under_or:
                self.out.report(NegatedVariableError,
                                f"{self.out.leaf_text(leaf)} reads the negated variable '{var}' "
                                f"({not_text}) under OR: a condition on a negated variable says "
                                "which events the NOT forbids, so it must be a plain condition of "
                                "the FILTER, joined by AND. Join it with AND, or write the "
                                f"alternatives inside its brackets: {own}", span, width)
            elif var not in self.inside:
                self.out.report(UnsafeVariableError,
                                f"{self.out.leaf_text(leaf)} reads the negated variable '{var}' in "
                                f"a FILTER that does not cover {not_text}: a condition on a "
                                "negated variable must be in a FILTER applied to a formula that "
                                "holds its NOT. Move it to a FILTER after the sequence that holds "
                                "the NOT",
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
        self.out.report(NegatedVariableError,
                        f"{head}: {why}. To relate the events the NOT forbids to the match, "
                        f"{advice}", span, width)

    def example_variable(self, leaf: A.FilterMatch) -> str:
        """A variable to show in advice about ``leaf``: one it reads, else one of its FILTER's
        formula (an AS name first), else ``b``."""
        refs = [e.var for e in expr_nodes(leaf.pred)
                if isinstance(e, A.Agg) or (isinstance(e, A.Attr) and e.var is not None)]
        if refs and refs[0] is not None:
            return format_name(refs[0])
        fil = self.filter
        names = written_order(fil.formula) if fil is not None else []
        name = next((v for v in names if v in self.aliases), names[0] if names else "b")
        return format_name(name)


def _not_aliases(node: A.Not) -> set[str]:
    """The AS names inside a NOT."""
    return {n.var for n in formula_nodes(node.formula) if isinstance(n, A.As)}


def strip_as(f: A.Formula) -> A.Formula:
    """``f`` without one ``AS`` around it."""
    return f.formula if isinstance(f, A.As) else f


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
    parts = chain_operands(cond, A.FilterAnd)  # the AND chain's conditions, in text order
    if not any(p is leaf for p in parts):
        return None
    rest = [p for p in parts if p is not leaf]
    out = rest[0]
    for p in rest[1:]:
        out = A.FilterAnd(out, p)
    return out


def written_order(root: A.Formula) -> list[str]:
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
