"""Every KRaft metadata record type and Raft control record, as Kafka's
message JSON files define them (metadata/src/main/resources/common/metadata/
and clients/src/main/resources/common/message/).

The tables here are data; `records` turns them into specialised decode and
encode functions once, at import. Field names are the camelCase JSON names
kafka-dump-log prints. All metadata records are flexible (compact strings and
arrays, tagged fields) from version 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# Field types: bool, int8, int16, uint16, int32, int64, float64, string, bytes,
# uuid. Arrays are "[]<type>"; arrays of structs are "[]struct" with `fields`;
# a single nested struct is "struct" with `fields`.

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID in Kafka's base64 form

_NO_MAX = 32767


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message, for the versions it exists in."""

    name: str  # camelCase JSON name, e.g. "leaderRecoveryState"
    type: str  # a primitive, "[]<primitive>", "[]struct" or "struct"
    min_version: int = 0
    max_version: int = _NO_MAX
    nullable_from: int | None = None  # first version where null is allowed
    tag: int | None = None  # tagged field number; None = untagged
    default: Any = None  # explicit schema default; None = the type's default
    fields: tuple[Field, ...] = ()  # members of a struct or struct array

    def present_in(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def nullable_in(self, version: int) -> bool:
        return self.nullable_from is not None and version >= self.nullable_from

    def default_value(self, version: int) -> Any:
        """The value Kafka gives the field when it is absent (tagged) or unset."""
        if self.default is not None:
            return self.default
        if self.nullable_in(version) and self.tag is not None:
            return None
        if self.type == "struct":
            return {m.name: m.default_value(version) for m in self.fields if m.present_in(version)}
        return type_default(self.type)


def type_default(type_name: str) -> Any:
    if type_name.startswith("[]"):
        return []
    return {
        "bool": False,
        "string": "",
        "bytes": "",
        "uuid": ZERO_UUID,
        "float64": 0.0,
    }.get(type_name, 0)


@dataclass(frozen=True, slots=True)
class MessageSchema:
    """A metadata record (api_key >= 0) or a control record (control_type >= 0)."""

    name: str  # Kafka's class name, e.g. "PartitionChangeRecord"
    type_name: str  # what kafka-dump-log prints, e.g. "PARTITION_CHANGE_RECORD"
    min_version: int
    max_version: int
    fields: tuple[Field, ...]
    api_key: int = -1
    control_type: int = -1
    notes: str = ""
    versions: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "versions", tuple(range(self.min_version, self.max_version + 1)))


def version_range(spec: str) -> tuple[int, int]:
    """Kafka's version range syntax: "0+", "2+", "0-3", "1"."""
    if spec.endswith("+"):
        return int(spec[:-1]), _NO_MAX
    lo, _, hi = spec.partition("-")
    return int(lo), int(hi or lo)


def f(
    name: str,
    type_: str,
    versions: str = "0+",
    *,
    nullable: str | None = None,
    tag: int | None = None,
    default: Any = None,
    fields: tuple[Field, ...] = (),
) -> Field:
    lo, hi = version_range(versions)
    return Field(
        name, type_, lo, hi, version_range(nullable)[0] if nullable else None, tag, default, fields
    )


