"""Where a micro-batch's time goes in the Spark job's Python parts, stage by stage,
on the two logs bench/bench_side_by_side.py builds (a script, not a test).

The Python stages are run here in one process, without a query, as Spark runs
them: the source's read() of every planned range (decode, event rows, Arrow),
Arrow → pandas (what Spark hands the group call), and the group call per
(cluster, bucket) split into its parts (log order and repeats, pandas rows →
core objects, the payload decoded, the core, output rows → Arrow IPC,
the state row). CPU seconds of this process (`time.process_time`); the cyclic
collector's passes (a gc callback) are counted within the stages they paused, and
again on a line of their own with the number of its full passes. The JVM's
stages (Python → JVM, shuffle, state store, outputs to the driver, sinks) are
the whole `run --once` minus these: bench_side_by_side.py times it.

    python bench/bench_spark_stages.py [--partitions 100000 --changes 300000] [--buckets 8]

Each log is profiled twice: with a row per NoOp (as before the sources packed
them) and as the sources send them now.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

TIMES: dict[str, float] = defaultdict(float)


@contextmanager
def stage(name: str):
    t0 = time.process_time()
    try:
        yield
    finally:
        TIMES[name] += time.process_time() - t0


WRAPPED: list = []  # (module, name, original): put back after each profile


def wrap(module, name: str, label: str) -> None:
    """Time every call of module.name under `label` (until `unwrap`)."""
    inner = getattr(module, name)
    WRAPPED.append((module, name, inner))

    def timed(*args, **kwargs):
        with stage(label):
            return inner(*args, **kwargs)

    setattr(module, name, timed)


def unwrap() -> None:
    # left wrapped, the next profile would time each call twice under the same label
    while WRAPPED:
        module, name, inner = WRAPPED.pop()
        setattr(module, name, inner)


COLLECTOR = "the cyclic collector (within the stages above)"


def _collector(passes: list, started: list):
    """A gc callback: the collector's CPU seconds in TIMES (in whichever stages it paused),
    its full passes counted in `passes`."""
    def callback(phase: str, info: dict) -> None:
        if phase == "start":
            started.append(time.process_time())
        elif started:
            TIMES[COLLECTOR] += time.process_time() - started.pop()
            if info["generation"] == 2:
                passes.append(1)

    return callback


def profile(log: Path, buckets: int, max_records: int, pack: bool = True) -> dict[str, float]:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql.streaming.state import GroupState, GroupStateTimeout
    from pyspark.sql.types import StructType

    from kraft_audit.core import audit as core_audit
    from kraft_audit.core.codec import logdir
    from kraft_audit.spark import operator as op
    from kraft_audit.spark.source import KraftLogStreamReader, LogRangePartition
    from kraft_audit.testing.operator_calls import target_buckets

    from kraft_audit.spark import event_rows

    TIMES.clear()
    op._LIVE.clear()  # the previous profile's auditors: not this one's heap
    gc.collect()
    full_passes: list = []
    collector = _collector(full_passes, [])
    gc.callbacks.append(collector)
    packed = event_rows.to_record_batch
    packed_keys = event_rows.key_record_batch
    runs = logdir.noop_run_length
    if not pack:  # as before the sources packed NoOps: one row each (and a Batch each)
        logdir.noop_run_length = lambda buf, pos, end, limit: (0, 0, 0)
        event_rows.to_record_batch = lambda items, pack_noops=False, epochs=False: \
            packed(items, epochs=epochs)

        def unpacked(rows):
            rows.noops.clear()
            return packed_keys(rows)

        event_rows.key_record_batch = unpacked
    wrap(op, "events_from_pandas", "group: pandas rows -> core objects (payload decode)")
    wrap(op, "encode_output", "group: output rows -> Arrow IPC")
    wrap(op, "save", "group: state row (snapshot, pickle)")
    wrap(op, "_log_order", "group: log order, repeats, NoOp thinning")
    wrap(op, "_drop_repeats", "group: log order, repeats, NoOp thinning")
    wrap(op, "_thin_noops", "group: log order, repeats, NoOp thinning")
    process = core_audit.Auditor.process

    def timed_process(self, *a, **k):
        with stage("group: the core (Auditor.process)"):
            return process(self, *a, **k)

    core_audit.Auditor.process = timed_process
    reader = KraftLogStreamReader({"path": str(log), "maxRecordsPerTrigger": str(max_records)})
    audit = op.OperatorConfig(buckets=buckets, timeout_ms=0)
    states: dict = {}
    start = reader.initialOffset()
    records = 0
    batches = 0
    try:
        while True:
            end = reader.latestOffset(start, reader.getDefaultReadLimit())
            if end == start:
                break
            batches += 1
            with stage("source read(): framing + key columns + Arrow"):
                arrow = [b for p in reader.partitions(start, end)
                         for b in reader.read(LogRangePartition(p.ranges_json))]
            start = {"logs": {k: {kk: vv for kk, vv in v.items()} for k, v in end["logs"].items()}}
            if not arrow:
                break
            with stage("Arrow -> pandas, routing to buckets (Spark's part, done here in Python)"):
                pdf = pa.Table.from_batches(arrow).to_pandas()
                records += len(pdf)
                groups: dict = defaultdict(list)
                for i, (t, tid, pid) in enumerate(zip(pdf["type"], pdf["topic_id"], pdf["partition_id"])):
                    for b in target_buckets(t, tid, pid, buckets):
                        groups[b].append(i)
                frames = {b: pdf.iloc[idx].reset_index(drop=True) for b, idx in groups.items()}
            for b, frame in frames.items():
                key = (str(frame["cluster_id"].iloc[0]), b)
                row = states.get(b)
                state = GroupState(row, int(time.time() * 1000), -1, GroupStateTimeout.NoTimeout, False,
                                   False, row is not None, False, False, -1, b"", StructType())
                with stage("group call, whole"):
                    out = list(op.audit_group(key, iter([frame]), state, audit))
                states[b] = state.get
                assert isinstance(out[0], pd.DataFrame)
    finally:
        gc.callbacks.remove(collector)
        core_audit.Auditor.process = process
        event_rows.to_record_batch = packed
        event_rows.key_record_batch = packed_keys
        logdir.noop_run_length = runs
        unwrap()
    result = dict(TIMES)
    result[COLLECTOR] = result.pop(COLLECTOR, 0.0)  # printed after the stages it is part of
    result["full passes of the collector"] = len(full_passes)
    result["records"] = records
    result["micro-batches"] = batches
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--changes", type=int, default=300_000)
    parser.add_argument("--buckets", type=int, default=8)
    parser.add_argument("--max-records", type=int, default=200_000)
    parser.add_argument("--only", choices=("worst", "noop"), default=None)
    args = parser.parse_args(argv)
    from bench_side_by_side import build_logs

    with tempfile.TemporaryDirectory() as tmp:
        logs = build_logs(Path(tmp), args.partitions, args.changes)
        for name, (log, n) in logs.items():
            if args.only and not name.lower().startswith(args.only):
                continue
            rows = profile(log, args.buckets, args.max_records, pack=False)
            packed = profile(log, args.buckets, args.max_records, pack=True)
            print(f"\n{name}: {n:,} records, {packed.pop('micro-batches')} micro-batches, "
                  f"{args.buckets} buckets; CPU seconds, a row per NoOp -> NoOps packed")
            rows.pop("micro-batches")
            for what in packed:
                if what == "records":
                    print(f"  {'event rows through the operator':<72} {rows[what]:8,} -> {packed[what]:,}")
                elif what == "full passes of the collector":
                    print(f"  {what:<72} {rows[what]:8,} -> {packed[what]:,}")
                else:
                    print(f"  {what:<72} {rows.get(what, 0):8.2f} -> {packed[what]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
