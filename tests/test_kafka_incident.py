"""An incident on a real cluster, as an operator meets it: a broker stops, one
topic goes offline and another under min ISR, and the cluster's
min.insync.replicas lives only in server.properties (always so before ELR).
Kafka's own `kafka-topics --describe` is the witness for the counts; the
gauges must match it, say where min ISR came from, and raise the alerts an
operator needs (promtool, deploy/prometheus/alerts.yml)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

import kafka_waits
from kraft_audit.cli import check
from kraft_audit.cli.main import build_parser
from kraft_audit.testing.realkafka.cluster import (KafkaCluster, elr_features, elr_on_by_default, has_elr,
                                          wait_until)
from promtool_cases import promtool_test
from services import kafka_lines_beyond_the_first_as_variants

pytestmark = pytest.mark.kafka

MIN_ISR = 2


def run_check(*argv) -> tuple[int, dict]:
    args = build_parser().parse_args(["check", *map(str, argv), "--json"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = check.run(args)
    return code, json.loads(out.getvalue())


@pytest.mark.parametrize("version", kafka_lines_beyond_the_first_as_variants())
def test_a_stopped_broker_as_the_operator_sees_it(version, tmp_path):
    with KafkaCluster(version, tmp_path / "kafka", brokers=2, features=elr_features(version),
                      common_config={"min.insync.replicas": str(MIN_ISR)}) as cluster:
        cluster.start()
        cluster.tools.create_topic("orders", assignment=[[1, 2]])
        cluster.tools.create_topic("solo", assignment=[[1], [2]])
        kafka_waits.wait_partition(cluster, "both replicas in sync", lambda p: len(p.isr) == 2,
                                   topic="orders")
        cluster.broker(2).stop()
        wait_until("broker 2 fenced and solo-1 offline", lambda: (
            (s := kafka_waits.replay(cluster)).brokers[2].fenced
            and s.partitions[(s.topic_ids["solo"], 1)].leader == -1), timeout=60)
        kafka = [r for r in cluster.tools.describe_topics() if r["topic"] in ("orders", "solo")]
        log = cluster.metadata_log_dir
        controller_properties = cluster.controller.properties_file

        unknown_code, unknown = run_check(log)
        known_code, known = run_check(log, "--server-properties", controller_properties)

    # Kafka's describe is the witness: what is offline, under-replicated, under min ISR
    offline = [(r["topic"], r["partition"]) for r in kafka if r["leader"] == -1]
    assert offline == [("solo", 1)]
    under_replicated = sum(1 for r in kafka if len(r["isr"]) < len(r["replicas"]))
    under_min_isr = sum(1 for r in kafka if len(r["isr"]) < min(MIN_ISR, len(r["replicas"])))
    assert under_min_isr >= 1  # orders-0: ISR [1] of two replicas under min ISR 2

    for code, report in ((unknown_code, unknown), (known_code, known)):
        g = report["gauges"]
        assert code == 1 and report["offline_partitions"] == 1  # offline at the end: exit 1
        assert g["topics_leaderless"] == {"solo": 1}
        assert g["under_replicated"] == under_replicated
        assert (g["brokers_active"], g["brokers_fenced"], g["fenced_broker_ids"]) == (1, 1, [2])
        assert g["active_controller"] == cluster.controller.node_id or g["active_controller"] == -1

    # min ISR: in the log when ELR is on (the controller writes it there), else unknown
    # until server.properties is given
    elr_on = has_elr(version) and elr_on_by_default(version)
    if elr_on:
        assert unknown["min_isr"] == {"value": MIN_ISR, "source": "log", "given": None, "given_by": None}
        assert unknown["gauges"]["under_min_isr"] == under_min_isr
    else:
        assert unknown["min_isr"] == {"value": 1, "source": "assumed", "given": None, "given_by": None}
        assert unknown["gauges"]["under_min_isr"] < under_min_isr  # what the issue saw
        assert (known["min_isr"]["value"], known["min_isr"]["source"]) == (MIN_ISR, "setting")
    assert known["gauges"]["under_min_isr"] == under_min_isr

    # the alerts those gauges raise: offline pages for solo, broker 2's fence, under min ISR
    from kraft_audit.core.rows import ClusterGauges

    expected = promtool_test(ClusterGauges(**known["gauges"]), tmp_path)
    assert [labels["topic"] for labels, _ in expected["KraftPartitionsOffline"]] == ["solo"]
    assert [labels["broker"] for labels, _ in expected["KraftBrokerFenced"]] == ["2"]
    assert expected["KraftPartitionsUnderMinIsr"] and not expected["KraftMinIsrUnknown"]
