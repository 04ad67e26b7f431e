"""Leading and trailing NOT: checked around each complex event the automaton gives.

``NOT β ; φ … WITHIN ε`` drops a complex event ``[i, j]`` when a β event of its partition
lies before ``i`` with ``key(j) − key(β) ≤ ε``; ``φ ; NOT β`` when one lies after ``j`` with
``key(β) − key(i) ≤ ε`` (keys as WITHIN measures: the time, the attribute, or substream
positions). The automaton is built without them (:attr:`ceql.automata.CEA.leading`,
``trailing``), and this stage filters what its enumerator gives.

Both checks read only the interval (a NOT's atoms read only β's own attributes), and both
pass more often the earlier ``i`` is (a leading NOT's β events that count lie in
``[key(j) − ε, i)``, which only grows with ``i``). So NEXT (whose choice has the earliest start
of all) and MAX (a superset starts no later) choose among the passing complex events exactly
when they choose among all and the choice is checked after — unless the NOT's conditions
read the match: SELECT NEXT with a leading such NOT runs on :class:`.edge_last.NextRuns`
(apart by start and the positions the conditions read) and :meth:`Edges._next_choice` picks
the first that passes in NEXT's order. LAST would not: its automaton
keeps runs apart by start (:mod:`.edge_last`) and :func:`last_chain` (a trailing NOT:
:class:`_LastWait`) chooses among those that pass. Where the NOT's conditions read a variable
the SELECT list leaves out, the automaton is unprojected and this stage projects
(:attr:`Edges.project`) after the check.
LIMIT and CONSUME BY count only passing complex events, so the enumerator runs without them and
they are applied here.

A trailing check waits: a complex event is final once the input has passed ``key(i) + ε`` —
an event with a larger key (of any partition for a time or attribute window, of its own for a
window in events), :meth:`Edges.advance`, or the end (:meth:`Edges.close`). It is released
then, before that event's own matches; under LIMIT a whole end position's complex events wait
for the last of them, so the first ``n`` that pass are known. The release order — by the
releasing event, then deadline, end position and enumeration order — depends only on the
input, never on how it was cut into batches. Pending complex events and β events are kept
only within the window.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from functools import cmp_to_key
from typing import Any

import numpy as np
import pyarrow as pa

from ..constants import CONSUME_ANY, CONSUME_PARTITION
from ..ir import nodes as N
from ..predicates.between import Listener
from ..predicates.guards import GuardTree, guard_fn
from .betas import Betas, batch_kept, blocked, compile_conds, kept, led, shown_as
from .choice import choose
from .edge_last import last_prefers, next_prefers
from .match import Match, match_restored, match_state
from .notices import BetweenValues
from .partitions import Partition
from .tecs import KIND_POS, LABEL, LEFT, MAX_START, MAX_START_KEY, NEXT, RIGHT, Node

__all__ = ["EdgeEnumerator", "Edges"]

# A pending complex event: (release deadline, end position, rank at its end, its own
# deadline, partition key, the match — or under SELECT LAST the choices waiting for the NOT,
# or where the strategy chooses after the check every candidate at that end).
# The first three are unique, so matches never compare.
_Entry = tuple[Any, int, int, Any, tuple[Any, ...], "Match | _LastWait | _RankWait"]
_PRUNE_ROWS = 4096  #: rows between two prunings on the row path


class _Part:
    """One partition's edge state: its β events, its count of events (a window in events:
    substream positions in this stage's own frame), its pending complex events (a window in
    events), the end of its last output (CONSUME BY PARTITION)."""

    __slots__ = ("consumed", "lead", "n", "pending", "trail")

    def __init__(self, lead: bool, trail: bool) -> None:
        self.lead = Betas() if lead else None
        self.trail = Betas() if trail else None
        self.n = 0
        self.pending: list[_Entry] = []
        self.consumed = -1

    def empty(self) -> bool:
        return (not self.pending and self.consumed < 0
                and (self.lead is None or not self.lead)
                and (self.trail is None or not self.trail))


class Edges:
    """The leading/trailing NOT checks of one evaluation (see the module docstring)."""

    __slots__ = (
        "_batch_codes",
        "_lead_c",
        "_trail_c",
        "attach",
        "batch",
        "between",
        "consume",
        "consumed",
        "eps",
        "events",
        "heap",
        "keeps",
        "keyed_next",
        "last",
        "lead_conds",
        "lead_fn",
        "limit",
        "parts",
        "project",
        "rank",
        "released",
        "row",
        "ticks",
        "trail_conds",
        "trail_fn",
        "value",
    )

    def __init__(self, leading: GuardTree | None, trailing: GuardTree | None,
                 events: bool, limit: int | None, consume: str | None,
                 lead_conds: tuple[N.FilterAtom, ...] = (),
                 trail_conds: tuple[N.FilterAtom, ...] = (),
                 query: N.Query | None = None,
                 project: frozenset[str] | None = None, last: bool = False,
                 keyed_next: bool = False, rank: str | None = None,
                 between: BetweenValues | None = None) -> None:
        self.lead_fn: Callable[[int], bool] | None = (
            guard_fn(leading) if leading is not None else None)
        self.trail_fn: Callable[[int], bool] | None = (
            guard_fn(trailing) if trailing is not None else None)
        #: conditions on the NOT's name that read the match: (its name, compiled), or None
        #: the SELECT list when this stage projects (the automaton kept every variable, as
        #: the NOT's conditions read one the list leaves out); None: nothing to project
        self.project = project
        #: SELECT LAST with a leading or trailing NOT: this stage chooses (:func:`last_chain`,
        #: :class:`_LastWait`) among the chains of :mod:`.edge_last`
        self.last = last
        #: SELECT NEXT with a leading NOT whose conditions read the match: this stage chooses
        #: (:meth:`_next_choice`) among the chains of :class:`.edge_last.NextRuns`
        self.keyed_next = keyed_next
        #: NEXT, LAST or MAX chosen here, among the candidates that pass (every complex event
        #: ending at an event, whatever its start, from the register runtime unranked): where
        #: whether one passes depends on more than its start (see :meth:`_rank_admit`)
        self.rank = rank
        if query is not None and project is not None:
            query = replace(query, select=None)
        shown = shown_as(query) if query is not None else {}
        self.lead_conds = compile_conds(lead_conds, shown)
        self.trail_conds = compile_conds(trail_conds, shown)
        self._lead_c: dict[int, bool] = {}
        self._trail_c: dict[int, bool] = {}
        self.events = events  # the window counts events: keys are substream positions
        self.limit = limit
        self.consume = consume
        self.consumed = -1  # CONSUME BY ANY: the end of the last output
        self.eps: Any = None  # set with the evaluation's (a time window: at the first time)
        self.parts: dict[tuple[Any, ...], _Part] = {}
        self.heap: list[_Entry] = []  # pending (time or attribute windows)
        #: the row path's current row: (position, its part or None, its substream position)
        self.row: tuple[int, _Part | None, int] = (-1, None, 0)
        #: the Arrow batch being run: (base, substream rank of each row, -1 if not taking part)
        self.batch: tuple[int, np.ndarray] | None = None
        self._batch_codes: tuple[np.ndarray, list[tuple[Any, ...]], np.ndarray] | None = None
        #: what the last Arrow batch released, with the position of the event that did
        self.released: list[tuple[int, Match]] = []
        self.ticks = 0  # rows since the row path last pruned
        #: gives matches their events (``keep_events``, or conditions that read them), as they
        #: begin to wait
        self.attach: Callable[[Sequence[Match]], None] | None = None
        #: an attribute of the event at a position (conditions that read the match)
        self.value: Callable[[int, str], Any] | None = None
        self.keeps = False  # the caller asked for the matches' events (keep_events)
        #: the evaluation's listener for conditions between events (its ``sink`` goes to the
        #: NOT's conditions checked; None: nobody listens)
        self.between = between

    def hear(self) -> Listener | None:
        """The listener the NOT's conditions are given now (None: nobody listens)."""
        between = self.between
        return None if between is None else between.sink

    # ------------------------------------------------------------------ classes
    def is_lead(self, c: int) -> bool:
        r = self._lead_c.get(c)
        if r is None:
            assert self.lead_fn is not None
            r = self._lead_c[c] = self.lead_fn(c)
        return r

    def is_trail(self, c: int) -> bool:
        r = self._trail_c.get(c)
        if r is None:
            assert self.trail_fn is not None
            r = self._trail_c[c] = self.trail_fn(c)
        return r

    @property
    def trailing(self) -> bool:
        return self.trail_fn is not None

    def _part(self, key: tuple[Any, ...]) -> _Part:
        p = self.parts.get(key)
        if p is None:
            p = self.parts[key] = _Part(self.lead_fn is not None, self.trail_fn is not None)
        return p

    # ------------------------------------------------------------------ the row path
    def see_row(self, key: tuple[Any, ...], pos: int, wkey: Any, c: int,
                event: Any) -> list[Match]:
        """An event that takes part (before its own matches): note it if β, and return the
        complex events it releases (its key is past their deadline), in order."""
        p = self.parts.get(key)
        sub = 0
        if self.events:
            if p is not None:
                sub = p.n
                p.n += 1
            wkey = sub
        lead = self.lead_fn is not None and self.is_lead(c)
        trail = self.trail_fn is not None and self.is_trail(c)
        if lead or trail:
            if p is None:
                p = self._part(key)
                p.n = 1  # this event is its substream position 0
            if lead:
                conds = self.lead_conds
                p.lead.add(pos, wkey, *kept(conds, event))  # type: ignore[union-attr]
            if trail:
                conds = self.trail_conds
                p.trail.add(pos, wkey, *kept(conds, event))  # type: ignore[union-attr]
        self.row = (pos, p, sub)
        out: list[Match] = []
        if self.events:
            if p is not None and p.pending and p.pending[0][0] < wkey:
                out = self._release(p.pending, wkey)
        elif self.heap and self.heap[0][0] < wkey:
            out = self._release(self.heap, wkey)
        self.ticks += 1
        if self.ticks >= _PRUNE_ROWS:  # after releasing: what waits needs only newer β
            self.ticks = 0
            if self.events:
                self._prune_events()
            else:
                self._prune_time(wkey)
        return out

    def _sub(self, key: tuple[Any, ...], pos: int) -> tuple[_Part, int]:
        """The partition's edge state and the substream position (own frame) of ``pos``, the
        event whose matches are being enumerated."""
        batch = self.batch
        if batch is not None:
            p = self._part(key)
            return p, p.n + int(batch[1][pos - batch[0]])
        rpos, rp, sub = self.row
        if rp is not None and rpos == pos:
            self.parts[key] = rp  # (a pruning right after the row was seen may have dropped it)
            return rp, sub
        # the row made no part when it was seen (no β, no part yet): it is position 0 of one
        # made now
        assert key not in self.parts
        made = self._part(key)
        made.n = 1
        return made, 0

    # ------------------------------------------------------------------ the Arrow path
    def see_batch(self, base: int, n: int, positions: np.ndarray, classes: np.ndarray,
                  codes: np.ndarray | None, keys: list[tuple[Any, ...]] | None,
                  wkeys: np.ndarray | None, rb: pa.RecordBatch) -> None:
        """A batch's events that take part (``positions``, their classes, partition codes
        into ``keys`` — None: one partition —, window keys — None: a window in events), before
        any of them runs: note its β events, and each row's rank in its partition."""
        m = positions.size
        if codes is None:
            codes = np.zeros(m, dtype=np.int64)
            keys = [()]
        assert keys is not None
        counts = np.bincount(codes, minlength=len(keys))
        r = np.empty(0, dtype=np.int64)
        if self.events:  # substream positions: each row's rank in its partition
            order = np.argsort(codes, kind="stable")
            starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
            r = np.empty(m, dtype=np.int64)
            r[order] = np.arange(m, dtype=np.int64) - np.repeat(starts, counts)
            rank = np.full(n, -1, dtype=np.int64)
            rank[positions - base] = r
            self.batch = (base, rank)
        uniq, inv = np.unique(classes, return_inverse=True)
        for attr, fn, conds in (("lead", self.is_lead if self.lead_fn else None, self.lead_conds),
                                ("trail", self.is_trail if self.trail_fn else None,
                                 self.trail_conds)):
            if fn is None:
                continue
            hit = np.fromiter((fn(int(c)) for c in uniq.tolist()), dtype=bool,
                              count=uniq.size)[inv.reshape(-1)]
            rows = np.flatnonzero(hit)
            if not rows.size:
                continue
            pos_l = positions[rows].tolist()
            code_l = codes[rows].tolist()
            key_l: list[Any] = (wkeys[rows].tolist() if wkeys is not None
                                else r[rows].tolist())
            ev_l, val_l, raw_l = batch_kept(conds, rb, positions[rows] - base)
            for p_, c_, k_, e_, v_, r_ in zip(pos_l, code_l, key_l, ev_l, val_l, raw_l,
                                              strict=True):
                part = self._part(keys[c_])
                betas: Betas = getattr(part, attr)
                betas.add(p_, k_ + part.n if wkeys is None else k_, e_, v_, r_)
        self._batch_codes = (codes, keys, counts)

    def _attached(self, chunks: Iterator[Sequence[Match]]) -> Iterator[Sequence[Match]]:
        """``chunks`` with their events (conditions on a leading NOT read them)."""
        attach = self.attach
        assert attach is not None
        for chunk in chunks:
            attach(chunk)
            yield chunk

    def take_released(self) -> list[tuple[int, Match]]:
        """What :meth:`end_batch` released (once)."""
        out, self.released = self.released, []
        return out

    def end_batch(self, positions: np.ndarray, wkeys: np.ndarray | None) -> None:
        """After the batch ran: advance each partition's count, release what the batch's
        events made final (:meth:`take_released`: with the position of the event that
        released each), prune."""
        assert self._batch_codes is not None
        codes, keys, counts = self._batch_codes
        self.batch = None
        out: list[tuple[int, Match]] = []
        if self.events:
            order: np.ndarray | None = None
            bounds: list[int] = []
            for code, key in enumerate(keys):
                p = self.parts.get(key)
                if p is None:
                    continue
                cnt = int(counts[code])
                if p.pending and p.pending[0][0] < p.n + cnt - 1:
                    if order is None:
                        order = np.argsort(codes, kind="stable")
                        bounds = [0, *np.cumsum(counts).tolist()]
                    mine = positions[order[bounds[code]:bounds[code + 1]]]
                    while p.pending and p.pending[0][0] < p.n + cnt - 1:
                        d = p.pending[0][0]
                        r = int(mine[d + 1 - p.n])  # the row whose position is d + 1
                        out += [(r, m) for m in self._release(p.pending, d + 1)]
                p.n += cnt
            out.sort(key=lambda x: x[0])  # stable: (deadline, end, rank) within a row
            self._prune_events()
            self.released = out
            return
        if wkeys is not None and wkeys.size:
            last = wkeys[-1].item()
            heap = self.heap
            due: list[_Entry] = []
            while heap and heap[0][0] < last:
                due.append(heapq.heappop(heap))
            if due:
                # each is released by the first event with a later key
                at = positions[np.searchsorted(wkeys, [e[0] for e in due], side="right")]
                at_l = at.tolist()
                out = [(at_l[i], m) for i, m in self._survivors(due)]
            self._prune_time(last)
        self.released = out

    # ------------------------------------------------------------------ matches
    def admit(self, P: Partition, chunks: Iterator[Sequence[Match]] | None, pos: int,
              wkey: Any, chosen: Callable[[Node | None], Iterator[Sequence[Match]]] | None = None,
              accs: list[Node] | None = None) -> Iterator[Sequence[Match]]:
        """The complex events ending at ``pos`` that pass (those that must wait are kept).
        Under SELECT LAST (:attr:`last`), ``chunks`` is None: ``chosen`` enumerates the chain
        :func:`last_chain` picks among ``accs``."""
        if self.events:  # substream positions in this stage's own frame
            p, sub = self._sub(P.key, pos)
            off = sub - wkey
        else:
            p, off = self._part(P.key), 0
        jkey = wkey + off
        eps = self.eps
        lead = p.lead
        floor = jkey - eps
        trail = p.trail
        if chunks is None:
            assert chosen is not None and accs is not None
            if trail is not None:  # the choice waits for the first β after the end
                self._wait_last(p, P.key, pos, accs, floor, wkey - eps, off, chosen)
                return
            assert lead is not None
            if self.keyed_next:
                chunks = self._next_choice(accs, lead, floor, wkey - eps, chosen)
            else:
                # (None: LAST's choice starts outside the window, nothing at this end)
                chunks = chosen(last_chain(accs, lead, floor, wkey - eps, off))
        limit = self.limit if self.limit is not None else -1
        consumed = max(self.consumed, p.consumed)
        lconds = self.lead_conds
        value = self.value
        hear = self.hear()
        if lconds is not None and lconds[2] is None and self.attach is not None:
            chunks = self._attached(chunks)  # the general check reads the match's events
        if self.rank is not None:
            yield from self._rank_admit(p, P.key, pos, chunks, floor, off)
            return
        if trail is not None:
            waiting: list[tuple[Any, Match]] = []
            for chunk in chunks:
                for m in chunk:
                    start = m._start
                    if lead is not None and led(lead, floor, lconds, m, value, hear):
                        continue
                    waiting.append((start[MAX_START_KEY] + off + eps, m))
            if waiting:
                self._wait(p, P.key, pos, waiting)
            return
        out: list[Match] = []
        enough = max(limit, 1) if limit >= 0 else -1  # LIMIT 0 still consumes
        project = self.project
        seen: dict[tuple[int, tuple[int, ...]], Match] = {}
        for chunk in chunks:
            for m in chunk:
                start = m._start
                if start[2] <= consumed:
                    continue
                if lead is not None and led(lead, floor, lconds, m, value, hear):
                    continue
                if project is not None:
                    pm = _projected(m, project, seen)
                    if pm is None:
                        continue  # an output already given (its labels joined)
                    m = pm
                out.append(m)
                if len(out) == enough:
                    break
            else:
                continue
            break
        if out:
            if self.consume == CONSUME_ANY:
                self.consumed = pos
            elif self.consume == CONSUME_PARTITION:
                p.consumed = pos
            if limit == 0:
                return
            yield out

    def _rank_admit(self, p: _Part, key: tuple[Any, ...], pos: int,
                    chunks: Iterator[Sequence[Match]], floor: Any, off: Any
                    ) -> Iterator[Sequence[Match]]:
        """The strategy (:attr:`rank`) among every complex event ending at ``pos`` that passes:
        those that start outside the window pass whatever comes (no β lies within ε of both
        ends) and compete, WITHIN cuts after the choice; the others are checked — a trailing
        NOT's candidates wait together (:class:`_RankWait`) until the last can be judged."""
        rank = self.rank
        assert rank is not None
        lead = p.lead
        lconds = self.lead_conds
        value = self.value
        hear = self.hear()
        old: list[tuple[int, tuple[int, ...]]] = []
        young: list[Match] = []
        for chunk in chunks:
            for m in chunk:
                start = m._start
                if start[MAX_START_KEY] + off < floor:
                    if rank == "NEXT":
                        return  # NEXT prefers the earliest start, which passes: out of WITHIN
                    old.append((start[KIND_POS], m.positions))
                elif lead is None or not led(lead, floor, lconds, m, value, hear):
                    young.append(m)
        if not young:
            return  # nothing at this end can be output
        if p.trail is not None:
            eps = self.eps
            waiting = tuple((m._start[MAX_START_KEY] + off + eps, m) for m in young)
            tconds = self.trail_conds
            if self.attach is not None and (self.keeps or (tconds is not None
                                                           and tconds[2] is None)):
                self.attach(list(young))
            d = max(w[0] for w in waiting)
            heap = p.pending if self.events else self.heap
            heapq.heappush(heap, (d, pos, 0, d, key, _RankWait(tuple(old), waiting)))
            return
        out = _chosen(rank, old, young)
        limit = self.limit if self.limit is not None else -1
        consumed = max(self.consumed, p.consumed)
        if consumed >= 0:
            out = [m for m in out if m._start[2] > consumed]
        project = self.project
        if project is not None:
            seen: dict[tuple[int, tuple[int, ...]], Match] = {}
            out = [pm for pm in (_projected(m, project, seen) for m in out) if pm is not None]
        if limit >= 0:
            del out[max(limit, 1):]
        if out:
            if self.consume == CONSUME_ANY:
                self.consumed = pos
            elif self.consume == CONSUME_PARTITION:
                p.consumed = pos
            if limit != 0:
                yield out

    def _next_choice(self, accs: list[Node], lead: Betas, floor: Any, window: Any,
                     chosen: Callable[[Node | None], Iterator[Sequence[Match]]],
                     ) -> Iterator[Sequence[Match]]:
        """SELECT NEXT among the chains ``accs`` (one per key, :class:`.edge_last.NextRuns`)
        that pass the leading NOT: nothing when one starts before ``window`` (it passes, NEXT
        prefers the earliest start, and WITHIN then drops it); else the first that passes in
        NEXT's order. Each chain is one complex event, checked once: polynomial."""
        if any(c[MAX_START_KEY] < window for c in accs):
            return iter(())
        conds = self.lead_conds
        for c in sorted(accs, key=cmp_to_key(_next_order)):
            m = next(m for chunk in chosen(c) for m in chunk)
            if conds is not None and conds[2] is None and self.attach is not None:
                self.attach([m])
            if not led(lead, floor, conds, m, self.value, self.hear()):
                return iter(([m],))
        return iter(())

    def _wait_last(self, p: _Part, key: tuple[Any, ...], pos: int, accs: list[Node],
                   floor: Any, window: Any, off: Any,
                   chosen: Callable[[Node | None], Iterator[Sequence[Match]]]) -> None:
        """SELECT LAST with a trailing NOT: the complex events ending at ``pos`` (chains, one
        per start, :mod:`.edge_last`) that pass a leading NOT are those with a start key
        below the first β after the end minus ε: LAST's choice for each such bound (the
        best of a prefix by start) waits until the best of all is final, then the first β
        after the end says which bound holds (:meth:`_survivors`)."""
        lead = p.lead
        if lead is not None:  # a start after a β within the window of the end fails
            i = bisect_left(lead.keys, floor, lead.lo)
            if i < len(lead.pos):
                limit, below = lead.pos[i], lead.keys[i] - off
                accs = [c for c in accs
                        if c[MAX_START_KEY] < below or _start_of(c) <= limit]
        best: Node | None = None
        answers: list[tuple[Any, Match | None]] = []  # (start key, the best up to it)
        for c in sorted(accs, key=_start_key):
            if best is not None and not last_prefers(c, best):
                continue
            best = c
            m: Match | None = None
            if c[MAX_START_KEY] >= window:
                m = next(m for chunk in chosen(c) for m in chunk)
            answers.append((c[MAX_START_KEY] + off, m))
        if best is None or answers[-1][1] is None:
            return  # no choice, or it starts outside the window: nothing at this end
        d = answers[-1][0] + self.eps
        heap = p.pending if self.events else self.heap
        heapq.heappush(heap, (d, pos, 0, d, key, _LastWait(tuple(answers))))

    def _wait(self, p: _Part, key: tuple[Any, ...], pos: int,
              waiting: list[tuple[Any, Match]]) -> None:
        """Keep complex events ending at ``pos`` until their deadlines pass (those a β
        already seen kills are dropped now)."""
        heap = p.pending if self.events else self.heap
        trail = p.trail
        assert trail is not None
        # without conditions on the match, the first β after the end decides at once
        first = trail.first_after(pos) if self.trail_conds is None else None
        group = max(d for d, _ in waiting) if self.limit is not None else None
        tconds = self.trail_conds
        if self.attach is not None and (self.keeps or (tconds is not None and tconds[2] is None)):
            self.attach([m for _, m in waiting])
        for k, (d, m) in enumerate(waiting):
            if first is not None and first <= d and self.limit is None:
                continue  # killed already (under LIMIT it still counts for the release)
            heapq.heappush(heap, (group if group is not None else d, pos, k, d, key, m))

    def _release(self, heap: list[_Entry], now: Any, inclusive: bool = False) -> list[Match]:
        """Pop the entries whose release deadline is below ``now`` (or equal, ``inclusive``);
        the survivors, in order (under LIMIT, the first ``n`` survivors of each end
        position)."""
        due: list[_Entry] = []
        pop = heapq.heappop
        while heap and (heap[0][0] < now or (inclusive and heap[0][0] == now)):
            due.append(pop(heap))
        return self._release_sorted(due)

    def _release_sorted(self, due: list[_Entry]) -> list[Match]:
        """The survivors among ``due`` (in order; an end position's entries together)."""
        return [m for _, m in self._survivors(due)]

    def _survivors(self, due: list[_Entry]) -> list[tuple[int, Match]]:
        """:meth:`_release_sorted`'s survivors, each with its index in ``due`` (projected
        when this stage projects)."""
        out: list[tuple[int, Match]] = []
        limit = self.limit
        project = self.project
        seen: dict[tuple[int, tuple[int, ...]], Match] = {}
        count = 0
        last_end = -1
        for i, (_, j, _, d, key, m) in enumerate(due):
            if j != last_end:
                last_end, count = j, 0
                seen = {}
            trail = self.parts[key].trail
            assert trail is not None
            for w in self._passed(trail, j, d, m):
                if project is not None:
                    pw = _projected(w, project, seen)
                    if pw is None:
                        continue  # an output already given (its labels joined)
                    w = pw
                if limit is not None:
                    if count >= limit:
                        continue
                    count += 1
                out.append((i, w))
        return out

    def _passed(self, trail: Betas, j: int, d: Any,
                m: Match | _LastWait | _RankWait) -> list[Match]:
        """What a pending entry ending at ``j`` (deadline ``d``) outputs, now its trailing NOT
        can be judged."""
        if isinstance(m, _LastWait):
            chosen = m.pick(trail.first_after(j), self.eps)
            return [] if chosen is None else [chosen]
        if isinstance(m, _RankWait):
            assert self.rank is not None
            return _chosen(self.rank, list(m.old),
                           [w for dw, w in m.waiting if not self._killed(trail, j, dw, w)])
        return [] if self._killed(trail, j, d, m) else [m]

    def _killed(self, trail: Betas, j: int, d: Any, m: Match) -> bool:
        """Whether a β after ``j`` with a key of at most ``d`` kills ``m``."""
        tconds = self.trail_conds
        if tconds is None:
            b = trail.first_after(j)
            return b is not None and b <= d
        return blocked(trail, trail.after(j, d), tconds, m, self.value, self.hear())

    def advance(self, key: Any) -> list[Match]:
        """No event to come has a window key below ``key``: release what that makes final."""
        if self.heap and self.heap[0][0] < key:
            out = self._release(self.heap, key)
            self._prune_time(key)
            return out
        return []

    def close(self) -> list[Match]:
        """The input ended: release every pending complex event that passed, in order."""
        inf = float("inf")
        if not self.events:
            return self._release(self.heap, inf)
        # by end position: substream positions of different partitions do not compare
        every: list[_Entry] = []
        for p in self.parts.values():
            every += p.pending
            p.pending = []
        every.sort(key=_end_rank)
        return self._release_sorted(every)

    def oldest_start(self) -> int | None:
        """The first start position of a waiting complex event (None: none waits)."""
        best: int | None = None
        for heap in (self.heap, *(p.pending for p in self.parts.values() if p.pending)):
            for e in heap:
                s = e[5].start_position
                if best is None or s < best:
                    best = s
        return best

    # ------------------------------------------------------------------ memory
    def _prune_time(self, now: Any) -> None:
        if self.eps is None:
            return
        floor = now - self.eps
        drop = []
        for key, p in self.parts.items():
            for b in (p.lead, p.trail):
                if b is not None:
                    b.prune(floor)
            if p.empty():
                drop.append(key)
        if not self.heap:
            for key in drop:
                del self.parts[key]
        else:
            held = {e[4] for e in self.heap}
            for key in drop:
                if key not in held:
                    del self.parts[key]

    def _prune_events(self) -> None:
        eps = self.eps
        drop = []
        for key, p in self.parts.items():
            floor = p.n - 1 - eps
            for b in (p.lead, p.trail):
                if b is not None:
                    b.prune(floor)
            if p.empty():
                drop.append(key)
        for key in drop:
            del self.parts[key]

    # ------------------------------------------------------------------ saving
    def state(self) -> dict[str, Any]:
        """What a snapshot keeps, as plain data (waiting matches included)."""
        parts = {}
        for key, p in self.parts.items():
            parts[key] = (p.lead.state() if p.lead is not None else None,
                          p.trail.state() if p.trail is not None else None,
                          p.n, [_saved(e) for e in p.pending], p.consumed)
        return {"parts": parts, "heap": [_saved(e) for e in self.heap],
                "consumed": self.consumed}

    def load(self, data: dict[str, Any]) -> None:
        """Take back what :meth:`state` gave (or a format 2 snapshot's objects)."""
        self.consumed = data["consumed"]
        self.heap = [_loaded(e) for e in data["heap"]]
        heapq.heapify(self.heap)
        self.parts = {}
        for key, (lead, trail, n, pending, consumed) in data["parts"].items():
            p = self._part(key)
            if lead is not None:
                p.lead = Betas.restored(lead)
            if trail is not None:
                p.trail = Betas.restored(trail)
            p.n = n
            p.pending = [_loaded(e) for e in pending]
            heapq.heapify(p.pending)
            p.consumed = consumed


