"""What one `kraft-audit run --once` costs, whole process, by kind of process: the
driver (Python), the JVM, and Spark's Python workers (the daemon and the workers it
forks, the data sources' planners), CPU seconds each, beside its wall time and its
micro-batches' span (from the job's progress table, as bench_side_by_side.py).

Every process under the run is sampled from /proc every 50 ms (a process's CPU is
its last sample: up to 50 ms of each is missed, a process that lives less than 50 ms
is not seen; sampling ends with the driver, so what the JVM spends after it is not
counted). This process is made a subreaper (prctl), so that the JVM, which the driver
starts in a session of its own and does not wait for, is reaped here.

Logs: the worst case and the NoOp-heavy log of bench_side_by_side.py (--partitions,
--changes), or a small one (--small: 1k partitions, 3k ISR changes) for the fixed
part. Runs are interleaved across --trees (checkouts of the project to compare:
each run imports kraft_audit from its tree, on PYTHONPATH, in the driver and the
workers), --runs rounds; medians per tree and log.

    python bench/bench_run_once.py [--trees A,B] [--env NAME=VALUE] [--python PATH] [--runs 3]
        [--small] [--logs worst,noop] [--event-log] [--run-arg ARG]

`make bench` runs it as it runs every bench_*.py: one round on this checkout.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

TICK = os.sysconf("SC_CLK_TCK")
PR_SET_CHILD_SUBREAPER = 36


def _descendants(root: int, kinds: dict[int, str]) -> dict[int, tuple[str, float, str]]:
    """pid -> (kind, CPU s of the process itself, command) for `root` and every process
    under it. `kinds` remembers each pid's kind across samples (an exited process, not
    yet reaped, has no command line left: it keeps the kind it had, or its parent's)."""
    parents: dict[int, list[int]] = {}
    stats: dict[int, tuple[int, str, float, str]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
            cmd = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        pid, ppid = int(entry.name), int(fields[1])
        parents.setdefault(ppid, []).append(pid)
        stats[pid] = (ppid, comm, (int(fields[11]) + int(fields[12])) / TICK, cmd.strip())
    seen, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            ppid, comm, cpu, cmd = stats[pid]
            if cmd:  # again at every sample: bash execs java, the daemon forks workers
                kinds[pid] = _kind(comm, cmd)
            elif pid not in kinds:
                kinds[pid] = kinds.get(ppid, "other") if comm.startswith("python") else "other"
            seen[pid] = (kinds[pid], cpu, cmd[:150] or f"({comm})")
        todo.extend(parents.get(pid, ()))
    return seen


def _kind(comm: str, cmd: str) -> str:
    if comm == "java" or cmd.split(" ")[0].endswith("/java"):
        return "jvm"
    if "kraft_audit.cli.main" in cmd:
        return "driver"
    if "pyspark.daemon" in cmd or "kraft_audit.spark.worker_daemon" in cmd:
        return "workers"  # the daemons, and the workers they fork (same command line)
    if comm.startswith("python") or "python" in cmd.split(" ")[0]:
        return "other python"
    return "other"


class Sampler(threading.Thread):
    def __init__(self, root: int):
        super().__init__(daemon=True)
        self.root, self.last, self.kinds = root, {}, {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.last.update(_descendants(self.root, self.kinds))
            time.sleep(0.05)

    def by_kind(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for kind, cpu, _ in self.last.values():
            out[kind] = out.get(kind, 0.0) + cpu
        out["processes"] = len(self.last)
        return out


def run_once(tree: Path, log: Path, work: Path, processes: bool = False,
             extra_env: dict[str, str] | None = None, event_log: bool = False,
             python: str = sys.executable, args: tuple[str, ...] = ()) -> dict[str, float]:
    from bench_side_by_side import batch_span, spark_once

    shutil.rmtree(work, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(tree), **(extra_env or {})}
    argv = [python, *spark_once(log, work)[1:], *args]
    if event_log:  # Spark's own record of the run: its micro-batches' phases and stages
        (work / "events").mkdir(parents=True)
        (work / "events.yaml").write_text(
            f"spark:\n  conf:\n    spark.eventLog.enabled: 'true'\n"
            f"    spark.eventLog.compress: 'false'\n    spark.eventLog.rolling.enabled: 'false'\n"
            f"    spark.eventLog.dir: 'file://{work / 'events'}'\n")
        argv += ["--config", str(work / "events.yaml")]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=tree, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sampler = Sampler(proc.pid)
    sampler.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    sampler.done.set()
    sampler.join()
    while True:  # reap the JVM and whatever else came to this subreaper
        try:
            if os.waitpid(-1, 0)[0] == 0:
                break
        except ChildProcessError:
            break
    if proc.returncode not in (0, 1):
        raise SystemExit(f"run --once exited {proc.returncode}: {err.decode(errors='replace')[-2000:]}")
    if processes:
        for pid, (kind, cpu, cmd) in sorted(sampler.last.items()):
            print(f"  {pid} {kind:<15} {cpu:6.2f} s  {cmd}")
    if event_log:
        from spark_event_log import newest_log, summarize

        print(summarize(newest_log(work / "events")), flush=True)
    out = sampler.by_kind()
    out["wall"] = wall
    out["micro-batches"] = batch_span(work / "tables") or float("nan")
    out["python, all"] = sum(v for k, v in out.items() if k in ("driver", "workers", "other python"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", default=str(REPO), help="comma-separated checkouts to compare")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="also run the first tree with this environment variable set (a variant "
                             "of its own; e.g. JDK_JAVA_OPTIONS=... for the JVM's options)")
    parser.add_argument("--runs", type=int, default=1, help="rounds (3 for a comparison)")
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--changes", type=int, default=300_000)
    parser.add_argument("--small", action="store_true", help="1k partitions, 3k changes")
    parser.add_argument("--logs", default="worst,noop")
    parser.add_argument("--processes", action="store_true", help="print every process of every run")
    parser.add_argument("--event-log", action="store_true",
                        help="print each run's micro-batches and stages from Spark's event log")
    parser.add_argument("--python", action="append", default=[], metavar="PATH",
                        help="also run the first tree with this interpreter (another venv: "
                             "other versions of the dependencies)")
    parser.add_argument("--run-arg", action="append", default=[], metavar="ARG",
                        help="an argument added to every `run --once` (e.g. --run-arg=--max-records-per-trigger=500000)")
    args = parser.parse_args(argv)
    if args.small:
        args.partitions, args.changes = 1000, 3000
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    trees = [(Path(t).resolve(), {}, sys.executable) for t in args.trees.split(",")]
    trees += [(trees[0][0], dict([e.split("=", 1)]), sys.executable) for e in args.env]
    trees += [(trees[0][0], {}, python) for python in args.python]
    from bench_side_by_side import build_logs

    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        logs = {k: v for k, v in build_logs(Path(tmp), args.partitions, args.changes).items()
                if k.split()[0].split("-")[0].lower() in args.logs.split(",")}
        for r in range(args.runs):
            for name, (log, records) in logs.items():
                # interleaved: a round's order alternates, so no tree always runs first
                for tree, env, python in (trees if r % 2 == 0 else trees[::-1]):
                    load = os.getloadavg()[0]
                    res = run_once(tree, log, Path(tmp) / "work", args.processes, env, args.event_log,
                                   python, tuple(args.run_arg))
                    res["load"] = load
                    label = tree.name + "".join(f" {k}={v}" for k, v in env.items()) \
                        + ("" if python == sys.executable else f" ({python})")
                    results.setdefault((name, label), []).append(res)
                    print(f"{datetime.now(timezone.utc):%H:%M:%S} {name} {label}: " + ", ".join(
                        f"{k} {v:.2f}" for k, v in res.items()), flush=True)
    print("\nmedians")
    for (name, label), rows in results.items():
        keys = sorted({k for row in rows for k in row})
        print(f"{name} {label} ({len(rows)} runs): " + ", ".join(
            f"{k} {statistics.median(row.get(k, 0.0) for row in rows):.2f}" for k in keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
