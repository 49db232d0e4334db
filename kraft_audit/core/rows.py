"""Rows the auditor's core emits and the sinks write, one dataclass per table.

The core fills these; `kraft_audit.tables` declares a Delta table on each and
turns lists of them into Arrow. Every field says its column type, whether it
is a key (never null) and what it means (`column`): the Arrow schema and
docs/tables.md are derived from that, so this module stays free of pyarrow.
Keys are deterministic so a replayed micro-batch produces the same rows and
merges stay idempotent.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field

# Column types, by the names `kraft_audit.tables` maps to Arrow types.
STRING, BINARY, BOOL = "string", "binary", "bool"
INT8, INT32, INT64, FLOAT64 = "int8", "int32", "int64", "float64"
BROKER_IDS = "list<int32>"


def column(type_: str, doc: str = "", *, key: bool = False, default=MISSING,
           default_factory=MISSING):
    """A dataclass field that is a table column: its type (`STRING`, `INT64`,
    `list<int32>`, `map<string,int64>`, ...), whether it is a key (a column
    that identifies the row or partitions the table: never null), and a short
    description for docs/tables.md."""
    return field(default=default, default_factory=default_factory,
                 metadata={"type": type_, "key": key, "doc": doc})


@dataclass(slots=True)
class Violation:
    """A broken invariant (table `violations`, append)."""

    violation_id: str = column(STRING, "`cluster/rule/offset/topic_id/partition/broker`", key=True)
    rule_id: str = column(STRING, "the rule (docs/rules.md)", key=True)
    kip: str = column(STRING, '"KIP-704", "KIP-966", "KIP-550", "user"')
    severity: str = column(STRING, "critical, error, warning, info")
    cluster_id: str = column(STRING, key=True)
    topic: str | None = column(STRING)
    topic_id: str | None = column(STRING)
    partition: int | None = column(INT32)
    broker_id: int | None = column(INT32)
    offset: int = column(INT64, "the record that broke it (-1 for side inputs)", key=True)
    timestamp_ms: int = column(INT64, key=True)
    message: str = column(STRING)
    evidence: str = column(STRING, "JSON: the state before and after, the record")


@dataclass(slots=True)
class ConditionChange:
    """An interval of a watched condition opening or closing (table `conditions`, merge on interval_id).

    One row per interval: when an interval closes, the same interval_id is
    emitted again with end_offset/end_ms set.
    """

    interval_id: str = column(STRING, "`cluster/condition/topic_id/partition/start_offset`; a "
                              "delegation token's `cluster/condition/token/<token id>/start_offset`",
                              key=True)
    condition: str = column(STRING, "`under_min_isr`, `leaderless`, `recovering`, "
                            "`manual_election_required`, `elr_in_use`, `reassignment_stalled`, "
                            "`election_overdue`, `leader_imbalanced`, `unclean_election_overdue`, "
                            "`delegation_token_expired`, `directory_unassigned`, `input_gap`", key=True)
    cluster_id: str = column(STRING, key=True)
    topic: str | None = column(STRING)
    topic_id: str = column(STRING, "\"\" for a condition of no partition (`delegation_token_expired`)",
                           key=True)
    partition: int = column(INT32, "-1 for a condition of no partition", key=True)
    start_offset: int = column(INT64, key=True)
    start_ms: int = column(INT64, key=True)
    end_offset: int | None = column(INT64, "null while the condition holds", default=None)
    end_ms: int | None = column(INT64, "null while the condition holds", default=None)
    min_isr_source: str | None = column(
        STRING, "`under_min_isr` only: where the min ISR it was judged by came from when the "
        "interval opened (`topic`, `log`, `setting`, `assumed`, as in `partition_state`); kept "
        "while it stays open, even if the source changes (a later change that leaves the partition "
        "under its new min ISR does not reopen it); null for the other conditions and for rows "
        "written before the column existed", default=None)
    resource: str | None = column(
        STRING, "what a condition of no partition is about: `delegation_token_expired`, the token "
        "id; `input_gap`, `log` (offsets start_offset..end_offset - 1 the input lacks); null for the "
        "partition conditions and for rows written before the column existed", default=None)


@dataclass(slots=True)
class PartitionRow:
    """A partition's state after a change (`partition_state` merge / `partition_history` append)."""

    cluster_id: str = column(STRING, key=True)
    topic: str | None = column(STRING)
    topic_id: str = column(STRING, key=True)
    partition: int = column(INT32, key=True)
    replicas: list[int] = column(BROKER_IDS)
    isr: list[int] = column(BROKER_IDS)
    elr: list[int] = column(BROKER_IDS)
    last_known_elr: list[int] = column(BROKER_IDS)
    adding_replicas: list[int] = column(BROKER_IDS)
    removing_replicas: list[int] = column(BROKER_IDS)
    leader: int = column(INT32, "-1: none")
    leader_epoch: int = column(INT32)
    partition_epoch: int = column(INT32)
    leader_recovery_state: int = column(INT8, "0 RECOVERED, 1 RECOVERING")
    effective_min_isr: int = column(INT32)
    deleted: bool = column(BOOL)
    offset: int = column(INT64, "the record that produced this state", key=True)
    timestamp_ms: int = column(INT64, key=True)
    record_type: str = column(STRING, "the record that produced it")
    min_isr_source: str = column(
        STRING, "where effective_min_isr's min.insync.replicas comes from: `topic`, `log` (the "
        "cluster's ConfigRecord), `setting` (given to the auditor) or `assumed` (none: Kafka's default 1)",
        default="assumed")
    unknown_fields: list[str] = column(
        "list<string>", "fields no record has set (a partition created before a partial log, known "
        "from its change records): their columns hold [] or -1, meaning unknown; empty when all are known",
        default_factory=list)


