"""The field rules of ACL, SCRAM, client quota and delegation token records: for each, a
synthetic log breaking the invariant is flagged at the record at fault, and the same log
keeping it gives no finding."""

from __future__ import annotations

import base64
import uuid

import pytest

from kraft_audit.core.codec.logdir import LogDirWriter
from kraft_audit.testing.mutate import audit_log

T0 = 1_700_000_000_000


def uid(n: int) -> str:
    return base64.urlsafe_b64encode(uuid.UUID(int=n).bytes).decode().rstrip("=")


ACL = {"id": uid(7), "resourceType": 2, "resourceName": "orders", "patternType": 3,
       "principal": "User:alice", "host": "*", "operation": 3, "permissionType": 3}
SCRAM = {"name": "alice", "mechanism": 2, "salt": b"salt-salt", "storedKey": b"k" * 64, "serverKey": b"s" * 64,
         "iterations": 8192}
QUOTA = {"entity": [{"entityType": "user", "entityName": "alice"}, {"entityType": "client-id", "entityName": None}],
         "key": "producer_byte_rate", "value": 1048576.0, "remove": False}
TOKEN = {"owner": "User:alice", "requester": "User:alice", "renewers": ["User:bob"], "issueTimestamp": T0,
         "maxTimestamp": T0 + 7 * 86_400_000, "expirationTimestamp": T0 + 86_400_000, "tokenId": "tk1"}
TYPES = {"acl": "ACCESS_CONTROL_ENTRY_RECORD", "scram": "USER_SCRAM_CREDENTIAL_RECORD",
         "quota": "CLIENT_QUOTA_RECORD", "token": "DELEGATION_TOKEN_RECORD"}
GOOD = {"acl": ACL, "scram": SCRAM, "quota": QUOTA, "token": TOKEN}
# the log's first record: another ACL and another token, so the second is new
FIRST = {"acl": {"id": uid(1), "resourceName": "first"}, "token": {"tokenId": "tk0"}}


def audit(tmp_path, kind: str, **changes):
    """A log with a good record of the kind, then the record with `changes`; the findings
    and the offset of the changed record."""
    writer = LogDirWriter(tmp_path / "log", "c1")
    writer.append_leader_change(1, T0, 1)
    writer.append([(TYPES[kind], 0, {**GOOD[kind], **FIRST.get(kind, {})})], T0 + 1)
    offset, _ = writer.append([(TYPES[kind], 0, {**GOOD[kind], **changes})], T0 + 2)
    writer.close()
    return audit_log(tmp_path / "log"), offset


BROKEN = [
    ("kraft.acl-fields", "acl", {"resourceType": 1}, "resource type ANY"),
    ("kraft.acl-fields", "acl", {"resourceType": 0}, "resource type UNKNOWN"),
    ("kraft.acl-fields", "acl", {"patternType": 2}, "pattern type 2"),
    ("kraft.acl-fields", "acl", {"patternType": 1}, "pattern type 1"),
    ("kraft.acl-fields", "acl", {"operation": 1}, "operation ANY"),
    ("kraft.acl-fields", "acl", {"permissionType": 1}, "permission type 1"),
    ("kraft.acl-fields", "acl", {"resourceName": ""}, "empty resource name"),
    ("kraft.acl-fields", "acl", {"resourceType": 4, "resourceName": "my-cluster"}, "not 'kafka-cluster'"),
    ("kraft.acl-fields", "acl", {"principal": "alice"}, "not of the form Type:name"),
    ("kraft.acl-fields", "acl", {"host": ""}, "no host"),
    ("kraft.scram-fields", "scram", {"iterations": 4095}, "4095 iterations"),
    ("kraft.scram-fields", "scram", {"iterations": 16385}, "16385 iterations"),
    ("kraft.scram-fields", "scram", {"mechanism": 3}, "unknown mechanism 3"),
    ("kraft.scram-fields", "scram", {"storedKey": b"k" * 32}, "32-byte storedKey"),
    ("kraft.scram-fields", "scram", {"mechanism": 1}, "64-byte storedKey"),
    ("kraft.scram-fields", "scram", {"name": ""}, "empty user name"),
    ("kraft.scram-fields", "scram", {"salt": b""}, "empty salt"),
    ("kraft.quota-fields", "quota", {"value": 0.0}, "not a positive finite value"),
    ("kraft.quota-fields", "quota", {"value": float("inf")}, "not a positive finite value"),
    ("kraft.quota-fields", "quota", {"value": 10.5}, "not a whole number"),
    ("kraft.quota-fields", "quota", {"key": "connection_creation_rate"}, "not a quota of entity user+client-id"),
    ("kraft.quota-fields", "quota", {"entity": [{"entityType": "ip", "entityName": "10.0.0.1"},
                                                {"entityType": "user", "entityName": "a"}]}, "IP address"),
    ("kraft.quota-fields", "quota", {"entity": [{"entityType": "group", "entityName": "g"}]}, "'group'"),
    ("kraft.quota-fields", "quota", {"entity": [{"entityType": "user", "entityName": ""}]}, "empty name"),
    ("kraft.token-fields", "token", {"expirationTimestamp": T0 - 1}, "out of order"),
    ("kraft.token-fields", "token", {"maxTimestamp": T0 + 1000}, "out of order"),
    ("kraft.token-fields", "token", {"owner": "alice"}, "owner principal"),
    ("kraft.token-fields", "token", {"tokenId": ""}, "empty token id"),
]


