"""MATCH_CEQL on a real Spark standalone cluster (issue 14): a master and two workers started
from the installed pyspark on loopback, jobs submitted with ``spark-submit --master spark://…``
the way README's "On a cluster" says, results compared with the local engine.

The executors' Python has ceql's dependencies but not ceql: ceql reaches it either as the wheel
shipped with ``--py-files`` (on the executors' ``PYTHONPATH``) or as an environment where the
wheel is installed (``spark.pyspark.python``). The machine that submits has the wheel installed,
as a user's would; nothing comes from this repository's editable install. The cluster is
started once for the module and stopped by pid at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cluster_helpers import WORKER_CLASS, Cluster, alive, build_wheel, descendants, python_env
from cluster_job import FORMS

import ceql
from ceql.spark import match_ids

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).resolve().parent / "cluster_job.py"
ROWS = 4000
NAMES = 40
#: JVM options for runs this short: the quick JIT only, one GC thread (they halve the CPU time)
JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: settings of every submit: small executors, 4 shuffle partitions kept as 4 (AQE would
#: coalesce this little data into one task, on one worker)
CONF = ("spark.executor.memory=512m", "spark.sql.shuffle.partitions=4",
        "spark.sql.adaptive.coalescePartitions.enabled=false", "spark.ui.showConsoleProgress=false",
        f"spark.driver.extraJavaOptions={JVM}", f"spark.executor.extraJavaOptions={JVM}")


@pytest.fixture(scope="module")
def envs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The wheel; the submitting side's Python (wheel installed); the executors' (no ceql)."""
    root = tmp_path_factory.mktemp("envs")
    wheel = build_wheel(ROOT, root / "dist")
    client = python_env(root / "client", wheel)
    bare = python_env(root / "bare")
    missing = subprocess.run([str(bare.with_name("python3")), "-c", "import ceql"],
                             capture_output=True, text=True, cwd=root, timeout=60)
    assert "No module named 'ceql'" in missing.stderr
    jar = subprocess.run([str(client), "-c", "import ceql.spark; print(ceql.spark.jar_path())"],
                         capture_output=True, text=True, cwd=root, check=True, timeout=60)
    return {"wheel": wheel, "client": client, "bare": bare, "jar": Path(jar.stdout.strip())}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, envs: dict[str, Path]) -> Iterator[Cluster]:
    """A master and two workers (1 core, 1 GB each); ``python3`` on their PATH lacks ceql."""
    path = f"{envs['bare'].parent}{os.pathsep}{os.environ.get('PATH', '')}"
    c = Cluster(tmp_path_factory.mktemp("cluster"), workers=2, env={"PATH": path})
    c.start()
    daemons = [c.pid(WORKER_CLASS, n) for n in c.started]
    try:
        yield c
    finally:
        c.stop()
    assert not any(p is not None and alive(p) for p in daemons)


@pytest.fixture(scope="module")
def stock(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """4 000 trades over 40 tickers, 0.1 s apart (no equal times), in four Parquet files."""
    folder = tmp_path_factory.mktemp("stock")
    rows = []
    for i in range(ROWS):
        h = (i * 2654435761) % 2**32  # a fixed scramble: no random module state involved
        rows.append({"seq": i, "type": ("SELL", "BUY", "BUY", "CANCEL")[h % 4],
                     "name": f"n{(h >> 8) % NAMES}", "price": float((h >> 16) % 100),
                     "ts": i * 100_000})  # microseconds
    schema = pa.schema([("seq", pa.int64()), ("type", pa.string()), ("name", pa.string()),
                        ("price", pa.float64()), ("ts", pa.timestamp("us", tz="UTC"))])
    for part in range(4):
        chunk = rows[part::4]
        pq.write_table(pa.Table.from_pylist(chunk, schema), folder / f"part-{part}.parquet")
    return folder, rows


def expected(query: str, rows: Sequence[dict[str, Any]], partition: Sequence[str]) -> list[Any]:
    """What the local engine finds, in the job's shape: per match ``[match_id, key,
    [[variable, [seq, …]], …]]``, ids by ``match_ids`` over the partition's rows."""
    q = ceql.compile(query)
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r[c] for c in partition), []).append(r)
    out = []
    for key, group in groups.items():
        ms = list(q.run(group, time="ts", time_unit="us"))
        for m, mid in zip(ms, match_ids(key, ms, group), strict=True):
            bound = sorted([v, [group[p]["seq"] for p in ps]]
                           for v, ps in m.variables.items() if v in q.variables)
            out.append([mid, list(key), bound])
    return sorted(out, key=repr)