def _saved(e: _Entry) -> tuple[Any, ...]:
    """A pending entry as plain data: its match, or the choices waiting, tagged."""
    w = e[5]
    data: tuple[Any, ...]
    if isinstance(w, Match):
        data = ("M", match_state(w))
    elif isinstance(w, _LastWait):
        data = ("L", tuple((k, None if m is None else match_state(m)) for k, m in w.answers))
    else:
        data = ("R", w.old, tuple((d, match_state(m)) for d, m in w.waiting))
    return (*e[:5], data)


def _loaded(e: tuple[Any, ...]) -> _Entry:
    """:func:`_saved` reversed (a format 2 entry holds the objects themselves)."""
    w = e[5]
    if isinstance(w, Match | _LastWait | _RankWait):
        return e
    kind = w[0]
    obj: Match | _LastWait | _RankWait
    if kind == "M":
        obj = match_restored(w[1])
    elif kind == "L":
        obj = _LastWait(tuple((k, None if m is None else match_restored(m)) for k, m in w[1]))
    elif kind == "R":
        obj = _RankWait(tuple(w[1]), tuple((d, match_restored(m)) for d, m in w[2]))
    else:
        raise ValueError(f"not a saved pending entry: {kind!r}")
    return (*e[:5], obj)


def _projected(m: Match, select: frozenset[str],
               seen: dict[tuple[int, tuple[int, ...]], Match]) -> Match | None:
    """``m`` with only the positions of the SELECT list's variables (its interval kept);
    None when ``seen`` (the outputs of its end so far) holds it already — its labels are then
    joined there, as one output shows every binding."""
    keep = [k for k, lab in enumerate(m._labels) if lab is not None and lab & select]
    positions = tuple([m.positions[k] for k in keep])
    labels = tuple([m._labels[k] & select for k in keep])
    key = (m._start[2], positions)
    old = seen.get(key)
    if old is not None:
        if old._labels != labels:
            old._labels = tuple([a | b for a, b in zip(old._labels, labels, strict=True)])
        return None
    pm = object.__new__(Match)
    pm._start = m._start
    pm._end = m._end
    pm.positions = positions
    pm._labels = labels
    events = getattr(m, "_events", None)
    if events is not None:
        pm._events = tuple([events[k] for k in keep])
    seen[key] = pm
    return pm