@pytest.mark.parametrize("rule_id,kind,changes,says", BROKEN, ids=[f"{r}-{s}" for r, _, _, s in BROKEN])
def test_a_record_breaking_the_invariant_is_flagged_at_its_offset(tmp_path, rule_id, kind, changes, says):
    findings, offset = audit(tmp_path, kind, **changes)
    assert [(f.rule_id, f.offset) for f in findings] == [(rule_id, offset)]
    assert says in findings[0].message


KEPT = [
    ("acl", {}), ("acl", {"resourceType": 4, "resourceName": "kafka-cluster", "operation": 9}),
    ("acl", {"patternType": 4, "permissionType": 2, "principal": "User:*"}),
    ("scram", {}), ("scram", {"mechanism": 1, "storedKey": b"k" * 32, "serverKey": b"s" * 32, "iterations": 4096}),
    ("scram", {"iterations": 16384}),
    ("quota", {}), ("quota", {"key": "request_percentage", "value": 12.5}),
    ("quota", {"entity": [{"entityType": "ip", "entityName": None}], "key": "connection_creation_rate",
               "value": 50.0}),
    ("quota", {"value": 0.0, "remove": True}),
    ("token", {}), ("token", {"expirationTimestamp": T0 + 7 * 86_400_000}),
]


@pytest.mark.parametrize("kind,changes", KEPT)
def test_a_record_keeping_the_invariant_gives_nothing(tmp_path, kind, changes):
    findings, _ = audit(tmp_path, kind, **changes)
    assert findings == []


def test_key_lengths_are_read_from_the_decoded_base64_text():
    from kraft_audit.core.rules.cluster_records import _key_length
    assert [_key_length(base64.b64encode(b"x" * n).decode()) for n in range(70)] == list(range(70))


def audit_records(tmp_path, batches):
    """A log of batches of (type, data); the findings and each batch's first offset."""
    writer = LogDirWriter(tmp_path / "log", "c1")
    writer.append_leader_change(1, T0, 1)
    offsets = [writer.append([(t, 0, d) for t, d in batch], T0 + i + 1)[0] for i, batch in enumerate(batches)]
    writer.close()
    return [(f.rule_id, f.offset) for f in audit_log(tmp_path / "log")], offsets


A, RA = "ACCESS_CONTROL_ENTRY_RECORD", "REMOVE_ACCESS_CONTROL_ENTRY_RECORD"
S, RS = "USER_SCRAM_CREDENTIAL_RECORD", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD"
D, RD = "DELEGATION_TOKEN_RECORD", "REMOVE_DELEGATION_TOKEN_RECORD"


def test_an_acl_reusing_a_live_id_or_repeating_a_live_acl_is_flagged(tmp_path):
    findings, at = audit_records(tmp_path / "id", [[(A, ACL)], [(A, {**ACL, "resourceName": "payments"})]])
    assert findings == [("kraft.acl-unique", at[1])]
    findings, at = audit_records(tmp_path / "copy", [[(A, ACL)], [(A, {**ACL, "id": uid(8)})]])
    assert findings == [("kraft.acl-unique", at[1])]
    # removed, its id and binding are free again
    findings, _ = audit_records(tmp_path / "ok", [[(A, ACL)], [(RA, {"id": ACL["id"]})], [(A, ACL)],
                                                  [(A, {**ACL, "id": uid(8), "operation": 4})]])
    assert findings == []


def test_removals_name_a_live_acl_credential_and_token(tmp_path):
    scram_key = {"name": "alice", "mechanism": 2}
    kept = [[(A, ACL), (S, SCRAM), (D, TOKEN)], [(RA, {"id": ACL["id"]})], [(RS, scram_key)],
            [(RD, {"tokenId": "tk1"})]]
    assert audit_records(tmp_path / "ok", kept)[0] == []
    for name, removal in (("acl", (RA, {"id": uid(9)})), ("scram", (RS, {**scram_key, "mechanism": 1})),
                          ("token", (RD, {"tokenId": "tk2"}))):
        findings, at = audit_records(tmp_path / name, [[(A, ACL), (S, SCRAM), (D, TOKEN)], [removal]])
        assert findings == [("kraft.removal-names-live", at[1])], name
    # removed twice: the second removal names nothing live
    findings, at = audit_records(tmp_path / "twice", kept + [[(RS, scram_key)]])
    assert findings == [("kraft.removal-names-live", at[4])]


def test_a_removal_in_a_partial_log_is_not_judged(tmp_path):
    writer = LogDirWriter(tmp_path / "log", "c1")
    writer.next_offset = 100  # the log starts mid-history: the ACL may have been created before
    writer.append([(RA, 0, {"id": uid(9)})], T0)
    writer.close()
    assert audit_log(tmp_path / "log") == []


