"""The sequence evaluation on ceql's engine: each instant's choices become records
(:mod:`.lowering` describes them) fed to the CEQL query the sequence lowers to, and the
complex events it outputs become SPAseq matches.

A record whose values the lowering cannot decide exactly — a term a FILTER reads that is
not an ``xsd:integer``/``xsd:decimal``, a mapping without one of its GPMs' shared variables
(OPTIONAL or UNION left it unbound) — hands the evaluation over to the run loop of
:mod:`.runs`: it replays the instants of the last window (kept for this) without output — a
partial match that began earlier can no longer complete — and continues from there, so the
outputs stay exact.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from itertools import product
from typing import Any

from ..frontends.spaseq import CrossFilter
from ..query import compile_ir
from .conditions import FilterChecker, joined
from .events import TimeKey
from .lowering import Leaf, Lowered, scaled
from .match import Match, Terms
from .plan import Plan
from .runs import Choice, Runs, renamed

__all__ = ["EngineRuns"]

_Instant = tuple[Any, TimeKey, Mapping[str, Sequence[Choice]]]
_Interval = tuple[int, bool, int, bool]
"""``(low, low included, high, high included)`` of scaled values (:data:`.lowering.SCALE`)."""
_NEG, _POS = -(10 ** 60), 10 ** 60  # beyond any scaled value (18 + 18 digits)
_FULL: _Interval = (_NEG, False, _POS, False)
_MISSING = object()
_MEMO = 100_000  # scaled values remembered (then forgotten all at once)


def _empty(i: _Interval) -> bool:
    return i[0] > i[2] or (i[0] == i[2] and not (i[1] and i[3]))


def _meets(a: list[_Interval], b: list[_Interval]) -> list[_Interval]:
    """The intersection of two unions of intervals."""
    return [m for x in a for y in b if not _empty(m := _meet(x, y))]


def _meet(a: _Interval, b: _Interval) -> _Interval:
    lo, lc = (a[0], a[1]) if a[0] > b[0] else (b[0], b[1]) if b[0] > a[0] else \
        (a[0], a[1] and b[1])
    hi, hc = (a[2], a[3]) if a[2] < b[2] else (b[2], b[3]) if b[2] < a[2] else \
        (a[2], a[3] and b[3])
    return (lo, lc, hi, hc)


class EngineRuns:
    """The runs of one evaluation on the engine; :meth:`instant` advances them over one
    instant, as :meth:`ceql.spaseq.runs.Runs.instant` does."""

    def __init__(self, plan: Plan, lowered: Lowered,
                 complete: Callable[[Mapping[str, Sequence[Choice]]], dict[str, Sequence[Choice]]]
                 ) -> None:
        assert lowered.query is not None
        self._complete = complete
        self.plan = plan
        self._low = lowered
        self._ev = compile_ir(lowered.query).evaluator(time="t", time_unit="us",
                                                     keep_events=True)
        self._span = plan.span
        self._k = -1
        self._owner = plan.owner
        # a leaf whose records another's carry (``Lowered.alias``) makes none: its
        # representative's records stand for every member (element -1: found in a match)
        alias = lowered.alias
        self._leaves = tuple(leaf for leaf in lowered.leaves
                             if alias.get(leaf.index, (leaf.index,))[0] == leaf.index)
        members: dict[int, list[Leaf]] = {}
        for leaf in lowered.leaves:
            if leaf.index in alias:
                members.setdefault(alias[leaf.index][0], []).append(leaf)
        self.reads = frozenset(g for leaf in self._leaves for g in leaf.gpms)
        """The GPMs whose choices the records are made of (an instant's choices need no
        others while on the engine; ``complete`` adds them for the hand-over)."""
        self._negated = {leaf.index: any(x.negated for x in members.get(leaf.index, [leaf]))
                         for leaf in self._leaves}
        # per element read from shared records: its GPM and the representative's variable
        # → its own
        self._member = {leaf.element: (leaf.gpms[0], alias[leaf.index][1])
                        for leaf in lowered.leaves if leaf.index in alias}
        self._base: dict[str, Any] = {"z": None, "u": 0}
        if lowered.ticks:
            self._base["kt"] = -1
        self._filters = FilterChecker()
        for i in lowered.var_index.values():
            self._base[f"b{i}"] = 0
        self._flags = {leaf.index: {f"m{lowered.gpm_index[g]}": int(g in x.gpms)
                                    for x in members.get(leaf.index, [leaf])
                                    for g in lowered.element_gpms[x.element]}
                       for leaf in self._leaves}
        # per element iterated by ';': its records' shared values → (instant index, key) of
        # the last instant that had one
        self._last: dict[int, dict[tuple[str, ...], tuple[int, TimeKey]]] = {
            i: {} for i in lowered.next_keys if i not in lowered.bounds}
        # per element iterated by ';' with FILTERs (``Lowered.bounds``): its records' shared
        # values → (instant index, key, intervals of the fixed variable where the record is
        # fit) of the instants of the last window
        self._hist: dict[int, dict[tuple[str, ...],
                                   deque[tuple[int, TimeKey, list[_Interval]]]]] = {
            i: {} for i in lowered.bounds}
        self._recent: deque[_Instant] = deque()
        # per leaf of a + element: the shared variables its GPMs bind, which each of its
        # records must bind (the lowering joins iterations on them by PREV); other leaves'
        # records may leave one unbound (OPTIONAL, UNION: the lowering reads bound flags)
        shared = {v for v in lowered.var_index if v not in self._owner}
        self._strict = {leaf.index: tuple(sorted({v for g in leaf.gpms
                                                  for v in plan.variables[g]} & shared))
                        if plan.elements[leaf.element].kleene else ()
                        for leaf in lowered.leaves}
        # per leaf: its records' constant attributes, per variable its attribute names
        # (value, bound flag, scaled value or None when no FILTER reads it, whether a value
        # that does not scale hands over), its strict variables, its next keys and their
        # last instants (None when its element has none)
        vi = lowered.var_index
        self._shape = {
            leaf.index: (
                {**self._base, **self._flags[leaf.index], "type": f"L{leaf.index}",
                 "_el": -1 if leaf.index in members else leaf.element},
                {v: (f"v{i}", f"b{i}", f"q{i}" if v in lowered.filter_vars else None,
                     v in lowered.exact_vars) for v, i in vi.items()},
                self._strict[leaf.index],
                lowered.next_keys.get(leaf.element),
                self._last.get(leaf.element))
            for leaf in self._leaves}
        # the last window's instants are kept for a hand-over only if one can happen: a
        # value an exact comparison reads, or a + record without a shared variable
        self._replay = bool(lowered.exact_vars) or any(self._strict.values())
        self._scaled: dict[str, int | None] = {}
        self._runs: Runs | None = None
        self.handed_over: str | None = None
        """Why the evaluation moved to the run loop (``None`` while on the engine)."""

    @property
    def live(self) -> int:
        """Partial matches waiting (the run loop's count once handed over; the engine keeps
        no such count: 0)."""
        return 0 if self._runs is None else self._runs.live

    def instant(self, time: Any, key: TimeKey, choices: Mapping[str, Sequence[Choice]]
                ) -> list[Match]:
        """Advance over the next instant; ``choices``: GPM → its choices there."""
        return self.instants([(time, key, choices)])

    def instants(self, batch: Sequence[_Instant]) -> list[Match]:
        """Advance over the next instants (time, key, choices), their records fed to the
        engine at once; the matches in instant order."""
        out: list[Match] = []
        pending: list[dict[str, Any]] = []
        for time, key, choices in batch:
            if self._runs is not None:
                out.extend(self._runs.instant(time, key, self._complete(choices)))
                continue
            records = self._instant_records(time, key, choices)
            if records is None:
                out.extend(self._feed(pending))
                pending = []
                out.extend(self._hand_over(time, key, choices))
            else:
                pending.extend(records)
        out.extend(self._feed(pending))
        return out

    def _instant_records(self, time: Any, key: TimeKey,
                         choices: Mapping[str, Sequence[Choice]]) -> list[dict[str, Any]] | None:
        """The records of the next instant, negative copies last, or ``None`` when one of
        them is not exact (the caller hands over)."""
        records: list[dict[str, Any]] = []
        negatives: list[dict[str, Any]] = []
        keyed: list[tuple[int, dict[str, Any]]] = []
        bounded: list[tuple[int, dict[str, Any], list[_Interval]]] = []
        t = key if type(key) is int else float(key)  # the engine reads ints or floats
        for leaf in self._leaves:
            made = self._records(leaf, time, key, t, choices)
            j = leaf.element
            for rec in made:
                if rec is None:
                    return None
                if self._negated[leaf.index]:
                    negatives.append({**rec, "type": f"N{leaf.index}"})
                if j in self._last:
                    keyed.append((j, rec))
                if j in self._low.bounds:
                    interval = self._interval(leaf, rec)
                    bounded.append((j, rec, interval))
                    records.extend(self._pieces(j, rec, key))
                else:
                    records.append(rec)
        self._k += 1
        vi = self._low.var_index
        for j, rec in keyed:
            self._last[j][tuple(rec[f"v{vi[v]}"] for v in self._low.next_keys[j])] = (
                self._k, key)
        for j, rec, interval in bounded:
            hist = self._hist[j].setdefault(
                tuple(rec[f"v{vi[v]}"] for v in self._low.next_keys[j]), deque())
            hist.append((self._k, key, interval))
            while key - hist[0][1] > self._span:
                hist.popleft()
        if self._k % 64 == 0:  # an older instant cannot match
            window = self._span
            for last in self._last.values():
                if len(last) > 64:
                    for p in [p for p, x in last.items() if key - x[1] > window]:
                        del last[p]  # in place: ``_shape`` holds the dict
        if self._replay:
            while self._recent and key - self._recent[0][1] > self._span:
                self._recent.popleft()
            self._recent.append((time, key, choices))
        records += negatives
        if self._low.ticks:  # the instant's last record (a fresh dict) ends ','-waits
            if records:
                records[-1]["kt"] = self._k
            else:
                records.append({"type": "T", "k": self._k, "kt": self._k, "t": t,
                                "_key": key})
        return records

    def _feed(self, records: list[dict[str, Any]]) -> list[Match]:
        """Feed ``records`` and return their matches, per instant without duplicates and
        sorted, instants in order."""
        if not records:
            return []
        per_instant: dict[int, dict[tuple[Any, ...], Match]] = {}
        for m in self._ev.feed(records):
            events = m.events
            assert events is not None
            match = self._match(events)
            if match is not None:
                per_instant.setdefault(events[-1]["k"], {}).setdefault(match.key(), match)
        out: list[Match] = []
        for k in sorted(per_instant):
            out.extend(sorted(per_instant[k].values(),
                              key=lambda m: (m.positions, repr(m.key()))))
        return out

    def _hand_over(self, time: Any, key: TimeKey, choices: Mapping[str, Sequence[Choice]]
                   ) -> list[Match]:
        assert self._replay, "a hand-over the lowering said could not happen"
        runs = Runs(self.plan, FilterChecker())
        for t, k, c in self._recent:
            if key - k <= self._span:
                runs.instant(t, k, self._complete(c))
        self._recent.clear()
        self._runs = runs
        self.handed_over = (f"at time {time!r}: a value the lowering cannot compare exactly "
                            "(a term that is not an xsd:integer or xsd:decimal read by a FILTER "
                            "after ';', or a mapping of a + GPM without one of its shared "
                            "variables: OPTIONAL, UNION)")
        return runs.instant(time, key, self._complete(choices))

    def _records(self, leaf: Leaf, time: Any, key: TimeKey, t: float,
                 choices: Mapping[str, Sequence[Choice]]) -> list[dict[str, Any] | None]:
        """The records of ``leaf`` at this instant (``None`` for one that is not safe);
        ``t``: the time the engine reads (microseconds)."""
        per_gpm = [choices.get(g, ()) for g in leaf.gpms]
        if not all(per_gpm):
            return []
        out: list[dict[str, Any] | None] = []
        template, attrs, strict, keys, last = self._shape[leaf.index]
        k = self._k + 1
        memo = self._scaled
        single = len(per_gpm) == 1
        for combo in ((c,) for c in per_gpm[0]) if single else product(*per_gpm):
            merged: Mapping[str, str]
            if single:
                merged = combo[0][2]
            else:
                union = joined(m for _, _, m in combo)
                if union is None:
                    continue
                merged = union
            rec = {**template, "k": k, "t": t, "_key": key, "_time": time, "_src": combo}
            for v, term in merged.items():
                vname, bname, qname, exact = attrs[v]
                rec[vname] = term
                rec[bname] = 1
                if qname is not None:
                    q = memo.get(term, _MISSING)
                    if q is _MISSING:
                        if len(memo) >= _MEMO:
                            memo.clear()
                        q = memo[term] = scaled(term)
                    if q is not None:
                        rec[qname] = q
                    elif exact:
                        return [None]
                    else:
                        rec["u"] = 1
            if strict and any(v not in merged for v in strict):
                return [None]
            if last is not None:
                assert keys is not None
                found = last.get(tuple(merged[v] for v in keys))
                rec["pk"] = -1 if found is None else found[0]
            out.append(rec)
        return out

    def _interval(self, leaf: Leaf, rec: Mapping[str, Any]) -> list[_Interval]:
        """The values of the fixed variable for which ``rec`` satisfies its GPMs' FILTERs
        (``Lowered.bounds``), as intervals (SPARQL's error logic: an operand ``rec`` leaves
        unbound makes its comparison an error, neither true nor false)."""
        vi = self._low.var_index
        per_gpm = self._low.bounds[leaf.element][1]

        def sets(r: tuple[Any, ...]) -> tuple[list[_Interval], list[_Interval]]:
            kind = r[0]
            if kind == "cmp":
                _, op, (what_kind, what) = r
                c = rec.get(f"q{vi[str(what)]}") if what_kind == "var" else what
                if not isinstance(c, int):
                    return [], []
                below, above = (_NEG, False, c, False), (c, False, _POS, False)
                at, to, fr = (c, True, c, True), (_NEG, False, c, True), (c, True, _POS, False)
                return {"<": ([below], [fr]), "<=": ([to], [above]), ">": ([above], [to]),
                        ">=": ([fr], [below]), "=": ([at], [below, above]),
                        "!=": ([below, above], [at])}[op]
            if kind == "not":
                t, f = sets(r[1])
                return f, t
            (t1, f1), (t2, f2) = sets(r[1]), sets(r[2])
            if kind == "and":
                return _meets(t1, t2), f1 + f2
            return t1 + t2, _meets(f1, f2)

        fit = [_FULL]
        for g in leaf.gpms:
            for region in per_gpm[g]:
                fit = _meets(fit, sets(region)[0])
        return fit

    def _pieces(self, j: int, rec: dict[str, Any], key: TimeKey) -> list[dict[str, Any]]:
        """Copies of ``rec``, one per interval of the fixed variable's value with its own
        previous fit instant ``pk`` (-1: none in the window); the intervals cover every
        value, so exactly one copy suits a run."""
        vi = self._low.var_index
        hist = self._hist[j].get(tuple(rec[f"v{vi[v]}"] for v in self._low.next_keys[j]), ())
        uncovered = [_FULL]
        pieces: list[tuple[_Interval, int]] = []
        for k, at, region in reversed(hist):
            if key - at > self._span or not uncovered:
                break
            for interval in region:  # possibly overlapping: what one claims, the next cannot
                rest = []
                for u in uncovered:
                    common = _meet(u, interval)
                    if _empty(common):
                        rest.append(u)
                        continue
                    pieces.append((common, k))
                    rest.extend(p for p in ((u[0], u[1], common[0], not common[1]),
                                            (common[2], not common[3], u[2], u[3]))
                                if not _empty(p))
                uncovered = rest
        pieces.extend((u, -1) for u in uncovered)
        return [{**rec, "pk": k, "plo": lo, "plc": int(lc), "phi": hi, "phc": int(hc)}
                for (lo, lc, hi, hc), k in pieces]

    def _filters_hold(self, checks: Sequence[tuple[str, CrossFilter]],
                      chosen: Sequence[Choice]) -> bool:
        """Whether each of ``checks`` holds on the match so far (``chosen``: its choices in
        time order, through the iteration just chosen), for every iteration of its GPM and
        every choice of one iteration of each other ``+`` GPM it reads (docs/SPASEQ.md,
        "Matches", rule 3)."""
        local = self.plan.local
        owner = self._owner
        shared: dict[str, str] = {}
        for g, _, m in chosen:
            for v, t in m.items():
                if v not in local[g]:
                    shared.setdefault(v, t)
        for g, f in checks:
            others = sorted({owner[v] for v in f.variables if v in owner and owner[v] != g})
            pools = [[m for o2, _, m in chosen if o2 == o] or [{}] for o in others]
            for own in [m for g2, _, m in chosen if g2 == g]:
                for combo in product(*pools):
                    b = {v: t for v, t in shared.items() if v in f.variables}
                    b.update({v: t for v, t in own.items() if v in local[g]})
                    for o, m in zip(others, combo, strict=True):
                        b.update({v: t for v, t in m.items() if v in local[o]})
                    if not self._filters.holds(f, b):
                        return False
        return True

    def _match(self, events: Sequence[Mapping[str, Any]]) -> Match | None:
        plan = self.plan
        first = events[0]
        last = events[-1]
        if last["_key"] - first["_key"] > self._span:
            return None
        low = self._low
        # (element, choices) per event; a shared record's element follows the one before
        # (it is no + element: one event), its choices renamed for the element's GPM
        picked: list[tuple[int, Sequence[Choice]]] = []
        for e in events:
            el, src = e["_el"], e["_src"]
            if el < 0:
                el = picked[-1][0] + 1 if picked else 0
                g, rename = self._member[el]
                src = renamed(g, rename, src)
            picked.append((el, src))
        if low.post or low.relaxed:
            loose = any(e["u"] for e in events)
            chosen: list[Choice] = []
            for el, src in picked:
                chosen.extend(src)
                checks = [*low.post.get(el, ()), *(low.relaxed.get(el, ()) if loose else ())]
                if checks and not self._filters_hold(checks, chosen):
                    return None
        occ: dict[str, list[tuple[int, Mapping[str, str]]]] = {}
        shared: dict[str, str] = {}
        for _, src in picked:  # in record order: time order
            for g, pos, m in src:
                occ.setdefault(g, []).append((pos, m))
                for v, t in m.items():
                    if v not in plan.local[g]:
                        shared[v] = t
        terms: Terms = {}
        for v in plan.select:
            o = self._owner.get(v)
            terms[v] = shared.get(v) if o is None else [m[v] for _, m in occ.get(o, ()) if v in m]
        return Match({g: tuple(p for p, _ in cs) for g, cs in occ.items()}, terms,
                     first["_time"], last["_time"])
