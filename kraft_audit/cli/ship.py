"""`kraft-audit ship`: tail a controller's metadata log dir and produce its record batches,
as they are on disk, to a Kafka topic that the streaming job reads (`sources.kafka`).

A small long-running process for a sidecar next to a controller: bounded memory,
resumes from the topic after a crash or restart, follows segment rolls, snapshots and
retention, and serves its health on /metrics. While the Kafka cluster it ships to is
down or moving leaders, every call is retried with backoff for at most --kafka-timeout
seconds; past that, or when Kafka refuses a batch for good, one line and exit 3 (its
supervisor restarts it; it resumes from the topic). SIGTERM/SIGINT flush (at most 20 s)
and exit 0.
"""

from __future__ import annotations

import argparse
import logging
import sys

from kraft_audit.cli.main import RunFailed, UsageError
from kraft_audit.config import is_host_port
from kraft_audit.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kraft_audit.ship.shipper import DEFAULT_KAFKA_TIMEOUT

    parser.add_argument("--log-dir", required=True, metavar="PATH",
                        help="the controller's (or a broker's) metadata log dir, or the dir holding "
                             "__cluster_metadata-0")
    parser.add_argument("--bootstrap-servers", required=True, metavar="HOST:PORT[,...]",
                        help="the Kafka cluster to ship to (the audited one or another)")
    parser.add_argument("--topic", required=True,
                        help="the topic to produce to (create it first, max.message.bytes >= 8 MiB)")
    parser.add_argument("--cluster-id", help="the audited cluster's id (default: meta.properties)")
    parser.add_argument("--metrics-host", default="127.0.0.1", metavar="HOST")
    parser.add_argument("--metrics-port", type=int, default=9465, metavar="PORT",
                        help="serve the shipper's health here (0: any free port; -1: none)")
    parser.add_argument("--only-node", type=int, metavar="ID",
                        help="ship only when this log dir is node ID's (meta.properties node.id); "
                             "otherwise stand by: one shipper per cluster, which that node's loss "
                             "stops. Without it every controller's sidecar ships (with "
                             "--bootstrap-controller their copies agree; the job takes each batch once)")
    parser.add_argument("--bootstrap-controller", action="append", default=[], metavar="HOST:PORT[,...]",
                        help="the audited cluster's controller listeners (repeatable): ship only "
                             "batches the quorum committed (DescribeQuorum's high watermark, "
                             "snapshots, the log's epochs), never a tail a later leader replaces")
    parser.add_argument("--producer-config", action="append", default=[], metavar="KEY=VALUE",
                        help="librdkafka settings, e.g. security.protocol=SSL (repeatable)")
    parser.add_argument("--kafka-timeout", type=float, default=DEFAULT_KAFKA_TIMEOUT,
                        metavar="SECONDS",
                        help="how long Kafka may stay unreachable (brokers down, a partition "
                             "without a leader) while every call is retried with backoff; then "
                             "exit 3 (default: %(default)g)")


def run(args: argparse.Namespace) -> int:
    from kraft_audit.core.codec.logdir import metadata_dir
    from kraft_audit.ship.shipper import ShipError, Shipper, install_signal_handlers

    if not metadata_dir(args.log_dir).is_dir():
        raise UsageError(f"--log-dir: {args.log_dir} is not a directory")
    config = {}
    for item in args.producer_config:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--producer-config wants KEY=VALUE, got {item!r}")
        config[key.strip()] = value.strip()
    controllers = [a.strip() for item in args.bootstrap_controller for a in item.split(",") if a.strip()]
    for address in controllers:
        if not is_host_port(address):
            raise UsageError(f"--bootstrap-controller wants HOST:PORT, got {address!r}")
    if not args.kafka_timeout > 0:
        raise UsageError(f"--kafka-timeout must be more than 0 seconds, got {args.kafka_timeout:g}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        shipper = Shipper(args.log_dir, args.bootstrap_servers, args.topic, args.cluster_id, config,
                          kafka_timeout=args.kafka_timeout, controllers=controllers)
        if args.metrics_port >= 0:
            try:
                port = shipper.serve_metrics(args.metrics_host, args.metrics_port)
            except OSError as exc:
                raise UsageError(f"cannot serve /metrics on {args.metrics_host}:{args.metrics_port}: "
                                 f"{exc.strerror or exc}") from None
            print(f"metrics: http://{args.metrics_host}:{port}/metrics", file=sys.stderr, flush=True)
        install_signal_handlers(shipper)
        node = shipper.node_id()
        if args.only_node is not None and node != args.only_node:
            print(f"kraft-audit ship: standing by (this is node {node}, --only-node {args.only_node})",
                  file=sys.stderr, flush=True)
            shipper.stand_by()
        else:
            shipper.run()
    except ShipError as exc:
        raise RunFailed(str(exc)) from None
    except ConfigError as exc:  # a setting librdkafka refuses
        raise UsageError(f"--producer-config: {exc}") from None
    print("kraft-audit ship: stopped", file=sys.stderr)
    return 0