def test_a_token_renewal_changes_only_the_expiration(tmp_path):
    renewed = {**TOKEN, "expirationTimestamp": TOKEN["expirationTimestamp"] + 1000}
    assert audit_records(tmp_path / "ok", [[(D, TOKEN)], [(D, renewed)]])[0] == []
    for name, changes in (("max", {"maxTimestamp": TOKEN["maxTimestamp"] + 1}),
                          ("owner", {"owner": "User:mallory"}), ("renewers", {"renewers": ["User:eve"]})):
        findings, at = audit_records(tmp_path / name, [[(D, TOKEN)], [(D, {**renewed, **changes})]])
        assert findings == [("kraft.token-renewal", at[1])], name


def test_the_security_indexes_survive_the_stored_form():
    from kraft_audit.core.replay.settings import CoreSettings
    from kraft_audit.core.replay.state import ClusterState
    from kraft_audit.core.snapshot import pack_topology, unpack_topology
    from kraft_audit.core.events import MetadataEvent
    state = ClusterState(CoreSettings())
    for etype, data in ((A, ACL), (S, SCRAM), (D, TOKEN)):
        state.apply(MetadataEvent("c1", "x", 0, 1, 1, 1, T0, "record", etype, 0, data))
    back = ClusterState.restored(CoreSettings(), unpack_topology(pack_topology(state.topology())), {})
    assert (back.acls, back.acl_bindings, back.scram, back.tokens) == \
        (state.acls, state.acl_bindings, state.scram, state.tokens) != ({}, set(), set(), {})


def _broker(broker_id: int, low: int, high: int) -> dict:
    return {"brokerId": broker_id, "brokerEpoch": 10 + broker_id, "incarnationId": uid(100 + broker_id),
            "rack": None, "fenced": True, "endPoints": [], "logDirs": [],
            "features": [{"name": "metadata.version", "minSupportedVersion": low, "maxSupportedVersion": high}]}


def _controller(controller_id: int, low: int, high: int) -> dict:
    return {"controllerId": controller_id, "incarnationId": uid(200 + controller_id), "zkMigrationReady": False,
            "endPoints": [], "features": [{"name": "metadata.version", "minSupportedVersion": low,
                                           "maxSupportedVersion": high}]}


def _mv(level: int) -> tuple:
    return ("FEATURE_LEVEL_RECORD", {"name": "metadata.version", "featureLevel": level})


RB, RC = "REGISTER_BROKER_RECORD", "REGISTER_CONTROLLER_RECORD"


def test_a_feature_level_is_within_every_registered_nodes_range(tmp_path):
    kept = [[(RC, _controller(100, 1, 25))], [(RB, _broker(1, 7, 25))], [_mv(25)]]
    assert audit_records(tmp_path / "ok", kept)[0] == []
    findings, at = audit_records(tmp_path / "level", [[(RC, _controller(100, 1, 25))], [(RB, _broker(1, 7, 21))],
                                                      [_mv(25)]])
    assert findings == [("kraft.feature-level-supported", at[2])]
    findings, at = audit_records(tmp_path / "reg", [[_mv(25)], [(RB, _broker(1, 7, 21))]])
    assert findings == [("kraft.feature-level-supported", at[1])]
    findings, at = audit_records(tmp_path / "ctl", [[_mv(25)], [(RC, _controller(100, 26, 30))]])
    assert findings == [("kraft.feature-level-supported", at[1])]
    findings, at = audit_records(tmp_path / "range", [[(RC, _controller(100, 25, 7))]])
    assert findings == [("kraft.feature-level-supported", at[0])]
    # an unregistered broker no longer holds the level back
    findings, _ = audit_records(tmp_path / "gone", [[(RB, _broker(1, 7, 21))],
                                                    [("UNREGISTER_BROKER_RECORD", {"brokerId": 1, "brokerEpoch": 11})],
                                                    [_mv(25)]])
    assert findings == []


def test_a_leader_change_elects_one_of_its_voters(tmp_path):
    def log(path, leader, voters, granting):
        writer = LogDirWriter(path, "c1")
        writer.append_leader_change(1, T0, 1, voters=(1, 2, 3))
        offset = writer.append_control("LEADER_CHANGE", {
            "version": 0, "leaderId": leader, "voters": [{"voterId": v} for v in voters],
            "grantingVoters": [{"voterId": v} for v in granting]}, T0 + 1, 2)
        writer.close()
        return [(f.rule_id, f.offset) for f in audit_log(path)], offset

    assert log(tmp_path / "ok", 2, (1, 2, 3), (2, 3))[0] == []
    for name, args in (("leader", (4, (1, 2, 3), (4,))), ("twice", (1, (1, 1, 3), (1,))),
                       ("granting", (2, (1, 2, 3), (2, 5)))):
        findings, offset = log(tmp_path / name, *args)
        assert findings == [("kraft.leader-change-voters", offset)], name
