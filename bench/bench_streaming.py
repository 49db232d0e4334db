"""End-to-end figures of the streaming auditor on this machine (a script, not a test).

1. backfill: a large simulated log audited with Trigger.AvailableNow into
   Delta tables: records/s end to end (target >= 50k records/s on 2 cores);
2. the same log through the single-process core (decode + audit), and
   Spark's overhead over it;
3. latency: records appended at a steady rate while the query runs with a
   1-second trigger; from a record's append to the Delta write holding its
   rows (violations and partition history), p50/p99 (target p99 <= 5 s at
   2k records/s).

    python bench/bench_streaming.py [--partitions 100000] [--rate 2000] [--seconds 30]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path


FAULTS = [("partition-epoch-not-bumped", 0)]  # one that the rolling-restart scenario gives a chance to


def simulate_log(out: Path, partitions: int, seed: int = 1, faults=()):
    from kraft_audit.sim.runner import simulate
    from kraft_audit.sim.scenario import load_scenario

    scenario = load_scenario("rolling-restart").scaled(partitions=partitions, brokers=6)
    return simulate(scenario, out, seed=seed, faults=list(faults))


def noop_heavy_log(template: Path, out: Path, records: int, noop_share: float) -> int:
    """A log like a real controller's: the template's batches with NoOpRecord
    batches between them (real logs are 95-99.7% NoOps, one every 500 ms).
    Returns the number of records written."""
    from kraft_audit.core.codec.logdir import LogDirWriter, read_log_dir, read_meta_properties
    from kraft_audit.core.events import KIND_CONTROL, MetadataEvent

    writer = LogDirWriter(out, read_meta_properties(template)["cluster.id"])
    written, noops_owed, ts = 0, 0.0, 1_750_000_000_000
    batch: list[MetadataEvent] = []

    def flush():
        nonlocal written
        if batch[0].kind == KIND_CONTROL:
            writer.append_control(batch[0].type, batch[0].data, ts)
        else:
            writer.append([(e.type, e.version, e.data) for e in batch], ts)
        written += len(batch)

    for e in read_log_dir(template):
        if not isinstance(e, MetadataEvent):
            continue
        if batch and e.batch_base_offset != batch[0].batch_base_offset:
            flush()
            noops_owed += len(batch) * noop_share / (1 - noop_share)
            batch = []
            while noops_owed >= 1 and written < records:
                writer.append([("NO_OP_RECORD", 0, {})], ts)
                written += 1
                noops_owed -= 1
                ts += 500
            if written >= records:
                break
        batch.append(e)
    else:
        if batch:
            flush()
    writer.close()
    return written


def job_config(work: Path, log: Path, **overrides):
    from kraft_audit.config import load_config

    values = {"sources.log_dirs": str(log), "checkpoint": str(work / "checkpoint"),
              "tables": str(work / "tables"), "metrics.enabled": False}
    values.update(overrides)
    return load_config(None, values, environ={})


def bench_core(log: Path) -> dict:
    from kraft_audit.core.audit import Auditor
    from kraft_audit.core.codec.logdir import read_log_dir
    from kraft_audit.core.rules.catalog import load_catalog

    t0 = time.perf_counter()
    events = list(read_log_dir(log))
    decoded = time.perf_counter() - t0
    auditor = Auditor(load_catalog(), {})
    t1 = time.perf_counter()
    out = auditor.process(events)
    audited = time.perf_counter() - t1
    return {"records": len(events), "decode_s": decoded, "audit_s": audited,
            "violations": len(out.violations), "state_bytes": len(auditor.to_bytes())}


def bench_backfill(spark, work: Path, log: Path, records: int, buckets: int, per_trigger: int) -> dict:
    from kraft_audit.spark.job import AuditJob

    cfg = job_config(work, log, **{"audit.buckets": buckets, "sources.max_records_per_trigger": per_trigger})
    done = {}
    job = AuditJob(cfg, spark=spark, after_write=lambda b: done.setdefault(b, time.perf_counter()))
    t0 = time.perf_counter()
    assert job.run(available_now=True), job.query.exception()
    wall = time.perf_counter() - t0
    first = done[min(done)] - t0 if done else 0.0
    last = done[max(done)] - t0 if done else 0.0  # the rest of the wall: the final compaction
    rest = [b for b in done if b != min(done)]
    steady = (records * len(rest) / max(len(done), 1)) / (wall - first) if rest else float("nan")
    states = [s["state_bytes"] for s in job.writer.last_stats]
    return {"wall_s": wall, "batches": job.writer.batches, "first_batch_s": first, "last_batch_s": last,
            "steady_rate": steady,
            "rate": records / wall, "state_bytes_max": max(states, default=0),
            "state_bytes_total": sum(states), "violations": job.writer.totals.get("violations", 0),
            "cfg": cfg}


def bench_latency(spark, work: Path, template: Path, rate: float, seconds: float, buckets: int) -> dict:
    """Replay a simulated log's batches into a fresh log dir at `rate` records/s,
    stamping each batch with its real append time, while the query tails it."""
    from deltalake import DeltaTable

    from kraft_audit.core.codec.logdir import LogDirWriter, read_log_dir, read_meta_properties
    from kraft_audit.core.events import KIND_CONTROL, MetadataEvent
    from kraft_audit.spark.job import AuditJob

    batches: list[list[MetadataEvent]] = []
    for e in read_log_dir(template):
        if isinstance(e, MetadataEvent):
            if batches and batches[-1][0].batch_base_offset == e.batch_base_offset:
                batches[-1].append(e)
            else:
                batches.append([e])
    total = int(rate * seconds)
    live = work / "live"
    writer = LogDirWriter(live, read_meta_properties(template)["cluster.id"])
    cfg = job_config(work, live, **{"audit.buckets": buckets, "trigger.interval": "1 second",
                                    "sources.max_records_per_trigger": None})
    written = {}
    job = AuditJob(cfg, spark=spark, after_write=lambda b: written.setdefault(b, time.time() * 1000))

    appended = {"records": 0}

    def append():
        start = time.monotonic()
        for batch in batches:
            if appended["records"] >= total:
                break
            due = start + appended["records"] / rate
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            now = int(time.time() * 1000)
            if batch[0].kind == KIND_CONTROL:
                writer.append_control(batch[0].type, batch[0].data, now)
            else:
                writer.append([(e.type, e.version, e.data) for e in batch], now)
            appended["records"] += len(batch)
        appended["elapsed"] = time.monotonic() - start
        writer.close()

    job.start(available_now=False)
    time.sleep(8)  # let the first (warm-up) micro-batch pass before the clock starts
    feeder = threading.Thread(target=append)
    feeder.start()
    feeder.join()
    deadline = time.monotonic() + 60
    target = writer.next_offset - 1
    while time.monotonic() < deadline:
        p = job.writer.last_progress
        if p and max((c["max_offset"] or -1) for c in p["clusters"]) >= target:
            break
        time.sleep(0.2)
    job.query.stop()
    history = DeltaTable(str(Path(cfg.tables) / "partition_history")).to_pyarrow_table(
        columns=["timestamp_ms", "batch_id"]).to_pylist()
    lat = sorted((written[r["batch_id"]] - r["timestamp_ms"]) / 1000 for r in history if r["batch_id"] in written)
    violations = DeltaTable(str(Path(cfg.tables) / "violations")).to_pyarrow_table(
        columns=["timestamp_ms", "batch_id"]).to_pylist()
    vlat = sorted((written[r["batch_id"]] - r["timestamp_ms"]) / 1000 for r in violations
                  if r["batch_id"] in written and r["timestamp_ms"] > 0)

    def pct(values, q):
        return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")

    return {"records": appended["records"], "achieved_rate": appended["records"] / appended["elapsed"],
            "samples": len(lat), "p50": pct(lat, 0.5), "p99": pct(lat, 0.99), "max": lat[-1] if lat else 0,
            "violation_samples": len(vlat), "violation_p50": pct(vlat, 0.5), "violation_p99": pct(vlat, 0.99),
            "batches": job.writer.batches}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=100_000, help="partitions of the backfill log")
    parser.add_argument("--buckets", type=int, default=8)
    parser.add_argument("--per-trigger", type=int, default=250_000, help="maxRecordsPerTrigger for the backfill")
    parser.add_argument("--rate", type=float, default=2000, help="records/s appended in the latency run")
    parser.add_argument("--seconds", type=float, default=30, help="length of the latency run")
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()

    from kraft_audit.spark.session import build_session

    with tempfile.TemporaryDirectory(prefix="kraft-audit-bench-") as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        sim = simulate_log(work / "big", args.partitions, faults=FAULTS)
        print(f"log: {sim.records:,} records, {sim.partitions:,} partitions "
              f"(simulated in {time.perf_counter() - t0:.1f} s)")

        core = bench_core(work / "big")
        core_s = core["decode_s"] + core["audit_s"]
        print(f"single-process core: decode {core['decode_s']:.1f} s + audit {core['audit_s']:.1f} s = "
              f"{core['records'] / core_s:,.0f} records/s; {core['violations']} violations; "
              f"state {core['state_bytes'] / 1e6:.1f} MB")

        t0 = time.perf_counter()
        spark = build_session("local[2]", shuffle_partitions=2)
        print(f"spark session start: {time.perf_counter() - t0:.1f} s")
        back = bench_backfill(spark, work / "backfill", work / "big", sim.records, args.buckets, args.per_trigger)
        print(f"streaming backfill (availableNow, {args.buckets} buckets, maxRecordsPerTrigger "
              f"{args.per_trigger:,}): {back['batches']} micro-batches in {back['wall_s']:.1f} s = "
              f"{back['rate']:,.0f} records/s end to end (first batch {back['first_batch_s']:.1f} s; "
              f"after it {back['steady_rate']:,.0f} records/s); {back['violations']} violations")
        print(f"  state: {back['state_bytes_total'] / 1e6:.1f} MB over all buckets, "
              f"largest bucket {back['state_bytes_max'] / 1e6:.2f} MB")
        print(f"  Spark's overhead: {back['wall_s'] / core_s:.1f}x the single-process core's time")

        noop_log = work / "noops"
        n = noop_heavy_log(work / "big", noop_log, sim.records, 0.95)
        real = bench_backfill(spark, work / "backfill-noops", noop_log, n, args.buckets, args.per_trigger)
        print(f"streaming backfill of a realistic log ({n:,} records, 95% NoOps): {real['batches']} "
              f"micro-batches in {real['wall_s']:.1f} s = {real['rate']:,.0f} records/s end to end "
              f"(after the first batch {real['steady_rate']:,.0f} records/s)")

        if not args.skip_latency:
            template = work / "template"
            simulate_log(template, max(args.partitions // 10, 2000), seed=2, faults=FAULTS)
            lat = bench_latency(spark, work / "latency", template, args.rate, args.seconds, args.buckets)
            print(f"latency at {lat['achieved_rate']:,.0f} records/s appended for {args.seconds:.0f} s, "
                  f"1-second trigger ({lat['batches']} micro-batches): append -> rows in Delta "
                  f"p50 {lat['p50']:.2f} s, p99 {lat['p99']:.2f} s, max {lat['max']:.2f} s "
                  f"over {lat['samples']:,} partition changes; violations p50 {lat['violation_p50']:.2f} s "
                  f"p99 {lat['violation_p99']:.2f} s over {lat['violation_samples']}")
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
