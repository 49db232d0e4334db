"""Decode throughput of the codec, next to the cost of merely reading the bytes.

For each real fixture and for a generated partition-heavy log (>= 1M
PartitionRecord/PartitionChangeRecord records, written with LogDirWriter in
batches of realistic size), prints records/s and MB/s of a full decode into
MetadataEvents on one core, the time of framing + CRC alone, and the time to
read the files from disk (page cache warm). Run: python bench/bench_decode.py
[--records N]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from kraft_audit.core.codec import wire
from kraft_audit.core.codec.batches import Batch, iter_batches
from kraft_audit.core.codec.logdir import LogDirWriter, list_segments, read_log_dir
from kraft_audit.core.codec.records import encode_value

REAL_FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "kraft-real"


def best_of(runs: int, fn) -> tuple[float, float, object]:
    """Best wall-clock and best CPU seconds over ``runs`` calls (CPU time is
    what one core spends, whatever else shares the machine)."""
    best_wall = best_cpu = float("inf")
    result = None
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    return best_wall, best_cpu, result


def measure(name: str, log_dir: Path, runs: int) -> None:
    segments = [p for _, p in list_segments(log_dir)]
    size = sum(p.stat().st_size for p in segments)
    read_s, _, _ = best_of(runs, lambda: [p.read_bytes() for p in segments])
    frame_s, _, batches = best_of(
        runs,
        lambda: sum(isinstance(b, Batch) for p in segments for b in iter_batches(p.read_bytes())),
    )
    wall_s, cpu_s, records = best_of(runs, lambda: sum(1 for _ in read_log_dir(log_dir)))
    print(
        f"{name}: {records:,} records in {batches:,} batches, {size / 1e6:.1f} MB\n"
        f"    read bytes {read_s * 1e3:8.1f} ms   framing+CRC {frame_s * 1e3:8.1f} ms   "
        f"full decode {wall_s * 1e3:8.1f} ms wall / {cpu_s * 1e3:8.1f} ms CPU\n"
        f"    {records / wall_s / 1e3:6.0f}k records/s wall, "
        f"{records / cpu_s / 1e3:6.0f}k records/s CPU, "
        f"{size / wall_s / 1e6:5.1f} MB/s wall"
    )


def write_partition_heavy_log(path: Path, records: int, seed: int = 7) -> None:
    """A cluster of 50 topics x 400 partitions on 6 brokers, created, then
    churned by ISR shrinks/expands and leader elections, as a controller
    writes them: many small batches, some large ones (broker failover)."""
    rng = random.Random(seed)
    topics = [wire.uuid_to_str(rng.randbytes(16)) for _ in range(50)]
    dirs = [wire.uuid_to_str(rng.randbytes(16)) for _ in range(6)]
    partitions = [(t, p) for t in topics for p in range(400)]
    writer = LogDirWriter(path, "bench-cluster", segment_bytes=64 << 20)
    writer.append_leader_change(1, 0, leader_epoch=1)
    now = 1_700_000_000_000
    written = 0
    for start in range(0, len(partitions), 400):  # topic creation: one batch per topic
        values = []
        for topic, p in partitions[start : start + 400]:
            replicas = rng.sample(range(1, 7), 3)
            values.append(
                encode_value(
                    "PARTITION_RECORD",
                    2,
                    {
                        "partitionId": p,
                        "topicId": topic,
                        "replicas": replicas,
                        "isr": replicas,
                        "leader": replicas[0],
                        "leaderEpoch": 0,
                        "partitionEpoch": 0,
                        "directories": [dirs[r - 1] for r in replicas],
                    },
                )
            )
        writer.append_values(values, now)
        written += len(values)
    while written < records:
        now += 500
        size = rng.choice(
            (1, 1, 2, 3, 5, 8, 20, 50, 200, 1000)
        )  # failovers move many leaders at once
        values = []
        for _ in range(size):
            topic, p = rng.choice(partitions)
            isr = sorted(rng.sample(range(1, 7), rng.randint(1, 3)))
            change = {"partitionId": p, "topicId": topic, "isr": isr}
            if rng.random() < 0.4:
                change["leader"] = isr[0]
            if rng.random() < 0.1:
                change["eligibleLeaderReplicas"] = [r for r in range(1, 4) if r not in isr]
                change["lastKnownElr"] = []
            values.append(encode_value("PARTITION_CHANGE_RECORD", 2, change))
        writer.append_values(values, now)
        written += size
    writer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, one core, best of {args.runs}")
    for fixture in sorted(p for p in REAL_FIXTURES.iterdir() if p.is_dir()):
        measure(fixture.name, fixture, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        write_partition_heavy_log(Path(tmp), args.records)
        print(
            f"(generated {args.records:,} partition records in {time.perf_counter() - start:.1f} s)"
        )
        measure("generated partition-heavy log", Path(tmp), args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
