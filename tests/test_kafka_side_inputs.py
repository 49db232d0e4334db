"""Side inputs from real Kafka, read from the files the cluster writes during the
test: registration requests from the controller's request log (rolled by log4j
as it grows) judged by the KIP-966 clean-shutdown rules, and `kafka-log-dirs
--describe` inventories judged by the KIP-550 stray rule."""

from __future__ import annotations

import argparse
import functools
import json
import os

import pytest

from kraft_audit.core.audit import Auditor
from kraft_audit.cli import check
from kraft_audit.core.codec.logdir import read_log_dir
from kraft_audit.core.events import KIND_RECORD, MetadataEvent, Quarantined
from kraft_audit.core.rules import load_catalog
from kraft_audit.sideinputs import read_inventories, read_registrations
from kraft_audit.sideinputs.order import by_time, merge_by_time
from kraft_audit.testing.realkafka.cluster import KafkaCluster, elr_features, has_elr, release
import kafka_waits
from services import kafka_lines_beyond_the_first_as_variants

pytestmark = pytest.mark.kafka

TOPIC = "orders"


REQUEST_LOG_ROLL_BYTES = 64 * 1024  # small: the request log rolls over while the test runs


def new_cluster(workdir, version: str, brokers: int) -> KafkaCluster:
    """Brokers 1..N and controller 100; kafka.request.logger at TRACE (request bodies)."""
    return KafkaCluster(version, workdir, brokers=brokers, request_log_level="TRACE",
                        request_log_roll_bytes=REQUEST_LOG_ROLL_BYTES,
                        features=elr_features(version))


def request_logs(cluster: KafkaCluster) -> list[str]:
    """The controller's request log and its rotations."""
    log = cluster.controller.request_log
    return sorted(p.name for p in log.parent.iterdir() if p.name.startswith(log.name))


wait_partition = functools.partial(kafka_waits.wait_partition, topic=TOPIC)


def audit(cluster: KafkaCluster, settings: dict | None = None, inventories=()):
    """The core as `kraft-audit check` runs it: side inputs placed in the log by time."""
    regs = list(read_registrations(cluster.controller.request_log, None))
    side = regs + [i for f in inventories for i in read_inventories(f, cluster.cluster_id)]
    auditor = Auditor(load_catalog(), settings or {})
    out = auditor.process(merge_by_time(read_log_dir(cluster.metadata_log_dir), by_time(side)))
    return auditor, out, regs


def run_check(*argv) -> dict:
    parser = argparse.ArgumentParser()
    check.add_arguments(parser)
    args = parser.parse_args([str(a) for a in argv])
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        check.run(args)
    return json.loads(buf.getvalue())


@pytest.fixture(params=kafka_lines_beyond_the_first_as_variants())
def cluster(request, tmp_path):
    c = new_cluster(tmp_path / "kafka", request.param, brokers=2)
    try:
        c.start()
        yield c
    finally:
        c.close()


def test_real_restarts_are_judged_clean_or_unclean(cluster, request, tmp_path):
    elr = has_elr(cluster.version)
    cluster.tools.create_topic(TOPIC, assignment=[[1, 2]], configs={"min.insync.replicas": "2"})
    wait_partition(cluster, "ISR [1, 2]", lambda p: sorted(p.isr) == [1, 2])
    b2 = cluster.broker(2)

    b2.stop()  # SIGTERM: controlled shutdown, .kafka_cleanshutdown written
    p = wait_partition(cluster, "broker 2 out of the ISR", lambda p: list(p.isr) == [1])
    assert list(p.elr) == ([2] if elr else [])  # 4.x: ELR on by default, 3.9: none
    b2.start()
    wait_partition(cluster, "broker 2 back in the ISR", lambda p: sorted(p.isr) == [1, 2])

    b2.kill()  # kill -9: fenced when its session times out
    p = wait_partition(cluster, "broker 2 fenced out of the ISR", lambda p: list(p.isr) == [1])
    assert list(p.elr) == ([2] if elr else [])
    b2.start()
    p = wait_partition(cluster, "broker 2 back in the ISR", lambda p: sorted(p.isr) == [1, 2])

    # The request log was rolled over while the test ran: its rotations are read too.
    assert len(request_logs(cluster)) > 1

    auditor, out, regs = audit(cluster)
    assert not [r for r in regs if isinstance(r, Quarantined)]
    requests = [r.data for r in regs if r.data["brokerId"] == 2]
    records = [e.data for e in read_log_dir(cluster.metadata_log_dir)
               if isinstance(e, MetadataEvent) and e.kind == KIND_RECORD
               and e.type == "REGISTER_BROKER_RECORD" and e.data["brokerId"] == 2]
    # One accepted request per incarnation, each with the record it led to; a clean
    # restart proves the epoch it saw last, a crashed broker cannot (-1).
    assert [r["incarnationId"] for r in requests] == [r["incarnationId"] for r in records]
    assert [r["brokerEpoch"] for r in requests] == [r["brokerEpoch"] for r in records]
    assert [r["previousBrokerEpoch"] for r in requests] == [-1, records[0]["brokerEpoch"], -1]
    # PreviousBrokerEpoch since request version 3; 3.9 and later send 4
    assert {r["requestVersion"] for r in requests} == ({4} if release(cluster.version) >= (3, 9)
                                                        else {3})

    assert [(v.rule_id, v.message) for v in out.violations] == []
    assert not auditor.registrations.pending_requests  # every request met its record
    assert auditor.state.brokers[2].last_shutdown == "unclean"
    assert auditor.state.brokers[2].last_shutdown_source == "request-log"

    report = run_check(cluster.metadata_log_dir, "--json", "--registrations",
                       cluster.controller.request_log)
    assert report["findings"] == [] and report["quarantined"] == []

    # Kafka 4.0's reading (any new incarnation is unclean) is wrong for this 4.3
    # controller: it kept the cleanly restarted broker 2 in the ELR.
    _, out_40, _ = audit(cluster, {"clean_shutdown_detection": "incarnation"})
    if elr:
        assert [(v.rule_id, v.broker_id) for v in out_40.violations] == \
            [("kip966.unclean-shutdown-removed", 2)]
    else:  # 3.9: no ELR, no unclean-shutdown handling at all: nothing to judge
        assert out_40.violations == []

    if elr:  # the streaming job on the same live files (once: Spark is slow on 2 cores)
        streamed = stream_once(request.getfixturevalue("spark"), cluster, tmp_path / "job")
        assert streamed["violations"] == [] and streamed["quarantine"] == []
        [b2_row] = [b for b in streamed["brokers"] if b["broker_id"] == 2]
        assert (b2_row["last_shutdown"], b2_row["last_shutdown_source"], b2_row["incarnation_id"]) == \
            ("unclean", "request-log", records[-1]["incarnationId"])


