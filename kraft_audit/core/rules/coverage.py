"""Which rules judge each record type, for the table in docs/rules.md.

A rule declares the record types it reads (`@rule(records=...)`); rules on partition
triggers without a declaration read the partition records. Every metadata record type
(apiKeys 0-29) and Raft control record is listed with what the auditor does with it, so a
type no rule covers shows as such instead of disappearing from the table (a test holds
that every type the codec knows is here). A snapshot is compared with the log as a whole
image (`kraft.snapshot-equals-log`), every record type in it included.
"""

from __future__ import annotations

from kraft_audit.core.rules.catalog import Catalog
from kraft_audit.core.rules.registry import ON_INPUT, ON_PARTITION, ON_PARTITION_BATCH_END, PARTITION_RECORDS

# Conditions (docs/metrics.md) that each record type can open or close.
_BROKER_CONDITIONS = ("election_overdue, unclean_election_overdue, leader_imbalanced, "
                      "directory_unassigned")
CONDITIONS_MOVED = {
    "PARTITION_RECORD": "all",
    "PARTITION_CHANGE_RECORD": "all",
    "CLEAR_ELR_RECORD": "elr_in_use, manual_election_required",
    "REMOVE_TOPIC_RECORD": "all (closed)",
    "CONFIG_RECORD": "under_min_isr, manual_election_required, reassignment_stalled, "
                     "unclean_election_overdue",
    "REGISTER_BROKER_RECORD": _BROKER_CONDITIONS,
    "UNREGISTER_BROKER_RECORD": _BROKER_CONDITIONS,
    "FENCE_BROKER_RECORD": _BROKER_CONDITIONS,
    "UNFENCE_BROKER_RECORD": _BROKER_CONDITIONS,
    "BROKER_REGISTRATION_CHANGE_RECORD": _BROKER_CONDITIONS,
    "BEGIN_TRANSACTION_RECORD": "election_overdue, unclean_election_overdue (deferred to the "
                                "transaction's end)",
    "END_TRANSACTION_RECORD": "election_overdue, unclean_election_overdue (judged)",
    "DELEGATION_TOKEN_RECORD": "delegation_token_expired (a renewal past the record's time closes it)",
    "REMOVE_DELEGATION_TOKEN_RECORD": "delegation_token_expired (closed)",
    "NO_OP_RECORD": "delegation_token_expired (opened where the log's time passes a token's deadline, "
                    "as at any record that is not a partition's)",
    "ABORT_TRANSACTION_RECORD": "election_overdue, unclean_election_overdue (judged)",
}

# What replay does with each type (context for the rules), and what is not judged yet.
USE = {
    "REGISTER_BROKER_RECORD": "broker epoch, incarnation, fenced, directories online (who owns each), features supported",
    "UNREGISTER_BROKER_RECORD": "the broker leaves",
    "TOPIC_RECORD": "topic names and ids",
    "PARTITION_RECORD": "a partition created, or loaded from a snapshot",
    "CONFIG_RECORD": "min.insync.replicas and unclean.leader.election.enable, by scope",
    "PARTITION_CHANGE_RECORD": "a partition changed",
    "FENCE_BROKER_RECORD": "fenced",
    "UNFENCE_BROKER_RECORD": "unfenced",
    "REMOVE_TOPIC_RECORD": "the topic and its partitions deleted",
    "DELEGATION_TOKEN_RECORD": "live tokens; its fields (times in order, principals), a renewal",
    "USER_SCRAM_CREDENTIAL_RECORD": "live credentials; its fields (mechanism, iterations, key lengths)",
    "FEATURE_LEVEL_RECORD": "metadata.version and the ELR feature (which Kafka line's rules apply); "
                            "every finalized level",
    "CLIENT_QUOTA_RECORD": "its fields (entity, key, value)",
    "PRODUCER_IDS_RECORD": "the next producer id",
    "BROKER_REGISTRATION_CHANGE_RECORD": "fenced, controlled shutdown, directories online",
    "ACCESS_CONTROL_ENTRY_RECORD": "live ACLs; its fields (concrete enum values, names, principal), unique",
    "REMOVE_ACCESS_CONTROL_ENTRY_RECORD": "the ACL leaves; it was live",
    "NO_OP_RECORD": "counted (offsets, time)",
    "ZK_MIGRATION_STATE_RECORD": "counted, not judged",
    "REMOVE_USER_SCRAM_CREDENTIAL_RECORD": "the credential leaves; it was live",
    "BEGIN_TRANSACTION_RECORD": "an operation spanning batches starts",
    "END_TRANSACTION_RECORD": "it ends",
    "ABORT_TRANSACTION_RECORD": "it ends (aborted)",
    "REMOVE_DELEGATION_TOKEN_RECORD": "the token leaves; it was live",
    "REGISTER_CONTROLLER_RECORD": "the features it supports",
    "CLEAR_ELR_RECORD": "ELR and LastKnownElr cleared for a topic or all",
    "UNREGISTER_CONTROLLER_RECORD": "its features no longer count",
    "LEADER_CHANGE": "the active controller; its voters",
    "SNAPSHOT_HEADER": "where a snapshot's records belong (its last contained time)",
    "SNAPSHOT_FOOTER": "counted; a compared snapshot must end with one",
    "KRAFT_VERSION": "the kraft.version level (Voters records are judged against it)",
    "KRAFT_VOTERS": "counted",
}


# Input rules judge what replay refuses; these record types name a topic or broker that
# must exist (replay raises unknown-topic / unknown-broker for them)
INPUT_READERS = {
    "PARTITION_RECORD": ("input.unknown-topic",),
    "CLEAR_ELR_RECORD": ("input.unknown-topic",),
    "REMOVE_TOPIC_RECORD": ("input.unknown-topic",),
    "UNREGISTER_BROKER_RECORD": ("input.unknown-broker",),
    "FENCE_BROKER_RECORD": ("input.unknown-broker",),
    "UNFENCE_BROKER_RECORD": ("input.unknown-broker",),
    "BROKER_REGISTRATION_CHANGE_RECORD": ("input.unknown-broker",),
}


def rules_by_record_type(catalog: Catalog) -> dict[str, list[str]]:
    """Record type -> ids of the rules that read it, in catalog order."""
    readers: dict[str, list[str]] = {t: [] for t in USE}
    for spec in catalog.rules:
        types = spec.impl.records
        if not types and spec.impl.on in (ON_PARTITION, ON_PARTITION_BATCH_END):
            types = PARTITION_RECORDS
        for t in types:
            readers.setdefault(t, []).append(spec.rule_id)
        if spec.impl.on == ON_INPUT:
            for t, ids in INPUT_READERS.items():
                if spec.rule_id in ids:
                    readers.setdefault(t, []).append(spec.rule_id)
    return readers
