"""Benchmark: a large cluster's creation plus a rolling restart of every
broker, written as a real metadata log dir. Prints wall time, records/s,
peak RSS and bytes written.

    .venv/bin/python bench/bench_simulate.py                      # 1,000,000 partitions, 12 brokers
    .venv/bin/python bench/bench_simulate.py --partitions 100000 --brokers 6
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import ClusterSpec, Scenario, Step, TopicSpec


def scenario(partitions: int, brokers: int, topics: int) -> Scenario:
    cluster = ClusterSpec(
        brokers=list(range(1, brokers + 1)),
        metadata_version=25,
        elr_version=1,
        min_insync_replicas=2,
        controllers=3,
        segment_bytes=256 << 20,
    )
    share, rest = divmod(partitions, topics)
    specs = [TopicSpec(f"topic-{i:04d}", share + (1 if i < rest else 0), 3) for i in range(topics)]
    return Scenario("bench-rolling-restart", cluster, specs, [Step("rolling_restart", {})])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--brokers", type=int, default=12)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument(
        "--out", help="output directory (default: a temporary one, removed afterwards)"
    )
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-sim-"))
    try:
        started = time.perf_counter()
        result = simulate(
            scenario(args.partitions, args.brokers, min(args.topics, args.partitions)), out, seed=1
        )
        seconds = time.perf_counter() - started
        written = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
        log_bytes = sum(f.stat().st_size for f in (out / "__cluster_metadata-0").glob("*.log"))
        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        print(f"partitions         {result.partitions:,}")
        print(f"brokers            {args.brokers}")
        print(f"records            {result.records:,}")
        print(f"wall time          {seconds:,.1f} s")
        print(f"records/s          {result.records / seconds:,.0f}")
        print(f"peak RSS           {peak_kib / 1024:,.0f} MiB")
        print(f"log bytes          {log_bytes / 2**20:,.1f} MiB")
        print(f"bytes written      {written / 2**20:,.1f} MiB (log, final-state.json, side files)")
    finally:
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
