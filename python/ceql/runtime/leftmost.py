"""Leftmost, preferred-first matching of a row pattern (SQL's MATCH_RECOGNIZE), row by row.

A pattern is compiled (:func:`compile_pattern`) into a small program — rows to take under a
variable, ordered choices, jumps, exclusion marks, anchors — and run as a Pike machine: the
threads of every start that is still open advance together, one row at a time, kept in
preferment order (earlier start first; within one start, the order in which a backtracking
matcher would try them: greedy before reluctant, left alternative before right). A thread is
its program counter, its start, the *registers* the caller's conditions need (whatever of the
match so far a DEFINE reads: a running sum, the last row of a variable; ``()`` when the
conditions read rows only) and the rows it took. Two threads of one start at one counter with
equal registers have the same futures, so only the preferred one is kept: with conditions that
read no registers the threads are at most the program's size per open start, whatever the
pattern's nesting.

An iteration of a quantifier past its minimum (the minimum is unrolled) must take a row: one
that took none would change nothing (and, unbounded, repeat for ever), so it fails, as in a
backtracking matcher that refuses empty iterations (docs/match_recognize.md: "an iteration that
labels no row once c ≥ lo is not taken"; ``(A*?)?`` tries ``A`` before the empty match). A
thread carries a bit per quantifier it is in whose current optional iteration has taken nothing
yet, so that two threads at one counter are merged only when that, too, agrees.

A start's match is final once it has matched and no thread it prefers is alive; matches are
given in start order, and the skip mode (``AFTER MATCH SKIP``) closes the starts the match
passes over. Under SKIP PAST LAST ROW a thread is also dropped for an equal one of the
earliest open start (their futures are equal: if that one matches through it, its match covers
the later start, and if it dies, so would the later one). Only the earliest: a start after it
may yet be passed over by its match, and a later start's thread merged into that start's
would be lost with it. Under the other modes a later start may be needed after an earlier one
matched, so threads of different starts are kept apart.

The caller owns the rows and the conditions: ``step(var, registers, i)`` says whether row ``i``
may be taken as ``var`` by a thread with those registers (the row counting as ``var``, the
running semantics of DEFINE), and returns the registers after it, or None.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise, permutations
from typing import Any, NamedTuple

from ..errors import CeqlInputError

__all__ = [
    "SKIP_PAST_LAST_ROW",
    "SKIP_TO_FIRST",
    "SKIP_TO_LAST",
    "SKIP_TO_NEXT_ROW",
    "Alt",
    "Anchor",
    "Concat",
    "Exclude",
    "LeftmostMatcher",
    "PMatch",
    "Pattern",
    "Permute",
    "Program",
    "Quant",
    "Var",
    "compile_pattern",
    "run_rows",
    "variables_of",
]

SKIP_PAST_LAST_ROW = "PAST LAST ROW"
SKIP_TO_NEXT_ROW = "TO NEXT ROW"
SKIP_TO_FIRST = "TO FIRST"
SKIP_TO_LAST = "TO LAST"


# ---------------------------------------------------------------------- patterns

@dataclass(frozen=True)
class Var:
    """One row taken as the pattern variable ``name``."""

    name: str


@dataclass(frozen=True)
class Concat:
    """The parts one after the other (no parts: the empty pattern)."""

    parts: tuple[Pattern, ...]


@dataclass(frozen=True)
class Alt:
    """One of the options, the left ones preferred."""

    options: tuple[Pattern, ...]


@dataclass(frozen=True)
class Quant:
    """``body`` ``lo`` to ``hi`` times (``hi`` None: unbounded); greedy prefers more."""

    body: Pattern
    lo: int
    hi: int | None
    greedy: bool = True


@dataclass(frozen=True)
class Permute:
    """Every order of the parts, in the lexicographic order of their positions."""

    parts: tuple[Pattern, ...]


@dataclass(frozen=True)
class Exclude:
    """``body``, its rows left out of ALL ROWS PER MATCH's output."""

    body: Pattern


@dataclass(frozen=True)
class Anchor:
    """``^`` (``start``: before the partition's first row) or ``$`` (after its last)."""

    start: bool


