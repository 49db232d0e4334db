"""`kraft-audit demo [--workdir DIR]`: simulate a KRaft cluster with injected
controller bugs, audit it with the real streaming job (local Spark, Delta
tables under DIR/tables, /metrics on 127.0.0.1), and print what it found.

Needs nothing but the pip install (and Java for Spark). Exit status: 0 when
every injected bug was found, 3 when one was missed or the streaming query
failed, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from kraft_audit.cli.main import EXIT_OK, RunFailed, UsageError
from kraft_audit.cli.views import plural

if TYPE_CHECKING:
    from kraft_audit.config import Config

MARKER = ".kraft-audit-demo"  # a workdir the demo may wipe and refill
DEMO_SCENARIO = "unclean-shutdown-elr"
# One fault of each kind of evidence: a bad PartitionChangeRecord, a bad
# election, an atomic-batch invariant, a registration request, a disk inventory.
DEMO_FAULTS = [("wrong-elr", 0), ("leader-not-in-isr", 2), ("isr-not-shrunk-on-fence", 0),
               ("unclean-shutdown-ignored", 0), ("stray-replica-left", 0)]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workdir", default="demo-out", metavar="DIR",
                        help="where the simulated log, checkpoint and Delta tables go (default demo-out)")
    parser.add_argument("--scenario", default=DEMO_SCENARIO, help=f"built-in scenario (default {DEMO_SCENARIO})")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--metrics-port", type=int, default=9464,
                        help="port for /metrics on 127.0.0.1 (a free one if taken)")
    parser.add_argument("--serve", type=float, default=0, metavar="SECONDS",
                        help="keep /metrics up this long after the audit (for a Prometheus to scrape)")


def _prepare(workdir: Path) -> None:
    if workdir.exists() and any(workdir.iterdir()) and not (workdir / MARKER).exists():
        raise UsageError(f"{workdir} exists and is not a demo workdir; choose another --workdir")
    for name in ("sim", "checkpoint", "tables"):
        shutil.rmtree(workdir / name, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / MARKER).write_text("made by kraft-audit demo; the demo may delete what is here\n")


def _free(port: int) -> int:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            return 0  # let the server pick one


def run(args: argparse.Namespace) -> int:
    from kraft_audit.config import load_config
    from kraft_audit.sim.runner import simulate
    from kraft_audit.sim.scenario import ScenarioError, load_scenario

    workdir = Path(args.workdir).resolve()
    _prepare(workdir)
    sim = workdir / "sim"
    print(f"1. simulating scenario {args.scenario!r} with {len(DEMO_FAULTS)} injected controller bugs ...")
    try:
        result = simulate(load_scenario(args.scenario), sim, seed=args.seed, faults=DEMO_FAULTS)
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None
    print(f"   {result.records} log records (offsets 0..{result.last_offset}), {result.partitions} "
          f"partitions, log in {sim}; side inputs: registration requests, log-dir inventories")

    cfg = load_config(None, {
        "sources.log_dirs": str(sim),
        "sources.registrations": str(sim / "registrations.jsonl"),
        "sources.log_dir_inventories": str(sim / "log-dirs"),
        "checkpoint": str(workdir / "checkpoint"),
        "tables": str(workdir / "tables"),
        "trigger.available_now": True,
        "sources.max_records_per_trigger": max(result.records // 4, 50),  # show a few micro-batches
        "audit.buckets": 4,
        "metrics.port": _free(args.metrics_port),
    }, environ={})

    print("2. auditing it with the streaming job (local Spark; the first micro-batch warms up) ...")
    from kraft_audit.spark.job import AuditJob, balance_line

    started = time.monotonic()
    job = AuditJob(cfg)
    metrics_url = f"http://127.0.0.1:{job.metrics_port}/metrics"
    print(f"   metrics: {metrics_url}")
    ok = job.run(available_now=True)
    if not ok:
        raise RunFailed(f"the streaming query failed: {job.query.exception()}")
    print(f"   {plural(job.writer.batches, 'micro-batch', 'micro-batches')} in "
          f"{time.monotonic() - started:.1f} s")
    print(f"   {balance_line(job.writer.counts)}")
    found_all = _report(cfg, result, metrics_url)
    if args.serve > 0:
        print(f"serving {metrics_url} for {args.serve:.0f} s ...")
        time.sleep(args.serve)
    job.spark.stop()
    if not found_all:
        raise RunFailed("an injected bug was not found (see the table above)")
    return EXIT_OK


def own_command() -> str:
    """How to run kraft-audit again from this shell, as printed: `kraft-audit` when
    that is on PATH and is this installation, else its path (`.venv/bin/kraft-audit`
    when only the venv has it), else `python -m`."""
    script = Path(sys.executable).parent / "kraft-audit"
    on_path = shutil.which("kraft-audit")
    if on_path and script.exists() and Path(on_path).resolve() == script.resolve():
        return "kraft-audit"
    if script.exists():
        return shlex.quote(_shown(script))
    return f"{shlex.quote(_shown(Path(sys.executable)))} -m kraft_audit.cli.main"


def _shown(path: Path) -> str:
    """A path relative to the working directory when it lies below it (shorter to read)."""
    relative = os.path.relpath(path)
    return relative if not relative.startswith("..") else str(path)


def _rows(cfg: Config, table) -> list[dict]:
    from kraft_audit.tables.read import read_table

    return read_table(cfg.tables, table).to_pylist()


def _report(cfg: Config, result, metrics_url: str) -> bool:
    from kraft_audit.tables import CONDITIONS, QUARANTINE, VIOLATIONS

    violations = _rows(cfg, VIOLATIONS)
    print("\n3. what the auditor found")
    print("   injected bug                        rule it must break                  found")
    found_all = True
    for fault in result.faults:
        hit = [v for v in violations if v["rule_id"] == fault["rule_id"] and v["offset"] == fault["offset"]
               and v["partition"] == fault["partition"]]
        found_all &= bool(hit)
        where = f"offset {fault['offset']}" if fault["offset"] >= 0 else "log-dir inventory"
        print(f"   {fault['fault']:<35} {fault['rule_id']:<35} {'yes' if hit else 'NO'} ({where})")
    print(f"   every injected bug found: {'yes' if found_all else 'NO'}")
    print("\n   violations by rule:")
    for (rule, severity), n in sorted(Counter((v["rule_id"], v["severity"]) for v in violations).items()):
        print(f"   {n:>4}  {rule} ({severity})")
    conditions = _rows(cfg, CONDITIONS)
    still_open = [c for c in conditions if c["end_offset"] is None]
    print(f"\n   condition intervals: {len(conditions)} ({len(still_open)} still open: "
          f"{', '.join(sorted(Counter(c['condition'] for c in still_open)))})")
    quarantine = _rows(cfg, QUARANTINE)
    print(f"   quarantined input: {len(quarantine)}")
    try:
        scrape = urllib.request.urlopen(metrics_url, timeout=5).read().decode()
        wanted = ("global_under_min_isr_partition_count", "unclean_recovery_partitions_count",
                  "manual_leader_election_required_partition_count", "records_total",
                  "side_inputs_total", "unreadable_total", "applied_total", "duplicates_total",
                  "quarantined_total")
        print("\n   /metrics (excerpt):")
        for line in scrape.splitlines():
            if not line.startswith("#") and any(w in line for w in wanted):
                print(f"   {line}")
    except OSError as exc:
        print(f"   /metrics not reachable: {exc}")
    tables = _shown(Path(cfg.tables))
    print(f"\n4. Delta tables under {tables}:")
    for name in sorted(p.name for p in Path(tables).iterdir() if p.is_dir()):
        print(f"   {Path(tables) / name}")
    print("\n   try:")
    command = own_command()
    for question in ("violations", "under-min-isr", "unclean-elections"):
        print(f"   {command} query {shlex.quote(tables)} {question}")
    print(f"   ground truth: {json.dumps(_shown(result.out_dir / 'faults.json'))}")
    return found_all
