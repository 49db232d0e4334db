"""Metadata versions (feature levels of `metadata.version`) and what each one
turns on, as `server-common/.../MetadataVersion.java` gates it."""

from __future__ import annotations

# Feature level of each named metadata.version.
METADATA_VERSIONS = {
    "3.0-IV1": 1,
    "3.1-IV0": 2,
    "3.2-IV0": 3,
    "3.3-IV0": 4,
    "3.3-IV1": 5,
    "3.3-IV2": 6,
    "3.3-IV3": 7,
    "3.4-IV0": 8,
    "3.5-IV0": 9,
    "3.5-IV1": 10,
    "3.5-IV2": 11,
    "3.6-IV0": 12,
    "3.6-IV1": 13,
    "3.6-IV2": 14,
    "3.7-IV0": 15,
    "3.7-IV1": 16,
    "3.7-IV2": 17,
    "3.7-IV3": 18,
    "3.7-IV4": 19,
    "3.8-IV0": 20,
    "3.9-IV0": 21,
    "4.0-IV0": 22,
    "4.0-IV1": 23,
    "4.0-IV2": 24,
    "4.0-IV3": 25,
    "4.1-IV0": 26,
    "4.1-IV1": 27,
}

MV_3_2_IV0 = 3  # leader recovery state (KIP-704) is written
MV_3_3_IV2 = 6  # BrokerRegistrationChangeRecord replaces Fence/UnfenceBrokerRecord
MV_3_3_IV3 = 7  # brokers can be in controlled shutdown; RegisterBrokerRecord v1
MV_3_4_IV0 = 8  # RegisterBrokerRecord v2
MV_3_6_IV0 = 12  # ISR shrinks stop forcing a leader epoch bump (KAFKA-15021)
MV_3_6_IV1 = 13  # metadata transactions (bootstrap Begin/EndTransaction)
MV_3_7_IV2 = 17  # directory assignment: PartitionRecord/ChangeRecord v1, RegisterBrokerRecord v3
MV_4_0_IV1 = 23  # ELR fields: PartitionRecord/ChangeRecord v2, ClearElrRecord
MV_4_1_IV0 = 26  # eligible.leader.replicas.version=1 is the bootstrap default

LATEST = MV_4_1_IV0


def parse_metadata_version(value: object) -> int:
    """A feature level from `25`, `"25"` or `"4.0-IV3"`; ValueError otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        level = value
    elif isinstance(value, str) and value.strip().isdigit():
        level = int(value.strip())
    elif isinstance(value, str) and value.strip() in METADATA_VERSIONS:
        level = METADATA_VERSIONS[value.strip()]
    else:
        raise ValueError(
            f"unknown metadata.version {value!r} "
            f"(use a feature level 1-{LATEST} or a name like 4.0-IV3)"
        )
    if not 1 <= level <= LATEST:
        raise ValueError(f"metadata.version {level} is outside 1-{LATEST}")
    return level


def partition_record_version(mv: int) -> int:
    """PartitionRecord and PartitionChangeRecord share their version gate."""
    if mv >= MV_4_0_IV1:
        return 2
    if mv >= MV_3_7_IV2:
        return 1
    return 0


def register_broker_record_version(mv: int) -> int:
    if mv >= MV_3_7_IV2:
        return 3
    if mv >= MV_3_4_IV0:
        return 2
    if mv >= MV_3_3_IV3:
        return 1
    return 0


def elr_supported(mv: int) -> bool:
    return mv >= MV_4_0_IV1


def directories_supported(mv: int) -> bool:
    return mv >= MV_3_7_IV2
