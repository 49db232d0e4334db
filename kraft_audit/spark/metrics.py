"""The auditor's Prometheus endpoint: KIP-966's gauges per cluster and the
auditor's own health.

`AuditMetrics` is a custom collector on its own registry. The driver calls
`update()` after each micro-batch's Delta writes; every scrape then builds
fresh metric families from the latest counts of each (cluster, bucket), so a
label value nobody reports any more disappears instead of going stale. After
a restart, `restore()` reloads the same figures from the `gauges`, `progress`
and `violations` tables. Per-partition detail stays in Delta: labels are
cluster, rule, severity and a four-valued electable-leaders bucket only.
docs/operations.md lists every metric.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict

from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, SummaryMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from kraft_audit.core.rows import CLUSTER_WIDE

PREFIX = "kraft_audit_"
ELECTABLE_BUCKETS = ("0", "1", "2", "3+")

# ClusterGauges field -> (metric name without prefix, help), named after KIP-966's metrics.
_PARTITION_GAUGES = {
    "under_min_isr": (
        "global_under_min_isr_partition_count",
        "Partitions whose ISR is smaller than the effective min ISR (KIP-966).",
    ),
    "unclean_recovery": (
        "unclean_recovery_partitions_count",
        "Partitions in leader recovery state RECOVERING after an unclean election (KIP-966).",
    ),
    "manual_election_required": (
        "manual_leader_election_required_partition_count",
        "Leaderless partitions with empty ISR and ELR: only an operator can elect (KIP-966).",
    ),
    "leaderless": ("leaderless_partitions", "Partitions without a leader."),
    "elr_in_use": ("elr_in_use_partitions", "Partitions with a non-empty ELR."),
    "reassignment_stalled": (
        "reassignment_stalled_partitions",
        "Partitions whose reassignment could complete (adding replicas in sync, min ISR kept) "
        "and has not.",
    ),
    "election_overdue": (
        "election_overdue_partitions",
        "Leaderless partitions that an ISR or ELR member could lead (registered, unfenced, not "
        "shutting down, its directory online) after the controller's operation ended.",
    ),
    "leader_imbalanced": (
        "leader_imbalanced_partitions",
        "Partitions led by another broker than their preferred replica (the first) although "
        "that one could lead (in the ISR, registered, unfenced, not shutting down, its "
        "directory online): the controller's periodic preferred election is due.",
    ),
    "unclean_election_overdue": (
        "unclean_election_overdue_partitions",
        "Leaderless partitions of topics with unclean.leader.election.enable that no clean "
        "candidate but a replica could lead (registered, unfenced, not shutting down, its "
        "directory online) after the controller's operation ended.",
    ),
    # a token's condition, summed like the rest: only bucket 0 sees delegation tokens
    "delegation_token_expired": (
        "delegation_tokens_expired",
        "Delegation tokens the image holds past their expiration (or max) timestamp, in the "
        "log's time: the controller's sweep (every delegation.token.expiry.check.interval.ms) "
        "is due to remove them.",
    ),
    "directory_unassigned": (
        "directory_unassigned_partitions",
        "Partitions with a replica placed in UNASSIGNED on a broker that can report its "
        "directory (registered, unfenced, not shutting down, its directories registered): "
        "the broker's report, or the controller's record of it, is due.",
    ),
    "under_replicated": (
        "under_replicated_partitions",
        "Partitions with fewer in sync than their replication factor (adding replicas not counted).",
    ),
    "partitions": ("partitions", "Partitions the auditor tracks."),
}
# Cluster-wide ClusterGauges fields -> (metric, help): the same in every bucket, not summed.
_CLUSTER_GAUGES = {
    "brokers_active": ("active_brokers", "Registered unfenced brokers (Kafka's ActiveBrokerCount)."),
    "brokers_fenced": ("fenced_brokers", "Registered fenced brokers (Kafka's FencedBrokerCount)."),
    "brokers_in_controlled_shutdown": (
        "controlled_shutdown_brokers", "Registered brokers in controlled shutdown."),
    "active_controller": (
        "active_controller_id", "Controller that wrote the newest LeaderChange; -1 unknown."),
    "metadata_version": ("metadata_version", "Feature level of metadata.version; 0 unknown."),
}
# The log as the quorum commits it (core/raft.py), cluster-wide: field -> (metric, help)
_RAFT_GAUGES = {
    "committed_offset": (
        "log_committed_offset", "Newest offset proven committed (the commit_proof column of the "
        "gauges table says by what); -1 none yet."),
    "log_end_offset": ("log_end_offset", "Offset after the newest one the input showed."),
    "unproven_records": (
        "log_unproven_records", "Offsets the input showed beyond the commit point, held: not "
        "audited until proven committed."),
    "input_gap_records": (
        "input_gap_records", "Offsets missing from every copy of the input that the audit waits "
        "for (a hole: retention, a recreated topic, a reader that skipped)."),
}
_RAFT_COUNTERS = {
    "divergences_total": (
        "log_divergences", "Times a later Raft epoch replaced offsets the input had shown (a "
        "deposed leader's tail rewritten at a failover)."),
    "retracted_offsets_total": (
        "log_retracted_offsets", "Offsets of replaced versions of the log the audit withdrew."),
    "input_gaps_total": ("input_gaps", "Holes in the input (offsets a copy skipped, or no copy has) seen."),
}
# per-topic gauges: ClusterGauges field -> (metric, help)
_TOPIC_GAUGES = {
    "topics_leaderless": ("topic_leaderless_partitions", "Partitions without a leader, by topic."),
    "topics_under_min_isr": (
        "topic_under_min_isr_partitions", "Partitions under the effective min ISR, by topic."),
}
OTHER_TOPICS = "_other"  # the label of the topics beyond the cap, summed
_PARTITION_COUNTERS = {
    "unclean_recovery_finished_total": (
        "unclean_recovery_finished",
        "Unclean recoveries finished: RECOVERING -> RECOVERED (KIP-966).",
    ),
    "unclean_elections_total": (
        "unclean_elections",
        "Unclean leader elections: partitions turned RECOVERED -> RECOVERING (as Kafka counts them).",
    ),
    "elr_elections_total": ("elr_elections", "Leaders elected from the ELR."),
}


# The progress columns that balance what the job read: records_total (per cluster) +
# side_inputs_total + unreadable_total = applied_total + duplicates_total + quarantined_total.
_BALANCE = {
    "side_inputs": ("side_inputs", "Side inputs taken in: registration requests and log-dir inventories."),
    "unreadable": ("unreadable", "Input the readers could not decode (also in quarantined_total)."),
    "applied": ("applied", "Records and side inputs applied to the audited state."),
    "duplicates": ("duplicates", "Records and side inputs already applied, skipped (a replay "
                   "after a restart, a batch shipped twice)."),
}


class AuditMetrics(Collector):
    """Latest audit figures, exposed on `self.registry`."""

    def __init__(self, rules: tuple[tuple[str, str], ...] = (), max_topics: int = 100) -> None:
        """`rules`: (rule id, severity) of the enabled rules. Each gets a zero
        violations series per cluster from the cluster's first batch, so the
        first violation of a rule is an increase Prometheus can alert on
        (`increase()` sees nothing in a series that starts at 1).
        `max_topics`: per-topic series per cluster and gauge at most (the topics with
        the most partitions in the condition); the rest are summed under topic="_other"."""
        self.registry = CollectorRegistry()
        self._rules = tuple(rules)
        self._max_topics = max_topics
        self._servers: list = []
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, int], dict] = {}  # (cluster, bucket) -> latest gauges row
        self._clusters: dict[str, dict] = defaultdict(dict)  # cluster -> last offset, lag
        self._records: Counter = Counter()  # cluster -> records read
        self._violations: Counter = Counter()  # (cluster, rule, severity) -> violations
        self._quarantined = 0
        # the rest of the balance: records + side inputs + unreadable = applied + duplicates + quarantined
        self._inputs: Counter = Counter()  # side_inputs, unreadable, applied, duplicates
        self._held = 0
        self._batches = 0
        self._batch_seconds = 0.0
        self._last_batch: dict = {}
        self._last_batch_id: int | None = None
        self.registry.register(self)

    def update(
        self, batch_id: int, gauges_rows: list[dict], progress: dict, violations: list[dict] = ()
    ) -> bool:
        """Take in one micro-batch: its gauges rows (one per cluster and
        bucket), its `progress` row and its violation rows. A batch already
        taken in (a replay after a failure) changes nothing; returns whether
        this one did."""
        with self._lock:
            if self._last_batch_id is not None and batch_id <= self._last_batch_id:
                return False
            self._last_batch_id = batch_id
            for row in gauges_rows:
                self._buckets[(row["cluster_id"], row.get("bucket", 0))] = row
                self._note_offset(row["cluster_id"], row.get("last_offset"))
            self._violations.update(
                (v["cluster_id"], v["rule_id"], v["severity"]) for v in violations
            )
            self._take_progress(_with_batch(progress, batch_id))
            return True

    def restore(self, tables_root: str, app_id: str | None = None) -> None:
        """Reload gauges and counters from the Delta tables of a previous run.
        With `app_id`, batches that query already wrote are not counted again
        when Spark replays them."""
        from kraft_audit.tables import GAUGES, PROGRESS, VIOLATIONS
        from kraft_audit.tables.read import read_rows

        gauges = read_rows(tables_root, GAUGES)
        progress = sorted(
            read_rows(tables_root, PROGRESS), key=lambda r: (r["started_ms"], r["batch_id"])
        )
        violations = read_rows(tables_root, VIOLATIONS, columns=["cluster_id", "rule_id", "severity"])
        with self._lock:
            for row in gauges:
                for name in ("electable_leaders", "features", *_TOPIC_GAUGES):
                    row[name] = dict(row.get(name) or [])
                self._buckets[(row["cluster_id"], row["bucket"])] = row
                self._note_offset(row["cluster_id"], row["last_offset"])
            for row in progress:
                self._take_progress(row)
            self._violations.update(
                (v["cluster_id"], v["rule_id"], v["severity"]) for v in violations
            )
            mine = [
                r["batch_id"] for r in progress if app_id is not None and r.get("app_id") == app_id
            ]
            if mine:
                self._last_batch_id = max(mine)

    def start_server(self, host: str = "127.0.0.1", port: int = 0):
        """Serve /metrics on host:port (0: any free port); returns (server, port)."""
        server, _thread = start_http_server(port, addr=host, registry=self.registry)
        self._servers.append(server)
        return server, server.server_port

    def stop_servers(self) -> None:
        """Close the /metrics servers `start_server` opened."""
        while self._servers:
            server = self._servers.pop()
            server.shutdown()
            server.server_close()

    def _take_progress(self, progress: dict) -> None:
        self._batches += 1
        self._batch_seconds += progress.get("duration_seconds") or 0.0
        self._quarantined += progress.get("quarantined") or 0
        for name in _BALANCE:
            self._inputs[name] += progress.get(name) or 0
        self._held = progress.get("held") or 0
        self._last_batch = progress
        finished = (progress["started_ms"] / 1000 + (progress.get("duration_seconds") or 0.0)
                    if progress.get("started_ms") is not None else None)
        for cluster in progress.get("clusters") or []:
            name = cluster["cluster_id"]
            self._records[name] += cluster.get("records") or 0
            self._note_offset(name, cluster.get("max_offset"))
            figures = self._clusters[name]
            moved = cluster.get("max_offset")
            if moved is not None and finished is not None and moved > figures.get("grown_to", -1):
                figures["grown_to"], figures["grew_at"] = moved, finished  # the input grew
            for lag in ("lag_records", "lag_seconds"):
                if cluster.get(lag) is not None:
                    self._clusters[name][lag] = cluster[lag]

    def note_commit(self, cluster: str, committed: int, log_end: int, quorum_error: str | None) -> None:
        """Where the quorum's commit point stands in a log dir the job reads only so far
        (`sources.bootstrap_controllers`), and whether the quorum answered."""
        with self._lock:
            figures = self._clusters[cluster]
            figures["committed_offset"] = committed
            figures["unproven_records"] = max(log_end - committed, 0)
            figures["quorum_unanswered"] = int(quorum_error is not None)

    def _note_offset(self, cluster: str, offset: int | None) -> None:
        if offset is not None and offset > self._clusters[cluster].get("last_offset", -1):
            self._clusters[cluster]["last_offset"] = offset

    def collect(self):
        with self._lock:
            per_cluster = _sum_buckets(self._buckets.values())
            yield from _cluster_families(per_cluster, self._max_topics)
            yield from self._health_families(per_cluster)

    def _health_families(self, per_cluster: dict[str, dict]):
        records = _counter("records", "Metadata log records read (NoOps included; a record "
                           "delivered twice counts twice).", ["cluster"])
        for cluster, n in sorted(self._records.items()):
            records.add_metric([cluster], n)
        violations = _counter(
            "violations", "Broken invariants found.", ["cluster", "rule", "severity"]
        )
        counts = Counter({(c, rule, severity): 0 for c in self._clusters
                          for rule, severity in self._rules})
        counts.update(self._violations)
        for (cluster, rule, severity), n in sorted(counts.items()):
            violations.add_metric([cluster, rule, severity], n)
        quarantined = _counter("quarantined", "Input set aside (a row each in the quarantine "
                               "table): unreadable, or records the auditor could not apply.")
        quarantined.add_metric([], self._quarantined)
        yield from (records, violations, quarantined)
        for name, (what, doc) in _BALANCE.items():
            family = _counter(what, doc)
            family.add_metric([], self._inputs[name])
            yield family
        yield GaugeMetricFamily(PREFIX + "held_side_inputs", "Side inputs read from their files, "
                                "waiting for the log to reach their time (not counted yet).",
                                value=self._held)

        offset = _gauge("last_offset", "Newest metadata log offset applied.", ["cluster"])
        lag_records = _gauge("lag_records", "Records in the log not yet applied.", ["cluster"])
        lag_seconds = _gauge(
            "lag_seconds",
            "Record time of the log's newest record minus that of the last applied.",
            ["cluster"],
        )
        grew = _gauge(
            "input_last_grew_timestamp_seconds",
            "Unix time (wall clock) this cluster's applied offset last moved: a healthy KRaft log "
            "grows every metadata.max.idle.interval.ms (500 ms) with NoOps.",
            ["cluster"],
        )
        committed = _gauge("log_committed_offset", "Offset below which the log dir is proven committed "
                           "(the quorum's high watermark, a snapshot, a later epoch): the job reads no further "
                           "(sources.bootstrap_controllers).", ["cluster"])
        unproven = _gauge("log_unproven_records", "Records of the log dir beyond its commit point: written "
                          "by the leader, not yet known committed, not read yet.", ["cluster"])
        unanswered = _gauge("quorum_unanswered", "1 when no controller answered DescribeQuorum at the last "
                            "micro-batch (the log's own proofs bound the reading then).", ["cluster"])
        for cluster, figures in sorted(self._clusters.items()):
            for family, key in (
                (offset, "last_offset"),
                (lag_records, "lag_records"),
                (lag_seconds, "lag_seconds"),
                (grew, "grew_at"),
                (committed, "committed_offset"),
                (unproven, "unproven_records"),
                (unanswered, "quorum_unanswered"),
            ):
                if key in figures:
                    family.add_metric([cluster], figures[key])
        newest = _gauge("last_record_timestamp_seconds",
                        "Record time (CreateTime) of the newest record applied.", ["cluster"])
        for cluster, total in sorted(per_cluster.items()):
            if total.get("last_timestamp_ms"):
                newest.add_metric([cluster], total["last_timestamp_ms"] / 1000)
        yield from (offset, lag_records, lag_seconds, grew, newest, committed, unproven, unanswered)

        yield SummaryMetricFamily(
            PREFIX + "batch_duration_seconds",
            "Micro-batch wall time.",
            count_value=self._batches,
            sum_value=self._batch_seconds,
        )
        if self._last_batch:
            yield GaugeMetricFamily(
                PREFIX + "last_batch_duration_seconds",
                "Wall time of the newest micro-batch.",
                value=self._last_batch.get("duration_seconds") or 0.0,
            )
            finished_ms = self._last_batch["started_ms"] + 1000 * (
                self._last_batch.get("duration_seconds") or 0.0
            )
            yield GaugeMetricFamily(
                PREFIX + "last_batch_timestamp_seconds",
                "Unix time the newest micro-batch finished.",
                value=finished_ms / 1000,
            )
            yield GaugeMetricFamily(
                PREFIX + "last_batch_id",
                "Id of the newest micro-batch.",
                value=self._last_batch["batch_id"],
            )


def _with_batch(progress: dict, batch_id: int) -> dict:
    """The progress row with its batch id and a start time (now, if the caller had none)."""
    progress = {**progress, "batch_id": batch_id}
    if progress.get("started_ms") is None:
        progress["started_ms"] = time.time() * 1000 - 1000 * (progress.get("duration_seconds") or 0)
    return progress


def _sum_buckets(rows) -> dict[str, dict]:
    """Per cluster: the partition gauges summed over buckets, electable leaders folded
    into 0, 1, 2, 3+, per-topic counts summed by topic; the cluster-wide figures from
    bucket 0 (every bucket holds the same)."""
    clusters: dict[str, dict] = {}
    for row in sorted(rows, key=lambda r: -(r.get("bucket") or 0)):  # bucket 0 last: its figures win
        total = clusters.setdefault(row["cluster_id"], Counter())
        for field in (*_PARTITION_GAUGES, *_PARTITION_COUNTERS):
            total[field] += row.get(field) or 0
        for electable, n in (row.get("electable_leaders") or {}).items():
            total["electable:" + _electable_bucket(electable)] += n
        for field in _TOPIC_GAUGES:
            by_topic = total.setdefault(field, Counter())
            by_topic.update(row.get(field) or {})
        for field in CLUSTER_WIDE:
            if row.get(field) is not None:
                total[field] = row[field]
        total["last_timestamp_ms"] = max(total.get("last_timestamp_ms", 0), row.get("last_timestamp_ms") or 0)
    return clusters


def capped(by_topic: dict[str, int], limit: int) -> dict[str, int]:
    """The `limit` topics with the most partitions (ties by name); the rest summed as _other."""
    ranked = sorted(((n, t) for t, n in by_topic.items() if n), key=lambda x: (-x[0], x[1]))
    kept = {t: n for n, t in ranked[:limit]}
    rest = sum(n for n, _ in ranked[limit:])
    return kept | ({OTHER_TOPICS: rest} if rest else {})


def _electable_bucket(electable: str) -> str:
    try:
        count = int(electable)
    except ValueError:  # already a bucket label such as "3+"
        return "3+"
    return str(count) if count < 3 else "3+"


def _cluster_families(per_cluster: dict[str, dict], max_topics: int):
    for field, (name, help_text) in (*_PARTITION_GAUGES.items(), *_CLUSTER_GAUGES.items()):
        family = _gauge(name, help_text, ["cluster"])
        for cluster, total in sorted(per_cluster.items()):
            family.add_metric([cluster], total.get(field, 0) if field != "active_controller"
                              else total.get(field, -1))
        yield family
    for fields, make in ((_RAFT_GAUGES, _gauge), (_RAFT_COUNTERS, _counter)):
        for field, (name, help_text) in fields.items():
            family = make(name, help_text, ["cluster"])
            for cluster, total in sorted(per_cluster.items()):
                if field in total:  # a row written before the gate had none
                    family.add_metric([cluster], total[field])
            yield family
    for field, (name, help_text) in _TOPIC_GAUGES.items():
        family = _gauge(name, help_text, ["cluster", "topic"])
        for cluster, total in sorted(per_cluster.items()):
            for topic, n in sorted(capped(total.get(field) or {}, max_topics).items()):
                family.add_metric([cluster, topic], n)
        yield family
    fenced = _gauge("broker_fenced", "1 for each registered broker that is fenced.",
                    ["cluster", "broker"])
    features = _gauge("feature_level", "Finalized feature levels.", ["cluster", "feature"])
    min_isr = _gauge("min_insync_replicas",
                     "The cluster's min.insync.replicas; source: log (cluster ConfigRecord), "
                     "setting (given to the auditor) or assumed (unknown: Kafka's default 1).",
                     ["cluster", "source"])
    for cluster, total in sorted(per_cluster.items()):
        for broker in total.get("fenced_broker_ids") or ():
            fenced.add_metric([cluster, str(broker)], 1)
        for feature, level in sorted((total.get("features") or {}).items()):
            features.add_metric([cluster, feature], level)
        min_isr.add_metric([cluster, total.get("min_isr_source") or "assumed"],
                           total.get("min_insync_replicas") or 1)
    yield from (fenced, features, min_isr)
    for field, (name, help_text) in _PARTITION_COUNTERS.items():
        family = _counter(name, help_text, ["cluster"])
        for cluster, total in sorted(per_cluster.items()):
            family.add_metric([cluster], total[field])
        yield family
    electable = _gauge(
        "electable_leaders_partitions",
        "Partitions by how many replicas could be elected leader cleanly (|ISR| + |ELR|).",
        ["cluster", "electable"],
    )
    for cluster, total in sorted(per_cluster.items()):
        for bucket in ELECTABLE_BUCKETS:
            electable.add_metric([cluster, bucket], total["electable:" + bucket])
    yield electable


def _gauge(name: str, help_text: str, labels=()) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, help_text, labels=list(labels))


def _counter(name: str, help_text: str, labels=()) -> CounterMetricFamily:
    return CounterMetricFamily(PREFIX + name, help_text, labels=list(labels))
