"""The named walks over the IR, written once and used by every stage.

All walks are iterative, so a query nested thousands of levels deep cannot overflow the stack.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
import threading
from collections.abc import Iterator
from typing import Any, TypeVar

from . import nodes as N

__all__ = [
    "MAX_DEPTH",
    "bound_variables",
    "canonical_repr",
    "chain_operands",
    "condition_refs",
    "depth",
    "expr_nodes",
    "filter_atoms",
    "filter_leaves",
    "formula_nodes",
    "has_contiguity",
    "is_correlated",
    "is_correlated_query",
    "most_events",
    "negated_variables",
    "output_variables",
    "positive_variables",
    "pred_leaves",
    "recursion_for",
    "seq_elements",
    "stream_views",
    "top_sequence",
    "variable_leaves",
]

MAX_DEPTH = 2000
"""The deepest query (in IR levels) ceql compiles; deeper ones are refused at compile time."""


_T = TypeVar("_T")


def chain_operands(node: _T, kind: type[Any] | tuple[type[Any], ...]) -> list[_T]:
    """The operands of a chain of binary ``kind`` nodes (``left``/``right``: an OR of ORs,
    an AND of ANDs) rooted at ``node``, left to right; ``[node]`` when it is not one."""
    out: list[_T] = []
    todo = [node]
    while todo:
        x = todo.pop()
        if isinstance(x, kind):
            todo += [x.right, x.left]
        else:
            out.append(x)
    return out


def formula_nodes(root: N.Formula) -> Iterator[N.Formula]:
    """Every formula node below ``root`` (included), in source order (the inside of a
    ``NOT`` included)."""
    todo: list[N.Formula] = [root]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, N.Seq | N.Or | N.And):
            todo.extend((node.right, node.left))
        elif isinstance(node, N.As | N.Plus | N.Filter | N.Not):
            todo.append(node.formula)


def _leaf_names(node: N.EventType) -> tuple[str, ...]:
    """The variables an event-type leaf binds: its type, and ``S>T`` when qualified."""
    if node.stream is None:
        return (node.name,)
    return (node.name, f"{node.stream}>{node.name}")


def _formula_nodes_in(root: N.Formula) -> Iterator[tuple[N.Formula, N.Not | None]]:
    """Every formula node below ``root`` (included) in source order, with the innermost
    ``NOT`` it stands in (None outside every NOT; a NOT node itself is outside its own)."""
    todo: list[tuple[N.Formula, N.Not | None]] = [(root, None)]
    while todo:
        node, under = todo.pop()
        yield node, under
        if isinstance(node, N.Seq | N.Or | N.And):
            todo += [(node.right, under), (node.left, under)]
        elif isinstance(node, N.Not):
            todo.append((node.formula, node))
        elif isinstance(node, N.As | N.Plus | N.Filter):
            todo.append((node.formula, under))


def bound_variables(root: N.Formula) -> set[str]:
    """Variables bound by ``root``: every ``AS`` name and every event type (and ``S>T`` for a
    stream-qualified one, the events its own leaves bind), those of a ``NOT`` included (a
    FILTER may name a negated variable: :func:`negated_variables` tells them apart)."""
    names: set[str] = set()
    for node in formula_nodes(root):
        if isinstance(node, N.EventType):
            names.update(_leaf_names(node))
        elif isinstance(node, N.As):
            names.add(node.var)
    return names


def positive_variables(root: N.Formula) -> set[str]:
    """The variables ``root`` binds outside every ``NOT``: those whose events a match can
    hold (:func:`bound_variables` without the names only a NOT binds)."""
    names: set[str] = set()
    for node, under in _formula_nodes_in(root):
        if under is not None:
            continue
        if isinstance(node, N.EventType):
            names.update(_leaf_names(node))
        elif isinstance(node, N.As):
            names.add(node.var)
    return names


def negated_variables(root: N.Formula) -> dict[str, N.Not]:
    """Each name that only a ``NOT`` of ``root`` binds → that ``NOT`` (the first, in source
    order, when several do), in source order.

    These are a NOT's ``AS`` name (``n`` of ``NOT B AS n``) and the event types written
    only under NOT (``B`` there, and ``S>B`` for a leaf ``S>B``). A type that also stands
    outside every NOT (``A ; NOT B ; B``) is a positive variable, not a negated one: ``B[…]``
    in a FILTER always means the positive ``B`` events. A negated variable holds no event of
    any match: it is never output, and only its own FILTER atoms (``n[…]``) may name it.
    """
    found: dict[str, N.Not] = {}
    positive: set[str] = set()
    for node, under in _formula_nodes_in(root):
        names: tuple[str, ...]
        if isinstance(node, N.EventType):
            names = _leaf_names(node)
        elif isinstance(node, N.As):
            names = (node.var,)
        else:
            continue
        for name in names:
            if under is None:
                positive.add(name)
            else:
                found.setdefault(name, under)
    return {name: node for name, node in found.items() if name not in positive}


def most_events(root: N.Formula, var: str, view: bool = False) -> float:
    """The most events ``var`` binds in one valuation of ``root`` (``inf`` when unbounded
    or unknown). ``view``: ``var`` is ``S>T`` and WHERE writes no leaf ``S>T``
    (:func:`stream_views`), so it names the events of ``T`` from stream ``S`` that any ``T``
    leaf binds, and every ``T`` leaf counts; otherwise the leaves ``S>T`` count."""
    stream, sep, event_type = var.partition(">")
    qualified = view and bool(sep and stream and event_type)
    # post-order: for each node, (events var binds, events the node's valuation has)
    out: list[tuple[float, float]] = []
    todo: list[tuple[N.Formula, bool]] = [(root, False)]
    while todo:
        node, ready = todo.pop()
        if isinstance(node, N.EventType):
            mine = node.name == event_type if qualified else (
                var == node.name or (node.stream is not None
                                     and var == f"{node.stream}>{node.name}"))
            out.append((1.0 if mine else 0.0, 1.0))
        elif not ready:
            todo.append((node, True))
            if isinstance(node, N.Seq | N.Or | N.And):
                todo += [(node.right, False), (node.left, False)]
            elif isinstance(node, N.As | N.Plus | N.Filter | N.Not):
                todo.append((node.formula, False))
            else:  # a node this walk does not know: assume the worst
                return math.inf
        elif isinstance(node, N.Seq | N.Or | N.And):
            (rv, rn), (lv, ln) = out.pop(), out.pop()
            out.append((max(lv, rv), max(ln, rn)) if isinstance(node, N.Or)
                       else (lv + rv, ln + rn))
        elif isinstance(node, N.Not):  # its events are in no valuation
            out.pop()
            out.append((0.0, 0.0))
        elif isinstance(node, N.Plus):
            v, n = out.pop()
            out.append((math.inf if v else 0.0, math.inf))
        elif isinstance(node, N.As):
            v, n = out.pop()
            out.append((n if node.var == var else v, n))
        # a Filter keeps its formula's counts
    return out[0][0]


def top_sequence(root: N.Formula) -> N.Seq | None:
    """The WHERE formula's own ``;``/``:`` sequence: ``root`` under its FILTERs and AS names,
    when that is a sequence (where a NOT may also stand first or last, with WITHIN)."""
    while isinstance(root, N.Filter | N.As):
        root = root.formula
    return root if isinstance(root, N.Seq) else None


def seq_elements(f: N.Seq) -> list[tuple[N.Formula, bool]]:
    """The elements of the ``;``/``:`` chain ``f`` heads, left to right, each with whether
    the separator before it is ``:`` (contiguous); the first's flag is False.

    The chain is ``f``'s left spine, as the parser nests ``A ; B : C`` (``Seq(Seq(A, B), C)``);
    a right operand that is itself a sequence was written in parentheses and is one element
    (``A ; (B ; C)``: ``A`` and ``B ; C``), and so is anything else (``(A ; B) AS x``).
    ``A ; NOT B ; C`` is ``[(A, False), (Not(B), False), (C, False)]``.
    """
    rights: list[tuple[N.Formula, bool]] = []
    node: N.Formula = f
    while isinstance(node, N.Seq):
        rights.append((node.right, node.contiguous))
        node = node.left
    return [(node, False), *reversed(rights)]


def variable_leaves(root: N.Formula) -> dict[str, frozenset[int]]:
    """Each variable of ``root`` → the event-type occurrences that bind it.

    Occurrences are numbered in source order; a type name binds its own occurrences, an ``AS``
    name every occurrence inside its formula. Variables come in the order they first appear in
    the text (an ``AS`` name after the formula it names). The occurrences inside a ``NOT`` are
    numbered too but bind nothing (a negated event is in no match), so a name only a NOT
    binds is left out.
    """
    leaves: dict[str, set[int]] = {}
    order: dict[str, None] = {}  # first appearance in the text
    active: list[str] = []  # the AS names enclosing the node being visited
    negated = 0  # how many NOTs enclose it
    count = 0
    todo: list[tuple[N.Formula, bool]] = [(root, False)]
    while todo:
        node, leaving = todo.pop()
        if isinstance(node, N.As):
            if leaving:
                active.pop()
                if not negated:
                    order.setdefault(node.var)
            else:
                active.append(node.var)
                todo += [(node, True), (node.formula, False)]
        elif isinstance(node, N.Not):
            if leaving:
                negated -= 1
            else:
                negated += 1
                todo += [(node, True), (node.formula, False)]
        elif isinstance(node, N.EventType):
            if not negated:
                order.setdefault(node.name)
                for name in (node.name, *active):
                    leaves.setdefault(name, set()).add(count)
            count += 1
        elif isinstance(node, N.Seq | N.Or | N.And):
            todo += [(node.right, False), (node.left, False)]
        elif isinstance(node, N.Plus | N.Filter):
            todo.append((node.formula, False))
    return {name: frozenset(leaves.get(name, ())) for name in order}


def pred_leaves(pred: N.Pred) -> Iterator[N.Pred]:
    """The leaves of a predicate under AND, OR and NOT (comparisons, IN, LIKE…), in text
    order, without recursion."""
    todo: list[N.Pred] = [pred]
    while todo:
        p = todo.pop()
        if isinstance(p, N.PAnd | N.POr):
            todo += [p.right, p.left]
        elif isinstance(p, N.PNot):
            todo.append(p.operand)
        else:
            yield p


def output_variables(query: N.Query) -> tuple[str, ...]:
    """The variables a query reports: the SELECT list, or for ``SELECT *`` every variable in
    order of first appearance in WHERE, but a type name that only repeats an alias.

    A type name ``T`` is left out when an ``AS`` variable binds exactly the occurrences of
    ``T`` (no other event, none of ``T``'s missing), so the two hold the same events in every
    match: ``SELL AS s`` reports ``s`` only, ``SELL AS s ; SELL`` reports ``SELL`` and ``s``
    (``SELL`` binds more), ``(SELL OR BUY) AS t`` reports ``SELL``, ``BUY`` and ``t``.
    A negated variable (``n`` and ``B`` of ``A ; NOT B AS n ; C``) is never reported.
    """
    if query.select is not None:
        return query.select
    leaves = variable_leaves(query.where)
    aliases = {n.var for n in formula_nodes(query.where)
               if isinstance(n, N.As) and n.var in leaves}
    alias_leaves = {leaves[name] for name in aliases}
    return tuple(name for name, ids in leaves.items()
                 if name in aliases or ids not in alias_leaves)


def filter_leaves(cond: N.FilterExpr) -> Iterator[N.FilterAtom | N.FilterMatch]:
    """The ``X[P]`` atoms and ``[P]`` match conditions of a FILTER condition, in source
    order."""
    todo: list[N.FilterExpr] = [cond]
    while todo:
        node = todo.pop()
        if isinstance(node, N.FilterAtom | N.FilterMatch):
            yield node
        else:
            todo.extend((node.right, node.left))


def filter_atoms(cond: N.FilterExpr) -> Iterator[N.FilterAtom]:
    """The ``X[P]`` atoms of a FILTER condition, in source order (match conditions left
    out)."""
    for leaf in filter_leaves(cond):
        if isinstance(leaf, N.FilterAtom):
            yield leaf


def expr_nodes(pred: N.Pred) -> Iterator[N.Expr]:
    """Every expression node inside a predicate (operands of comparisons, IN, LIKE…), in text
    order, without recursion."""
    todo: list[N.Expr] = []
    for leaf in pred_leaves(pred):
        if isinstance(leaf, N.Compare):
            todo += [leaf.left, leaf.right]
        elif isinstance(leaf, N.InRange):
            todo += [leaf.expr, leaf.lo, leaf.hi]
        elif isinstance(leaf, N.InSet):
            todo += [leaf.expr, *leaf.values]
        elif isinstance(leaf, N.Like):
            todo.append(leaf.expr)
        todo.reverse()
        while todo:
            e = todo.pop()
            yield e
            if isinstance(e, N.Arith):
                todo += [e.right, e.left]
            elif isinstance(e, N.Neg):
                todo.append(e.operand)


def condition_refs(var: str | None, pred: N.Pred) -> frozenset[str]:
    """The variables other than ``var`` whose events ``pred`` (of ``var[pred]``, or of a match
    condition when ``var`` is None) reads: qualified attributes and aggregates."""
    refs: set[str] = set()
    for e in expr_nodes(pred):
        if isinstance(e, N.Attr) and e.var is not None and e.var != var:
            refs.add(e.var)
        elif isinstance(e, N.Agg):
            refs.add(e.var)
    return frozenset(refs)


def stream_views(query: N.Query) -> dict[str, frozenset[str]]:
    """Each event type ``T`` → the streams ``S`` whose ``S>T`` the query names as a variable
    (a FILTER head, ``Y.attr``, an aggregate, the SELECT list) while WHERE writes no leaf
    ``S>T`` (under a NOT included), an AS name spelt ``S>T`` aside. ``S>T`` there means the
    events of ``T`` that came from stream ``S`` (an event without a stream belongs to every
    stream), whichever ``T`` leaf binds them; where WHERE writes ``S>T`` leaves, it names
    their events only (and is no view)."""
    names: set[str] = set(query.select or ())
    aliases: set[str] = set()
    for node in formula_nodes(query.where):
        if isinstance(node, N.As):
            aliases.add(node.var)
        elif isinstance(node, N.EventType) and node.stream is not None:
            aliases.add(f"{node.stream}>{node.name}")  # written: names its leaves' events
        elif isinstance(node, N.Filter):
            for leaf in filter_leaves(node.cond):
                if isinstance(leaf, N.FilterAtom):
                    names.add(leaf.var)
                names |= condition_refs(None, leaf.pred)
    views: dict[str, set[str]] = {}
    for name in sorted(names - aliases):
        stream, sep, event_type = name.partition(">")
        if sep and stream and event_type:
            views.setdefault(event_type, set()).add(stream)
    return {t: frozenset(s) for t, s in views.items()}


def is_correlated(leaf: N.FilterAtom | N.FilterMatch) -> bool:
    """True for a condition between events: a match condition, or an atom reading another
    variable, an aggregate or ``PREV`` (an atom on one event's attributes is not)."""
    if isinstance(leaf, N.FilterMatch):
        return True
    return any(isinstance(e, N.Prev | N.Agg) or (isinstance(e, N.Attr) and e.var is not None
                                                  and e.var != leaf.var)
               for e in expr_nodes(leaf.pred))


def is_correlated_query(root: N.Formula) -> bool:
    """True when a FILTER of ``root`` holds a condition between events."""
    return any(isinstance(node, N.Filter) and any(map(is_correlated, filter_leaves(node.cond)))
               for node in formula_nodes(root))


def has_contiguity(root: N.Formula) -> bool:
    """True when ``root`` uses ``:`` or ``:+`` anywhere."""
    return any(isinstance(node, N.Seq | N.Plus) and node.contiguous
               for node in formula_nodes(root))


def depth(node: object) -> int:
    """How deeply the IR below ``node`` nests (formulas, conditions and expressions)."""
    deepest = 0
    todo: list[tuple[object, int]] = [(node, 1)]
    while todo:
        n, d = todo.pop()
        deepest = max(deepest, d)
        if dataclasses.is_dataclass(n):
            for f in dataclasses.fields(n):
                v = getattr(n, f.name)
                if dataclasses.is_dataclass(v):
                    todo.append((v, d + 1))
                elif isinstance(v, tuple):
                    todo += [(x, d + 1) for x in v if dataclasses.is_dataclass(x)]
    return deepest


def canonical_repr(node: object) -> str:
    """``repr(node)`` of an IR tree (spans left out), built without recursion."""
    out: list[str] = []
    # (True, text) is emitted as is; (False, value) is a value still to write
    todo: list[tuple[bool, object]] = [(False, node)]
    while todo:
        is_text, x = todo.pop()
        if is_text:
            out.append(x)  # type: ignore[arg-type]
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            parts: list[tuple[bool, object]] = [(True, f"{type(x).__qualname__}(")]
            for i, f in enumerate(f for f in dataclasses.fields(x) if f.repr):
                parts += [(True, f"{', ' if i else ''}{f.name}="), (False, getattr(x, f.name))]
            parts.append((True, ")"))
            todo += reversed(parts)
        elif type(x) is tuple:
            parts = [(True, "(")]
            for i, v in enumerate(x):
                parts += [(True, ", ")] if i else []
                parts.append((False, v))
            parts.append((True, ",)" if len(x) == 1 else ")"))
            todo += reversed(parts)
        else:
            out.append(repr(x))
    return "".join(out)


# The recursion limit is one per process: passes running at once in several threads share it.
# It stays at the largest allowance any of them needs and goes back to the limit found before
# the first one when the last one ends (unless something else changed it meanwhile).
_limit_lock = threading.Lock()
_allowances: list[int] = []
_base_limit = 0  # the limit to go back to
_our_limit = 0  # the limit last set here


def _apply_limit() -> None:
    global _base_limit, _our_limit
    now = sys.getrecursionlimit()
    if now != _our_limit:  # first use, or changed by someone else: the new base
        _base_limit = now
    _our_limit = max([_base_limit, *_allowances])
    if _our_limit != now:
        sys.setrecursionlimit(_our_limit)


@contextlib.contextmanager
def recursion_for(levels: int) -> Iterator[None]:
    """Let recursive passes (dataclass hashing, guard construction) handle ``levels`` levels.

    Thread-safe: the process-wide limit is restored when the last such pass ends.
    """
    allowance = 4 * levels + 1000
    with _limit_lock:
        _allowances.append(allowance)
        _apply_limit()
    try:
        yield
    finally:
        with _limit_lock:
            _allowances.remove(allowance)
            _apply_limit()
