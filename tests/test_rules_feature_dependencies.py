"""kraft.feature-dependencies: a finalized feature level has the levels it depends on at the
end of every batch that finalizes levels. Synthetic logs written as Kafka lays them out, and
the real story log of a line with eligible leader replicas: what its controller wrote passes,
the same log without its metadata.version upgrade fires."""

from __future__ import annotations

from pathlib import Path

from kraft_audit.core.codec.logdir import LogDirWriter
from kraft_audit.core.rules.cluster_records import FEATURE_DEPENDENCIES, feature_needs
from kraft_audit.testing.mutate import audit_log, read_frames, write_log

T0 = 1_700_000_000_000
RULE = "kraft.feature-dependencies"
ELR = "eligible.leader.replicas.version"
STORY = Path(__file__).parent / "fixtures" / "kraft-story"


def level(name: str, value: int) -> tuple:
    return ("FEATURE_LEVEL_RECORD", 0, {"name": name, "featureLevel": value})


def mv(value: int) -> tuple:
    return level("metadata.version", value)


def audit(path, batches):
    """A log of atomic batches after a leader change; this rule's findings and each batch's
    last offset (where a batch-end finding is placed). The logs leave out the cluster-level
    min.insync.replicas Kafka writes as the ELR turns on (kip966.min-isr-one-value-with-elr)."""
    writer = LogDirWriter(path, "c1")
    writer.append_leader_change(1, T0, 1)
    ends = [writer.append(batch, T0 + i + 1)[1] for i, batch in enumerate(batches)]
    writer.close()
    return [(f.rule_id, f.offset) for f in audit_log(path) if f.rule_id == RULE], ends


def test_the_dependency_table_is_what_kafka_declares():
    assert feature_needs(ELR, 1) == {"metadata.version": 23}  # ELRV_1: 4.0-IV1
    assert feature_needs(ELR, 2) == {"metadata.version": 23}  # a later level: the highest known one's
    assert feature_needs(ELR, 0) == {}  # off needs nothing
    for name in ("group.version", "transaction.version", "share.version", "streams.version", "kraft.version"):
        assert all(feature_needs(name, v) == {} for v in range(0, 4)), name
    assert set(FEATURE_DEPENDENCIES) >= {ELR, "kraft.version"}


def test_a_level_is_finalized_only_once_what_it_needs_is(tmp_path):
    # the bootstrap at 3.9-IV0, then an upgrade to 4.0-IV3 and ELR on, as a 4.x controller writes it
    assert audit(tmp_path / "ok", [[mv(21)], [mv(25)], [level(ELR, 1)]])[0] == []
    findings, ends = audit(tmp_path / "early", [[mv(21)], [level(ELR, 1)], [mv(25)]])
    assert findings == [(RULE, ends[1])]
    # one update's levels are checked together and written as one batch, in any order
    for name, batch in (("mv-first", [mv(25), level(ELR, 1)]), ("elr-first", [level(ELR, 1), mv(25)])):
        assert audit(tmp_path / name, [[mv(21)], batch])[0] == [], name
    # metadata.version 4.0-IV0 is one level short
    findings, ends = audit(tmp_path / "short", [[mv(21)], [mv(22), level(ELR, 1)]])
    assert findings == [(RULE, ends[1])]


def test_metadata_version_is_not_lowered_below_what_a_finalized_level_needs(tmp_path):
    findings, ends = audit(tmp_path / "lowered", [[mv(21)], [mv(25)], [level(ELR, 1)], [mv(22)]])
    assert findings == [(RULE, ends[3])]
    # turned off first (or in the same update), the level needs nothing any more
    assert audit(tmp_path / "off", [[mv(21)], [mv(25)], [level(ELR, 1)], [level(ELR, 0), mv(22)]])[0] == []


def test_a_broken_dependency_is_reported_where_it_broke_only(tmp_path):
    findings, ends = audit(tmp_path / "log", [[mv(21)], [level(ELR, 1)], [level("group.version", 1)],
                                               [mv(21)]])
    assert findings == [(RULE, ends[1])]


def test_the_bootstrap_and_kraft_version_are_not_judged(tmp_path):
    # the operation that first sets metadata.version: the formatter checked its levels
    assert audit(tmp_path / "bootstrap", [[level(ELR, 1), mv(21)]])[0] == []
    # kraft.version depends on nothing, satisfies nothing, and replay skips its FeatureLevelRecord
    assert audit(tmp_path / "raft", [[mv(21)], [level("kraft.version", 1), mv(25)]])[0] == []
    findings, ends = audit(tmp_path / "raft-elr", [[mv(21)], [level("kraft.version", 1)], [level(ELR, 1)]])
    assert findings == [(RULE, ends[2])]


def test_inside_an_open_metadata_transaction_the_batch_is_not_judged_yet(tmp_path):
    begin = ("BEGIN_TRANSACTION_RECORD", 0, {"name": "upgrade"})
    end = ("END_TRANSACTION_RECORD", 0, {})
    assert audit(tmp_path / "log", [[mv(21)], [begin, level(ELR, 1)], [mv(25), end]])[0] == []


def test_the_story_log_passes_and_fires_without_its_metadata_version_upgrade(tmp_path):
    """The 4.0 line's story: features upgraded to the release (metadata.version 25) in one
    batch, then eligible.leader.replicas.version 1 in the next."""
    log = STORY / "4.0.2"
    frames = read_frames(log / "__cluster_metadata-0")
    found = [(fi, ri) for fi, f in enumerate(frames) for ri, r in enumerate(f.records)
             if r.type == "FEATURE_LEVEL_RECORD" and r.data["name"] in ("metadata.version", ELR)]
    upgrade, elr = found[1], found[2]
    assert frames[upgrade[0]].records[upgrade[1]].data["featureLevel"] >= 23
    assert frames[elr[0]].records[elr[1]].data == {"name": ELR, "featureLevel": 1}
    assert [f for f in audit_log(write_log(log, frames, tmp_path / "kept")) if f.rule_id == RULE] == []
    del frames[upgrade[0]].records[upgrade[1]]
    fired = [f for f in audit_log(write_log(log, frames, tmp_path / "mutant")) if f.rule_id == RULE]
    assert len(fired) == 1 and "needs metadata.version 23 (4.0-IV1)" in fired[0].message
