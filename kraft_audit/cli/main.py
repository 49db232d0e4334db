"""`kraft-audit` command line: one module per command, loaded on demand so
`kraft-audit dump` does not pay for importing Spark."""

from __future__ import annotations

import argparse
import importlib
import sys

# command name -> module under kraft_audit.cli; each module has
# `add_arguments(parser)` and `run(args) -> int`.
COMMANDS = {
    "dump": ("dump", "print every record of a metadata log as JSON, like kafka-dump-log"),
    "describe": ("describe", "partition state after replaying a log, like kafka-topics --describe"),
    "check": ("check", "audit a log single-process: findings, conditions and gauges"),
    "simulate": ("simulate", "write a simulated KRaft metadata log, with optional faults"),
    "run": ("run", "run the streaming auditor on local Spark"),
    "demo": ("demo", "simulate a cluster with faults and audit it end to end"),
    "query": ("query", "answer analysts' questions from the Delta tables"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kraft-audit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        cmd.set_defaults(_module=module)
        _load(module).add_arguments(cmd)
    return parser


def _load(module: str):
    return importlib.import_module(f"kraft_audit.cli.{module}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _load(args._module).run(args) or 0
    except BrokenPipeError:  # `kraft-audit dump ... | head`
        return 0
    except UsageError as exc:
        print(f"kraft-audit {args.command}: {exc}", file=sys.stderr)
        return 2


class UsageError(Exception):
    """A user mistake (bad path, bad option): printed without a traceback."""


if __name__ == "__main__":
    sys.exit(main())
