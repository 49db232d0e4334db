"""partition_state at scale: what a micro-batch's write costs, by design (delta-rs).

Seeds a partition_state of N partitions (in 200k-row commits, as a bootstrap
leaves it), then writes batches of `--changes` rows on random partitions:

- merge: today's MERGE (sinks.py's delta-rs writer; rewrites every file a
  changed key falls in, and random keys fall in nearly every file);
- append: the same rows appended to a table of the same layout (what an
  append-only state table plus periodic compaction pays per micro-batch);
- compaction: one MERGE of the tail that `--every` batches appended, into
  the N-row table (paid once per `--every` micro-batches);
- tail read: the newest row per key of that tail (what a reader adds to the
  compacted table to see the rows of today's table).

built: the design as it is, through the sink (DeltaSinks):
the partition rows of a micro-batch written (partition_history only; the
MERGE above is what each one cost before), a compaction of `--every`
batches' tail, and a read of partition_state as of now (the compacted
table plus that tail, tables/read.py) before and after it.

Both are measured by default (`make bench`); `--only merge|built` runs one.

Run: python bench/bench_pstate.py [--sizes 100000,1000000 --changes 1000] [--only built]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, write_deltalake

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import OutputRows  # noqa: E402

from kraft_audit.spark.sinks import _DeltaRsWriter  # noqa: E402
from kraft_audit.tables import PARTITION_STATE  # noqa: E402
from kraft_audit.tables.schema import core_to_arrow, dedupe_latest_arrow, stamp_arrow  # noqa: E402

SEED_CHUNK = 200_000


def rows(partitions: list[int], offset: int, batch_id: int) -> pa.Table:
    """partition_state rows for `partitions`, all at `offset` (one template row, tiled)."""
    one = stamp_arrow(PARTITION_STATE.name, core_to_arrow(
        PARTITION_STATE.name, [OutputRows().partition(offset)]), batch_id, "bench")
    data = one.take(pa.array([0] * len(partitions)))
    col = data.schema.get_field_index("partition")
    return data.set_column(col, data.schema.field(col), pa.array(partitions, data.schema.field(col).type))


def seeded(path: str, n: int) -> DeltaTable:
    writer = _DeltaRsWriter()
    writer.create(path, PARTITION_STATE)
    for start in range(0, n, SEED_CHUNK):
        write_deltalake(path, rows(list(range(start, min(n, start + SEED_CHUNK))), 0, 0), mode="append")
    return DeltaTable(path)


def measure(n: int, changes: int, batches: int, every: int) -> None:
    rng = random.Random(n)
    writer = _DeltaRsWriter()
    with tempfile.TemporaryDirectory(prefix="bench-pstate-") as root:
        merge_t, append_t = seeded(f"{root}/merge", n), seeded(f"{root}/append", n)
        files = len(merge_t.file_uris())
        merge_s, append_s = [], []
        for b in range(1, batches + 1):
            data = rows(rng.sample(range(n), changes), b, b)
            started = time.perf_counter()
            writer.merge(merge_t, "", PARTITION_STATE, dedupe_latest_arrow(PARTITION_STATE.name, data),
                         "bench", b)
            merge_s.append(time.perf_counter() - started)
            merge_t.update_incremental()
            started = time.perf_counter()
            writer.append(append_t, "", PARTITION_STATE, data, "bench", b)
            append_s.append(time.perf_counter() - started)
            append_t.update_incremental()
        tail = pa.concat_tables(rows(rng.sample(range(n), changes), batches + b, batches + b)
                                for b in range(1, every + 1))
        started = time.perf_counter()
        latest = dedupe_latest_arrow(PARTITION_STATE.name, tail)
        tail_s = time.perf_counter() - started
        started = time.perf_counter()
        writer.merge(merge_t, "", PARTITION_STATE, latest, "bench", 10 * batches)
        compact_s = time.perf_counter() - started
        merge_t.update_incremental()
        check = merge_t.to_pyarrow_table(columns=["partition"])
        assert check.num_rows == n and pc.count_distinct(check["partition"]).as_py() == n
    print(f"{n:>9,} partitions ({files} files), {changes} random changes a batch, {batches} batches: "
          f"MERGE median {statistics.median(merge_s):.3f} s max {max(merge_s):.3f} s; "
          f"append median {statistics.median(append_s):.3f} s max {max(append_s):.3f} s; "
          f"compaction of {every} batches' tail ({tail.num_rows:,} rows) {compact_s:.2f} s "
          f"(newest row per key of that tail: {tail_s:.3f} s)")


def partition_rows(partitions: list[int], offset: int) -> pa.Table:
    """Core partition rows (no sink columns), as the operator hands them to the sink."""
    one = core_to_arrow(PARTITION_STATE.name, [OutputRows().partition(offset)])
    data = one.take(pa.array([0] * len(partitions)))
    col = data.schema.get_field_index("partition")
    return data.set_column(col, data.schema.field(col), pa.array(partitions, data.schema.field(col).type))


def measure_built(n: int, changes: int, batches: int, every: int) -> None:
    from kraft_audit.spark.sinks import DeltaSinks
    from kraft_audit.tables.read import count_rows

    rng = random.Random(n)
    with tempfile.TemporaryDirectory(prefix="bench-pstate-built-") as root:
        sinks = DeltaSinks(root, app_id="bench")
        batch_id = 0
        for start in range(0, n, SEED_CHUNK):  # the bootstrap, then compacted
            data = partition_rows(list(range(start, min(n, start + SEED_CHUNK))), 0)
            sinks.write_batch(batch_id, {"partition_history": data, "partition_state": data})
            batch_id += 1
        started = time.perf_counter()
        sinks.compact()
        seed_compact_s = time.perf_counter() - started
        write_s = []
        for b in range(every):
            data = partition_rows(rng.sample(range(n), changes), batch_id)
            started = time.perf_counter()
            sinks.write_batch(batch_id, {"partition_history": data, "partition_state": data})
            write_s.append(time.perf_counter() - started)
            batch_id += 1
        started = time.perf_counter()
        assert count_rows(root, "partition_state") == n
        read_tail_s = time.perf_counter() - started
        started = time.perf_counter()
        merged = sinks.compact()
        compact_s = time.perf_counter() - started
        started = time.perf_counter()
        assert count_rows(root, "partition_state") == n
        read_s = time.perf_counter() - started
        write_s.sort()
        print(f"{n:>9,} partitions, built: a micro-batch's partition rows ({changes}) written "
              f"median {statistics.median(write_s):.3f} s, p99 {write_s[int(0.99 * (len(write_s) - 1))]:.3f} s "
              f"over {every}; compaction of that tail ({merged:,} rows) {compact_s:.2f} s "
              f"(the bootstrap's: {seed_compact_s:.2f} s); partition_state as of now counted with "
              f"the tail {read_tail_s:.2f} s, compacted {read_s:.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--changes", type=int, default=1000, help="changed partitions a micro-batch")
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--every", type=int, default=60, help="micro-batches between compactions")
    parser.add_argument("--only", choices=("merge", "built"),
                        help="one of the two designs (default: both, the MERGE first)")
    args = parser.parse_args()
    designs = {"merge": measure, "built": measure_built}
    for n in (int(s) for s in args.sizes.split(",") if s):
        for name, measure_one in designs.items():
            if args.only in (None, name):
                measure_one(n, args.changes, args.batches, args.every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