Pattern = Var | Concat | Alt | Quant | Permute | Exclude | Anchor


# ---------------------------------------------------------------------- the program

# instruction kinds
(_ROW, _SPLIT, _JMP, _MATCH, _EXCL_IN, _EXCL_OUT, _AT_START, _AT_END, _LOOP, _AGAIN,
 _ENTER) = range(11)


class Inst(NamedTuple):
    """One instruction: ``kind``, the variable of a row, its successors."""

    kind: int
    var: str | None = None
    a: int = -1  # next (ROW, JMP, marks, anchors) or the preferred branch (SPLIT)
    b: int = -1  # SPLIT's other branch; a loop's exit
    loop: int = 0  # a quantifier's bit (LOOP, AGAIN, ENTER)
    greedy: bool = True  # LOOP: whether another iteration is preferred to the exit


@dataclass(frozen=True)
class Program:
    """A compiled pattern: instructions, the first at 0, one MATCH."""

    insts: tuple[Inst, ...]
    variables: tuple[str, ...] = field(default=())


class _Builder:
    def __init__(self) -> None:
        self.insts: list[list[Any]] = []
        self.loops = 0

    def emit(self, kind: int, var: str | None = None) -> int:
        self.insts.append([kind, var, -1, -1, 0, True])
        return len(self.insts) - 1

    def patch(self, holes: list[tuple[int, int]], target: int) -> None:
        for i, slot in holes:
            self.insts[i][slot] = target

    def build(self, p: Pattern) -> tuple[int, list[tuple[int, int]]]:
        """Compile ``p``: its entry and the holes (instruction, slot) to its continuation."""
        if isinstance(p, Var):
            i = self.emit(_ROW, p.name)
            return i, [(i, 2)]
        if isinstance(p, Anchor):
            i = self.emit(_AT_START if p.start else _AT_END)
            return i, [(i, 2)]
        if isinstance(p, Exclude):
            i = self.emit(_EXCL_IN)
            entry, holes = self.build(p.body)
            self.insts[i][2] = entry
            o = self.emit(_EXCL_OUT)
            self.patch(holes, o)
            return i, [(o, 2)]
        if isinstance(p, Concat):
            if not p.parts:
                i = self.emit(_JMP)
                return i, [(i, 2)]
            entry, holes = self.build(p.parts[0])
            for part in p.parts[1:]:
                e2, h2 = self.build(part)
                self.patch(holes, e2)
                holes = h2
            return entry, holes
        if isinstance(p, Permute):
            orders = [Concat(tuple(p.parts[k] for k in order))
                      for order in permutations(range(len(p.parts)))]
            return self.build(Alt(tuple(orders)) if len(orders) > 1 else orders[0])
        if isinstance(p, Alt):
            if len(p.options) == 1:
                return self.build(p.options[0])
            s = self.emit(_SPLIT)
            e1, h1 = self.build(p.options[0])
            e2, h2 = self.build(Alt(p.options[1:]))
            self.insts[s][2], self.insts[s][3] = e1, e2
            return s, h1 + h2
        assert isinstance(p, Quant)
        parts: list[Pattern] = [p.body] * p.lo
        if p.hi is None:
            # LOOP: an iteration (its bit set: empty so far) or the exit; AGAIN ends an
            # iteration, which must have taken a row (else it would loop without end)
            entry, holes = (self.build(Concat(tuple(parts))) if parts else (-1, []))
            bit = 1 << self.loops
            self.loops += 1
            s = self.emit(_LOOP)
            e, h = self.build(p.body)
            again = self.emit(_AGAIN)
            self.patch(h, again)
            self.insts[again][2] = s
            self.insts[again][4] = self.insts[s][4] = bit
            self.insts[s][2] = e
            self.insts[s][5] = p.greedy
            out = [(s, 3)]
            if entry < 0:
                return s, out
            self.patch(holes, s)
            return entry, out
        entry, holes = self.build(Concat(tuple(parts)))
        exits: list[tuple[int, int]] = []  # an optional copy skipped: no later copy either
        bit = 0
        if p.hi > p.lo:
            bit = 1 << self.loops
            self.loops += 1
        for _ in range(p.hi - p.lo):
            # SPLIT: the copy (ENTER sets the bit; AGAIN after it fails if no row cleared it)
            # or the exit
            s = self.emit(_SPLIT)
            enter = self.emit(_ENTER)
            e, h = self.build(p.body)
            check = self.emit(_AGAIN)
            self.insts[enter][2] = e
            self.insts[enter][4] = self.insts[check][4] = bit
            self.patch(h, check)
            self.patch(holes, s)
            self.insts[s][2 if p.greedy else 3] = enter
            exits.append((s, 3 if p.greedy else 2))
            holes = [(check, 2)]
        return entry, holes + exits


