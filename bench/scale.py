"""Scale figures of the streaming auditor, in one run (`make bench-scale`; a script, not a test).

1. single-process core (decode + replay + all rules): records/s on a
   worst-case log (every record a partition record or change) and on a
   realistic one (95% NoOps);
2. worst-case backfill through the streaming job (availableNow) on the same
   log: records/s end to end and the Spark/core ratio;
3. per size (--sizes): bootstrap of an N-partition creation (records/s end to
   end, time until the whole of it is audited and written); then steady state
   at --rate records/s with a 1-second trigger: micro-batch wall p50/p99,
   append -> Delta row p50/p99, state bytes per partition, the share of group
   calls that rebuilt their auditor from the state row, RSS of the driver
   (Python and JVM) and of the Python workers; then a restart from the
   checkpoint in a new process (time until its first micro-batch is written);
   the sizes are printed side by side at the end;
4. exactly once at scale (--kill-size, 1M by default): the job killed with
   SIGKILL in the middle of the bootstrap and resumed from its checkpoint
   leaves the same tables as an uninterrupted run, and the counts balance.

    python bench/scale.py [--sizes 10000,100000,300000,1000000] [--core-only]
                          [--rate 1000] [--seconds 20] [--backfill-partitions 100000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_streaming import bench_backfill, noop_heavy_log  # noqa: E402
from proc_tree import cpu_seconds, descendants, is_jvm, is_python  # noqa: E402


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


# ------------------------------------------------------------------ memory

def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def process_rss() -> dict:
    """RSS of this driver, its JVM and the Python workers (descendants of this process)."""
    procs = descendants()
    jvm = [p for p, (cmd, _) in procs.items() if is_jvm(cmd)]
    workers = [p for p, (cmd, _) in procs.items() if is_python(cmd)]
    return {"driver_mb": _rss_mb(os.getpid()), "jvm_mb": sum(_rss_mb(p) for p in jvm),
            "workers": len(workers), "worker_max_mb": max((_rss_mb(p) for p in workers), default=0.0)}


# ------------------------------------------------------------------ core

def bench_core(log: Path) -> dict:
    from kraft_audit.core.audit import Auditor
    from kraft_audit.core.codec.logdir import read_log_dir
    from kraft_audit.core.rules.catalog import load_catalog

    t0 = time.perf_counter()
    events = list(read_log_dir(log))
    decoded = time.perf_counter() - t0
    t1 = time.perf_counter()
    Auditor(load_catalog(), {}).process(events)
    audited = time.perf_counter() - t1
    return {"records": len(events), "decode_s": decoded, "audit_s": audited,
            "rate": len(events) / (decoded + audited)}


def worst_case_log(path: Path, partitions: int, changes: int) -> int:
    from kraft_audit.testing.bulk import BulkLog

    log = BulkLog(path, partitions, fault_every=1000)
    n = log.bootstrap() + log.changes(changes, per_batch=100)
    log.close()
    return n


def operator_call(work: Path, n: int, buckets: int, changes: int, shard_dir: str | None) -> dict:
    """The stateful function alone (no query): one bucket of an n-partition cluster
    takes a micro-batch of `changes` partition changes. `live`: the worker still
    holds the bucket's auditor; `rebuilt`: it restores from the state row. CPU ms,
    medians, split into the state row read (restore), the save (snapshot, pickles,
    shard files) and the pickling of the row the worker sends back to the JVM.
    `shard_dir`: the shards in files there (the job's way), else in the row."""
    import pickle
    import statistics

    from pyspark.sql.streaming.state import GroupState, GroupStateTimeout
    from pyspark.sql.types import StructType

    from kraft_audit.core.codec.logdir import read_log_dir
    from kraft_audit.core.events import MetadataEvent
    from kraft_audit.testing.bulk import BulkLog
    from kraft_audit.spark import event_rows
    from kraft_audit.spark import operator as op
    from kraft_audit.testing.operator_calls import target_buckets

    def state_of(row=None):
        return GroupState(row, int(time.time() * 1000), -1, GroupStateTimeout.NoTimeout, False,
                          False, row is not None, False, False, -1, b"", StructType())

    log_dir = work / f"op{n}"
    if not log_dir.exists():
        log = BulkLog(log_dir, n)
        log.bootstrap()
        log.changes(changes * buckets * 6, per_batch=10)
        log.close()
    boot = sum(1 for e in read_log_dir(log_dir) if isinstance(e, MetadataEvent)
               and e.type != "PARTITION_CHANGE_RECORD")
    audit = op.OperatorConfig(buckets=buckets, timeout_ms=0, shard_dir=shard_dir)
    mine = [e for e in read_log_dir(log_dir) if isinstance(e, MetadataEvent)
            and 1 in target_buckets(e.type, e.data.get("topicId"), e.data.get("partitionId"), buckets)]
    key = (mine[0].cluster_id, 1)
    first = [e for e in mine if e.type != "PARTITION_CHANGE_RECORD"]
    rest = [e for e in mine if e.type == "PARTITION_CHANGE_RECORD"]
    state = state_of()
    op._LIVE.clear()
    list(op.audit_group(key, iter([event_rows.to_record_batch(first).to_pandas()]), state, audit))
    spent: dict[str, float] = {}

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - t0
        return wrapper

    resume, save = op.resume_bucket, op.save
    op.resume_bucket, op.save = timed("restore", resume), timed("save", save)
    times: dict[str, list[dict]] = {"live": [], "rebuilt": []}
    size = len(rest) // 6
    try:
        for i in range(6):
            frame = event_rows.to_record_batch(rest[i * size:(i + 1) * size]).to_pandas()
            kind = "live" if i % 2 else "rebuilt"
            if kind == "rebuilt":
                op._LIVE.clear()
            state = state_of(state.get)
            spent.clear()
            t0 = time.process_time()
            list(op.audit_group(key, iter([frame]), state, audit))
            whole = time.process_time() - t0
            t1 = time.process_time()
            pickle.dumps(tuple(state.get), protocol=pickle.HIGHEST_PROTOCOL)  # the row back to the JVM
            times[kind].append({"whole": whole, "row_out": time.process_time() - t1, **spent})
    finally:
        op.resume_bucket, op.save = resume, save

    def ms(kind, part):
        return statistics.median(t.get(part, 0.0) for t in times[kind]) * 1000

    row = state.get
    return {"bucket_partitions": boot // buckets, "records": size,
            **{f"{k}_{part}_ms": ms(k, part) for k in times for part in ("whole", "restore", "save", "row_out")},
            "row_bytes": sum(len(v) for v in row[1:] if isinstance(v, (bytes, bytearray))),
            "columns": {c: len(v) for c, v in zip(("meta", "topology", "shards", "held"), row[2:6])}}


# ------------------------------------------------------------------ streaming

class Steady:
    """Appends partition changes at a fixed rate, stamped with the real time,
    while a 1-second-trigger query tails the log."""

    def __init__(self, spark, cfg, log_path: Path, partitions: int, rate: float, seconds: float):
        from kraft_audit.testing.bulk import BulkLog
        from kraft_audit.spark.job import AuditJob

        self.log = BulkLog(log_path, partitions, seed=7)  # resumes after the bootstrap
        self.rate, self.seconds = rate, seconds
        self.cfg = cfg.with_values({"trigger.interval": "1 second"})
        self.written: dict[int, float] = {}
        self.stats: dict[int, dict] = {}  # bucket -> newest stats
        self.rebuilt = [0, 0]
        self.split: list[tuple[float, float]] = []  # (run the batch: source + shuffle + operator, Delta writes)
        self.rss: list[dict] = []
        self.job = AuditJob(self.cfg, spark=spark, after_write=self._after_write)

    def _after_write(self, batch_id: int) -> None:
        self.written.setdefault(batch_id, time.time() * 1000)
        writer = self.job.writer
        self.split.append((writer.last_progress["duration_seconds"], writer.sinks.last_write_seconds))
        for s in self.job.writer.last_stats:
            self.stats[s["bucket"]] = s
            self.rebuilt[0] += bool(s.get("rebuilt"))
            self.rebuilt[1] += 1

    def run(self) -> dict:
        per_tick = max(1, int(self.rate / 10))  # ten appends a second, 10 records a batch
        self.job.start(available_now=False)
        time.sleep(6)  # the first micro-batch (workers start, state loads) before the clock starts
        start = time.monotonic()
        cpu_from, written_from = cpu_seconds(), len(self.written)
        ticks = int(self.seconds * 10)
        for i in range(ticks):
            delay = start + i / 10 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self.log.ms = int(time.time() * 1000)
            self.log.changes(per_tick, per_batch=10, ms_step=0)
            if i % 50 == 0:
                self.rss.append(process_rss())
        appended_s = time.monotonic() - start
        target = self.log.writer.next_offset - 1
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            p = self.job.writer.last_progress
            if p and max((c["max_offset"] or -1) for c in p["clusters"]) >= target:
                break
            time.sleep(0.2)
        self.rss.append(process_rss())
        cpu_to = cpu_seconds()
        # CPU (user + sys) of the steady run by process kind: in all, and per 1,000 records appended
        # (a micro-batch's CPU depends on how many records it took, which the load decides)
        self.cpu = {k: cpu_to[k] - cpu_from[k] for k in cpu_to}
        self.cpu_batches = len(self.written) - written_from
        progress = [p for p in self.job.query.recentProgress if p["numInputRows"] > 0]
        self.job.query.stop()
        self.log.close()
        return self._figures(progress, appended_s)

    def _figures(self, progress, appended_s) -> dict:
        from deltalake import DeltaTable

        history = DeltaTable(str(Path(self.cfg.tables) / "partition_history")).to_pyarrow_table(
            columns=["timestamp_ms", "batch_id", "record_type"]).to_pylist()
        lat = [(self.written[r["batch_id"]] - r["timestamp_ms"]) / 1000 for r in history
               if r["batch_id"] in self.written and r["record_type"] == "PARTITION_CHANGE_RECORD"]
        walls = [p["durationMs"]["triggerExecution"] / 1000 for p in progress][1:]  # skip the warm-up batch
        state = sum(s["state_bytes"] for s in self.stats.values())
        split = self.split[1:]
        steady = progress[1:]
        phases = {name: pct([p["durationMs"].get(name, 0) / 1000 for p in steady], 0.5)
                  for name in ("addBatch", "latestOffset", "queryPlanning", "walCommit", "commitOffsets")}
        stores = [p["stateOperators"][0] for p in steady if p.get("stateOperators")]
        store = {name: pct([s.get(name, 0) for s in stores], 0.5)
                 for name in ("numRowsUpdated", "allUpdatesTimeMs", "commitTimeMs", "memoryUsedBytes")}
        store["custom"] = {k: pct([s.get("customMetrics", {}).get(k, 0) for s in stores], 0.5)
                           for k in (stores[0].get("customMetrics", {}) if stores else {})}
        return {"achieved_rate": self.log.records / appended_s if appended_s else 0, "records": self.log.records,
                "batches": len(walls), "wall_p50": pct(walls, 0.5), "wall_p99": pct(walls, 0.99),
                "run_p50": pct([a for a, _ in split], 0.5), "delta_p50": pct([b for _, b in split], 0.5),
                "delta_p99": pct([b for _, b in split], 0.99),
                "lat_p50": pct(lat, 0.5), "lat_p99": pct(lat, 0.99), "samples": len(lat),
                "phases": phases, "store": store,
                "cpu": self.cpu, "cpu_batches": self.cpu_batches, "state_bytes": state, "rebuilt_share": self.rebuilt[0] / max(self.rebuilt[1], 1),
                "driver_mb": max(r["driver_mb"] for r in self.rss), "jvm_mb": max(r["jvm_mb"] for r in self.rss),
                "worker_mb": max(r["worker_max_mb"] for r in self.rss),
                "workers": max(r["workers"] for r in self.rss)}


_RESTART = """
import json, sys, time
t0 = time.perf_counter()
from kraft_audit.config import load_config
from kraft_audit.spark.job import AuditJob
cfg = load_config(None, json.loads(sys.argv[1]), environ={})
first = {}
job = AuditJob(cfg, after_write=lambda b: first.setdefault(b, time.perf_counter()))
ok = job.run(available_now=True)
print(json.dumps({"ok": ok, "first_write_s": (min(first.values()) - t0) if first else None,
                  "wall_s": time.perf_counter() - t0, "batches": job.writer.batches}))
"""


def restart(cfg, log_path: Path, partitions: int, records: int) -> dict:
    """A new process resumes from the checkpoint after `records` more changes."""
    import json

    from kraft_audit.testing.bulk import BulkLog

    log = BulkLog(log_path, partitions, seed=11)
    log.ms = int(time.time() * 1000)
    log.changes(records, per_batch=10)
    log.close()
    values = {"sources.log_dirs": cfg.sources.log_dirs[0].path, "checkpoint": cfg.checkpoint,
              "tables": cfg.tables, "metrics.enabled": False, "audit.buckets": cfg.audit.buckets}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _RESTART, json.dumps(values)], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        return {"ok": False, "error": done.stderr[-800:], "wall_s": wall}
    return {**json.loads(lines[-1]), "process_wall_s": wall}