def last_chain(accs: list[Node], lead: Betas, floor: Any, window: Any,
               off: Any = 0) -> Node | None:
    """SELECT LAST among the complex events below ``accs`` (one path each: the automaton is
    deterministic) that pass a leading NOT without conditions on the match — those that
    start before every β event of key ``floor`` or later —, as a new chain; None when none
    passes or the choice starts before ``window`` (a start key: outside WITHIN, so nothing
    is output). ``off`` turns the tECS's window keys into ``lead``'s (a window in events
    counts this stage's own substream positions).

    LAST compares two sets by the largest position in one only, so the walk goes down from
    the end keeping the nodes that agree so far, takes the largest next position among those
    from which a passing start can still be reached, and stops at a start only where no such
    position is left (a longer set wins over its subset). Each node is looked at a bounded
    number of times, and the walk stops once every node it keeps starts before ``window`` (the
positions it takes only go down, and a start outside the window passes): polynomial, never
the ALL set."""
    i = bisect_left(lead.keys, floor, lead.lo)
    if i == len(lead.pos):
        limit = None  # no β within the window: every start passes
    else:
        limit = lead.pos[i]  # the latest start that passes: the first such β
        below = lead.keys[i] - off  # a start with a smaller key (this frame) is before it
    fails: set[int] = set()  # nodes below which no start passes

    def ok(n: Node) -> bool:
        """Whether a start that passes lies below ``n`` (iterative; failures memoized)."""
        if limit is None:
            return True
        todo = [n]
        seen: list[int] = []
        while todo:
            x = todo.pop()
            k = id(x)
            if x[MAX_START_KEY] < below:  # every start below comes before the β
                fails.difference_update(seen)
                return True
            if k in fails:
                continue
            fails.add(k)
            seen.append(k)
            if x[KIND_POS] < 0:
                todo += [c for c in (x[LEFT], x[RIGHT]) if c is not None]  # right first
            elif x[NEXT] is None:
                if x[KIND_POS] <= limit:
                    fails.difference_update(seen)
                    return True
            else:
                todo.append(x[NEXT])
        return False

    # frontier: the nodes reached with the positions chosen so far, each with the labels
    # of the path that reached it (latest first, linked)
    frontier: list[tuple[Node, Any]] = [(a, None) for a in accs]
    while True:
        leaves: list[tuple[Node, Any]] = []
        seen: set[int] = set()
        todo = frontier[::-1]
        while todo:
            x, back = todo.pop()
            if id(x) in seen:
                continue
            seen.add(id(x))
            if x[KIND_POS] < 0:
                todo += [(c, back) for c in (x[RIGHT], x[LEFT]) if c is not None]
            else:
                leaves.append((x, back))
        outs = [(x, b) for x, b in leaves if x[NEXT] is not None and ok(x[NEXT])]
        if all(x[MAX_START_KEY] < window for x, _ in outs) and not any(
                x[MAX_START_KEY] >= window and ok(x) for x, _ in leaves if x[NEXT] is None):
            # every path left starts outside the window: the choice does too, or none passes
            return None
        if outs:
            top = max(x[KIND_POS] for x, _ in outs)
            frontier = [(x[NEXT], (x, b)) for x, b in outs if x[KIND_POS] == top]
            continue
        starts = [(x, b) for x, b in leaves if x[NEXT] is None and ok(x)]
        if not starts:
            return None
        node, back = starts[0]
        while back is not None:  # rebuilt bottom-up over the start
            x, back = back
            node = (node[MAX_START], node[MAX_START_KEY], x[KIND_POS], node, x[LABEL])
        return node