def _names(p: Pattern, out: dict[str, None]) -> None:
    if isinstance(p, Var):
        out[p.name] = None
    elif isinstance(p, Concat | Permute):
        for q in p.parts:
            _names(q, out)
    elif isinstance(p, Alt):
        for q in p.options:
            _names(q, out)
    elif isinstance(p, Quant | Exclude):
        _names(p.body, out)


def compile_pattern(p: Pattern) -> Program:
    """The program of ``p``: instruction 0 its entry, the last its MATCH."""
    b = _Builder()
    start = b.emit(_JMP)
    entry, holes = b.build(p)
    b.insts[start][2] = entry
    m = b.emit(_MATCH)
    b.patch(holes, m)
    names: dict[str, None] = {}
    _names(p, names)
    return Program(tuple(Inst(*ins) for ins in b.insts), tuple(names))


# ---------------------------------------------------------------------- matching

class _Took(NamedTuple):
    """A row a thread took (a persistent list, newest first)."""

    row: int
    var: str
    excluded: bool
    before: _Took | None


class PMatch(NamedTuple):
    """A match: its first row, its last (``start - 1`` when empty), and per row taken its
    variable and whether it is excluded from ALL ROWS PER MATCH."""

    start: int
    end: int
    rows: tuple[tuple[int, str, bool], ...]

    @property
    def empty(self) -> bool:
        """Whether the match took no row."""
        return self.end < self.start


class _Thread(NamedTuple):
    pc: int
    start: int
    regs: Hashable
    took: _Took | None
    excl: int  # exclusion depth
    empty: int = 0  # the bits of the loops whose current iteration has taken no row yet


def _pmatch(t: _Thread, end: int) -> PMatch:
    rows: list[tuple[int, str, bool]] = []
    n = t.took
    while n is not None:
        rows.append((n.row, n.var, n.excluded))
        n = n.before
    rows.reverse()
    return PMatch(t.start, end, tuple(rows))


Step = Callable[[str, Hashable, int], Hashable | None]


