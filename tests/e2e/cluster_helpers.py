"""A Spark standalone cluster on loopback, started from the installed pyspark.

pip's pyspark ships ``sbin/spark-daemon.sh`` but not ``start-master.sh`` / ``start-worker.sh``;
those scripts only call ``spark-daemon.sh start <class> <instance> …``, which is what this
module does (the commands README's "On a cluster" shows). Every daemon writes its pid file to
the cluster's own directory, and :meth:`Cluster.stop` ends exactly those processes (and the
executors and Python workers they started), by pid.

Used by ``tests/e2e/test_cluster.py`` and ``bench/cluster.py``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
HOST = "127.0.0.1"
#: the log4j configuration of the daemons: warnings and errors, to the daemon's .out file
LOG4J = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n
"""


def build_wheel(root: Path, out: Path) -> Path:
    """``pip wheel --no-deps`` of the repository ``root`` into ``out``; the wheel's path."""
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                        "--wheel-dir", str(out), str(root)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"pip wheel failed:\n{r.stderr}")
    (wheel,) = out.glob("ceql-*.whl")
    return wheel


def python_env(path: Path, wheel: Path | None = None) -> Path:
    """A new virtual environment at ``path`` whose Python finds ceql's dependencies (and
    PySpark's) in this interpreter's site-packages, and ceql only if ``wheel`` is installed
    into it. Its ``bin/python``.

    The dependencies come through a ``.pth`` line, not a copy: that adds the directory to
    ``sys.path`` without reading the ``.pth`` files there, so an editable ceql of this
    interpreter stays invisible.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True,
                   timeout=120)
    python = path / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; "
                           "print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    if wheel is not None:
        r = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                            "--no-deps", "--quiet", str(wheel)],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"pip install of {wheel.name} failed:\n{r.stderr}")
    return python


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _pinned(cpus: set[int]) -> Callable[[], None]:
    def pin() -> None:
        os.sched_setaffinity(0, cpus)

    return pin


def children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (from /proc)."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # the command name is in parentheses and may hold spaces: the ppid follows the last ')'
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry.name))
    return out


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, parents before their children."""
    out: list[int] = []
    todo = [pid]
    while todo:
        kids = children(todo.pop())
        out.extend(kids)
        todo.extend(kids)
    return out


