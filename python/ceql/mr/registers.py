"""A thread's registers: what of the match so far its DEFINE conditions read, derived from what
the compiled conditions recorded (:attr:`ceql.mr.expressions.Compiler.needs`).

Derived exactly (threads with equal registers have equal futures, so the matcher merges them):

* ``v.x``, ``LAST(v.x, k)``, ``PREV``/``NEXT`` of them, ``CLASSIFIER(u)``: the last k+1 rows
  labelled ``v`` (with their variables) — nothing when ``v`` is the condition's own variable
  and ``k = 0`` (the row being decided);
* ``FIRST(v.x, k)``: the first k+1 rows labelled ``v``;
* ``COUNT(v.*)``: a count; ``COUNT(*)``, ``FIRST(x, k)``, ``LAST(x, k)`` (k > 0): the match's
  first row;
* ``SUM``/``AVG``/``MIN``/``MAX``/``COUNT`` (DISTINCT too): running accumulators;
* columns of the current row, ``PREV``/``NEXT`` of the universal variable, ``CLASSIFIER()``:
  nothing (rows only).

Fallback (exact too, but threads merge only when their labellings are equal): when a condition
reads the variable of a row navigation reaches (``PREV(CLASSIFIER())``,
``FIRST(CLASSIFIER(), k)``), the registers are the labels so far.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from .expressions import Need
from .values import truth
from .views import AggSpec, Compiled, MatchView, RowSet

__all__ = ["RegisterView", "Registers"]

#: A register's update: (its state, the row's variable, the row, the rows) → its new state.
_Update = Callable[[object, str, int, "_Rows"], object]


class _Rows:
    """What an aggregate's argument reads: the partition's rows."""

    def __init__(self, rows: Sequence[Mapping[str, object]]) -> None:
        self.rows = rows


class RegisterView:
    """A view of a thread's match so far read from its registers (DEFINE only)."""

    number = None

    def __init__(self, rows: Sequence[Mapping[str, object]], slots: Mapping[Need, int]) -> None:
        self.rows = rows
        self.slots = slots
        # the slot of ("last", rows) by rows, read once a condition reads a row
        self.last_slots = {k[1]: i for k, i in slots.items() if k[0] == "last"}
        self.cur: int | None = None
        self.state: tuple[object, ...] = ()

    def _start(self) -> int:
        return self.state[self.slots[("start",)]]  # type: ignore[return-value]

    def last(self, rows: RowSet, k: int, final: bool) -> int | None:
        cur: int = self.cur  # type: ignore[assignment]
        if rows is None:
            return cur - k if cur - k >= self._start() else None
        pairs: tuple[tuple[int, str], ...] = self.state[self.last_slots[rows]]  # type: ignore[assignment]
        return pairs[-1 - k][0] if k < len(pairs) else None

    def first(self, rows: RowSet, k: int, final: bool) -> int | None:
        cur: int = self.cur  # type: ignore[assignment]
        if rows is None:
            r = self._start() + k
            return r if r <= cur else None
        pairs: tuple[tuple[int, str], ...] = self.state[self.slots[("first", rows)]]  # type: ignore[assignment]
        return pairs[k][0] if k < len(pairs) else None

    def count(self, rows: RowSet, final: bool) -> int:
        if rows is None:
            return self.cur - self._start() + 1  # type: ignore[operator]
        return self.state[self.slots[("count", rows)]]  # type: ignore[return-value]

    def label(self, r: int) -> str | None:
        raise AssertionError("labels of rows are not kept in derived registers")

    def classifier(self, rows: RowSet, final: bool) -> str | None:
        pairs: tuple[tuple[int, str], ...] = self.state[self.slots[("last", rows)]]  # type: ignore[assignment]
        return pairs[-1][1] if pairs else None

    def aggregate(self, spec: AggSpec, final: bool) -> object:
        return spec.acc.result(self.state[self.slots[("agg", spec)]])


def _tracker(need: Need, depth: int) -> tuple[object, RowSet, _Update]:
    """(initial state, the rows it follows, update(state, var, i))."""
    kind = need[0]

    def start(s: Any, var: str, i: int, rows: _Rows) -> object:
        return i if s is None else s

    def last(s: Any, var: str, i: int, rows: _Rows) -> object:
        return (*s, (i, var))[-depth:]

    def last_one(s: Any, var: str, i: int, rows: _Rows) -> object:
        return ((i, var),)  # last's value for depth 1

    def last_two(s: Any, var: str, i: int, rows: _Rows) -> object:
        return (s[-1], (i, var)) if s else ((i, var),)  # last's value for depth 2

    def first(s: Any, var: str, i: int, rows: _Rows) -> object:
        return s if len(s) >= depth else (*s, (i, var))

    def count(s: Any, var: str, i: int, rows: _Rows) -> object:
        return s + 1

    if kind == "start":
        return None, None, start
    follows: RowSet = need[1]  # type: ignore[assignment]
    if kind == "last":
        return (), follows, (last_one if depth == 1 else last_two if depth == 2 else last)
    if kind == "first":
        return (), follows, first
    if kind == "count":
        return 0, follows, count
    raise AssertionError(kind)


def _agg_update(spec: AggSpec) -> _Update:
    acc, arg = spec.acc, spec.arg

    def update(s: Any, var: str, i: int, rows: _Rows) -> object:
        return acc.add(s, arg(rows, i))  # type: ignore[arg-type]  # reads rows only
    return update


def _describe(key: Need, depth: int) -> str:
    if key[0] == "start":
        return "the match's first row"
    members: frozenset[str] = key[1]  # type: ignore[assignment]
    rows = ", ".join(sorted(members))
    if key[0] == "count":
        return f"a count of rows labelled {rows}"
    which = "last" if key[0] == "last" else "first"
    return f"the {which} {depth} row(s) labelled {rows}"