def submit(cluster: Cluster, envs: dict[str, Path], out: Path, conf: Sequence[str],
           *args: str, files: Sequence[str] = ()) -> subprocess.Popen[str]:
    """``spark-submit`` the job from the client's environment (its ``python3`` first on PATH)."""
    command = cluster.submit_command(
        "--jars", str(envs["jar"]),
        "--conf", "spark.sql.extensions=org.ceql.spark.CeqlSparkSessionExtensions",
        *files, *(a for c in (*CONF, *conf) for a in ("--conf", c)),
        str(JOB), "--out", str(out), *args)
    env = cluster.submit_env({
        "PATH": f"{envs['client'].parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    log = out.with_suffix(".log").open("w")
    return subprocess.Popen(command, env=env, cwd=out.parent, stdout=log,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def finish(proc: subprocess.Popen[str], out: Path, timeout: float = 900) -> dict[str, Any]:
    """Wait for the job; its report (the driver's log on failure)."""
    try:
        code = proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)  # the job is ours: its whole session (driver JVM, Python)
            proc.wait()
    log = out.with_suffix(".log").read_text()
    assert code == 0, log[-6000:]
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def check_results(report: dict[str, Any], forms: Sequence[str],
                  rows: Sequence[dict[str, Any]]) -> None:
    assert list(report["results"]) == list(forms)
    for name in forms:
        query, partition, _ = FORMS[name]
        want = expected(query, rows, partition)
        assert want, name  # every query has matches
        assert sorted(report["results"][name], key=repr) == want, name


def test_every_form_on_two_workers_with_the_wheel_shipped(
        cluster: Cluster, envs: dict[str, Path], stock: tuple[Path, Any], tmp_path: Path) -> None:
    """``--py-files ceql.whl`` and ``spark.executorEnv.PYTHONPATH``: every SQL spelling, the
    DataFrame API and a condition between events give the local engine's matches, with tasks
    on both workers; the executors' Python imports ceql from the shipped wheel."""
    folder, rows = stock
    wheel = envs["wheel"].name
    out = tmp_path / "report.json"
    # README's "On a cluster": python3 is the client's here and the bare one on the workers
    forms = [f for f in FORMS if f != "correlated"]  # the next test runs that one
    proc = submit(cluster, envs, out, ["spark.pyspark.python=python3",
                                       f"spark.executorEnv.PYTHONPATH={wheel}"],
                  "--input", str(folder), "--forms", ",".join(forms),
                  files=("--py-files", str(envs["wheel"])))
    report = finish(proc, out)
    assert report["master"] == cluster.url
    check_results(report, forms, rows)
    executors = report["executors"]
    assert len(executors) == 2 and all(e["completedTasks"] > 0 for e in executors)
    assert report["failed_tasks"] == 0
    for python, origin, cwd in report["python"]:
        assert Path(python).parent == envs["bare"].parent  # the workers' python3
        assert origin == str(Path(cwd, wheel, "ceql", "__init__.py"))
    assert len({cwd for _, _, cwd in report["python"]}) == 2  # one work folder per executor


def test_a_worker_killed_mid_job_loses_no_match(
        cluster: Cluster, envs: dict[str, Path], stock: tuple[Path, Any], tmp_path: Path) -> None:
    """ceql installed in the executors' Python (``spark.pyspark.python``): a worker and its
    executor are killed while MATCH_CEQL tasks run on it; Spark runs them again on the other
    worker and the result is complete and the same as the engine's."""
    folder, rows = stock
    markers = tmp_path / "markers"
    markers.mkdir()
    forms = ("correlated",)
    out = tmp_path / "report.json"
    proc = submit(cluster, envs, out,
                  [f"spark.pyspark.python={envs['client']}",
                   "spark.python.daemon.module=ceql.spark._daemon",
                   "spark.sql.shuffle.partitions=2"],  # a task on each worker at once
                  "--input", str(folder), "--forms", ",".join(forms), "--pause", "5",
                  "--markers", str(markers))
    victim, killed = None, []
    try:
        deadline = time.monotonic() + 600  # a bound on a hang, not a speed check
        while victim is None:
            assert proc.poll() is None, out.with_suffix(".log").read_text()[-6000:]
            assert time.monotonic() < deadline, "no task of the slowed stage started"
            busy = {int(m.name) for m in markers.iterdir()}
            for n in cluster.alive_workers():
                pid = cluster.pid(WORKER_CLASS, n)
                if pid is not None and busy & {p for p in descendants(pid) if alive(p)}:
                    victim = n
                    break
            time.sleep(0.1)
        assert cluster.executors(victim), "the busy worker has no executor"
        killed = cluster.kill_worker(victim)
    finally:
        report = finish(proc, out)
    assert killed and not any(alive(p) for p in killed)
    check_results(report, forms, rows)
    lost = [e for e in report["executors"] if not e["isActive"]]
    assert len(lost) == 1
    # the tasks it ran when killed failed (counted per stage: the lost executor's own count
    # is sometimes left at 0 by the driver's listener when it removes the executor first)
    assert report["failed_tasks"] > 0
    assert any(e["isActive"] and e["completedTasks"] > 0 for e in report["executors"])
