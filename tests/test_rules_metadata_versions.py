"""The rules keyed by metadata.version level, read from the table Kafka's jars gave
(kraft_audit/data/kafka_versions.json): a CIDR ACL host and a controller unregistration only
at a level that supports them, a level above the highest known reported as unknown, and the
downgrade rule across the levels that changed the metadata format. For each, a synthetic log
is flagged at the record at fault, and the same log at a level that allows it is not."""

from __future__ import annotations

import base64
import uuid

from kraft_audit.core import metadata_versions as mvs
from kraft_audit.core.codec.logdir import LogDirWriter
from kraft_audit.core.replay import settings
from kraft_audit.sim import versions as sim_versions
from kraft_audit.testing.mutate import audit_log

T0 = 1_700_000_000_000


def uid(n: int) -> str:
    return base64.urlsafe_b64encode(uuid.UUID(int=n).bytes).decode().rstrip("=")


def mv(level: int) -> tuple:
    return ("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": level})


def acl(host: str) -> tuple:
    return ("ACCESS_CONTROL_ENTRY_RECORD", 0, {
        "id": uid(7), "resourceType": 2, "resourceName": "orders", "patternType": 3,
        "principal": "User:alice", "host": host, "operation": 3, "permissionType": 3})


CONTROLLER = ("REGISTER_CONTROLLER_RECORD", 0, {"controllerId": 3001, "incarnationId": uid(300),
                                                "zkMigrationReady": False, "endPoints": [], "features": []})
UNREGISTER = ("UNREGISTER_CONTROLLER_RECORD", 0, {"controllerId": 3001})


def audit(path, *batches) -> list[tuple[str, int]]:
    """(rule id, offset) of each finding of a log of these batches of records."""
    writer = LogDirWriter(path, "c1")
    writer.append_leader_change(1, T0, 1)
    for i, batch in enumerate(batches):
        writer.append(list(batch), T0 + i + 1)
    writer.close()
    return [(f.rule_id, f.offset) for f in audit_log(path)]


def test_the_table_knows_the_levels_of_the_newest_release():
    assert mvs.MV_KNOWN == 34 and mvs.MV_NAMES[32] == "4.4-IV1" and mvs.MV_NAMES[34] == "4.5-IV0"
    assert (mvs.MV_CIDR_ACL, mvs.MV_CONTROLLER_UNREGISTRATION) == (32, 33)
    # 23 and 30 changed the format on the lines that released them, not on an earlier line
    # that had them unreleased: they are not held against a downgrade
    assert mvs.MV_CHANGED == {1, 3, 5, 6, 7, 8, 11, 13, 14, 15, 17, 32, 33}


def test_the_hand_named_levels_are_the_levels_the_jars_say():
    first, last = mvs.TABLE["capabilities"]["isLeaderEpochBumpRequiredOnIsrShrink"]
    assert settings.MV_3_6_IV0 == last + 1
    assert settings.MV_3_2_IV0 == mvs.first_level("isLeaderRecoverySupported")
    assert settings.MV_4_0_IV1 == mvs.first_level("isElrSupported")
    assert mvs.MV_NAMES[settings.MV_4_0_IV0] == "4.0-IV0"
    assert {name: mvs.MV_NAMES[level] for name, level in sim_versions.METADATA_VERSIONS.items()} == {
        name: name for name in sim_versions.METADATA_VERSIONS}


def test_a_cidr_acl_host_only_at_a_level_that_supports_it(tmp_path):
    assert audit(tmp_path / "below", [mv(31)], [acl("10.0.0.0/8")]) == [("kraft.acl-cidr-host-supported", 2)]
    assert audit(tmp_path / "at", [mv(32)], [acl("10.0.0.0/8")]) == []
    assert audit(tmp_path / "address", [mv(31)], [acl("10.0.0.1")]) == []
    assert audit(tmp_path / "no-level", [acl("10.0.0.0/8")]) == []


def test_a_controller_unregistration_only_at_a_level_that_supports_it(tmp_path):
    assert audit(tmp_path / "below", [mv(32)], [CONTROLLER], [UNREGISTER]) == [
        ("kraft.controller-unregistration-supported", 3)]
    assert audit(tmp_path / "at", [mv(33)], [CONTROLLER], [UNREGISTER]) == []


def test_a_level_above_the_highest_known_is_reported_as_unknown(tmp_path):
    unknown = mvs.MV_KNOWN + 1
    assert audit(tmp_path / "unknown", [mv(unknown)], [mv(unknown - 1)]) == [("input.unknown-metadata-version", 1)]
    assert audit(tmp_path / "known", [mv(mvs.MV_KNOWN)]) == []


def test_a_downgrade_across_the_newest_format_changes_is_refused(tmp_path):
    assert audit(tmp_path / "across", [mv(33)], [mv(31)]) == [("kraft.metadata-version-downgrade", 2)]
    assert audit(tmp_path / "safe", [mv(34)], [mv(33)]) == []
    assert audit(tmp_path / "safe-below", [mv(31)], [mv(30)]) == []
