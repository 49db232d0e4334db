"""`kraft-audit simulate`: write a realistic KRaft metadata log from a
scenario (a built-in name or a YAML file), optionally with controller bugs
injected, plus the registration events, log-dir inventories, ground truth
(faults.json) and final partition states the auditor's tests compare with.

    kraft-audit simulate --scenario unclean-shutdown-elr --out /tmp/sim
    kraft-audit simulate --scenario chaos --seed 7 --faults random:5 --out /tmp/chaos
    kraft-audit simulate --scenario rolling-restart --partitions 100000 --brokers 12 --out /tmp/big
    kraft-audit simulate --scenario chaos --live --rate 20 --out /tmp/live
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kraft_audit.cli.main import EXIT_OK, UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kraft_audit.sim.faults import CATALOG
    from kraft_audit.sim.scenario import builtin_names

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "built-in scenarios: "
        + ", ".join(builtin_names())
        + "\nfaults: "
        + ", ".join(sorted(CATALOG))
    )
    parser.add_argument(
        "--scenario",
        required=True,
        metavar="FILE|NAME",
        help="a scenario YAML file or the name of a built-in scenario",
    )
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="output directory (new or empty)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="random seed (ids, placement, chaos, faults)"
    )
    parser.add_argument(
        "--partitions", type=int, metavar="N", help="spread N partitions over the scenario's topics"
    )
    parser.add_argument("--brokers", type=int, metavar="N", help="use brokers 1..N")
    parser.add_argument(
        "--faults",
        default="",
        metavar="NAME[@STEP],...|random:N",
        help="controller bugs to inject, each at the first chance from scenario step STEP "
        "(default 0); random:N picks N at random steps",
    )
    parser.add_argument(
        "--live",
        action="store_true",
        help="append batches over real time, as a controller does (for streaming tests)",
    )
    parser.add_argument(
        "--rate", type=float, default=10.0, metavar="R", help="live mode: batches per second"
    )
    parser.add_argument(
        "--dump-log",
        action="store_true",
        help="also write kafka-dump-log.txt, the log as kafka-dump-log prints it",
    )
    parser.add_argument("--quiet", action="store_true", help="print nothing on success")


def run(args: argparse.Namespace) -> int:
    from kraft_audit.sim.faults import parse_fault_option
    from kraft_audit.sim.runner import simulate
    from kraft_audit.sim.scenario import ScenarioError, load_scenario

    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--out {out} exists and is not an empty directory")
    if args.rate <= 0:
        raise UsageError("--rate must be positive")
    try:
        scenario = load_scenario(args.scenario).scaled(
            partitions=args.partitions, brokers=args.brokers
        )
        faults = parse_fault_option(args.faults, scenario.step_count(), args.seed)
        result = simulate(
            scenario, out, seed=args.seed, faults=faults, live_rate=args.rate if args.live else None
        )
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:  # a bad --faults value
        raise UsageError(str(exc)) from None
    if args.dump_log:
        write_dump_log(out)
    if not args.quiet:
        summary = {
            "out": str(out),
            "cluster_id": result.cluster_id,
            "records": result.records,
            "last_offset": result.last_offset,
            "partitions": result.partitions,
            "faults_injected": [f["fault"] for f in result.faults],
            "faults_unfired": result.unfired,
            "seconds": round(result.seconds, 2),
        }
        json.dump(summary, sys.stdout, indent=1)
        sys.stdout.write("\n")
    if result.unfired:  # the summary says so too; a warning, as random:N may pick misfits
        print(f"kraft-audit simulate: fault(s) never found a chance to fire: {', '.join(result.unfired)}",
              file=sys.stderr)
    return EXIT_OK


def write_dump_log(out: Path) -> None:
    """The simulated log in kafka-dump-log's text form (for the dump-log input path)."""
    from kraft_audit.core.codec.dumplog import format_dump_log
    from kraft_audit.core.codec.logdir import read_log_dir

    with open(out / "kafka-dump-log.txt", "w", encoding="utf-8") as fh:
        for line in format_dump_log(read_log_dir(out)):
            fh.write(line + "\n")
