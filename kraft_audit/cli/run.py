"""`kraft-audit run`: the streaming auditor on Spark (local by default).

    kraft-audit run --log-dir /var/lib/kafka/kraft-combined-logs
    kraft-audit run --config conf/default.yaml --once      # audit what exists, then stop
    KRAFT_AUDIT_METRICS_PORT=9500 kraft-audit run --config prod.yaml --set audit.buckets=16

The configuration comes from the built-in defaults (conf/default.yaml documents it),
then --config FILE, then KRAFT_AUDIT_* environment variables, then flags.
The checkpoint and tables go to ./kraft-audit-run/ unless --checkpoint and
--tables say otherwise.

Exit status: 0 done, or stopped by SIGTERM/SIGINT (after the running micro-batch
finishes; one line on stderr says so; a second signal exits at once with
128 + its number); 2 a usage error, or with --once an input with nothing to
audit (every log dir and dump-log empty) or, on a new checkpoint, no usable
record; 3 the streaming query failed.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

from kraft_audit.cli.main import EXIT_OK, RunFailed, UsageError
from kraft_audit.cli.side_inputs import add_side_input_arguments
from kraft_audit.config import KEYS, Config, SourcesConfig

# flag -> dotted config key (flags that name a source list may repeat)
_FLAG_KEYS = {
    "log_dir": "sources.log_dirs",
    "dump_log": "sources.dump_logs",
    "kafka": "sources.kafka",
    "registrations": "sources.registrations",
    "log_dir_inventory": "sources.log_dir_inventories",
    "checkpoint": "checkpoint",
    "tables": "tables",
    "trigger": "trigger.interval",
    "buckets": "audit.buckets",
    "rules_dir": "audit.rules_dir",
    "max_records_per_trigger": "sources.max_records_per_trigger",
    "starting_position": "sources.starting_position",
    "bootstrap_controller": "sources.bootstrap_controllers",
    "metrics_host": "metrics.host",
    "metrics_port": "metrics.port",
    "backend": "sink.backend",
    "master": "spark.master",
    "min_insync_replicas": "audit.min_insync_replicas",
    "server_properties": "audit.server_properties",
}


def _help(dotted: str, text: str | None = None) -> str:
    """A flag's help: the key's doc (or `text`) and its declared default."""
    default = KEYS[dotted].default  # (a null default: the doc says what null means)
    return (text or KEYS[dotted].doc) + ("" if default in (None, [], {}) else f" (default: {default})")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="YAML configuration (see conf/default.yaml)")
    parser.add_argument("--once", action="store_true",
                        help="audit what exists now in bounded micro-batches, then stop (availableNow)")
    src = parser.add_argument_group("inputs (repeatable; [CLUSTER_ID=]PATH)")
    src.add_argument("--log-dir", action="append", metavar="PATH",
                     help="a KRaft metadata log dir (or the data dir above __cluster_metadata-0)")
    src.add_argument("--kafka", action="append", metavar="HOST:PORT/TOPIC",
                     help="a topic `kraft-audit ship` produces to (Spark's Kafka source)")
    src.add_argument("--dump-log", action="append", metavar="PATH", help="kafka-dump-log output file or dir")
    add_side_input_arguments(src)
    parser.add_argument("--starting-position", choices=KEYS["sources.starting_position"].choices,
                        help=_help("sources.starting_position"))
    parser.add_argument("--bootstrap-controller", action="append", metavar="HOST:PORT[,...]",
                        help=_help("sources.bootstrap_controllers"))
    parser.add_argument("--max-records-per-trigger", type=int, metavar="N",
                        help=_help("sources.max_records_per_trigger"))
    parser.add_argument("--checkpoint", metavar="DIR", help=_help("checkpoint"))
    parser.add_argument("--tables", metavar="DIR", help=_help("tables"))
    parser.add_argument("--trigger", metavar="INTERVAL", help=_help("trigger.interval"))
    parser.add_argument("--buckets", type=int, metavar="N", help=_help("audit.buckets"))
    parser.add_argument("--rules-dir", metavar="DIR", help=_help("audit.rules_dir"))
    parser.add_argument("--min-insync-replicas", type=int, metavar="N",
                        help=_help("audit.min_insync_replicas"))
    parser.add_argument("--server-properties", metavar="FILE", help=_help("audit.server_properties"))
    parser.add_argument("--metrics-host", metavar="HOST", help=_help("metrics.host"))
    parser.add_argument("--metrics-port", type=int, metavar="PORT", help=_help("metrics.port"))
    parser.add_argument("--no-metrics", action="store_true", help="do not serve /metrics")
    parser.add_argument("--backend", choices=KEYS["sink.backend"].choices, help=_help("sink.backend"))
    parser.add_argument("--master", help=_help("spark.master"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="any configuration key, e.g. --set audit.timeout_seconds=30")


def _kafka_flag(value: str) -> str:
    if "/" not in value:
        raise UsageError(f"--kafka wants HOST:PORT[,...]/TOPIC, got {value!r}")
    return value


def overrides_from(args: argparse.Namespace) -> dict:
    overrides: dict = {}
    for flag, key in _FLAG_KEYS.items():
        value = getattr(args, flag, None)
        if value is None:
            continue
        if key == "sources.kafka":  # its bootstrap servers hold commas themselves
            overrides[key] = [_kafka_flag(v) for v in value]
        else:
            overrides[key] = ",".join(value) if isinstance(value, list) else value
    if getattr(args, "no_metrics", False):
        overrides["metrics.enabled"] = False
    if getattr(args, "once", False):
        overrides["trigger.available_now"] = True
    for item in getattr(args, "set", None) or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--set wants KEY=VALUE, got {item!r}")
        overrides[key.strip()] = value
    return overrides


def load(args: argparse.Namespace) -> Config:
    from kraft_audit.config import ConfigError, load_config

    try:
        return load_config(args.config, overrides_from(args))
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


class _StderrHandler(logging.StreamHandler):
    """Writes to sys.stderr as it is at each record, not as it was when the first run
    started: a later run in the same process (a notebook, a test) may have replaced it and
    closed the old one."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _):
        pass