def stream_once(spark, cluster: KafkaCluster, work):
    """`kraft-audit run --once` on the controller's log dir and its request log."""
    from deltalake import DeltaTable

    from kraft_audit.config import load_config
    from kraft_audit.spark.job import AuditJob

    cfg = load_config(None, {"sources.log_dirs": str(cluster.metadata_log_dir),
                             "sources.registrations": str(cluster.controller.request_log),
                             "checkpoint": str(work / "checkpoint"), "tables": str(work / "tables"),
                             "audit.buckets": 1, "metrics.enabled": False}, environ={})
    assert AuditJob(cfg, spark=spark).run(available_now=True)
    tables = {}
    for name in ("violations", "quarantine", "brokers"):
        path = work / "tables" / name
        tables[name] = DeltaTable(str(path)).to_pyarrow_table().to_pylist() if path.exists() else []
    return tables


@pytest.mark.parametrize("version", kafka_lines_beyond_the_first_as_variants())
def test_stray_replica_after_a_reassignment_while_its_broker_was_offline(version, tmp_path):
    """KIP-550: partition moved from brokers [1, 2] to [2, 3] while broker 1 is down."""
    cluster = new_cluster(tmp_path / "kafka", version, brokers=3)
    inventories = tmp_path / "inventories"
    inventories.mkdir()
    before, offline, back = (inventories / n for n in ("1-before.txt", "2-offline.txt", "3-back.txt"))
    b1 = cluster.broker(1)
    try:
        cluster.start()
        cluster.tools.create_topic(TOPIC, assignment=[[1, 2]])
        wait_partition(cluster, "ISR [1, 2]", lambda p: sorted(p.isr) == [1, 2])
        before.write_text(cluster.tools.log_dirs())

        b1.stop()
        cluster.tools.reassign({(TOPIC, 0): [2, 3]})
        wait_partition(cluster, "the reassignment to complete",
                       lambda p: sorted(p.replicas) == [2, 3] and not p.adding_replicas)
        offline.write_text(cluster.tools.log_dirs())

        b1.start()
        back.write_text(cluster.tools.log_dirs())
        data = b1.data_log_dirs[0]
        on_disk = sorted(p.name for p in data.iterdir() if p.name.startswith(TOPIC))
    finally:
        cluster.close()

    def replicas(path):
        return {(e.data["brokerId"], r["partition"]) for e in read_inventories(path, cluster.cluster_id)
                for d in e.data["logDirs"] for r in d["partitions"] if r["partition"].startswith(TOPIC)}

    assert replicas(before) == {(1, "orders-0"), (2, "orders-0")}
    assert replicas(offline) == {(2, "orders-0"), (3, "orders-0")}  # broker 1 cannot answer
    # Back, broker 1 found its replica stray at startup, renamed it *-stray and keeps
    # it out of DescribeLogDirs: kafka-log-dirs never shows it, the data stays on disk.
    assert replicas(back) == {(2, "orders-0"), (3, "orders-0")}
    assert len(on_disk) == 1 and on_disk[0].startswith("orders-0.") and on_disk[0].endswith("-stray")

    # Each inventory judged against the metadata of its own time: no false stray for the
    # replica broker 1 held before the move.
    _, out, _ = audit(cluster, inventories=[before, offline, back])
    assert [(v.rule_id, v.broker_id) for v in out.violations] == []
    assert os.path.getmtime(before) < os.path.getmtime(back)

    # Broker 1's log dir read as an inventory shows what kafka-log-dirs hides.
    _, out, _ = audit(cluster, inventories=[before, offline, back, data])
    found = [(v.rule_id, v.broker_id, v.partition, json.loads(v.evidence).get("marked_stray_by_kafka"))
             for v in out.violations]
    assert found == [("kip550.stray-replica", 1, 0, True)]
    report = run_check(cluster.metadata_log_dir, "--json", "--log-dir-inventory", inventories,
                       "--log-dir-inventory", data)
    assert [(f["rule_id"], f["broker_id"]) for f in report["findings"]] == [("kip550.stray-replica", 1)]