class LeftmostMatcher:
    """One partition's rows, fed in order: its matches (see the module docstring)."""

    def __init__(self, program: Program, step: Step, skip: str = SKIP_PAST_LAST_ROW,
                 skip_var: str | None = None, start_regs: Hashable = (),
                 within: Callable[[int, int], bool] | None = None,
                 skip_to: Callable[[PMatch], int] | None = None) -> None:
        """``skip_var``: the variable of SKIP TO FIRST/LAST; ``within(start, i)``: whether a
        match starting at row ``start`` may still take row ``i`` (None: always); ``skip_to``:
        the caller's rule for where matching resumes after a match (instead of ``skip`` and
        ``skip_var``'s; ``skip`` still says whether starts may share threads)."""
        if skip in (SKIP_TO_FIRST, SKIP_TO_LAST) and skip_var is None and skip_to is None:
            raise ValueError(f"SKIP {skip} needs a variable")
        self.prog = program.insts
        # the instructions as plain tuples (kind, a, b, loop, greedy), read in the closure
        self.code = [(ins.kind, ins.a, ins.b, ins.loop, ins.greedy) for ins in program.insts]
        # per instruction: the variable of a ROW (None: not a ROW), read in feed
        self.row_var = [ins.var if ins.kind == _ROW else None for ins in program.insts]
        self.variables = program.variables
        self.step = step
        self.skip = skip
        self.skip_var = skip_var
        self.start_regs = start_regs
        self.within = within
        self.skip_to = skip_to
        # threads of several starts may merge (not under a window, which ends them apart)
        self.shared = skip == SKIP_PAST_LAST_ROW and within is None
        self.threads: list[_Thread] = []  # waiting at ROW (or AT_END) instructions
        # per start: its preferred match so far (the thread and its last row; its rows are
        # read only once the match is final)
        self.found: dict[int, tuple[_Thread, int]] = {}
        self.next_start = 0  # rows before this cannot start a match
        self.open: list[int] = []  # starts not decided yet, ascending
        self.pos = 0  # the next row's index
        self.ended = False
        self._expansions: dict[int, tuple[list[tuple[int, int, int]],
                                          tuple[int, int, int] | None]] = {}
        self.fresh = self._fresh_closure()
        self.closed = True  # the threads are a closure's output (not so after load)

    # .................................................................. closure
    def _close_over(self, seeds: list[_Thread], i: int, at_end: bool) -> list[_Thread]:
        """Follow every instruction that takes no row from ``seeds`` (in preferment order):
        the threads waiting for row ``i``; MATCHes are recorded per start and cut the
        threads of that start they are preferred to."""
        if not seeds:
            return []
        prog = self.code
        out: list[_Thread] = []
        seen: set[Any] = set()
        # shared: (pc, regs, excl, empty) → the start whose thread holds it; a later start's
        # equal thread is dropped only for the earliest open start's (see the module docstring)
        shared = self.shared
        owner: dict[Any, int] = {}
        first_open = self.open[0] if self.open else -1
        done: set[int] = set()  # starts that matched in this closure: the rest is less preferred
        new = tuple.__new__
        for seed in seeds:
            stack = [seed]
            while stack:
                t = stack.pop()
                pc, start, regs, took, excl, empty = t
                if start in done:
                    continue
                key = (pc, start, regs, excl, empty)
                if key in seen:
                    continue
                seen.add(key)
                if shared:
                    held = owner.setdefault((pc, regs, excl, empty), start)
                    if held != start and held == first_open:
                        continue
                k, a, b, loop, greedy = prog[pc]
                if k == _ROW:
                    out.append(t)
                elif k == _SPLIT:
                    stack.append(new(_Thread, (b, start, regs, took, excl, empty)))
                    stack.append(new(_Thread, (a, start, regs, took, excl, empty)))
                elif k == _JMP:
                    stack.append(new(_Thread, (a, start, regs, took, excl, empty)))
                elif k == _MATCH:
                    self.found[start] = (t, i - 1)
                    done.add(start)
                    # the start's threads found before are preferred: they stay
                elif k == _LOOP:
                    again = new(_Thread, (a, start, regs, took, excl, empty | loop))
                    out_ = new(_Thread, (b, start, regs, took, excl, empty & ~loop))
                    stack += (out_, again) if greedy else (again, out_)
                elif k == _AGAIN:
                    if not empty & loop:  # the iteration took a row
                        stack.append(new(_Thread, (a, start, regs, took, excl, empty)))
                elif k == _ENTER:
                    stack.append(new(_Thread, (a, start, regs, took, excl, empty | loop)))
                elif k == _EXCL_IN:
                    stack.append(new(_Thread, (a, start, regs, took, excl + 1, empty)))
                elif k == _EXCL_OUT:
                    stack.append(new(_Thread, (a, start, regs, took, excl - 1, empty)))
                elif k == _AT_START:
                    if i == 0:
                        stack.append(new(_Thread, (a, start, regs, took, excl, empty)))
                elif k == _AT_END:
                    if at_end:
                        stack.append(new(_Thread, (a, start, regs, took, excl, empty)))
                    else:
                        out.append(t)  # waits: only the end can move it
        return out

    def _expansion(self, pc: int) -> tuple[list[tuple[int, int, int]],
                                           tuple[int, int, int] | None]:
        """The closure of a lone thread at ``pc`` (no loop's iteration empty, no exclusion)
        at a row after the first, not at the end: the threads waiting, as (pc, excl, empty)
        in preferment order, and the MATCH that ends it (None: it reaches none)."""
        got = self._expansions.get(pc)
        if got is None:
            found, opened = self.found, self.open
            self.found, self.open = {}, [-1]
            try:
                waits = self._close_over([_Thread(pc, -1, (), None, 0)], 1, at_end=False)
                m = self.found.get(-1)
            finally:
                self.found, self.open = found, opened
            got = ([(t.pc, t.excl, t.empty) for t in waits],
                   None if m is None else (m[0].pc, m[0].excl, m[0].empty))
            self._expansions[pc] = got
        return got

    def _close_unshared(self, seeds: list[_Thread], i: int) -> list[_Thread]:
        """:meth:`_close_over` for threads of starts that share none (``self.shared`` False),
        none in a loop's empty iteration, at a row ``i`` > 0 not at the end: each seed's
        closure is its counter's :meth:`_expansion` less the threads already waiting (a
        thread seen before was followed before, so whatever it reaches was too)."""
        if not seeds:
            return []
        new = tuple.__new__
        out: list[_Thread] = []
        seen: set[Any] = set()
        done: set[int] = set()
        exps = self._expansions
        # seeds of distinct (start, registers) reach distinct threads (an expansion lists
        # each (pc, excl, empty) once): nothing to weed out
        apart = len(seeds) == 1 or len({(t.start, t.regs) for t in seeds}) == len(seeds)
        for pc0, start, regs, took, excl, _ in seeds:
            if start in done:
                continue
            waits, match = exps.get(pc0) or self._expansion(pc0)
            if apart:
                out += [new(_Thread, (pc, start, regs, took, excl + dx, empty))
                        for pc, dx, empty in waits]
            else:
                for pc, dx, empty in waits:
                    key = (pc, start, regs, excl + dx, empty)
                    if key in seen:
                        continue
                    seen.add(key)
                    out.append(new(_Thread, (pc, start, regs, took, excl + dx, empty)))
            if match is not None:
                pc, dx, empty = match
                self.found[start] = (new(_Thread, (pc, start, regs, took, excl + dx, empty)),
                                     i - 1)
                done.add(start)
        return out

    def _fresh_closure(self) -> list[tuple[int, int, int]] | None:
        """The closure of a lone new start at a row after the first, not at the end, as
        (pc, excl, empty) in preferment order, when it reaches no MATCH (None otherwise):
        the same at every such row, so :meth:`feed` reuses it when no thread is alive."""
        found, opened = self.found, self.open
        self.found, self.open = {}, [-1]
        try:
            got = self._close_over([_Thread(0, -1, self.start_regs, None, 0)], 1, at_end=False)
            if self.found:
                return None
        finally:
            self.found, self.open = found, opened
        return [(t.pc, t.excl, t.empty) for t in got]

    # .................................................................. rows
    def feed(self, i: int) -> list[PMatch]:
        """Read row ``i`` (the next one); the matches now final, in start order."""
        if i != self.pos or self.ended:
            raise ValueError(f"rows must be fed in order: expected row {self.pos}, got {i}")
        new = tuple.__new__
        prog = self.prog
        fresh = self.fresh
        threads = self.threads
        # the threads are a closure's output (ROW and AT_END waits), which a closure at the
        # same row gives back unchanged when starts do not share threads (nothing to merge)
        # or none is alive
        kept = self.closed and (not self.shared or not threads)
        self.closed = True
        if i >= self.next_start:
            self.open.append(i)
            if kept and fresh is not None and i > 0:
                # a new start's closure is known (it reaches no MATCH, and i is not row 0)
                regs0 = self.start_regs
                waiting = threads + [new(_Thread, (pc, i, regs0, None, excl, empty))
                                     for pc, excl, empty in fresh]
            elif kept:
                waiting = threads + self._close_over(
                    [_Thread(0, i, self.start_regs, None, 0)], i, at_end=False)
            else:
                waiting = self._close_over(
                    [*threads, _Thread(0, i, self.start_regs, None, 0)], i, at_end=False)
        elif kept:
            waiting = threads
        else:
            waiting = self._close_over(threads, i, at_end=False)
        nxt: list[_Thread] = []
        row_var = self.row_var
        within = self.within
        step = self.step
        for pc, start, regs, took, excl, _ in waiting:
            var = row_var[pc]
            if var is None:
                continue  # an end anchor: the row is not the end
            if within is not None and not within(start, i):
                continue
            after = step(var, regs, i)
            if after is None:
                continue
            nxt.append(new(_Thread, (prog[pc].a, start, after,
                                     new(_Took, (i, var, excl > 0, took)), excl, 0)))
        self.pos = i + 1
        # threads advanced past row i may match before row i + 1: their closure decides
        self.threads = (self._close_over(nxt, i + 1, at_end=False) if self.shared
                        else self._close_unshared(nxt, i + 1))
        return self._decide()

    def close(self) -> list[PMatch]:
        """The partition ended: the remaining matches (``$`` holds now)."""
        if not self.ended:
            self.ended = True
            self._close_over(self.threads, self.pos, at_end=True)
            self.threads = []
        return self._decide()

    def expire(self, dead: Callable[[int], bool]) -> list[PMatch]:
        """No row still to come can be taken by a match from a start ``s`` with ``dead(s)``
        (its window closed): drop the threads waiting for a row from such starts and return
        the matches that makes final — those the next row would have made final for that
        reason (threads waiting for the end, ``$``, stay)."""
        prog = self.prog
        kept = [t for t in self.threads if prog[t.pc].kind != _ROW or not dead(t.start)]
        if len(kept) == len(self.threads):
            return []
        self.threads = kept
        return self._decide()

    def _decide(self) -> list[PMatch]:
        if not self.found and not self.threads:
            self.open.clear()  # no start matched and none can: every open one ends matchless
            return []
        out: list[PMatch] = []
        alive = {t.start for t in self.threads}
        while self.open:
            s = self.open[0]
            got = self.found.get(s)
            # a thread of s alive now is preferred to s's match (less preferred ones were cut)
            if s in alive and not self.ended:
                break
            self.open.pop(0)
            self.found.pop(s, None)
            if got is None:
                continue  # no match starts at s
            m = _pmatch(*got)
            out.append(m)
            target = self._skip_to(m) if self.skip_to is None else self.skip_to(m)
            self.next_start = target
            self.open = [o for o in self.open if o >= target]
            self.found = {k: v for k, v in self.found.items() if k >= target}
            self.threads = [t for t in self.threads if t.start >= target]
            alive = {t.start for t in self.threads}
        return out

    # .................................................................. saving
    def export(self, regs_out: Callable[[Hashable], object]) -> dict[str, Any]:
        """The matcher's state as plain data (``regs_out``: registers as plain data): the
        rows its threads took are one table, children first, shared tails kept shared."""
        table: list[list[Any]] = []
        ids: dict[int, int] = {}

        def number(n: _Took | None) -> int:
            chain: list[_Took] = []
            m = n
            while m is not None and id(m) not in ids:
                chain.append(m)
                m = m.before
            for node in reversed(chain):
                b = node.before
                ids[id(node)] = len(table)
                table.append([node.row, node.var, node.excluded, -1 if b is None else ids[id(b)]])
            return -1 if n is None else ids[id(n)]

        def thread(t: _Thread) -> list[Any]:
            return [t.pc, t.start, regs_out(t.regs), number(t.took), t.excl, t.empty]

        return {"threads": [thread(t) for t in self.threads],
                "found": [[s, thread(t), end] for s, (t, end) in self.found.items()],
                "took": table, "next_start": self.next_start, "open": list(self.open),
                "pos": self.pos, "ended": self.ended}

    def load(self, state: Any, regs_in: Callable[[object], Hashable]) -> None:
        """Take back the state :meth:`export` gave (``regs_in``: registers from plain data);
        :class:`~ceql.errors.CeqlInputError` when it is not one this program made."""
        def bad(what: str) -> CeqlInputError:
            return CeqlInputError(f"The matcher's saved state is damaged ({what}): restore a "
                                  "snapshot this query's evaluator took")

        def count(v: Any, what: str, low: int = 0) -> int:
            if type(v) is not int or v < low:
                raise bad(what)
            return v

        if not isinstance(state, dict) or set(state) != {"threads", "found", "took",
                                                         "next_start", "open", "pos", "ended"}:
            raise bad("not a matcher's state")
        pos = count(state["pos"], "the next row")
        names = set(self.variables)
        nodes: list[_Took] = []
        for entry in _items(state["took"], bad):
            if not isinstance(entry, list) or len(entry) != 4:
                raise bad("a row taken")
            row, var, excluded, before = entry
            if (count(row, "a row taken") >= pos or var not in names
                    or type(excluded) is not bool
                    or type(before) is not int or not -1 <= before < len(nodes)):
                raise bad("a row taken")
            nodes.append(_Took(row, var, excluded, None if before < 0 else nodes[before]))

        def thread(v: Any) -> _Thread:
            if not isinstance(v, list) or len(v) != 6:
                raise bad("a thread")
            pc, start, regs, took, excl, empty = v
            if (count(pc, "a thread") >= len(self.prog) or count(start, "a thread") > pos
                    or type(took) is not int or not -1 <= took < len(nodes)):
                raise bad("a thread")
            return _Thread(pc, start, regs_in(regs), None if took < 0 else nodes[took],
                           count(excl, "a thread"), count(empty, "a thread"))

        threads = [thread(t) for t in _items(state["threads"], bad)]
        found: dict[int, tuple[_Thread, int]] = {}
        for entry in _items(state["found"], bad):
            if not isinstance(entry, list) or len(entry) != 3:
                raise bad("a match found")
            found[count(entry[0], "a match found")] = (thread(entry[1]),
                                                      count(entry[2], "a match found", -1))
        opened = [count(s, "an open start") for s in _items(state["open"], bad)]
        if type(state["ended"]) is not bool:
            raise bad("the end")
        starts = set(opened)
        if (any(a >= b for a, b in pairwise(opened))
                or any(s >= pos for s in opened)
                or any(t.start not in starts for t in threads)
                or any(s not in starts or t.start != s for s, (t, _) in found.items())):
            raise bad("threads of starts that are not open")
        self.threads = threads
        self.closed = False
        self.found = found
        self.next_start = count(state["next_start"], "the next start")
        self.open = opened
        self.pos = pos
        self.ended = state["ended"]

    def _skip_to(self, m: PMatch) -> int:
        if self.skip == SKIP_PAST_LAST_ROW:
            return max(m.end + 1, m.start + 1)
        if self.skip == SKIP_TO_NEXT_ROW:
            return m.start + 1
        rows = [r for r, v, _ in m.rows if v == self.skip_var]
        if not rows:
            raise CeqlInputError(
                f"AFTER MATCH SKIP {self.skip} {self.skip_var}: the match of rows {m.start} to "
                f"{m.end} maps no row to {self.skip_var}, so there is no row to skip to")
        target = rows[0] if self.skip == SKIP_TO_FIRST else rows[-1]
        if target == m.start:
            raise CeqlInputError(
                f"AFTER MATCH SKIP {self.skip} {self.skip_var} would restart at the first row "
                f"of the match of rows {m.start} to {m.end} (row {target}), which would find "
                "the same match again")
        return target


def _items(v: Any, bad: Callable[[str], Exception]) -> list[Any]:
    if not isinstance(v, list):
        raise bad("a list expected")
    return v


def run_rows(program: Program, step: Step, n: int, skip: str = SKIP_PAST_LAST_ROW,
             skip_var: str | None = None, start_regs: Hashable = ()) -> list[PMatch]:
    """Every match over rows ``0 … n - 1`` of one partition."""
    m = LeftmostMatcher(program, step, skip, skip_var, start_regs)
    out: list[PMatch] = []
    for i in range(n):
        out += m.feed(i)
    out += m.close()
    return out


def variables_of(p: Pattern) -> Sequence[str]:
    """The pattern's variables, in the order it names them."""
    names: dict[str, None] = {}
    _names(p, names)
    return tuple(names)
