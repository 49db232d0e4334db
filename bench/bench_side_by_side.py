"""Side by side, whole processes: `kraft-audit dump` against Kafka's own
DumpLogSegments --cluster-metadata-decoder (from the jars `make kafka` resolves),
`kraft-audit check` in records/s, and the Spark job (`kraft-audit run --once`)
on the same logs.

Two logs, built here: the worst case (100k partitions created, then 300k ISR
changes in batches of 100: 401k records) and a NoOp-heavy one like real logs
(10k partitions, then 390k batches of one NoOpRecord with an ISR change after
every 30th). Every figure is the median of --runs runs of the whole process
(start-up included), wall clock and CPU (user + sys of the process and its
children: the machine may be shared, CPU time is what the work cost).

Run: python bench/bench_side_by_side.py [--runs 3] [--no-spark] [--partitions N --changes N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KAFKA_VERSION = "4.4.0"
KAFKA_JARS = REPO / ".cache" / "kafka" / KAFKA_VERSION
# The tool moved from core (Scala, kafka.tools) to tools (Java, org.apache.kafka.tools) in 4.x
DUMP_CLASSES = ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")
KRAFT_AUDIT = [sys.executable, "-m", "kraft_audit.cli.main"]


def timed(argv: list[str], runs: int, expect: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """Median wall and CPU seconds of `argv` run `runs` times, its output thrown away."""
    walls, cpus = [], []
    for _ in range(runs):
        before = os.times()
        start = time.perf_counter()
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
        walls.append(time.perf_counter() - start)
        after = os.times()
        cpus.append(after.children_user - before.children_user
                    + after.children_system - before.children_system)
        if done.returncode not in expect:
            raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: "
                             f"{done.stderr.decode(errors='replace')[-2000:]}")
    return statistics.median(walls), statistics.median(cpus)


def dump_log_segments() -> list[str] | None:
    """The java command line of Kafka's DumpLogSegments, or None without the jars or java."""
    java = shutil.which("java")
    if java is None or not KAFKA_JARS.is_dir():
        return None
    classpath = f"{KAFKA_JARS}/*"
    for name in DUMP_CLASSES:
        probe = subprocess.run([java, "-cp", classpath, name, "--help"], capture_output=True)
        if b"ClassNotFoundException" not in probe.stderr + probe.stdout:
            return [java, "-cp", classpath, name, "--cluster-metadata-decoder", "--files"]
    return None


def build_logs(work: Path, partitions: int, changes: int) -> dict[str, tuple[Path, int]]:
    from kraft_audit.testing.bulk import BulkLog

    worst = BulkLog(work / "worst", partitions, fault_every=1000)
    worst_n = worst.bootstrap() + worst.changes(changes, per_batch=100)
    worst.close()
    idle = BulkLog(work / "noop", max(partitions // 10, 100))
    idle_n = idle.bootstrap() + idle.idle(changes + partitions - partitions // 10)
    idle.close()
    return {"worst case": (work / "worst", worst_n), "NoOp-heavy": (work / "noop", idle_n)}


def segments(log: Path) -> list[str]:
    return sorted(str(p) for p in (log / "__cluster_metadata-0").glob("*.log"))


def spark_once(log: Path, work: Path) -> list[str]:
    return [*KRAFT_AUDIT, "run", "--once", "--log-dir", str(log), "--checkpoint",
            str(work / "checkpoint"), "--tables", str(work / "tables"), "--no-metrics"]


def batch_span(tables: Path) -> float | None:
    """Seconds from the first micro-batch's start to the last one's audit done (its
    Delta writes aside), from the job's own progress table: the job without start-up."""
    from deltalake import DeltaTable

    try:
        rows = DeltaTable(str(tables / "progress")).to_pyarrow_table(
            columns=["started_ms", "duration_seconds"]).to_pylist()
    except Exception:  # noqa: BLE001 - no table: no figure
        return None
    if not rows:
        return None
    last = max(rows, key=lambda r: r["started_ms"])
    return (last["started_ms"] - min(r["started_ms"] for r in rows)) / 1000 + (last["duration_seconds"] or 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--changes", type=int, default=300_000)
    parser.add_argument("--no-spark", action="store_true", help="leave out the Spark job")
    parser.add_argument("--spark-runs", type=int, default=1, help="runs of the Spark job (slow)")
    args = parser.parse_args(argv)
    kafka = dump_log_segments()
    load = os.getloadavg()
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, load "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; python {sys.version.split()[0]}; "
          f"median of {args.runs} runs, whole processes")
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        logs = build_logs(Path(tmp), args.partitions, args.changes)
        for name, (log, records) in logs.items():
            size = sum(Path(p).stat().st_size for p in segments(log)) / 1e6
            head = f"{name} ({records:,} records, {size:.1f} MB)"
            ours = timed([*KRAFT_AUDIT, "dump", str(log)], args.runs)
            if kafka is not None:
                theirs = timed([*kafka, *segments(log)], args.runs)
                rows.append((head, "dump vs DumpLogSegments --cluster-metadata-decoder",
                             f"{ours[0]:.2f} vs {theirs[0]:.2f} s wall "
                             f"({theirs[0] / ours[0]:.2f}x); CPU {ours[1]:.2f} vs {theirs[1]:.2f} s "
                             f"({theirs[1] / ours[1]:.2f}x)"))
            else:
                rows.append((head, "dump", f"{ours[0]:.2f} s wall, {ours[1]:.2f} s CPU "
                             f"(no java or no .cache/kafka/{KAFKA_VERSION}: `make kafka`)"))
            check = timed([*KRAFT_AUDIT, "check", str(log)], args.runs, expect=(0, 1))
            rows.append((head, "check", f"{records / check[0] / 1e3:.1f}k records/s wall, "
                         f"{records / check[1] / 1e3:.1f}k/s CPU ({check[0]:.2f} s, {check[1]:.2f} s)"))
            if not args.no_spark:
                work = Path(tmp) / f"spark-{name.split()[0]}"
                spark, spans = [], []
                for _ in range(args.spark_runs):
                    shutil.rmtree(work, ignore_errors=True)
                    spark.append(timed(spark_once(log, work), 1, expect=(0, 1)))
                    spans.append(batch_span(work / "tables"))
                wall = statistics.median(w for w, _ in spark)
                # wall only: the JVM is not a child this process can reap, its CPU is not counted
                rows.append((head, "run --once (Spark, local), whole process",
                             f"{records / wall / 1e3:.1f}k records/s wall ({wall:.1f} s), "
                             f"{wall / check[0]:.1f}x check's time (core vs Spark job, same log)"))
                if all(s is not None for s in spans):
                    span = statistics.median(spans)
                    rows.append((head, "  its micro-batches alone (no start-up, no stop)",
                                 f"{records / span / 1e3:.1f}k records/s wall ({span:.1f} s), "
                                 f"{span / check[0]:.1f}x check's time"))
    width = max(len(r[1]) for r in rows)
    last = None
    for head, what, figure in rows:
        if head != last:
            print(f"\n{head}")
            last = head
        print(f"  {what:<{width}}  {figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