def cmdline(pid: int) -> str:
    """A process's command line, arguments separated by spaces ('' once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@dataclass
class Cluster:
    """A master and ``workers`` workers (``cores`` cores and ``memory`` each) on 127.0.0.1.

    ``env`` is added to the daemons' environment (executors inherit it: e.g. ``PYSPARK_PYTHON``).
    Use it as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    root: Path
    workers: int = 2
    cores: int = 1
    memory: str = "1g"
    env: Mapping[str, str] = field(default_factory=dict)
    master_port: int = 0
    master_ui_port: int = 0
    #: CPUs to pin workers to, worker n to ``cpus[(n - 1) % len(cpus)]`` (its executors and
    #: their Python workers inherit it): each worker then stands for a machine of its own
    cpus: Sequence[int] = ()
    started: list[int] = field(default_factory=list)  # instance numbers of started workers

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        for d in ("pids", "logs", "work", "conf"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        (self.root / "conf" / "log4j2.properties").write_text(LOG4J)

    @property
    def url(self) -> str:
        """The master's URL, for ``--master``."""
        return f"spark://{HOST}:{self.master_port}"

    def daemon_env(self) -> dict[str, str]:
        """The environment ``spark-daemon.sh`` runs with."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SPARK_", "PYSPARK_GATEWAY"))}
        env.update({"SPARK_HOME": str(SPARK_HOME), "SPARK_CONF_DIR": str(self.root / "conf"),
                    "SPARK_PID_DIR": str(self.root / "pids"),
                    "SPARK_LOG_DIR": str(self.root / "logs"),
                    "SPARK_WORKER_DIR": str(self.root / "work"),
                    "SPARK_IDENT_STRING": "ceql", "SPARK_LOCAL_IP": HOST,
                    "SPARK_LOCAL_HOSTNAME": HOST,
                    # no REST submission server (it would take a fixed port, 6066)
                    "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
                    # the master and workers only schedule: a small heap, quick JIT
                    "SPARK_DAEMON_MEMORY": "256m",
                    "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1"})
        env.update(self.env)
        return env

    def submit_command(self, *args: str) -> list[str]:
        """``spark-submit --master <this cluster> args…``."""
        return ["bash", str(SPARK_HOME / "bin" / "spark-submit"), "--master", self.url, *args]

    def submit_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of a ``spark-submit`` to this cluster (loopback, quiet driver)."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SPARK_", "PYSPARK_"))}
        env.update({"SPARK_HOME": str(SPARK_HOME), "SPARK_CONF_DIR": str(self.root / "conf"),
                    "SPARK_LOCAL_IP": HOST, "SPARK_LOCAL_HOSTNAME": HOST})
        env.update(extra or {})
        return env

    def _daemon(self, *args: str) -> None:
        r = subprocess.run(["bash", str(SPARK_HOME / "sbin" / "spark-daemon.sh"), *args],
                           env=self.daemon_env(), capture_output=True, text=True, timeout=120)
        if r.returncode != 0 or "failed to launch" in r.stdout:
            raise RuntimeError(f"spark-daemon.sh {' '.join(args)} failed:\n{r.stdout}{r.stderr}")

    def pid_file(self, cls: str, instance: int) -> Path:
        """Where ``spark-daemon.sh`` writes the pid of a daemon."""
        return self.root / "pids" / f"spark-ceql-{cls}-{instance}.pid"

    def pid(self, cls: str, instance: int) -> int | None:
        """A daemon's pid, if its pid file exists."""
        f = self.pid_file(cls, instance)
        return int(f.read_text().strip()) if f.exists() else None

    def start(self) -> Cluster:
        """Start the master, then the workers (in parallel); wait until all are registered."""
        if not self.master_port:
            self.master_port = free_port()
        if not self.master_ui_port:
            self.master_ui_port = free_port()
        try:
            self._daemon("start", MASTER_CLASS, "1", "--host", HOST, "--port",
                         str(self.master_port), "--webui-port", str(self.master_ui_port))
            self.add_workers(range(1, self.workers + 1))
        except BaseException:
            self.stop()
            raise
        return self

    def add_workers(self, instances: Sequence[int] | range) -> None:
        """Start workers numbered ``instances`` and wait until the master lists them."""
        procs = []
        for n in instances:
            pin = {self.cpus[(n - 1) % len(self.cpus)]} if self.cpus else None
            procs.append(subprocess.Popen(
                ["bash", str(SPARK_HOME / "sbin" / "spark-daemon.sh"), "start", WORKER_CLASS,
                 str(n), "--host", HOST, "--port", str(free_port()), "--webui-port",
                 str(free_port()), "--cores", str(self.cores), "--memory", self.memory,
                 "--work-dir", str(self.root / "work"), self.url],
                env=self.daemon_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, preexec_fn=None if pin is None else _pinned(pin)))
            self.started.append(n)
        for p in procs:
            out, _ = p.communicate(timeout=120)
            if p.returncode != 0 or "failed to launch" in out:
                raise RuntimeError(f"a worker did not start:\n{out}")
        self.wait_for_workers(len(self.alive_workers()), timeout=300)

    def state(self) -> dict[str, object]:
        """The master's state as its web UI gives it (``/json``)."""
        with urllib.request.urlopen(f"http://{HOST}:{self.master_ui_port}/json/",
                                    timeout=10) as r:
            state: dict[str, object] = json.load(r)
        return state

    def alive_workers(self) -> list[int]:
        """The instance numbers of started workers whose process runs."""
        return [n for n in self.started if (p := self.pid(WORKER_CLASS, n)) and alive(p)]

    def wait_for_workers(self, count: int, timeout: float) -> None:
        """Wait until the master counts ``count`` ALIVE workers."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                workers = self.state().get("workers", [])
                assert isinstance(workers, list)
                if sum(w.get("state") == "ALIVE" for w in workers) >= count:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                tails = "\n".join(f"--- {name}\n{text[-2000:]}" for name, text in self.logs())
                raise RuntimeError(f"the master did not register {count} worker(s) in "
                                   f"{timeout} s:\n{tails}")
            time.sleep(0.3)

    def executors(self, instance: int) -> list[int]:
        """The executor JVMs a worker started (its ``CoarseGrainedExecutorBackend`` children)."""
        pid = self.pid(WORKER_CLASS, instance)
        if pid is None:
            return []
        return [c for c in children(pid) if EXECUTOR_CLASS in cmdline(c)]

    def processes(self, instance: int) -> list[int]:
        """A worker, its executors and their Python workers."""
        pid = self.pid(WORKER_CLASS, instance)
        return [] if pid is None or not alive(pid) else [pid, *descendants(pid)]

    def kill_worker(self, instance: int) -> list[int]:
        """SIGKILL a worker with its executors and their Python workers; the pids killed."""
        pids = self.processes(instance)
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.pid_file(WORKER_CLASS, instance).unlink(missing_ok=True)
        return pids

    def stop(self) -> None:
        """Stop the workers, then the master, by their pid files; whatever they started too."""
        daemons = [(WORKER_CLASS, n) for n in self.started] + [(MASTER_CLASS, 1)]
        for cls, n in daemons:
            pid = self.pid(cls, n)
            if pid is None:
                continue
            tree = [pid, *descendants(pid)] if alive(pid) else []
            for p in tree:
                try:
                    os.kill(p, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 10
            while any(alive(p) for p in tree) and time.monotonic() < deadline:
                time.sleep(0.1)
            for p in tree:
                if alive(p):
                    try:
                        os.kill(p, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            self.pid_file(cls, n).unlink(missing_ok=True)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def logs(self) -> Iterator[tuple[str, str]]:
        """(file name, text) of each daemon's log, for failure messages."""
        for f in sorted((self.root / "logs").glob("*.out")):
            yield f.name, f.read_text(errors="replace")