class _LastWait:
    """SELECT LAST with a trailing NOT: the choices at one end for each bound on the start
    key (ascending; None where the choice starts outside the window), waiting for the NOT."""

    __slots__ = ("answers",)

    def __init__(self, answers: tuple[tuple[Any, Match | None], ...]) -> None:
        self.answers = answers

    def __getstate__(self) -> tuple[tuple[Any, Match | None], ...]:
        return self.answers

    def __setstate__(self, state: tuple[tuple[Any, Match | None], ...]) -> None:
        self.answers = state

    @property
    def start_position(self) -> int:
        """The earliest start it may output."""
        return min(m.start_position for _, m in self.answers if m is not None)

    def pick(self, beta: Any, eps: Any) -> Match | None:
        """The output once the first β after the end has key ``beta`` (None: none within
        the window): LAST's choice among the starts with a key below ``beta − ε``."""
        if beta is None:
            return self.answers[-1][1]
        out = None
        for k, m in self.answers:
            if k >= beta - eps:
                break
            out = m
        return out


class _RankWait:
    """A strategy chosen after a trailing NOT: the candidates at one end that start outside
    the window (as (start, D): they pass), and the others with their deadlines, waiting."""

    __slots__ = ("old", "waiting")

    def __init__(self, old: tuple[tuple[int, tuple[int, ...]], ...],
                 waiting: tuple[tuple[Any, Match], ...]) -> None:
        self.old = old
        self.waiting = waiting

    def __getstate__(self) -> tuple[Any, ...]:
        return self.old, self.waiting

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.old, self.waiting = state

    @property
    def start_position(self) -> int:
        """The earliest start it may output."""
        return min(m.start_position for _, m in self.waiting)


