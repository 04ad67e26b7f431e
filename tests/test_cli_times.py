"""``ceql run`` on a CSV whose time column holds ISO 8601 times (read as timestamps): times
subtract to seconds in conditions, and a time compared with a number is refused (issue 27)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from ceql.cli import main

EVENTS = "type,ts,amount\nA,2020-01-01 00:00:00,10\nB,2020-01-01 00:01:40,9\n"


def run(tmp_path: Path, query: str) -> tuple[int, str, str]:
    (tmp_path / "q.ceql").write_text(query, encoding="utf-8")
    (tmp_path / "events.csv").write_text(EVENTS, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["run", str(tmp_path / "q.ceql"), "--input", str(tmp_path / "events.csv"),
                       "--time", "ts", "--quiet"])
    return status, out.getvalue(), err.getvalue()


def test_times_of_a_csv_subtract_to_seconds(tmp_path: Path) -> None:
    for cond, want in (("b[ts - a.ts >= 60]", [[0, 1]]), ("b[ts - a.ts > 100]", []),
                       ("b[ts >= a.ts + INTERVAL 1 MINUTE]", [[0, 1]]),
                       ("a[ts < '2020-01-01 00:00:30']", [[0, 1]])):
        status, out, err = run(tmp_path, f"SELECT * FROM S WHERE A AS a ; B AS b FILTER {cond} "
                                         "WITHIN 10 MINUTES")
        assert status == 0, err
        assert [json.loads(line)["positions"] for line in out.splitlines()] == want, cond


def test_a_time_compared_with_a_number_is_refused(tmp_path: Path) -> None:
    status, _, err = run(tmp_path, "SELECT * FROM S WHERE A FILTER A[ts > 5]")
    assert status == 2
    assert "ts is timestamp but 5 is number" in err
