"""How fast a query's output can grow with its input, read from the IR (SEMANTICS.md).

Without a window a match may start anywhere before its last event, so the number of matches
over ``n`` events is a polynomial in ``n`` whose degree is the number of events a match picks
freely, or exponential when an iteration picks any subset:

* an event type picks 1 event; ``φ ; ψ`` adds the two; ``φ : ψ`` adds them less one (the
  first event of ψ is the one after φ's last); ``φ AND ψ`` adds the two, as ``;`` does (in
  either order: the same sets of events); OR takes the larger; AS and FILTER keep it; a
  ``NOT`` picks none (it only removes matches);
* ``φ+`` is exponential (any subset of the iterated events), ``φ :+`` picks 2 (a run from
  its first to its last event) when φ picks 1, else exponential.

Selection strategies and clauses then bound it (all per end position, then summed):
NEXT and LAST keep one match per event (linear); STRICT keeps matches that hold every event
of their interval (at most one per length: linear for a bounded length, else the ``n²/2``
intervals); MAX keeps the maximal ones — an iteration of one event takes every such event
between its neighbours, so it picks 1 (0 when it opens the pattern, as it then reaches back to
the first such event, unless the pattern also ends with one), other iterations stay
exponential; ``SELECT NONE`` reports intervals
(``n²/2`` at most); LIMIT n keeps n per event and a WITHIN window bounds what one event can end
(both linear in ``n``); CONSUME BY ANY/PARTITION lowers a polynomial by one degree (the
matches ending at one event share no event with the next ones). PARTITION BY bounds nothing
by itself: one key can hold every event.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..constants import CONSUME_NONE
from ..ir import nodes as A
from ..ir.walks import formula_nodes

__all__ = ["Growth", "output_growth"]

_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


@dataclass(frozen=True)
class Growth:
    """How many matches ``n`` events can give: ``degree`` (matches grow like ``n**degree``;
    ``None``: exponentially), ``bound`` (e.g. ``"n²/4"``, in words when exponential) and
    ``why`` (the part of the query it comes from)."""

    degree: int | None
    bound: str
    why: str

    @property
    def linear(self) -> bool:
        """True when the output grows at most linearly with the input."""
        return self.degree is not None and self.degree <= 1


@dataclass(frozen=True)
class _Shape:
    degree: int | None  # None: exponential
    bounded: bool  # every match has at most a fixed number of events
    letters: frozenset[tuple[str | None, str]] | None  # a single-event formula: its types
    chain: tuple[frozenset[tuple[str | None, str]], ...] | None  # a ';' chain of those


def _power(degree: int) -> str:
    return "n" if degree == 1 else f"n{str(degree).translate(_SUPERSCRIPT)}"


def _shapes(root: A.Formula, max_strategy: bool) -> _Shape:
    """The shape of ``root`` (bottom-up, without recursion)."""
    done: dict[int, _Shape] = {}
    todo: list[tuple[A.Formula, bool]] = [(root, False)]
    while todo:
        node, ready = todo.pop()
        children: tuple[A.Formula, ...]
        if isinstance(node, A.Seq | A.Or | A.And):
            children = (node.left, node.right)
        elif isinstance(node, A.As | A.Plus | A.Filter):
            children = (node.formula,)
        else:  # an event type, or a NOT (whose inside picks nothing)
            children = ()
        if children and not ready:
            todo.append((node, True))
            todo.extend((c, False) for c in children)
            continue
        done[id(node)] = _shape(node, [done[id(c)] for c in children], max_strategy)
    return done[id(root)]


def _shape(node: A.Formula, kids: list[_Shape], max_strategy: bool) -> _Shape:
    if isinstance(node, A.EventType):
        letter = frozenset({(node.stream, node.name)})
        return _Shape(1, True, letter, (letter,))
    if isinstance(node, A.As | A.Filter):
        return kids[0]
    if isinstance(node, A.Or):
        a, b = kids
        degree = None if None in (a.degree, b.degree) else max(a.degree or 0, b.degree or 0)
        letters = a.letters | b.letters if a.letters is not None and b.letters is not None \
            else None
        return _Shape(degree, a.bounded and b.bounded, letters,
                      (letters,) if letters is not None else None)
    if isinstance(node, A.Not):
        return _Shape(0, True, None, ())
    if isinstance(node, A.Seq | A.And):
        a, b = kids
        contiguous = isinstance(node, A.Seq) and node.contiguous
        degree = None
        if a.degree is not None and b.degree is not None:
            degree = a.degree + b.degree - (1 if contiguous else 0)
        chain = a.chain + b.chain if (a.chain is not None and b.chain is not None
                                      and not contiguous) else None
        return _Shape(degree, a.bounded and b.bounded, None, chain)
    assert isinstance(node, A.Plus)
    body = kids[0]
    if node.contiguous:
        return _Shape(2 if body.degree == 1 else None, False, None, None)
    if max_strategy and body.letters is not None:
        return _Shape(1, False, None, None)
    return _Shape(None, False, None, None)


def _letter_block(node: A.Formula) -> bool:
    """True for ``φ+`` (not ``:+``) where φ is a single event (types, OR, AS, FILTER)."""
    return isinstance(node, A.Plus) and not node.contiguous and all(
        isinstance(n, A.EventType | A.Or | A.As | A.Filter) for n in formula_nodes(node.formula))


def _edge(root: A.Formula, left: bool) -> tuple[A.Formula, A.Seq | None]:
    """The first (``left``) or last element of ``root``'s top sequence and the ``;``/``:``
    joining it to its neighbour."""
    node, joint = root, None
    while True:
        if isinstance(node, A.As | A.Filter):
            node = node.formula
        elif isinstance(node, A.Seq):
            joint = node
            node = node.left if left else node.right
        else:
            return node, joint


def _opens_with_letter_block(root: A.Formula) -> bool:
    """Under MAX, an opening ``A+`` followed by ``;`` reaches back to the first A, so it picks
    no event freely — unless the pattern also ends with one (whose events then split)."""
    first, joint = _edge(root, True)
    last, _ = _edge(root, False)
    return (joint is not None and not joint.contiguous and _letter_block(first)
            and not _letter_block(last))


def output_growth(query: A.Query) -> Growth:
    """How many matches ``query`` can give over ``n`` events, at most (see the module
    docstring for the rules); WITHIN, LIMIT, NEXT and LAST make it linear."""
    strategy = query.strategy
    if query.within is not None:
        return Growth(1, "n", "WITHIN bounds the matches each event can end")
    if query.limit is not None:
        return Growth(1, f"{query.limit}n", f"LIMIT {query.limit} per event")
    if strategy in ("NEXT", "LAST"):
        return Growth(1, "n", f"SELECT {strategy} keeps one match per event")
    shape = _shapes(query.where, strategy == "MAX")
    degree = shape.degree
    bound: str | None = None
    why = "each match picks {degree} of the events freely"
    if strategy == "MAX" and degree is not None and degree > 1 \
            and _opens_with_letter_block(query.where):
        degree -= 1
    if strategy == "STRICT":
        if shape.bounded:
            return Growth(1, "n", "SELECT STRICT keeps matches of consecutive events, "
                          "of bounded length")
        degree, bound = 2, "n²/2"
        why = "under SELECT STRICT a match is any run of consecutive events"
    if query.select == () and (degree is None or degree > 2):
        degree, bound, why = 2, "n²/2", "SELECT NONE reports intervals"
    if degree is None:
        return Growth(None, "exponentially many", "an iteration (+) can take any subset of "
                      "its events")
    if query.consume != CONSUME_NONE and degree > 1:
        return Growth(degree - 1, f"on the order of {_power(degree - 1)}",
                      f"CONSUME BY {query.consume} lowers the degree by one")
    if degree <= 1:
        return Growth(degree, "n", "one match per event at most")
    if bound is None:
        bound = _chain_bound(shape, degree) or f"on the order of {_power(degree)}"
    return Growth(degree, bound, why.format(degree=degree))


def _chain_bound(shape: _Shape, degree: int) -> str | None:
    """The exact worst case of a ``;`` chain of single events: ``(n/d)^d`` when their types
    differ, ``n^d/d!`` when they are all the same type."""
    chain = shape.chain
    if chain is None or len(chain) != degree:
        return None
    if all(a.isdisjoint(b) for i, a in enumerate(chain) for b in chain[i + 1:]):
        return f"{_power(degree)}/{degree ** degree}"
    if all(c == chain[0] and len(c) == 1 for c in chain):
        return f"{_power(degree)}/{math.factorial(degree)}"
    return None