def upper_snake(class_name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", class_name).upper()


def _record(
    api_key: int, name: str, versions: str, *fields: Field, notes: str = ""
) -> MessageSchema:
    lo, hi = version_range(versions)
    return MessageSchema(
        name, upper_snake(name), lo, hi, tuple(fields), api_key=api_key, notes=notes
    )


_ENDPOINT = (
    f("name", "string"),
    f("host", "string"),
    f("port", "uint16"),
    f("securityProtocol", "int16"),
)
_FEATURE_RANGE = (
    f("name", "string"),
    f("minSupportedVersion", "int16"),
    f("maxSupportedVersion", "int16"),
)

METADATA_RECORDS: tuple[MessageSchema, ...] = (
    _record(
        0,
        "RegisterBrokerRecord",
        "0-4",
        f("brokerId", "int32"),
        f("isMigratingZkBroker", "bool", "2+"),
        f("incarnationId", "uuid"),
        f("brokerEpoch", "int64"),
        f("endPoints", "[]struct", fields=_ENDPOINT),
        f("features", "[]struct", fields=_FEATURE_RANGE),
        f("rack", "string", nullable="0+"),
        f("fenced", "bool", default=True),
        f("inControlledShutdown", "bool", "1+"),
        f("logDirs", "[]uuid", "3+", tag=0),
        f("cordonedLogDirs", "[]uuid", "4+", nullable="4+", tag=1),
        notes="v3 adds LogDirs (KIP-858); v4 (4.3) adds CordonedLogDirs (KIP-1066)",
    ),
    _record(1, "UnregisterBrokerRecord", "0", f("brokerId", "int32"), f("brokerEpoch", "int64")),
    _record(2, "TopicRecord", "0", f("name", "string"), f("topicId", "uuid")),
    _record(
        3,
        "PartitionRecord",
        "0-2",
        f("partitionId", "int32", default=-1),
        f("topicId", "uuid"),
        f("replicas", "[]int32"),
        f("isr", "[]int32"),
        f("removingReplicas", "[]int32"),
        f("addingReplicas", "[]int32"),
        f("leader", "int32", default=-1),
        f("leaderRecoveryState", "int8", default=0, tag=0),
        f("leaderEpoch", "int32", default=-1),
        f("partitionEpoch", "int32", default=-1),
        f("directories", "[]uuid", "1+"),
        f("eligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tag=1),
        f("lastKnownElr", "[]int32", "2+", nullable="2+", tag=2),
        notes="v1 adds Directories (untagged); v2 adds ELR (KIP-966)",
    ),
    _record(
        4,
        "ConfigRecord",
        "0",
        f("resourceType", "int8"),
        f("resourceName", "string"),
        f("name", "string"),
        f("value", "string", nullable="0+"),
    ),
    _record(
        5,
        "PartitionChangeRecord",
        "0-2",
        f("partitionId", "int32", default=-1),
        f("topicId", "uuid"),
        f("isr", "[]int32", nullable="0+", tag=0),
        f("leader", "int32", default=-2, tag=1),
        f("replicas", "[]int32", nullable="0+", tag=2),
        f("removingReplicas", "[]int32", nullable="0+", tag=3),
        f("addingReplicas", "[]int32", nullable="0+", tag=4),
        f("leaderRecoveryState", "int8", default=-1, tag=5),
        f("directories", "[]uuid", "1+", nullable="1+", tag=8),
        f("eligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tag=6),
        f("lastKnownElr", "[]int32", "2+", nullable="2+", tag=7),
        notes="every field but the ids is tagged; null or default means unchanged",
    ),
    _record(7, "FenceBrokerRecord", "0", f("id", "int32"), f("epoch", "int64")),
    _record(8, "UnfenceBrokerRecord", "0", f("id", "int32"), f("epoch", "int64")),
    _record(9, "RemoveTopicRecord", "0", f("topicId", "uuid")),
    _record(
        10,
        "DelegationTokenRecord",
        "0",
        f("owner", "string"),
        f("requester", "string"),
        f("renewers", "[]string"),
        f("issueTimestamp", "int64"),
        f("maxTimestamp", "int64"),
        f("expirationTimestamp", "int64"),
        f("tokenId", "string"),
    ),
    _record(
        11,
        "UserScramCredentialRecord",
        "0",
        f("name", "string"),
        f("mechanism", "int8"),
        f("salt", "bytes"),
        f("storedKey", "bytes"),
        f("serverKey", "bytes"),
        f("iterations", "int32"),
    ),
    _record(12, "FeatureLevelRecord", "0", f("name", "string"), f("featureLevel", "int16")),
    _record(
        14,
        "ClientQuotaRecord",
        "0",
        f(
            "entity",
            "[]struct",
            fields=(f("entityType", "string"), f("entityName", "string", nullable="0+")),
        ),
        f("key", "string"),
        f("value", "float64"),
        f("remove", "bool"),
    ),
    _record(
        15,
        "ProducerIdsRecord",
        "0",
        f("brokerId", "int32"),
        f("brokerEpoch", "int64", default=-1),
        f("nextProducerId", "int64"),
    ),
    _record(
        17,
        "BrokerRegistrationChangeRecord",
        "0-3",
        f("brokerId", "int32"),
        f("brokerEpoch", "int64"),
        f("fenced", "int8", tag=0),
        f("inControlledShutdown", "int8", "1+", tag=1),
        f("logDirs", "[]uuid", "2+", tag=2),
        f("cordonedLogDirs", "[]uuid", "3+", nullable="3+", tag=3),
        notes="Fenced: -1 unfenced, 0 no change, 1 fenced; v3 (4.3) adds CordonedLogDirs (KIP-1066)",
    ),
    _record(
        18,
        "AccessControlEntryRecord",
        "0",
        f("id", "uuid"),
        f("resourceType", "int8"),
        f("resourceName", "string"),
        f("patternType", "int8"),
        f("principal", "string"),
        f("host", "string"),
        f("operation", "int8"),
        f("permissionType", "int8"),
    ),
    _record(19, "RemoveAccessControlEntryRecord", "0", f("id", "uuid")),
    _record(20, "NoOpRecord", "0"),
    _record(21, "ZkMigrationStateRecord", "0", f("zkMigrationState", "int8")),
    _record(
        22, "RemoveUserScramCredentialRecord", "0", f("name", "string"), f("mechanism", "int8")
    ),
    _record(23, "BeginTransactionRecord", "0", f("name", "string", nullable="0+", tag=0)),
    _record(24, "EndTransactionRecord", "0"),
    _record(25, "AbortTransactionRecord", "0", f("reason", "string", nullable="0+", tag=0)),
    _record(26, "RemoveDelegationTokenRecord", "0", f("tokenId", "string")),
    _record(
        27,
        "RegisterControllerRecord",
        "0",
        f("controllerId", "int32"),
        f("incarnationId", "uuid"),
        f("zkMigrationReady", "bool"),
        f("endPoints", "[]struct", fields=_ENDPOINT),
        f("features", "[]struct", fields=_FEATURE_RANGE),
    ),
    _record(
        28,
        "ClearElrRecord",
        "0",
        f("topicName", "string"),
        notes="an empty topic name clears the ELR of every topic",
    ),
    _record(29, "UnregisterControllerRecord", "0", f("controllerId", "int32"), notes="(4.4)"),
)


def _control(
    control_type: int, name: str, type_name: str, versions: str, *fields: Field
) -> MessageSchema:
    lo, hi = version_range(versions)
    return MessageSchema(
        name, type_name, lo, hi, (f("version", "int16"), *fields), control_type=control_type
    )


_VOTER_ENDPOINT = (f("name", "string"), f("host", "string"), f("port", "uint16"))

# Control record types 0/1 (ABORT/COMMIT) are transaction markers that a
# metadata log never holds; they decode to their 4-byte key only.
CONTROL_RECORDS: tuple[MessageSchema, ...] = (
    _control(
        2,
        "LeaderChangeMessage",
        "LEADER_CHANGE",
        "0-1",
        f("leaderId", "int32"),
        f(
            "voters",
            "[]struct",
            fields=(f("voterId", "int32"), f("voterDirectoryId", "uuid", "1+")),
        ),
        f(
            "grantingVoters",
            "[]struct",
            fields=(f("voterId", "int32"), f("voterDirectoryId", "uuid", "1+")),
        ),
    ),
    _control(
        3, "SnapshotHeaderRecord", "SNAPSHOT_HEADER", "0", f("lastContainedLogTimestamp", "int64")
    ),
    _control(4, "SnapshotFooterRecord", "SNAPSHOT_FOOTER", "0"),
    _control(5, "KRaftVersionRecord", "KRAFT_VERSION", "0", f("kRaftVersion", "int16")),
    _control(
        6,
        "VotersRecord",
        "KRAFT_VOTERS",
        "0",
        f(
            "voters",
            "[]struct",
            fields=(
                f("voterId", "int32"),
                f("voterDirectoryId", "uuid"),
                f("endpoints", "[]struct", fields=_VOTER_ENDPOINT),
                f(
                    "kRaftVersionFeature",
                    "struct",
                    fields=(f("minSupportedVersion", "int16"), f("maxSupportedVersion", "int16")),
                ),
            ),
        ),
    ),
)

CONTROL_TYPE_NAMES = {
    0: "ABORT",
    1: "COMMIT",
    **{s.control_type: s.type_name for s in CONTROL_RECORDS},
}

METADATA_BY_TYPE = {s.type_name: s for s in METADATA_RECORDS}
CONTROL_BY_TYPE = {s.control_type: s for s in CONTROL_RECORDS}
CONTROL_BY_NAME = {s.type_name: s for s in CONTROL_RECORDS}


def fields_for(schema_fields: tuple[Field, ...], version: int) -> tuple[Field, ...]:
    """The fields a version carries, in declaration order."""
    return tuple(fl for fl in schema_fields if fl.present_in(version))


def default_data(schema: MessageSchema, version: int) -> dict[str, Any]:
    """Every field of the version at its default, in schema order."""
    return {fl.name: fl.default_value(version) for fl in fields_for(schema.fields, version)}