def kill_check(spark, work: Path, partitions: int, buckets: int, per_trigger: int,
               driver_memory: str | None) -> dict:
    """Exactly once at scale: the job killed with SIGKILL in the middle of an N-partition
    bootstrap and resumed from its checkpoint leaves the same tables as an uninterrupted
    run, and every record is applied, a duplicate or quarantined once."""
    from kraft_audit.config import load_config
    from kraft_audit.testing.bulk import BulkLog
    from kraft_audit.testing.crash_check import comparable_rows, run_then_kill_9
    from kraft_audit.spark.job import AuditJob

    log = BulkLog(work / "log", partitions, fault_every=max(partitions // 40, 1))
    records = log.bootstrap() + log.changes(10_000, per_batch=10)
    log.close()

    def config(name: str) -> dict:
        values = {"sources.log_dirs": str(work / "log"), "checkpoint": str(work / name / "checkpoint"),
                  "tables": str(work / name / "tables"), "sources.max_records_per_trigger": per_trigger,
                  "audit.buckets": buckets, "metrics.enabled": False}
        if driver_memory:
            values["spark.conf"] = {"spark.driver.memory": driver_memory}
        return values

    committed = run_then_kill_9(config("killed"), commits_before_kill=2, timeout_s=1800)
    t0 = time.perf_counter()
    killed = load_config(None, config("killed"), environ={})
    assert AuditJob(killed, spark=spark).run(available_now=True), "the resumed run failed"
    resumed_s = time.perf_counter() - t0
    whole = load_config(None, config("whole"), environ={})
    assert AuditJob(whole, spark=spark).run(available_now=True), "the uninterrupted run failed"
    tables = ("violations", "conditions", "partition_state", "partition_history", "brokers", "quarantine")
    differing = [t for t in tables
                 if comparable_rows(killed.tables, t) != comparable_rows(whole.tables, t)]
    progress = comparable_rows(killed.tables, "progress")
    read = sum(p["records"] for p in progress)
    settled = sum(p["applied"] + p["duplicates"] + p["quarantined"] for p in progress)
    return {"records": records, "committed": committed, "resumed_s": resumed_s,
            "differing": differing, "read": read, "settled": settled,
            "batches": len(progress)}


# ------------------------------------------------------------------ main

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,300000,1000000",
                        help="partition counts for the bootstrap / steady-state / restart table")
    parser.add_argument("--core-only", action="store_true", help="only the single-process core figures")
    parser.add_argument("--rate", type=float, default=1000, help="records/s appended in steady state")
    parser.add_argument("--seconds", type=float, default=20, help="length of each steady-state run")
    parser.add_argument("--buckets", type=int, default=8)
    parser.add_argument("--per-trigger", type=int, default=200_000, help="maxRecordsPerTrigger of backfills")
    parser.add_argument("--backfill-partitions", type=int, default=100_000)
    parser.add_argument("--backfill-changes", type=int, default=300_000)
    parser.add_argument("--skip-backfill", action="store_true")
    parser.add_argument("--skip-core", action="store_true")
    parser.add_argument("--driver-memory", default=None, help="spark.driver.memory (local mode: the whole JVM)")
    parser.add_argument("--operator-only", action="store_true", help="only the stateful function alone, per size")
    parser.add_argument("--skip-restart", action="store_true")
    parser.add_argument("--kill-size", type=int, default=1_000_000,
                        help="partitions of the bootstrap killed with SIGKILL and resumed (0: skip)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")

    with tempfile.TemporaryDirectory(prefix="kraft-audit-scale-") as tmp:
        work = Path(tmp)
        worst = work / "worst"
        n_worst = 0 if args.operator_only else worst_case_log(worst, args.backfill_partitions, args.backfill_changes)
        core = None
        if not args.skip_core and not args.operator_only:
            core = bench_core(worst)
            print(f"core, worst case ({n_worst:,} records: {args.backfill_partitions:,} PartitionRecords then "
                  f"PartitionChangeRecords): decode {core['decode_s']:.1f} s + audit {core['audit_s']:.1f} s = "
                  f"{core['rate']:,.0f} records/s  [target >= 150k]")
            noops = work / "noops"
            n_noops = noop_heavy_log(worst, noops, 10 * n_worst, 0.95)
            core_noop = bench_core(noops)
            print(f"core, realistic ({n_noops:,} records, 95% NoOps): decode {core_noop['decode_s']:.1f} s + "
                  f"audit {core_noop['audit_s']:.1f} s = {core_noop['rate']:,.0f} records/s  [target >= 400k]")
        if not args.skip_core or args.operator_only:
            for n in sizes:
                for where in ("row", "files"):
                    c = operator_call(work, n, args.buckets, int(args.rate / args.buckets),
                                      str(work / f"shards{n}") if where == "files" else None)
                    print(f"operator alone, shards in {where}, one bucket of {n:,} partitions "
                          f"(~{c['bucket_partitions']:,} in the bucket), {c['records']} changes a call, CPU ms: "
                          + "; ".join(f"{k} {c[k + '_whole_ms']:.0f} (restore {c[k + '_restore_ms']:.0f}, save "
                                      f"{c[k + '_save_ms']:.0f}, the row pickled back {c[k + '_row_out_ms']:.1f})"
                                      for k in ("live", "rebuilt"))
                          + f"; state row {c['row_bytes'] / 1e6:.2f} MB ("
                          + ", ".join(f"{k} {v / 1e6:.2f}" for k, v in c["columns"].items()) + ")", flush=True)
        if args.core_only or args.operator_only:
            return 0

        from kraft_audit.spark.session import build_session

        spark = build_session("local[2]", shuffle_partitions=2, extra_conf={
            "spark.driver.memory": args.driver_memory} if args.driver_memory else None)
        if not args.skip_backfill and core is not None:
            back = bench_backfill(spark, work / "backfill", worst, n_worst, args.buckets, args.per_trigger)
            core_s = core["decode_s"] + core["audit_s"]
            print(f"worst-case backfill (availableNow, {args.buckets} buckets): {back['batches']} micro-batches "
                  f"in {back['wall_s']:.1f} s = {back['rate']:,.0f} records/s end to end  [target >= 60k]; "
                  f"Spark/core {back['wall_s'] / core_s:.1f}x  [target <= 2x]")

        rows = []
        for n in sizes:
            from kraft_audit.testing.bulk import BulkLog

            path = work / f"n{n}"
            t0 = time.perf_counter()
            log = BulkLog(path / "log", n)
            boot_records = log.bootstrap()
            log.close()
            print(f"\n{n:,} partitions: log of {boot_records:,} records written in {time.perf_counter() - t0:.1f} s")
            boot = bench_backfill(spark, path, path / "log", boot_records, args.buckets, args.per_trigger)
            print(f"  bootstrap: {boot['rate']:,.0f} records/s end to end; first micro-batch written after "
                  f"{boot['first_batch_s']:.1f} s, the last after {boot['last_batch_s']:.1f} s, all of it "
                  f"audited and written (partition_state compacted) after {boot['wall_s']:.1f} s "
                  f"({boot['batches']} micro-batches)")
            steady = Steady(spark, boot["cfg"], path / "log", n, args.rate, args.seconds).run()
            # under load a micro-batch can outlast the run: nan then says no batch followed the warm-up
            print(f"  steady at {steady['achieved_rate']:,.0f} records/s, 1 s trigger: micro-batch wall "
                  f"p50 {steady['wall_p50']:.2f} s p99 {steady['wall_p99']:.2f} s over {steady['batches']} "
                  f"micro-batches after the warm-up (p50 of its parts: "
                  f"source + operator {steady['run_p50']:.2f} s, Delta writes {steady['delta_p50']:.2f} s, "
                  f"Delta writes p99 {steady['delta_p99']:.2f} s); append -> Delta row "
                  f"p50 {steady['lat_p50']:.2f} s p99 {steady['lat_p99']:.2f} s ({steady['samples']:,} rows); "
                  f"state {steady['state_bytes'] / n:.0f} B/partition; group calls rebuilt from the state "
                  f"row {steady['rebuilt_share']:.0%}; RSS driver {steady['driver_mb']:.0f} MB + JVM "
                  f"{steady['jvm_mb']:.0f} MB, Python workers up to {steady['worker_mb']:.0f} MB each "
                  f"({steady['workers']} processes)")
            # where a steady micro-batch's wall goes (Spark's durationMs, p50 s) and the state store's
            # figures (the stateful operator's progress, p50 per micro-batch)
            per_k = 1000 / max(steady["records"], 1)
            print(f"  CPU (user + sys) of the steady run ({steady['records']:,} records, "
                  f"{steady['cpu_batches']} micro-batches written), s: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in steady["cpu"].items())
                  + "; per 1,000 records: " + ", ".join(f"{k} {v * per_k:.3f}" for k, v in steady["cpu"].items())
                  + f" (load {os.getloadavg()[0]:.1f})")
            print("  micro-batch phases p50 s: " + ", ".join(f"{k} {v:.2f}" for k, v in steady["phases"].items()))
            print("  state store p50: " + ", ".join(f"{k} {v:,.0f}" for k, v in steady["store"].items()
                                                    if k != "custom")
                  + "; " + ", ".join(f"{k} {v:,.0f}" for k, v in steady["store"]["custom"].items()))
            row = {"n": n, **steady, "boot_rate": boot["rate"], "boot_s": boot["wall_s"]}
            if not args.skip_restart:
                rs = restart(boot["cfg"], path / "log", n, 1000)
                if rs.get("ok"):
                    print(f"  restart from the checkpoint (new process, 1,000 new records): first micro-batch "
                          f"written {rs['first_write_s']:.1f} s after the process started, done in "
                          f"{rs['process_wall_s']:.1f} s")
                    row["restart_s"] = rs["first_write_s"]
                else:
                    print(f"  restart failed: {rs}")
            rows.append(row)
        if args.kill_size:
            k = kill_check(spark, work / "kill", args.kill_size, args.buckets, args.per_trigger,
                           args.driver_memory)
            print(f"\nkill -9 after {k['committed']} committed micro-batches of a {args.kill_size:,}-partition "
                  f"bootstrap ({k['records']:,} records), resumed in {k['resumed_s']:.1f} s: tables "
                  + ("equal to an uninterrupted run's" if not k["differing"] else f"DIFFER: {k['differing']}")
                  + f"; {k['read']:,} records read in {k['batches']} micro-batches, {k['settled']:,} applied, "
                  f"duplicates or quarantined" + (" (balanced)" if k["read"] == k["settled"] == k["records"]
                                                  else " (NOT BALANCED)"))
            if k["committed"] >= k["batches"]:
                print("  (the run ended before the kill: raise --kill-size or lower --per-trigger)")
        spark.stop()

        print("\nside by side (targets at 1M: wall p99 <= 1 s, append -> Delta p99 <= 2 s, "
              "state <= 200 B/partition, bootstrap >= 60k records/s and <= 30 s, restart <= 30 s)")
        cols = [("partitions", lambda r: f"{r['n']:,}"), ("bootstrap rec/s", lambda r: f"{r['boot_rate']:,.0f}"),
                ("bootstrap s", lambda r: f"{r['boot_s']:.1f}"),
                ("wall p50", lambda r: f"{r['wall_p50']:.2f}"), ("wall p99", lambda r: f"{r['wall_p99']:.2f}"),
                ("operator p50", lambda r: f"{r['run_p50']:.2f}"), ("Delta write p50", lambda r: f"{r['delta_p50']:.2f}"),
                ("Delta write p99", lambda r: f"{r['delta_p99']:.2f}"),
                ("Delta row p99", lambda r: f"{r['lat_p99']:.2f}"),
                ("B/partition", lambda r: f"{r['state_bytes'] / r['n']:.0f}"),
                ("rebuilt", lambda r: f"{r['rebuilt_share']:.0%}"),
                ("driver+JVM MB", lambda r: f"{r['driver_mb']:.0f}+{r['jvm_mb']:.0f}"),
                ("worker MB", lambda r: f"{r['worker_mb']:.0f}"),
                ("restart s", lambda r: f"{r['restart_s']:.1f}" if "restart_s" in r else "-")]
        print(" | ".join(name for name, _ in cols))
        for r in rows:
            print(" | ".join(f(r) for _, f in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
