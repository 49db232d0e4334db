"""`kraft-audit` command line: one module per command, loaded on demand so
`kraft-audit dump` does not pay for importing Spark.

Exit status, the same for every command (README, "Exit codes"):
  0  done, nothing found
  1  findings: a rule fired (`check`)
  2  usage or input error: a bad option, a missing or empty input, an input
     with no usable record, a rule, topic, partition or cluster that does not exist
  3  the work failed: the streaming query died, the demo missed an injected bug
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib
import sys
from kraft_audit.errors import RunFailed, UsageError  # noqa: F401 (exported here too)

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_FAILED = 0, 1, 2, 3

# command name -> module under kraft_audit.cli; each module has
# `add_arguments(parser)` and `run(args) -> int`.
COMMANDS = {
    "dump": ("dump", "print every record of a metadata log as JSON, like kafka-dump-log"),
    "describe": ("describe", "partition state after replaying a log, like kafka-topics --describe"),
    "check": ("check", "audit a log single-process: findings, conditions and gauges"),
    "simulate": ("simulate", "write a simulated KRaft metadata log, with optional faults"),
    "run": ("run", "run the streaming auditor on local Spark"),
    "ship": ("ship", "tail a metadata log into a Kafka topic for the streaming job"),
    "demo": ("demo", "simulate a cluster with faults and audit it end to end"),
    "query": ("query", "answer analysts' questions from the Delta tables"),
    "compact": ("compact", "merge into partition_state what partition_history gained since the last compaction"),
    "timeline": ("timeline", "draw one partition's states, violations and broker events (PNG/SVG/HTML)"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser; with `command`, only that one's options (its module alone
    is imported: a `check` does not pay for importing the others)."""
    parser = argparse.ArgumentParser(prog="kraft-audit", description=__doc__)
    parser.add_argument("--version", action="version",
                        version=f"kraft-audit {importlib.metadata.version('kraft-audit')}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        cmd.set_defaults(_module=module)
        if command is None or name == command:
            _load(module).add_arguments(cmd)
    return parser


def _load(module: str):
    return importlib.import_module(f"kraft_audit.cli.{module}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv[0] if argv and argv[0] in COMMANDS else None).parse_args(argv)
    try:
        return _load(args._module).run(args) or 0
    except BrokenPipeError:  # `kraft-audit dump ... | head`
        return 0
    except UsageError as exc:
        print(f"kraft-audit {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RunFailed as exc:
        print(f"kraft-audit {args.command}: {exc}", file=sys.stderr)
        return EXIT_FAILED


def entry() -> None:
    """The `kraft-audit` script: `main`, then `leave` with its code."""
    try:
        code = main()
    except SystemExit as exc:  # argparse: a usage error (2), --help or --version (0)
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    leave(code)


def leave(code: int) -> None:
    """Exit with `code` without the interpreter's teardown. deltalake (delta-rs) now and
    then aborts in its Rust destructors at interpreter exit (SIGABRT, exit 134: delta-rs
    issue 2184), which would replace the documented code. Nothing needs that teardown
    once a command has returned: every Delta commit and file it wrote is closed (writes
    return after their commit), the /metrics server is closed; Spark, if running, is
    stopped here as Python's exit would have it stop, and the streams are flushed."""
    import logging
    import os

    if "pyspark" in sys.modules:
        from pyspark import SparkContext

        if SparkContext._active_spark_context is not None:
            SparkContext._active_spark_context.stop()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`): nothing more to say
            pass
    os._exit(code)


if __name__ == "__main__":
    # `python -m kraft_audit.cli.main`: run the imported module's entry, whose exception
    # classes are the ones the commands raise (this file as __main__ has its own copies)
    from kraft_audit.cli.main import entry as imported_entry

    imported_entry()