def _log_progress() -> None:
    """One line per micro-batch on stderr (only ours: py4j's INFO chatter stays off)."""
    logger = logging.getLogger("kraft_audit")
    if not logger.handlers:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def run(args: argparse.Namespace) -> int:
    cfg = load(args)
    once = cfg.trigger.available_now
    empty = empty_sources(cfg.sources)
    for path in empty:
        print(f"kraft-audit run: {path} holds no metadata record yet", file=sys.stderr)
    if once and empty and len(empty) == len(cfg.sources.log_dirs) + len(cfg.sources.dump_logs):
        raise UsageError("nothing to audit: " + ", ".join(empty) + " hold(s) no metadata log")
    from kraft_audit.core.codec.logdir import not_a_metadata_log

    for entry in cfg.sources.log_dirs:  # said before Spark starts or any table is made
        if reason := not_a_metadata_log(entry.path):
            raise UsageError(reason)
    fresh = not (Path(cfg.checkpoint) / "commits").is_dir()
    _log_progress()
    from kraft_audit.spark.job import AuditJob, MetricsPortUnavailable, summary
    from kraft_audit.spark.session import DeltaJarsMissing

    print(f"checkpoint: {cfg.checkpoint}\ntables: {cfg.tables}", file=sys.stderr)
    try:
        job = AuditJob(cfg)
    except (DeltaJarsMissing, MetricsPortUnavailable) as exc:  # delta-spark before its jars
        raise UsageError(str(exc)) from None
    if job.metrics_port:
        print(f"metrics: http://{cfg.metrics.host}:{job.metrics_port}/metrics", file=sys.stderr)
    try:
        ok = job.run()
    finally:
        job.close()  # the /metrics port is free again
    print(summary(cfg, job.writer))
    if job.stopped_by is not None and ok:
        last = job.writer.last_batch_id
        print(f"{getattr(args, 'prog', 'kraft-audit run')}: stopped on "
              f"{signal.Signals(job.stopped_by).name} at a micro-batch boundary ("
              + (f"last committed batch {last}" if last is not None else "no batch this run")
              + "; a restart with the same checkpoint continues from there)", file=sys.stderr)
        return EXIT_OK
    if not ok:
        raise RunFailed(f"the streaming query failed: {job.query.exception()}")
    if once and fresh:
        require_applied(cfg, job.writer)
    return EXIT_OK


def empty_sources(sources: SourcesConfig) -> list[str]:
    """The log dirs and dump-log paths that hold nothing to read yet."""
    from kraft_audit.core.codec.logdir import list_segments, list_snapshots

    empty = [d.path for d in sources.log_dirs if not list_segments(d.path) and not list_snapshots(d.path)]
    for d in sources.dump_logs:
        path = Path(d.path)
        files = [f for f in path.rglob("*") if f.is_file()] if path.is_dir() else [path]
        if not any(f.stat().st_size for f in files):
            empty.append(d.path)
    return empty


def require_applied(cfg: Config, writer) -> None:
    """A first --once run that applied no record read only unusable input: an
    input error, not an empty audit (a later run may rightly find nothing new)."""
    from kraft_audit.tables import PROGRESS
    from kraft_audit.tables.read import read_rows

    rows = read_rows(cfg.tables, PROGRESS, ["app_id", "applied"])
    if not sum(r["applied"] for r in rows if r["app_id"] == writer.app_id):
        raise UsageError(f"no usable record in the inputs: nothing applied, "
                         f"{writer.totals.get('quarantine', 0)} quarantined (the quarantine table "
                         f"under {cfg.tables} says why; a torn batch at the end of the active "
                         "segment is waited for, not quarantined)")
