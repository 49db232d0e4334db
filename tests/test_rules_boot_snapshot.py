"""kraft.snapshot-framing on the snapshot a log dir starts from when its first segments are
gone: no log can be compared with it, but a cut one is what the audit (and every comparison
of the later snapshots) builds on."""

from __future__ import annotations

import pytest

from kraft_audit.core.codec.batches import Batch, iter_batches
from kraft_audit.core.codec.logdir import LogDirWriter, list_snapshots, metadata_dir
from kraft_audit.core.image import BOOT_SNAPSHOT, comparison_from_plain, comparison_to_plain, verify_snapshots
from kraft_audit.testing.mutate import audit_log

T0 = 1_700_000_000_000
TOPIC = "T2RkZXJzVG9waWNJZDAwMQ"


def log_from_a_snapshot(path, cut: str | None):
    """A log dir whose segments start at offset 10, after the snapshot 10-1 (cut as named)."""
    writer = LogDirWriter(path, "c1")
    snap = writer.write_snapshot([
        ("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 21}),
        ("TOPIC_RECORD", 0, {"name": "orders", "topicId": TOPIC}),
    ], 10, 1, T0)
    writer.next_offset = 10
    writer.append([("TOPIC_RECORD", 0, {"name": "payments", "topicId": "UGF5bWVudHNUb3BpY0lkMQ"})], T0 + 1)
    writer.close()
    raw = snap.read_bytes()
    batches = [b for b in iter_batches(raw) if isinstance(b, Batch)]
    if cut == "header":
        snap.write_bytes(raw[batches[0].position + batches[0].size:])
    elif cut == "footer":
        snap.write_bytes(raw[:batches[-1].position])
    return path


@pytest.mark.parametrize("cut,says", [("header", "not a SnapshotHeader"), ("footer", "not a SnapshotFooter")])
def test_a_cut_snapshot_the_log_starts_from_is_a_finding(tmp_path, cut, says):
    assert audit_log(log_from_a_snapshot(tmp_path / "whole", None)) == []
    assert list(verify_snapshots(tmp_path / "whole")) == []  # nothing to compare it with
    path = log_from_a_snapshot(tmp_path / cut, cut)
    assert [list_snapshots(metadata_dir(path))[0][0]] == [10]
    findings = audit_log(path)
    assert [(f.rule_id, f.offset) for f in findings] == [("kraft.snapshot-framing", 9)]
    assert says in findings[0].message
    comparison = next(verify_snapshots(path))
    assert (comparison.replayed_from, comparison.differences) == (BOOT_SNAPSHOT, [])
    assert comparison.timestamp_ms == T0
    assert comparison_from_plain(comparison_to_plain(comparison)) == comparison
    # a caller that already judged up to the snapshot's end is not given it again
    assert list(verify_snapshots(path, after_offset=9)) == []
