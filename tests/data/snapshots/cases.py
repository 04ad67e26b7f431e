"""The cases of ``format2/``: snapshots taken by ceql's format 2 (pickled, commit 05bdd48)
halfway through each stream; ``tests/test_snapshot_formats.py`` restores them and checks that
the rest of the stream gives what an evaluation that never stopped gives.

Run ``python tests/data/snapshots/cases.py OUT`` with a ceql that writes the format to
record (it wrote ``format2/`` from commit 05bdd48).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

UTC = dt.UTC
T0 = dt.datetime(2026, 1, 1, tzinfo=UTC)


def _rows() -> list[dict[str, Any]]:
    out = []
    for i in range(40):
        out.append({"type": "ABCH"[(i * 7) % 4], "g": f"k{i % 3}", "v": (i * 13) % 17,
                    "price": Decimal(i % 5) / 2, "ts": i, "at": T0 + dt.timedelta(seconds=i)})
    return out


#: name → (query, evaluator options, events, where the snapshot is taken)
CASES: dict[str, tuple[str, dict[str, Any], list[dict[str, Any]], int]] = {
    "all_plus": ("SELECT * FROM S WHERE A ; B+ ; C PARTITION BY [g] WITHIN 6 EVENTS",
                 {}, _rows(), 20),
    "next_time": ("SELECT NEXT * FROM S WHERE A ; B ; C WITHIN 8 SECONDS",
                  {"time": "at"}, _rows(), 21),
    "correlated_last": ("SELECT LAST * FROM S WHERE A AS a ; B+ AS b ; C AS c "
                        "FILTER b[v > a.v] AND c[price >= a.price] PARTITION BY [g] "
                        "WITHIN 10 EVENTS", {}, _rows(), 19),
    "trailing_not": ("SELECT * FROM S WHERE A AS a ; B ; NOT C AS n FILTER n[v > a.v] "
                     "WITHIN 5 SECONDS", {"time": "ts"}, _rows(), 22),
    "last_trailing": ("SELECT LAST * FROM S WHERE A ; B ; NOT H WITHIN 6 EVENTS",
                      {}, _rows(), 18),
    "kept_events": ("SELECT * FROM S WHERE A ; C WITHIN 4 EVENTS", {"keep_events": True},
                    _rows(), 17),
}


def main(out: Path) -> None:
    import ceql

    out.mkdir(parents=True, exist_ok=True)
    index = {}
    for name, (text, opts, rows, cut) in CASES.items():
        ev = ceql.compile(text).evaluator(**opts)
        ev.feed(rows[:cut])
        (out / f"{name}.snap").write_bytes(ev.snapshot())
        index[name] = {"query": text, "cut": cut}
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
