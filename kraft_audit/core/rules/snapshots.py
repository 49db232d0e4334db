"""Snapshots equal to the log: a snapshot is the image after its end offset - 1, so it must
equal the image the log's records build up to there (image.py builds both and diffs them)."""

from __future__ import annotations

from kraft_audit.core.rules.registry import Finding, rule


@rule("kraft.snapshot-equals-log", on="snapshot", scope="cluster")
def snapshot_equals_log(c):
    """One finding per resource whose value in the snapshot is not its value in the log."""
    comparison = c.snapshot
    findings = []
    for diff in comparison.differences:
        kind = diff.resource[0]
        key = tuple(diff.resource[1:3]) if kind == "partition" else None
        broker = diff.resource[1] if kind == "broker" else None
        findings.append(Finding(
            f"snapshot {comparison.file} differs from the log replayed from "
            f"{comparison.replayed_from} to offset {comparison.end_offset - 1}: {diff.describe()}",
            key=key, broker_id=broker,
            evidence={"snapshot_file": comparison.file, "resource": list(diff.resource),
                      "log_value": diff.log_value, "snapshot_value": diff.snapshot_value},
            # a partition's difference is reported by whoever reports the comparison
            cluster_scoped=True))
    return findings


@rule("kraft.snapshot-framing", on="snapshot", scope="cluster",
      records=("SNAPSHOT_HEADER", "SNAPSHOT_FOOTER"))
def snapshot_framing(c):
    """A snapshot starts with a SnapshotHeader and ends with a SnapshotFooter."""
    comparison = c.snapshot
    if not comparison.framing:
        return None
    return Finding(f"snapshot {comparison.file} {' and '.join(comparison.framing)}", cluster_scoped=True)