def _order(key: Need) -> tuple[str, str]:
    """A register's place: by kind, then by its variables (aggregates as they were
    compiled)."""
    if key[0] == "agg":
        spec: AggSpec = key[1]  # type: ignore[assignment]
        return "agg", f"{spec.seq:020d}"
    if key[0] == "start":
        return "start", ""
    members: frozenset[str] = key[1]  # type: ignore[assignment]
    return str(key[0]), ",".join(sorted(members))


class Registers:
    """How threads' registers start and change, and the ``step`` the matcher calls.

    ``needs``: what the conditions read; ``variables``: the pattern's primary variables.
    """

    def __init__(self, needs: set[Need], variables: Sequence[str]) -> None:
        self.derived = ("labels",) not in needs
        self.slots: dict[Need, int] = {}
        self.initial: tuple[object, ...] = ()
        self.updates: dict[str, list[tuple[int, _Update]]] = {v: [] for v in variables}
        self.described: list[str] = []
        self._keys: list[Need] = []
        if not self.derived:
            self.described.append("the labels so far (a condition reads the variable of a "
                                   "row navigation reaches)")
            return
        depth: dict[Need, int] = {}
        for need in needs:
            key: Need = need if need[0] in ("start", "count", "agg") else need[:2]
            k: int = need[2] if len(need) > 2 else 0  # type: ignore[assignment]
            depth[key] = max(depth.get(key, 0), k + 1)
        initial: list[object] = []
        for key in sorted(depth, key=_order):
            slot = len(initial)
            self.slots[key] = slot
            if key[0] == "agg":
                spec: AggSpec = key[1]  # type: ignore[assignment]
                initial.append(spec.acc.initial)
                rows = spec.rows
                update = _agg_update(spec)
                self.described.append(f"a running {spec.acc.name}")
            else:
                init, rows, update = _tracker(key, depth[key])
                initial.append(init)
                self.described.append(_describe(key, depth[key]))
            for v in variables:
                if rows is None or v in rows:
                    self.updates[v].append((slot, update))
        self.initial = tuple(initial)
        self._keys = sorted(self.slots, key=self.slots.__getitem__)

    # ............................................................ saving
    def plain(self, regs: Hashable) -> object:
        """A thread's registers as plain data for a snapshot."""
        state: tuple[object, ...] = regs  # type: ignore[assignment]
        if not self.derived:
            return list(state)
        out: list[object] = []
        for key, value in zip(self._keys, state, strict=True):
            if key[0] == "agg":
                spec: AggSpec = key[1]  # type: ignore[assignment]
                out.append(spec.acc.plain(value))
            elif key[0] in ("last", "first"):
                out.append([list(p) for p in value])  # type: ignore[attr-defined]
            else:
                out.append(value)
        return out

    def from_plain(self, data: object) -> Hashable:
        """The registers :meth:`plain` gave ``data`` for (ValueError: not such data)."""
        if not isinstance(data, list):
            raise ValueError("registers")
        if not self.derived:
            if not all(type(v) is str for v in data):
                raise ValueError("the labels so far")
            return tuple(data)
        if len(data) != len(self._keys):
            raise ValueError("registers")
        out: list[object] = []
        for key, value in zip(self._keys, data, strict=True):
            kind = key[0]
            if kind == "agg":
                spec: AggSpec = key[1]  # type: ignore[assignment]
                out.append(spec.acc.from_plain(value))
            elif kind in ("last", "first"):
                if not isinstance(value, list) or not all(
                        isinstance(p, list) and len(p) == 2 and type(p[0]) is int
                        and type(p[1]) is str for p in value):
                    raise ValueError("rows labelled")
                out.append(tuple((p[0], p[1]) for p in value))
            elif kind == "count":
                if type(value) is not int or value < 0:
                    raise ValueError("a count")
                out.append(value)
            else:  # the match's first row
                if value is not None and type(value) is not int:
                    raise ValueError("a first row")
                out.append(value)
        return tuple(out)

    def step_function(self, rows: Sequence[Mapping[str, object]],
                      conditions: Mapping[str, Compiled]
                      ) -> Callable[[str, Hashable, int], Hashable | None]:
        """The matcher's ``step`` over one partition's ``rows``: update the registers with row
        ``i`` taken as ``var``, then decide ``var``'s condition on them (running semantics)."""
        if not self.derived:
            def by_labels(var: str, regs: Hashable, i: int) -> Hashable | None:
                labels: tuple[str, ...] = (*regs, var)  # type: ignore[misc]
                cond = conditions.get(var)
                if cond is not None:
                    view = MatchView(rows, i - len(labels) + 1, labels, i, None)
                    if truth(cond(view, None)) is not True:
                        return None
                return labels
            return by_labels
        view = RegisterView(rows, self.slots)
        updates = self.updates
        holder = _Rows(rows)

        plan = {v: (ups, conditions.get(v)) for v, ups in updates.items()}

        def step(var: str, regs: Hashable, i: int) -> Hashable | None:
            ups, cond = plan[var]
            state: tuple[object, ...] = regs  # type: ignore[assignment]
            if ups:
                new = list(state)
                for slot, update in ups:
                    new[slot] = update(new[slot], var, i, holder)
                state = tuple(new)
            if cond is None:
                return state
            view.cur = i
            view.state = state
            got = cond(view, None)  # type: ignore[arg-type]
            if got is True:
                return state
            if got is not None and got is not False:
                truth(got)  # raises: not a condition's value
            return None
        return step
