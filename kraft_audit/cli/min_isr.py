"""The flags that tell the auditor the cluster's static min.insync.replicas, shared by
`check`, `describe` and `timeline` (`run` maps them to configuration keys)."""

from __future__ import annotations

import argparse

from kraft_audit.cli.main import UsageError
from kraft_audit.sideinputs.server_properties import PropertiesError, min_isr_from_properties


def add_min_isr_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--min-insync-replicas", "--min-isr-default", dest="min_isr_default",
                        type=int, metavar="N",
                        help="the cluster's min.insync.replicas when the log does not set it "
                             "(it is in the brokers' server.properties); unset: unknown, 1 "
                             "assumed and said so")
    parser.add_argument("--server-properties", metavar="FILE",
                        help="a controller's or broker's server.properties to read "
                             "min.insync.replicas from (--min-insync-replicas wins)")


def min_isr_setting(args: argparse.Namespace) -> int | None:
    """The static min.insync.replicas the flags give, None when they give none."""
    value = getattr(args, "min_isr_default", None)
    if value is not None:
        if value < 1:
            raise UsageError("--min-insync-replicas must be at least 1")
        return value
    path = getattr(args, "server_properties", None)
    if path is None:
        return None
    try:
        return min_isr_from_properties(path)
    except PropertiesError as exc:
        raise UsageError(f"--server-properties: {exc}") from None


def min_isr_line(value: int, source: str) -> str:
    """How every text view states the cluster's min ISR."""
    return {"log": f"min ISR {value} (cluster config in the log)",
            "setting": f"min ISR {value} (given to the auditor)",
            }.get(source, "min ISR unknown (assumed 1): give --min-insync-replicas or "
                          "--server-properties")