@dataclass(slots=True)
class BrokerRow:
    """A broker now (table `brokers`, merge on cluster_id+broker_id)."""

    cluster_id: str = column(STRING, key=True)
    broker_id: int = column(INT32, key=True)
    broker_epoch: int = column(INT64)
    incarnation_id: str | None = column(STRING)
    registered: bool = column(BOOL)
    fenced: bool = column(BOOL)
    in_controlled_shutdown: bool = column(BOOL)
    last_shutdown: str | None = column(STRING, "`clean`, `unclean`, `unknown` (a broker that led nothing, "
                                       "from the log alone), null before the first restart")
    offset: int = column(INT64, key=True)
    timestamp_ms: int = column(INT64, key=True)
    last_shutdown_source: str | None = column(
        STRING, "where last_shutdown comes from: `request-log` (the broker's registration request in "
        "the controller's request log) or `inferred` (the metadata log alone)", default=None)


@dataclass(slots=True)
class QuarantineRow:
    """Input that could not be used (table `quarantine`, append): a `Quarantined`
    event as the table holds it (`from_quarantined`)."""

    cluster_id: str = column(STRING, key=True)
    source: str = column(STRING, "file or input name", key=True)
    position: int = column(INT64, "byte position or line number", key=True)
    offset: int = column(INT64, "-1 when unknown")
    reason: str = column(STRING, key=True)
    raw: bytes = column(BINARY, "the bytes or line, truncated")

    RAW_LIMIT = 1024  # bytes of the bad input kept

    @classmethod
    def from_quarantined(cls, q) -> QuarantineRow:
        return cls(q.cluster_id, q.source, q.position, q.offset, q.reason,
                   bytes(q.raw or b"")[:cls.RAW_LIMIT])


@dataclass(slots=True)
class RetractionRow:
    """What the audit withdrew because the quorum replaced it (table `retractions`, append):
    a record of a log version a later Raft epoch truncated, or a provisional finding or
    condition interval that only such records produced."""

    retraction_id: str = column(STRING, "`cluster/kind/offset/epoch/what`", key=True)
    cluster_id: str = column(STRING, key=True)
    kind: str = column(STRING, "`record` (a log record the audit held as uncommitted), `violation` "
                       "or `condition` (provisional, from such records)", key=True)
    offset: int = column(INT64, "the record's offset (a finding's or an interval's start)", key=True)
    raft_epoch: int = column(INT32, "the Raft epoch it was written in (-1: unknown)")
    replaced_at: int = column(INT64, "the first offset where the winning version of the log differs")
    replaced_by_epoch: int = column(INT32, "the winning version's Raft epoch there")
    record_type: str | None = column(STRING, "a record's type; a finding's rule; a condition's name")
    topic_id: str | None = column(STRING)
    partition: int | None = column(INT32)
    message: str = column(STRING, "what was withdrawn, for a person")
    held: bool = column(BOOL, "the audit had held it (shown as provisional); false: it arrived after "
                        "the log it belonged to had lost, and was dropped at once", default=True)


_BY_VALUE = "map<string,int64>"


