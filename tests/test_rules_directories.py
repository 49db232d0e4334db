"""Log directories, metadata.version downgrades, topic config removals, controller
unregistrations, kraft.version and voters, and a snapshot's frame: for each rule, a
synthetic log breaking the invariant is flagged at the record at fault, and the same log
keeping it gives no finding."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

from kraft_audit.core.codec.logdir import LogDirWriter
from kraft_audit.core.rules.directories import LOST, MIGRATING, UNASSIGNED, reserved
from kraft_audit.testing.mutate import audit_log

T0 = 1_700_000_000_000
TOPIC = "T2RkZXJzVG9waWNJZDAwMQ"


def uid(n: int) -> str:
    return base64.urlsafe_b64encode(uuid.UUID(int=n).bytes).decode().rstrip("=")


def d(broker: int, n: int = 0) -> str:
    """Directory n of a broker: not a reserved id."""
    return uid((broker << 80) + n)


def register(broker: int, dirs: list[str]) -> tuple:
    return ("REGISTER_BROKER_RECORD", 3, {
        "brokerId": broker, "brokerEpoch": 10 + broker, "incarnationId": uid(100 + broker), "rack": None,
        "fenced": False, "endPoints": [], "features": [], "logDirs": dirs})


def partition(replicas: list[int], dirs: list[str]) -> tuple:
    return ("PARTITION_RECORD", 1, {
        "partitionId": 0, "topicId": TOPIC, "replicas": replicas, "isr": replicas, "removingReplicas": [],
        "addingReplicas": [], "leader": replicas[0], "leaderEpoch": 0, "partitionEpoch": 0,
        "directories": dirs})


def change(**fields) -> tuple:
    return ("PARTITION_CHANGE_RECORD", 2, {"partitionId": 0, "topicId": TOPIC, "leader": -2, **fields})


def audit(path, batches):
    """A log of batches of (type, version, data) after a metadata.version with directories
    and brokers 1-3; the findings and each batch's first offset."""
    writer = LogDirWriter(path, "c1")
    writer.append_leader_change(1, T0, 1)
    writer.append([("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 21})], T0)
    writer.append([register(b, [d(b), d(b, 1)]) for b in (1, 2, 3)], T0)
    writer.append([("TOPIC_RECORD", 0, {"name": "orders", "topicId": TOPIC})], T0)
    offsets = [writer.append(batch, T0 + i + 1)[0] for i, batch in enumerate(batches)]
    writer.close()
    return [(f.rule_id, f.offset) for f in audit_log(path)], offsets


def test_reserved_ids_are_the_first_hundred():
    assert reserved(MIGRATING) and reserved(UNASSIGNED) and reserved(LOST) and reserved(uid(99))
    assert not reserved(uid(100)) and not reserved(d(1)) and not reserved("not a uuid")


def test_a_registration_names_each_directory_once_none_reserved_none_another_brokers(tmp_path):
    assert audit(tmp_path / "ok", [[register(4, [d(4), d(4, 1)])]])[0] == []
    for name, dirs in (("twice", [d(4), d(4)]), ("reserved", [d(4), UNASSIGNED]), ("range", [uid(57)]),
                       ("taken", [d(4), d(2, 1)])):
        findings, at = audit(tmp_path / name, [[register(4, dirs)]])
        assert findings == [("kraft.registration-log-dirs", at[0])], name
    # a broker re-registering its own directories, or another's after that broker dropped it
    drop = ("BROKER_REGISTRATION_CHANGE_RECORD", 2, {"brokerId": 2, "brokerEpoch": 12, "logDirs": [d(2)]})
    assert audit(tmp_path / "again", [[register(1, [d(1)])], [drop], [register(4, [d(2, 1)])]])[0] == []


def test_a_registration_change_only_drops_directories(tmp_path):
    def change_dirs(dirs):
        return [("BROKER_REGISTRATION_CHANGE_RECORD", 2, {"brokerId": 1, "brokerEpoch": 11, "logDirs": dirs})]
    assert audit(tmp_path / "ok", [change_dirs([d(1, 1)])])[0] == []
    findings, at = audit(tmp_path / "added", [change_dirs([d(1), d(1, 7)])])
    assert findings == [("kraft.registration-log-dirs", at[0])]


def test_directories_run_parallel_to_the_replicas(tmp_path):
    kept = [[partition([1, 2], [d(1), UNASSIGNED])], [change(replicas=[1, 2, 3], directories=[d(1), d(2), MIGRATING],
                                                            addingReplicas=[3])]]
    assert audit(tmp_path / "ok", kept)[0] == []
    findings, at = audit(tmp_path / "short", [[partition([1, 2], [d(1)])]])
    assert findings == [("kraft.partition-directories", at[0])]
    findings, at = audit(tmp_path / "long", [[partition([1, 2], [d(1), d(2)])], [change(directories=[d(1), d(2), d(3)])]])
    assert findings == [("kraft.partition-directories", at[1])]


def test_a_replica_is_placed_in_a_directory_of_its_broker(tmp_path):
    for name, dirs in (("other", [d(1), d(1, 1)]), ("lost", [d(1), LOST]), ("reserved", [d(1), uid(42)]),
                       ("unknown", [d(1), d(2, 9)])):
        findings, at = audit(tmp_path / name, [[partition([1, 2], dirs)]])
        assert findings == [("kraft.partition-directories", at[0])], name
    # the broker reports its replica in another of its directories, then drops that one
    # (offline) and re-registers without it: every entry stays a directory it registered
    moved = [[partition([1, 2], [d(1), UNASSIGNED])], [change(directories=[d(1), d(2, 1)])],
             [change(isr=[1]),
              ("BROKER_REGISTRATION_CHANGE_RECORD", 2, {"brokerId": 2, "brokerEpoch": 12, "logDirs": [d(2)]})],
             [change(directories=[d(1, 1), d(2, 1)])], [register(2, [d(2)])], [change(directories=[d(1), d(2, 1)])]]
    assert audit(tmp_path / "moved", moved)[0] == []
    findings, at = audit(tmp_path / "stolen", moved[:2] + [[change(directories=[d(3), d(2, 1)])]])
    assert findings == [("kraft.partition-directories", at[2])]


def mv(level: int) -> list:
    return [("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": level})]


def test_metadata_version_goes_down_only_across_levels_that_changed_nothing(tmp_path):
    # 21 (3.9-IV0) -> 18 (3.7-IV3): 19..21 changed no metadata
    assert audit(tmp_path / "ok", [mv(18), mv(21)])[0] == []
    findings, at = audit(tmp_path / "unsafe", [mv(14)])  # across 15 and 17
    assert findings == [("kraft.metadata-version-downgrade", at[0])]
    findings, at = audit(tmp_path / "safe", [mv(18), mv(17)])  # 18 itself changed nothing
    assert findings == []
    findings, at = audit(tmp_path / "down", [mv(18), mv(16)])  # across 17
    assert findings == [("kraft.metadata-version-downgrade", at[1])]


def test_a_topic_config_is_removed_only_for_a_live_topic(tmp_path):
    def config(name, value):
        return [("CONFIG_RECORD", 0, {"resourceType": 2, "resourceName": name, "name": "retention.ms",
                                      "value": value})]
    assert audit(tmp_path / "ok", [config("orders", "1000"), config("orders", None)])[0] == []
    findings, at = audit(tmp_path / "gone", [[("REMOVE_TOPIC_RECORD", 0, {"topicId": TOPIC})],
                                             config("orders", None)])
    assert findings == [("kraft.config-resource-exists", at[1])]


def test_a_controller_is_unregistered_only_while_registered(tmp_path):
    ctl = ("REGISTER_CONTROLLER_RECORD", 0, {"controllerId": 3001, "incarnationId": uid(300), "zkMigrationReady": False,
                                             "endPoints": [], "features": []})
    gone = ("UNREGISTER_CONTROLLER_RECORD", 0, {"controllerId": 3001})
    unregistering = mv(33)  # the first level with controller unregistration
    assert audit(tmp_path / "ok", [unregistering, [ctl], [gone]])[0] == []
    findings, at = audit(tmp_path / "never", [unregistering, [gone]])
    assert findings == [("kraft.record-names-registered-node", at[1])]


def test_kraft_version_is_legal_never_lowered_and_voters_need_it(tmp_path):
    def log(path, records):
        writer = LogDirWriter(path, "c1")
        writer.append_leader_change(1, T0, 1)
        offsets = [writer.append_control(t, {"version": 0, **data}, T0 + i, 1) for i, (t, data) in enumerate(records)]
        writer.close()
        return [(f.rule_id, f.offset) for f in audit_log(path)], offsets

    def voters(*ids):
        return ("KRAFT_VOTERS", {"voters": [{"voterId": v, "voterDirectoryId": uid(500 + v), "endpoints": [],
                                              "kRaftVersionFeature": {"minSupportedVersion": 0,
                                                                      "maxSupportedVersion": 1}} for v in ids]})
    up = ("KRAFT_VERSION", {"kRaftVersion": 1})
    assert log(tmp_path / "ok", [up, voters(1, 2, 3), up, voters(1, 2)])[0] == []
    for name, records in (("twice", [up, voters(1, 2, 2)]), ("empty", [up, voters()]),
                          ("level", [("KRAFT_VERSION", {"kRaftVersion": 2})]),
                          ("lowered", [up, ("KRAFT_VERSION", {"kRaftVersion": 0})]),
                          ("static", [("KRAFT_VERSION", {"kRaftVersion": 0}), voters(1)])):
        findings, at = log(tmp_path / name, records)
        assert findings == [("kraft.kraft-version-voters", at[-1])], name


def test_a_snapshot_opens_with_its_header_and_closes_with_its_footer(tmp_path):
    import shutil

    from kraft_audit.core.codec.batches import Batch, iter_batches
    from kraft_audit.core.codec.logdir import list_snapshots, metadata_dir
    from kraft_audit.core.image import comparison_from_plain, comparison_to_plain, verify_snapshots

    source = next(p for p in (Path(__file__).parent / "fixtures" / "kraft-real").iterdir()
                  if p.is_dir() and list_snapshots(metadata_dir(p)))
    for name in ("whole", "headless", "footless"):
        shutil.copytree(source, tmp_path / name)
    assert audit_log(tmp_path / "whole") == []
    end, _epoch, snap = list_snapshots(metadata_dir(tmp_path / "headless"))[0]
    raw = snap.read_bytes()
    batches = [b for b in iter_batches(raw) if isinstance(b, Batch)]
    snap.write_bytes(raw[batches[0].position + batches[0].size:])
    foot = list_snapshots(metadata_dir(tmp_path / "footless"))[0][2]
    foot.write_bytes(raw[:batches[-1].position])
    for name, says in (("headless", "not a SnapshotHeader"), ("footless", "not a SnapshotFooter")):
        findings = audit_log(tmp_path / name)
        assert [(f.rule_id, f.offset) for f in findings] == [("kraft.snapshot-framing", end - 1)], name
        assert says in findings[0].message
        comparison = next(verify_snapshots(tmp_path / name))
        assert comparison_from_plain(comparison_to_plain(comparison)).framing == comparison.framing != ()


def test_nothing_names_a_broker_after_its_registration_is_removed(tmp_path):
    gone = ("UNREGISTER_BROKER_RECORD", 0, {"brokerId": 3, "brokerEpoch": 13})
    fence = ("FENCE_BROKER_RECORD", 0, {"id": 3, "epoch": 13})
    assert audit(tmp_path / "ok", [[fence], [gone], [register(3, [d(3)])], [fence]])[0] == []
    for name, after in (("twice", gone), ("fenced", fence),
                        ("changed", ("BROKER_REGISTRATION_CHANGE_RECORD", 2, {"brokerId": 3, "brokerEpoch": 13,
                                                                              "fenced": 1}))):
        findings, at = audit(tmp_path / name, [[gone], [after]])
        assert findings == [("kraft.record-names-registered-node", at[1])], name


def test_a_replica_in_an_offline_directory_neither_leads_nor_stays_in_the_isr(tmp_path):
    rule = "kraft.replica-in-offline-directory"
    placed = [partition([1, 2], [d(1), d(2)])]

    def offline(broker, left):
        return ("BROKER_REGISTRATION_CHANGE_RECORD", 2, {"brokerId": broker, "brokerEpoch": 10 + broker,
                                                         "logDirs": [left]})
    fence_1 = ("BROKER_REGISTRATION_CHANGE_RECORD", 2, {"brokerId": 1, "brokerEpoch": 11, "fenced": 1})
    # the leadership and the ISR move in the batch that takes the directory offline; then
    # fencing the leader leaves the partition leaderless, and without ELR the last ISR
    # member stays when its directory goes offline too
    moved = [placed, [change(leader=2, isr=[2]), offline(1, d(1, 1))]]
    assert audit(tmp_path / "moved", moved)[0] == []
    leaderless = [placed, [change(isr=[1]), offline(2, d(2, 1))], [change(leader=-1), fence_1]]
    assert audit(tmp_path / "leaderless", leaderless)[0] == []
    last = leaderless[:2] + [[change(leader=-1), offline(1, d(1, 1))]]
    assert audit(tmp_path / "last", last)[0] == []
    findings, at = audit(tmp_path / "kept-leader", [placed, [offline(1, d(1, 1))]])
    assert findings == [(rule, at[1])]
    findings, at = audit(tmp_path / "kept-in-isr", [placed, [offline(2, d(2, 1))]])
    assert findings == [(rule, at[1])]
    # broker 2 left in the ISR when its directory went offline, then elected
    findings, at = audit(tmp_path / "elected", [placed, [offline(2, d(2, 1))], [change(leader=2, isr=[2]), fence_1]])
    assert [r for r, _ in findings] == [rule, rule] and findings[0][1] == at[1] and \
        at[2] <= findings[1][1] <= at[2] + 1
