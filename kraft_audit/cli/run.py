"""`kraft-audit run`: the streaming auditor on Spark (local by default).

    kraft-audit run --log-dir /var/lib/kafka/kraft-combined-logs
    kraft-audit run --config conf/default.yaml --once      # audit what exists, then stop
    KRAFT_AUDIT_METRICS_PORT=9500 kraft-audit run --config prod.yaml --set audit.buckets=16

Settings come from the built-in defaults (conf/default.yaml documents them),
then --config FILE, then KRAFT_AUDIT_* environment variables, then flags.
"""

from __future__ import annotations

import argparse
import logging
import sys

from kraft_audit.cli.main import UsageError

# flag -> dotted config key (flags that name a source list may repeat)
_FLAG_KEYS = {
    "log_dir": "sources.log_dirs",
    "dump_log": "sources.dump_logs",
    "registrations": "sources.registrations",
    "log_dir_inventory": "sources.log_dir_inventories",
    "checkpoint": "checkpoint",
    "tables": "tables",
    "trigger": "trigger.interval",
    "buckets": "audit.buckets",
    "rules_dir": "audit.rules_dir",
    "max_records_per_trigger": "sources.max_records_per_trigger",
    "starting_position": "sources.starting_position",
    "metrics_host": "metrics.host",
    "metrics_port": "metrics.port",
    "backend": "sink.backend",
    "master": "spark.master",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="YAML configuration (see conf/default.yaml)")
    parser.add_argument("--once", action="store_true",
                        help="audit what exists now in bounded micro-batches, then stop (availableNow)")
    src = parser.add_argument_group("inputs (repeatable; [CLUSTER_ID=]PATH)")
    src.add_argument("--log-dir", action="append", metavar="PATH",
                     help="a KRaft metadata log dir (or the data dir above __cluster_metadata-0)")
    src.add_argument("--dump-log", action="append", metavar="PATH", help="kafka-dump-log output file or dir")
    src.add_argument("--registrations", action="append", metavar="PATH",
                     help="broker registration events (JSON lines) file or dir")
    src.add_argument("--log-dir-inventory", action="append", metavar="PATH",
                     help="kafka-log-dirs --describe outputs (dir or file)")
    parser.add_argument("--starting-position", choices=("earliest", "snapshot"))
    parser.add_argument("--max-records-per-trigger", type=int, metavar="N")
    parser.add_argument("--checkpoint", metavar="DIR", help="Spark checkpoint (offsets and auditor state)")
    parser.add_argument("--tables", metavar="DIR", help="root of the Delta tables")
    parser.add_argument("--trigger", metavar="INTERVAL", help="micro-batch interval, e.g. '5 seconds'")
    parser.add_argument("--buckets", type=int, metavar="N", help="state groups per cluster")
    parser.add_argument("--rules-dir", metavar="DIR", help="rule catalog directory")
    parser.add_argument("--metrics-host", metavar="HOST")
    parser.add_argument("--metrics-port", type=int, metavar="PORT")
    parser.add_argument("--no-metrics", action="store_true", help="do not serve /metrics")
    parser.add_argument("--backend", choices=("deltalake", "delta-spark"), help="Delta writer")
    parser.add_argument("--master", help="Spark master (default local[2])")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="any configuration key, e.g. --set audit.timeout_seconds=30")


def overrides_from(args: argparse.Namespace) -> dict:
    overrides: dict = {}
    for flag, key in _FLAG_KEYS.items():
        value = getattr(args, flag, None)
        if value is None:
            continue
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


def load(args: argparse.Namespace) -> dict:
    from kraft_audit.config import ConfigError, load_config

    try:
        return load_config(args.config, overrides_from(args))
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def _log_progress() -> None:
    """One line per micro-batch on stderr (only ours: py4j's INFO chatter stays off)."""
    logger = logging.getLogger("kraft_audit")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def run(args: argparse.Namespace) -> int:
    cfg = load(args)
    _log_progress()
    from kraft_audit.spark.job import AuditJob, summary

    job = AuditJob(cfg)
    if job.metrics_port:
        print(f"metrics: http://{cfg['metrics']['host']}:{job.metrics_port}/metrics", file=sys.stderr)
    ok = job.run()
    print(summary(cfg, job.writer))
    if not ok:
        print(f"the streaming query failed: {job.query.exception()}", file=sys.stderr)
        return 1
    return 0
