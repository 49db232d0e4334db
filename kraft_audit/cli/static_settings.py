"""The flags that tell the auditor the controller's static configs (min.insync.replicas and
the rest server.properties holds), shared by `check`, `describe` and `timeline` (`run` maps
them to configuration keys)."""

from __future__ import annotations

import argparse
from typing import Any

from kraft_audit.cli.main import UsageError
from kraft_audit.sideinputs.server_properties import MIN_ISR, STATIC_SETTINGS, PropertiesError, settings_from_properties


def add_static_settings_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--min-insync-replicas", "--min-isr-default", dest="min_isr_default",
                        type=int, metavar="N",
                        help="the cluster's min.insync.replicas when the log does not set it "
                             "(it is in the brokers' server.properties); unset: unknown, 1 "
                             "assumed and said so")
    parser.add_argument("--server-properties", metavar="FILE",
                        help="the controller's server.properties, to read its static "
                             + ", ".join(STATIC_SETTINGS) + " from (--min-insync-replicas wins; "
                             "a config record in the log wins over both, and the output says so)")


def min_isr_given(args: argparse.Namespace) -> tuple[int | None, str | None]:
    """The static min.insync.replicas the flags give and what gave it (None, None when
    they give none). --min-insync-replicas wins over --server-properties, and says so."""
    value = getattr(args, "min_isr_default", None)
    path = getattr(args, "server_properties", None)
    from_file = _from_file(args).get(STATIC_SETTINGS[MIN_ISR][0])
    if value is not None:
        if value < 1:
            raise UsageError("--min-insync-replicas must be at least 1")
        over = f", over {path}'s {from_file}" if from_file is not None and from_file != value else ""
        return value, f"--min-insync-replicas{over}"
    if from_file is not None:
        return from_file, f"{MIN_ISR} in {path}"
    return None, (f"{path} (it does not set {MIN_ISR})" if path is not None else None)


def static_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The core settings the flags give: every static config --server-properties sets, and
    the min.insync.replicas min_isr_given chose (None: unknown)."""
    return {**_from_file(args), "min_insync_replicas_default": min_isr_given(args)[0]}


def _from_file(args: argparse.Namespace) -> dict[str, Any]:
    path = getattr(args, "server_properties", None)
    if path is None:
        return {}
    try:
        return settings_from_properties(path)
    except PropertiesError as exc:
        raise UsageError(f"--server-properties: {exc}") from None


def min_isr_line(value: int, source: str, given: int | None = None, given_by: str | None = None) -> str:
    """How every text view states the cluster's min ISR and which source gave it. The
    precedence is Kafka's: a cluster-level ConfigRecord in the log (a dynamic broker
    config) is the cluster's value and wins over a static one given to the auditor, which
    wins over the assumed default 1; a topic's own ConfigRecord wins over all of them for
    that topic (EffectiveMinIsr)."""
    if source == "log":
        line = f"min ISR {value} (the log's cluster config record)"
        if given is not None:
            line += (f"; {given_by} gave {given}, overridden: a config record in the log is "
                     "Kafka's own value for the cluster") if given != value else f"; {given_by} agrees"
        return line
    if source == "setting":
        return f"min ISR {value} (from {given_by})" if given_by else f"min ISR {value} (given to the auditor)"
    unknown = "min ISR unknown (assumed 1): give --min-insync-replicas or --server-properties"
    return f"min ISR unknown (assumed 1): {given_by}" if given_by else unknown
