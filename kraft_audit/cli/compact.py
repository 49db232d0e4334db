"""`kraft-audit compact TABLES`: merge into partition_state what partition_history
gained since its last compaction, now (the job does it every `sink.compact_every`
micro-batches and at the end of a run). Safe while the job runs and if killed:
one atomic commit, and one run twice merges nothing twice. Readers see the same
rows before and after (docs/operations.md, "Compaction of partition_state")."""

from __future__ import annotations

import argparse
import time

from kraft_audit.cli.main import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tables", metavar="TABLES", help="the tables directory of a kraft-audit run")


def run(args: argparse.Namespace) -> int:
    from kraft_audit.errors import MissingTable
    from kraft_audit.spark.sinks import DeltaSinks
    from kraft_audit.tables import TABLES
    from kraft_audit.tables.read import open_table
    from kraft_audit.tables.schema import COMPACTION_APP

    for name, spec in TABLES.items():
        if not spec.compacted_from:
            continue
        try:  # a directory that is not a run's is an error, not new empty tables
            open_table(args.tables, spec)
            open_table(args.tables, spec.compacted_from)
        except MissingTable as exc:
            raise UsageError(str(exc)) from None
        started = time.perf_counter()
        # delta-rs from this process: no Spark needed, whichever backend the job uses
        sinks = DeltaSinks(args.tables, app_id="kraft-audit-compact")
        merged = sinks.compact(name)
        version = open_table(args.tables, spec).transaction_version(COMPACTION_APP)
        print(f"{name}: {merged} rows merged from {spec.compacted_from} (up to its version "
              f"{version}) in {time.perf_counter() - started:.2f} s")
    return 0
