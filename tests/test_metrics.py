"""AuditMetrics: scraped over real HTTP, restored from real Delta tables."""

from __future__ import annotations

import time
import urllib.request

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kraft_audit.spark.metrics import AuditMetrics
from kraft_audit.spark.sinks import DeltaSinks


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


def samples(text: str) -> dict[tuple, float]:
    """{(sample name, sorted labels...): value} of an exposition."""
    return {
        (s.name, *sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.fixture
def served():
    metrics = AuditMetrics()
    server, port = metrics.start_server(port=0)
    yield metrics, port
    server.shutdown()
    server.server_close()


def one_batch(rows, batch_id=0):
    gauges = [
        rows.gauges(
            0,
            partitions=10,
            under_min_isr=2,
            leaderless=1,
            manual_election_required=1,
            unclean_recovery=1,
            elr_in_use=2,
            unclean_recovery_finished_total=3,
            unclean_elections_total=4,
            electable_leaders={"0": 1, "1": 2, "3": 6, "4": 1},
            last_offset=90,
        ),
        rows.gauges(1, partitions=5, under_min_isr=1, electable_leaders={"2": 5}, last_offset=99),
        rows.gauges(
            0, cluster="cluster-b", partitions=7, electable_leaders={"3": 7}, last_offset=12
        ),
    ]
    violations = [
        rows.violation(5),
        rows.violation(6),
        rows.violation(7, rule_id="isr-empty", severity="critical"),
    ]
    progress = rows.progress(
        batch_id,
        max_offset=99,
        newest_offset=150,
        records=100,
        violations=3,
        quarantined=2,
        duration_seconds=1.5,
        lag_seconds=42.0,
    )
    return gauges, progress, violations


def test_kip966_gauges_are_summed_over_buckets_per_cluster(served, output_rows):
    metrics, port = served
    metrics.update(0, *one_batch(output_rows))

    got = samples(scrape(port))

    a = ("cluster", "cluster-a")
    assert got[("kraft_audit_global_under_min_isr_partition_count", a)] == 3
    assert got[("kraft_audit_unclean_recovery_partitions_count", a)] == 1
    assert got[("kraft_audit_manual_leader_election_required_partition_count", a)] == 1
    assert got[("kraft_audit_unclean_recovery_finished_total", a)] == 3
    assert got[("kraft_audit_unclean_elections_total", a)] == 4
    assert got[("kraft_audit_leaderless_partitions", a)] == 1
    assert got[("kraft_audit_elr_in_use_partitions", a)] == 2
    assert got[("kraft_audit_partitions", a)] == 15
    assert got[("kraft_audit_partitions", ("cluster", "cluster-b"))] == 7
    electable = {
        labels[1][1]: v
        for (name, *labels), v in got.items()
        if name == "kraft_audit_electable_leaders_partitions" and labels[0] == a
    }
    assert electable == {"0": 1, "1": 2, "2": 5, "3+": 7}


def test_auditor_health(served, output_rows):
    metrics, port = served
    metrics.update(0, *one_batch(output_rows))

    got = samples(scrape(port))

    a = ("cluster", "cluster-a")
    assert got[("kraft_audit_records_total", a)] == 100
    assert (
        got[
            (
                "kraft_audit_violations_total",
                a,
                ("rule", "elr-not-subset-of-replicas"),
                ("severity", "error"),
            )
        ]
        == 2
    )
    assert (
        got[("kraft_audit_violations_total", a, ("rule", "isr-empty"), ("severity", "critical"))]
        == 1
    )
    assert got[("kraft_audit_quarantined_total",)] == 2
    assert got[("kraft_audit_last_offset", a)] == 99
    assert got[("kraft_audit_lag_records", a)] == 51
    assert got[("kraft_audit_lag_seconds", a)] == 42.0
    assert got[("kraft_audit_batch_duration_seconds_count",)] == 1
    assert got[("kraft_audit_batch_duration_seconds_sum",)] == 1.5
    assert got[("kraft_audit_last_batch_id",)] == 0
    assert got[("kraft_audit_last_batch_timestamp_seconds",)] > 1.7e9


def test_a_bucket_report_replaces_the_previous_one_and_replays_count_once(served, output_rows):
    metrics, port = served
    metrics.update(0, *one_batch(output_rows))
    gauges, progress, violations = one_batch(output_rows, batch_id=1)
    cleared = [output_rows.gauges(0, partitions=10, electable_leaders={"3": 10})]

    assert metrics.update(1, cleared, progress, violations)
    assert not metrics.update(1, cleared, progress, violations)  # Spark replays batch 1

    got = samples(scrape(port))
    a = ("cluster", "cluster-a")
    assert got[("kraft_audit_global_under_min_isr_partition_count", a)] == 1  # bucket 1 unchanged
    assert got[("kraft_audit_records_total", a)] == 200
    assert got[("kraft_audit_batch_duration_seconds_count",)] == 2


def test_only_low_cardinality_labels(served, output_rows):
    metrics, port = served
    metrics.update(0, *one_batch(output_rows))
    families = list(text_string_to_metric_families(scrape(port)))
    labels = {name for f in families for s in f.samples for name in s.labels}
    # bounded: brokers, features and min-ISR sources are few; topics are capped (below)
    assert labels <= {"cluster", "rule", "severity", "electable", "quantile", "source", "feature",
                      "broker", "topic"}
    assert all(f.name.startswith("kraft_audit_") for f in families)
    assert {f.name for f in families if f.type == "counter"} >= {
        "kraft_audit_records",
        "kraft_audit_violations",
        "kraft_audit_quarantined",
        "kraft_audit_unclean_recovery_finished",
    }


def test_empty_metrics_before_the_first_batch(served):
    _, port = served
    got = samples(scrape(port))
    assert got[("kraft_audit_quarantined_total",)] == 0
    assert not any(key[0] == "kraft_audit_global_under_min_isr_partition_count" for key in got)


def test_restore_after_restart_from_the_tables(tmp_path, output_rows):
    """The job ran two batches, wrote them to Delta, and died. A new process
    restores the same figures from the tables before its first batch."""
    before = AuditMetrics()
    sinks = DeltaSinks(str(tmp_path), app_id="query-1")
    for batch_id in (0, 1):
        gauges, progress, violations = one_batch(output_rows, batch_id)
        sinks.write_batch(
            batch_id, {"gauges": gauges, "progress": [progress], "violations": violations}
        )
        before.update(batch_id, gauges, progress, violations)
    server, port = before.start_server()
    try:
        expected = samples(scrape(port))
    finally:
        server.shutdown()
        server.server_close()

    after = AuditMetrics()
    after.restore(str(tmp_path), app_id="query-1")
    server, port = after.start_server()
    try:
        restored = samples(scrape(port))
    finally:
        server.shutdown()
        server.server_close()

    assert restored == expected
    assert restored[("kraft_audit_records_total", ("cluster", "cluster-a"))] == 200
    # Spark replays batch 1 (written to Delta but not checkpointed): not counted twice
    assert not after.update(1, *one_batch(output_rows, 1))
    assert after.update(2, *one_batch(output_rows, 2))


def test_restore_from_nothing_is_empty(tmp_path):
    metrics = AuditMetrics()
    metrics.restore(str(tmp_path / "no-tables-yet"))
    assert metrics.update(0, [], {})  # a progress row without figures is still a batch
    scraped = samples(generate_latest(metrics.registry).decode())
    assert scraped[("kraft_audit_last_batch_id",)] == 0
    assert scraped[("kraft_audit_last_batch_timestamp_seconds",)] == pytest.approx(
        time.time(), abs=60
    )


def test_every_enabled_rule_starts_at_zero_for_a_cluster(output_rows):
    # Prometheus's increase() cannot see a series that appears at 1: the
    # violations alert needs each rule's series at 0 before its first violation.
    rules = (("isr-empty", "critical"), ("elr-not-subset-of-replicas", "error"))
    metrics = AuditMetrics(rules)

    def violations() -> dict:
        return {k[1:]: v for k, v in samples(generate_latest(metrics.registry).decode()).items()
                if k[0] == "kraft_audit_violations_total"}

    assert violations() == {}  # no cluster yet
    metrics.update(0, [output_rows.gauges(0)], output_rows.progress(0, max_offset=9))
    cluster = ("cluster", output_rows.cluster)
    assert violations() == {
        (cluster, ("rule", rule), ("severity", sev)): 0.0 for rule, sev in rules
    }
    metrics.update(1, [], output_rows.progress(1, max_offset=19),
                   [output_rows.violation(12, rule_id="isr-empty", severity="critical")])
    assert violations()[(cluster, ("rule", "isr-empty"), ("severity", "critical"))] == 1.0
    error = (cluster, ("rule", "elr-not-subset-of-replicas"), ("severity", "error"))
    assert violations()[error] == 0


def test_per_topic_series_are_capped_and_the_rest_summed(output_rows):
    metrics = AuditMetrics(max_topics=2)
    leaderless = {"orders": 5, "audit": 1, "billing": 3, "zeta": 1}
    metrics.update(0, [output_rows.gauges(0, leaderless=10, topics_leaderless=leaderless),
                       output_rows.gauges(1, leaderless=2, topics_leaderless={"orders": 2})],
                   {"duration_seconds": 0.1, "quarantined": 0, "clusters": []})
    got = {s.labels["topic"]: s.value for f in metrics.collect() for s in f.samples
           if s.name == "kraft_audit_topic_leaderless_partitions"}
    # the two topics with most partitions (summed over buckets), then the rest as one series
    assert got == {"orders": 7, "billing": 3, "_other": 2}


def test_cluster_wide_figures_are_not_summed_over_buckets(output_rows):
    metrics = AuditMetrics()
    wide = dict(brokers_active=2, brokers_fenced=1, fenced_broker_ids=[3], active_controller=9,
                metadata_version=27, features={"metadata.version": 27},
                min_insync_replicas=2, min_isr_source="setting")
    metrics.update(0, [output_rows.gauges(b, **wide) for b in range(3)],
                   {"duration_seconds": 0.1, "quarantined": 0, "clusters": []})
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value
           for f in metrics.collect() for s in f.samples}
    c = ("cluster", "cluster-a")
    assert got[("kraft_audit_active_brokers", (c,))] == 2
    assert got[("kraft_audit_fenced_brokers", (c,))] == 1
    assert got[("kraft_audit_broker_fenced", (("broker", "3"), c))] == 1
    assert got[("kraft_audit_active_controller_id", (c,))] == 9
    assert got[("kraft_audit_feature_level", (c, ("feature", "metadata.version")))] == 27
    assert got[("kraft_audit_min_insync_replicas", (c, ("source", "setting")))] == 2


def test_the_commit_point_divergences_and_holes_are_on_metrics_once_per_cluster(served, output_rows):
    """The Raft gate's figures are the cluster's (every bucket holds the same): bucket 0's,
    not a sum; divergences, withdrawn offsets and holes as counters."""
    metrics, port = served
    raft = dict(committed_offset=199, log_end_offset=230, unproven_records=30,
                divergences_total=1, retracted_offsets_total=27, input_gap_records=4,
                input_gaps_total=2)
    metrics.update(0, [output_rows.gauges(b, **raft) for b in range(3)],
                   output_rows.progress(0, max_offset=199))
    got = samples(scrape(port))
    c = ("cluster", "cluster-a")
    assert {name: got[(f"kraft_audit_{name}", c)] for name in (
        "log_committed_offset", "log_end_offset", "log_unproven_records", "input_gap_records",
        "log_divergences_total", "log_retracted_offsets_total", "input_gaps_total")} == {
        "log_committed_offset": 199, "log_end_offset": 230, "log_unproven_records": 30,
        "input_gap_records": 4, "log_divergences_total": 1, "log_retracted_offsets_total": 27,
        "input_gaps_total": 2}


def test_what_was_read_balances_on_metrics_as_in_progress(served, output_rows):
    """records_total + side_inputs_total + unreadable_total = applied_total +
    duplicates_total + quarantined_total, over batches, as the progress rows say."""
    metrics, port = served
    first = output_rows.progress(0, max_offset=99, records=100, quarantined=0)
    first.update(side_inputs=4, unreadable=0, applied=96, duplicates=8, held=2)
    second = output_rows.progress(1, max_offset=119, records=20, quarantined=1)
    second.update(side_inputs=2, unreadable=1, applied=22, duplicates=0, held=0)
    metrics.update(0, [], first)
    assert samples(scrape(port))[("kraft_audit_held_side_inputs",)] == 2
    metrics.update(1, [], second)
    got = samples(scrape(port))
    total = {name: got[(f"kraft_audit_{name}_total",)]
             for name in ("side_inputs", "unreadable", "applied", "duplicates", "quarantined")}
    assert total == {"side_inputs": 6, "unreadable": 1, "applied": 118, "duplicates": 8, "quarantined": 1}
    records = got[("kraft_audit_records_total", ("cluster", "cluster-a"))]
    assert records + total["side_inputs"] + total["unreadable"] == \
        total["applied"] + total["duplicates"] + total["quarantined"]
    assert got[("kraft_audit_held_side_inputs",)] == 0


def test_the_commit_point_a_gated_log_dir_is_read_to(served):
    """`sources.bootstrap_controllers`: how far the log dir is proven committed, what waits
    beyond it, and whether the quorum answered, per cluster, over real HTTP."""
    metrics, port = served
    metrics.note_commit("c1", 47, 60, None)
    metrics.note_commit("c2", 10, 5, "no controller answered")  # a log that shrank: nothing waits
    got = samples(scrape(port))
    cluster = [("cluster", "c1")]
    assert got[("kraft_audit_log_committed_offset", *cluster)] == 47
    assert got[("kraft_audit_log_unproven_records", *cluster)] == 13
    assert got[("kraft_audit_quorum_unanswered", *cluster)] == 0
    assert got[("kraft_audit_log_unproven_records", ("cluster", "c2"))] == 0
    assert got[("kraft_audit_quorum_unanswered", ("cluster", "c2"))] == 1
