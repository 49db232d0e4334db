"""The "every record type" story's logs (tests/fixtures/kraft-story, written by real Kafka with
`make fixtures-story`): each holds every record type the story claims, the counts balance, and
`kraft-audit check` finds nothing on it, every snapshot equal to the log replayed to its end."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kraft_audit.core.codec.logdir import list_snapshots, read_log_dir, read_meta_properties
from kraft_audit.core.events import KIND_RECORD, MetadataEvent
from kraft_audit.core.image import verify_snapshots
from kraft_audit.testing.mutate import audit_log

ROOT = Path(__file__).parent / "fixtures" / "kraft-story"
VERSIONS = sorted(p.name for p in ROOT.iterdir() if p.is_dir())

# what the story makes every line write (kraft_audit/testing/realkafka/story.py)
EVERY_LINE = {
    "TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD", "REMOVE_TOPIC_RECORD",
    "CONFIG_RECORD", "ACCESS_CONTROL_ENTRY_RECORD", "REMOVE_ACCESS_CONTROL_ENTRY_RECORD",
    "USER_SCRAM_CREDENTIAL_RECORD", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD", "CLIENT_QUOTA_RECORD",
    "DELEGATION_TOKEN_RECORD", "REMOVE_DELEGATION_TOKEN_RECORD", "FEATURE_LEVEL_RECORD",
    "PRODUCER_IDS_RECORD", "REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD",
    "UNREGISTER_BROKER_RECORD", "REGISTER_CONTROLLER_RECORD", "BEGIN_TRANSACTION_RECORD", "END_TRANSACTION_RECORD",
    "NO_OP_RECORD",
}


def record_counts(log: Path) -> Counter:
    cluster_id = read_meta_properties(log).get("cluster.id", "")
    return Counter(e.type for e in read_log_dir(log, cluster_id)
                   if isinstance(e, MetadataEvent) and e.kind == KIND_RECORD)


def test_both_lines_are_kept():
    assert {"3.9.2", "4.3.1"} <= set(VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_story_log_holds_every_record_type_it_claims(version):
    log = ROOT / version
    counts = record_counts(log)
    print(f"\n{version}: " + ", ".join(f"{t} {n}" for t, n in sorted(counts.items())))
    assert EVERY_LINE <= set(counts), EVERY_LINE - set(counts)
    # a SCRAM credential upserted twice for one user, two tokens, quotas on three entity types
    assert counts["USER_SCRAM_CREDENTIAL_RECORD"] >= 3 and counts["DELEGATION_TOKEN_RECORD"] >= 2
    assert counts["FEATURE_LEVEL_RECORD"] >= 2  # the bootstrap's, then the upgrade's
    events = [e for e in read_log_dir(log, "") if isinstance(e, MetadataEvent) and e.kind == KIND_RECORD]
    entities = {ent["entityType"] for e in events if e.type == "CLIENT_QUOTA_RECORD"
                for ent in e.data["entity"]}
    assert {"user", "client-id", "ip"} <= entities
    levels = [e.data["featureLevel"] for e in events if e.type == "FEATURE_LEVEL_RECORD"
              and e.data["name"] == "metadata.version"]
    assert levels == sorted(levels) and len(set(levels)) >= 2, levels  # upgraded
    # replicas assigned to log dirs, and moved between a broker's two dirs
    dirs = {d for e in events if e.type == "PARTITION_CHANGE_RECORD" for d in e.data.get("directories") or []}
    assert len(dirs) >= 2
    if version.startswith("4."):  # the ELR filled by a shrinking ISR, cleared by a min ISR change
        assert any(e.data.get("eligibleLeaderReplicas") for e in events
                   if e.type == "PARTITION_CHANGE_RECORD")
        assert {e.data["topicName"] for e in events if e.type == "CLEAR_ELR_RECORD"} == {"elr", ""}
    assert len(list_snapshots(log / "__cluster_metadata-0")) >= 3


@pytest.mark.parametrize("version", VERSIONS)
def test_the_story_log_audits_clean_with_every_snapshot_equal_to_the_log(version):
    log = ROOT / version
    assert audit_log(log) == []
    comparisons = list(verify_snapshots(log))
    # every snapshot but one that ends at offset 0: the bootstrap checkpoint, which from 4.4
    # the formatter writes into the log dir (0-0.checkpoint) instead of beside it, holds what
    # the first leader writes, no state of the log
    ends = [end for end, _epoch, _path in list_snapshots(log / "__cluster_metadata-0")]
    assert [c.end_offset for c in comparisons] == [end for end in ends if end > 0]
    assert all(c.differences == [] for c in comparisons), comparisons


@pytest.mark.parametrize("version", VERSIONS)
def test_check_counts_balance_on_the_story_log(version):
    from kraft_audit.cli.main import main

    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["check", "--json", str(ROOT / version)])
    report = json.loads(out.getvalue())
    assert code == 0 and report["findings"] == [] and report["quarantined"] == []
    r = report["records"]
    # the story's segment holds every offset from 0: each is applied, a duplicate or quarantined
    assert r["applied"] + r["duplicates"] + r["quarantined"] == r["last_offset"] - r["first_offset"] + 1
    assert r["quarantined"] == 0 and r["first_offset"] == 0
    assert all(s["differences"] == 0 for s in report["snapshots"]) and len(report["snapshots"]) >= 3
