"""What a state row of a given size costs a micro-batch, apart from the audit.

The job keeps one state row per (cluster, bucket) in applyInPandasWithState:
every call the JVM hands the row to the Python worker, and a call that
changes it hands it back and the state store writes it. This bench runs the
same shape of query as the job (8 groups, the job's state columns, a small
micro-batch of rows spread over the groups) with a function that does no
audit: it only keeps, or rewrites, a state row of --sizes bytes (random
bytes, as compressed shards are). Per size and mode it prints Spark's p50
over the steady micro-batches: the micro-batch wall (triggerExecution),
addBatch, the state store's commit and update times, the CPU of the Python
call itself, and the CPU the JVM and Spark's Python processes spent per
micro-batch (from /proc: what a loaded machine does not distort as it does
the wall times).

    python bench/bench_state_row.py [--sizes 440000,4400000] [--batches 12]
                                    [--provider hdfs,rocksdb,rocksdb-changelog]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from proc_tree import cpu_seconds

PROVIDERS = {
    "hdfs": {},
    "rocksdb": {"spark.sql.streaming.stateStore.providerClass":
                "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"},
    "rocksdb-changelog": {
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true"},
}
GROUPS = 8


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def run(spark, work: Path, size: int, mode: str, batches: int, rows: int) -> dict:
    import pandas as pd
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    from kraft_audit.spark.operator import STATE_DDL, STATE_VERSION

    def func(key, pdfs, state):
        started = time.process_time()
        seen = sum(len(p) for p in pdfs)
        if not state.exists:
            state.update((STATE_VERSION, "t", b"m" * 200, b"t" * 2000, os.urandom(size), b""))
        elif mode == "rewrite":  # the same bytes under a new token, as a call that changed a shard
            old = state.get
            state.update((STATE_VERSION, str(time.time()), old[2], old[3], bytes(old[4]), old[5]))
        yield pd.DataFrame({"bucket": [int(key[1])], "seen": [seen],
                            "cpu_ms": [(time.process_time() - started) * 1000]})

    stream = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", rows).load()
              .select(F.lit("c").alias("cluster_id"), (F.col("value") % GROUPS).cast("int").alias("bucket"),
                      F.col("value"))
              .groupBy("cluster_id", "bucket")
              .applyInPandasWithState(func, "bucket int, seen long, cpu_ms double", STATE_DDL, "Update",
                                      GroupStateTimeout.NoTimeout))
    cpu: dict[int, list[float]] = {}

    def sink(df, batch_id):
        cpu[batch_id] = [r["cpu_ms"] for r in df.collect()]

    query = (stream.writeStream.outputMode("update").foreachBatch(sink)
             .option("checkpointLocation", str(work / f"ck-{size}-{mode}"))
             .trigger(processingTime="0 seconds").start())
    cpu_from, done_from = None, 0
    while (done := len([p for p in query.recentProgress if p["numInputRows"] > 0])) < batches:
        if cpu_from is None and done >= 2:  # after the warm-up
            cpu_from, done_from = cpu_seconds(), done
        time.sleep(0.2)
        if query.exception():
            raise RuntimeError(query.exception())
    cpu_to = cpu_seconds()
    query.stop()
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0][2:batches]  # after the warm-up
    stores = [p["stateOperators"][0] for p in progress]
    return {
        "wall": pct([p["durationMs"]["triggerExecution"] for p in progress], 0.5),
        "addBatch": pct([p["durationMs"]["addBatch"] for p in progress], 0.5),
        "updates": pct([s["allUpdatesTimeMs"] for s in stores], 0.5),
        "commit": pct([s["commitTimeMs"] for s in stores], 0.5),
        "memory_mb": pct([s["memoryUsedBytes"] for s in stores], 0.5) / 1e6,
        "rows_updated": pct([s["numRowsUpdated"] for s in stores], 0.5),
        "call_cpu_ms": pct([sum(cpu.get(p["batchId"], [])) for p in progress], 0.5),
        **{f"{k}_cpu_ms": (cpu_to[k] - cpu_from[k]) * 1000 / max(done - done_from, 1) for k in cpu_to},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="30000,600000,4400000", help="state row bytes per group")
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--rows", type=int, default=1000, help="input rows a micro-batch")
    parser.add_argument("--modes", default="rewrite,keep")
    parser.add_argument("--provider", default="hdfs", help=",".join(PROVIDERS))
    args = parser.parse_args()
    from kraft_audit.spark.session import build_session

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start; {GROUPS} groups")
    for provider in args.provider.split(","):
        spark = build_session("local[2]", shuffle_partitions=2, extra_conf=PROVIDERS[provider])
        with tempfile.TemporaryDirectory(prefix="kraft-audit-staterow-") as tmp:
            for size in [int(s) for s in args.sizes.split(",")]:
                for mode in args.modes.split(","):
                    r = run(spark, Path(tmp), size, mode, args.batches, args.rows)
                    print(f"{provider:18} row {size / 1e6:5.2f} MB x {GROUPS} {mode:8}: micro-batch p50 "
                          f"{r['wall']:5.0f} ms (addBatch {r['addBatch']:.0f}), state store updates "
                          f"{r['updates']:.0f} ms, commit {r['commit']:.0f} ms, {r['rows_updated']:.0f} rows "
                          f"written, memory {r['memory_mb']:.0f} MB; the Python calls' CPU "
                          f"{r['call_cpu_ms']:.0f} ms; CPU a micro-batch: JVM {r['jvm_cpu_ms']:.0f} ms, Spark's "
                          f"Python processes {r['python_cpu_ms']:.0f} ms (load {os.getloadavg()[0]:.1f})", flush=True)
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