@dataclass(slots=True)
class ClusterGauges:
    """KIP-966 gauges and counts for the partitions one core instance judges, and the
    cluster-wide figures operators know from Kafka's controller metrics.

    The Spark shell sums the partition figures over buckets per cluster and takes the
    cluster-wide ones (CLUSTER_WIDE: every bucket sees the same brokers, features and
    configs) from any bucket; definitions are in docs/metrics.md.
    """

    cluster_id: str = column(STRING, key=True)
    partitions: int = column(INT64, default=0)
    under_min_isr: int = column(INT64, default=0)
    leaderless: int = column(INT64, default=0)
    unclean_recovery: int = column(INT64, "partitions in RECOVERING", default=0)
    manual_election_required: int = column(INT64, default=0)
    elr_in_use: int = column(INT64, default=0)
    reassignment_stalled: int = column(INT64, "reassignments that could complete and have not",
                                       default=0)
    election_overdue: int = column(INT64, "leaderless partitions with an electable candidate",
                                   default=0)
    leader_imbalanced: int = column(INT64, "partitions led by another than their preferred "
                                    "replica, which could lead", default=0)
    unclean_election_overdue: int = column(INT64, "leaderless partitions whose topic allows an "
                                           "unclean election a replica could win", default=0)
    delegation_token_expired: int = column(INT64, "delegation tokens past their expiration "
                                           "that the controller has not removed", default=0)
    directory_unassigned: int = column(INT64, "partitions with a replica in UNASSIGNED on a "
                                       "broker that can report its directory", default=0)
    under_replicated: int = column(INT64, "|ISR| < |replicas| - |adding replicas|", default=0)
    unclean_recovery_finished_total: int = column(
        INT64, "RECOVERING -> RECOVERED transitions seen", default=0)
    unclean_elections_total: int = column(INT64, default=0)
    elr_elections_total: int = column(INT64, default=0)
    # electable leaders |ISR| + |ELR| per partition, as counts by value: {"0": n, "1": n, ...}
    electable_leaders: dict[str, int] = column(_BY_VALUE, "|ISR|+|ELR| → partitions",
                                               default_factory=dict)
    last_offset: int = column(INT64, default=-1)
    last_timestamp_ms: int = column(INT64, default=0)
    # partitions per topic name in the paging conditions (topics with none left out)
    topics_leaderless: dict[str, int] = column(_BY_VALUE, "topic → partitions",
                                               default_factory=dict)
    topics_under_min_isr: dict[str, int] = column(_BY_VALUE, "topic → partitions",
                                                  default_factory=dict)
    # cluster-wide
    brokers_active: int = column(INT64, "registered and unfenced (Kafka's ActiveBrokerCount)",
                                 default=0)
    brokers_fenced: int = column(INT64, "registered and fenced (FencedBrokerCount)", default=0)
    brokers_in_controlled_shutdown: int = column(INT64, default=0)
    fenced_broker_ids: list[int] = column(BROKER_IDS, default_factory=list)
    active_controller: int = column(
        INT32, "leader of the newest LeaderChange control record; -1 unknown", default=-1)
    metadata_version: int = column(INT32, "feature level; 0 before any FeatureLevelRecord",
                                   default=0)
    features: dict[str, int] = column("map<string,int32>", "every finalized feature level",
                                      default_factory=dict)
    # the cluster's min.insync.replicas and where it came from: "log" (a cluster-level
    # ConfigRecord), "setting" (configuration, a flag or server.properties) or "assumed"
    # (nothing said it: Kafka's default 1 is taken, and every view says so)
    min_insync_replicas: int = column(INT32, default=1)
    min_isr_source: str = column(STRING, "`log | setting | assumed`", default="assumed")
    # the first offset of a log that starts mid-history (no snapshot), as this auditor saw
    # it; -1: the whole history. (A cluster's: the smallest over its buckets.)
    history_from_offset: int = column(
        INT64, "a log starting mid-history: its first offset; -1 the whole history", default=-1)
    # the log as the quorum commits it (core/raft.py; the same in every bucket)
    committed_offset: int = column(
        INT64, "offsets below are proven committed (-1: none yet)", default=-1)
    commit_proof: str = column(STRING, "what proves committed_offset", default="")
    log_end_offset: int = column(INT64, "offset after the newest one the input showed", default=-1)
    unproven_records: int = column(
        INT64, "offsets the input showed beyond the commit point: held, audited only as "
        "provisional", default=0)
    released_unproven_to: int = column(
        INT64, "offsets below were audited without proof of commit (too many held); -1 none",
        default=-1)
    divergences_total: int = column(
        INT64, "times a later Raft epoch replaced what the input had shown", default=0)
    retracted_offsets_total: int = column(
        INT64, "offsets of replaced versions of the log the audit withdrew", default=0)
    input_gap_records: int = column(
        INT64, "offsets missing from every copy of the input that the audit waits for", default=0)
    input_gaps_total: int = column(INT64, "holes in the input (any copy) seen", default=0)
    provisional_violations: int = column(
        INT64, "findings of the uncommitted tail (set by the caller that audits it)", default=0)


# ClusterGauges fields that are the same in every bucket of a cluster: not summed
CLUSTER_WIDE = ("brokers_active", "brokers_fenced", "brokers_in_controlled_shutdown",
                "fenced_broker_ids", "active_controller", "metadata_version", "features",
                "min_insync_replicas", "min_isr_source", "committed_offset", "commit_proof",
                "log_end_offset", "unproven_records", "released_unproven_to", "divergences_total",
                "retracted_offsets_total", "input_gap_records", "input_gaps_total")