def _chosen(strategy: str, old: list[tuple[int, tuple[int, ...]]],
            young: list[Match]) -> list[Match]:
    """The complex events among ``young`` (those that passed, within the window) that the
    strategy keeps when ``old`` (outside it: they pass, compete, and are never output)
    compete too."""
    by: dict[tuple[int, tuple[int, ...]], list[Match]] = {}
    for m in young:
        by.setdefault((m._start[KIND_POS], m.positions), []).append(m)
    return [m for ce in choose(strategy, old + list(by)) for m in by.get(ce, ())]


def _next_order(a: Node, b: Node) -> int:
    """NEXT's order as a sort key: the preferred chain first."""
    if next_prefers(a, b):
        return -1
    return 1 if next_prefers(b, a) else 0


def _start_of(chain: Node) -> int:
    """The start position of a chain without unions."""
    while chain[NEXT] is not None:
        chain = chain[NEXT]
    return chain[KIND_POS]  # type: ignore[no-any-return]


def _start_key(chain: Node) -> Any:
    return chain[MAX_START_KEY]


def _end_rank(e: _Entry) -> tuple[int, int]:
    return e[1], e[2]


class EdgeEnumerator:
    """An enumerator (without LIMIT and CONSUME BY) whose matches pass through :class:`Edges`."""

    __slots__ = ("edges", "inner")

    def __init__(self, inner: Any, edges: Edges) -> None:
        self.inner = inner
        self.edges = edges

    @property
    def eps(self) -> Any:
        return self.inner.eps

    @eps.setter
    def eps(self, value: Any) -> None:
        self.inner.eps = value
        self.edges.eps = value

    @property
    def key_len(self) -> int | None:
        return self.inner.key_len  # type: ignore[no-any-return]

    @key_len.setter
    def key_len(self, value: int | None) -> None:
        self.inner.key_len = value

    def emit(self, P: Partition, accs: list[Node], pos: int, wkey: Any,
             tkey: Any) -> Iterator[Sequence[Match]]:
        if self.edges.last or self.edges.keyed_next:
            def chosen(chain: Node | None) -> Iterator[Sequence[Match]]:
                if chain is None:
                    return iter(())
                return self.inner.emit(P, [chain], pos, wkey, tkey)  # type: ignore[no-any-return]

            return self.edges.admit(P, None, pos, wkey, chosen, accs)
        return self.edges.admit(P, self.inner.emit(P, accs, pos, wkey, tkey), pos, wkey)
