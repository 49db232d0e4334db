"""Cost of DeltaSinks.write_batch per micro-batch (delta-rs backend).

Prints the median and max seconds per batch for a few batch shapes, and the
cost of a replayed (skipped) batch. Run: python bench/bench_sinks.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import OutputRows  # noqa: E402

from kraft_audit.spark.sinks import DeltaSinks  # noqa: E402


def batch(rows: OutputRows, batch_id: int, changes: int, buckets: int) -> dict[str, list[dict]]:
    first = batch_id * changes
    offsets = range(first, first + changes)
    return {
        "partition_history": [rows.partition(o, partition=o % 1000) for o in offsets],
        "partition_state": [rows.partition(o, partition=o % 1000) for o in offsets],
        "violations": [rows.violation(o) for o in offsets[: max(1, changes // 100)]],
        "conditions": [
            rows.condition(o, partition=o % 1000) for o in offsets[: max(1, changes // 50)]
        ],
        "brokers": [rows.broker(b, first) for b in range(5)],
        "gauges": [rows.gauges(bucket=b, partitions=1000 // buckets) for b in range(buckets)],
        "progress": [rows.progress(batch_id, first + changes - 1, records=changes)],
    }


def measure(changes: int, batches: int = 20, buckets: int = 16) -> None:
    rows = OutputRows()
    with tempfile.TemporaryDirectory() as root:
        sinks = DeltaSinks(root, app_id="bench")
        sinks.write_batch(0, batch(rows, 0, changes, buckets))  # table creation, not counted
        costs = []
        for batch_id in range(1, batches + 1):
            data = batch(rows, batch_id, changes, buckets)
            started = time.perf_counter()
            sinks.write_batch(batch_id, data)
            costs.append(time.perf_counter() - started)
        started = time.perf_counter()
        sinks.write_batch(batches, data)  # a replay: every table skips it
        replay = time.perf_counter() - started
    print(
        f"{changes:>6} partition changes/batch: median {statistics.median(costs):.3f} s, "
        f"max {max(costs):.3f} s per batch over {batches} batches; replayed batch {replay:.3f} s"
    )


if __name__ == "__main__":
    for changes in (10, 1000, 10000):
        measure(changes)
