"""The Spark streams of the inputs: dump-log files through Spark's file source,
registration requests tailed by the `kraft-lines` source (the parsers
themselves are tested in test_sideinputs.py)."""

from __future__ import annotations

import json

import pytest

from kraft_audit.config import LogSource, SourcesConfig
from kraft_audit.core.codec.dumplog import format_dump_log
from kraft_audit.core.codec.logdir import read_log_dir
from kraft_audit.core.events import MetadataEvent, Quarantined
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import load_scenario
from kraft_audit.spark import event_rows
from kraft_audit.spark.inputs import all_events, file_stream, registration_stream

INCARNATION = "AAAAAAAAAAAAAAAAAAAAAQ"


@pytest.mark.spark
def test_dump_log_files_stream_whole_files_through_the_codec(spark, tmp_path):
    sim = tmp_path / "sim"
    result = simulate(load_scenario("min-isr-change"), sim, seed=2)
    events = [e for e in read_log_dir(sim)]
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    lines = list(format_dump_log(events))
    half = len(lines) // 2
    while not lines[half].startswith("baseOffset:"):
        half += 1  # split the dump between two batches, into two files
    (dumps / "part-1.txt").write_text("\n".join(lines[:half]) + "\n")
    (dumps / "part-2.txt").write_text("\n".join(lines[half:]) + "\nthis line is garbage\n")

    rows = []

    def sink(df, _batch_id):
        rows.extend(df.collect())

    q = (file_stream(spark, str(dumps), result.cluster_id, "dump_logs").writeStream.foreachBatch(sink)
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination()
    got = [event_rows.from_row(r.asDict()) for r in rows]
    records = sorted((e for e in got if isinstance(e, MetadataEvent)
                      and e.kind not in (event_rows.KIND_MARKER, event_rows.KIND_EPOCHS)),
                     key=lambda e: e.offset)
    # and one BATCH_EPOCHS row a file, for the Raft epochs (kraft.election-safety)
    assert sum(1 for e in got if getattr(e, "kind", None) == event_rows.KIND_EPOCHS) == 2
    assert [(e.offset, e.type, e.data, e.batch_last_offset) for e in records] == \
        [(e.offset, e.type, e.data, e.batch_last_offset) for e in events if isinstance(e, MetadataEvent)]
    assert {e.cluster_id for e in records} == {result.cluster_id}
    bad = [e for e in got if isinstance(e, Quarantined)]
    assert len(bad) == 1 and bad[0].source == "part-2.txt" and "not kafka-dump-log output" in bad[0].reason
    assert sum(1 for e in got if getattr(e, "kind", None) == event_rows.KIND_MARKER) == 2  # one per file


def _registration(broker: int) -> str:
    return json.dumps({"brokerId": broker, "incarnationId": f"{broker:022d}", "previousBrokerEpoch": -1,
                       "requestVersion": 4, "timestampMs": 1000 + broker}) + "\n"


@pytest.mark.spark
def test_registration_lines_are_tailed_across_appends_and_rotation(spark, tmp_path):
    """Lines appended to a file, a half-written line and a log4j rollover between
    micro-batches: every registration arrives once, the half line when complete."""
    logs = tmp_path / "controller-logs"
    logs.mkdir()
    request_log = logs / "kafka-request.log"
    request_log.write_text(_registration(1) + "not a registration\n" + _registration(2)[:20])
    got: list = []

    def sink(df, _batch_id):
        got.extend(event_rows.from_row(r.asDict()) for r in df.collect())

    def run_once():
        q = (registration_stream(spark, [LogSource(str(logs))], "c1").writeStream.foreachBatch(sink)
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
        q.awaitTermination()

    run_once()
    assert [e.data["brokerId"] for e in got if isinstance(e, MetadataEvent)] == [1]
    assert [(q.source, q.position) for q in got if isinstance(q, Quarantined)] == \
        [("kafka-request.log", len(_registration(1)))]

    with open(request_log, "a") as f:  # the half line completes, one more, then a rollover
        f.write(_registration(2)[20:] + _registration(3))
    request_log.rename(logs / "kafka-request.log.1")
    request_log.write_text(_registration(4))
    got.clear()
    run_once()  # a new query from the same checkpoint: resumes at the saved positions
    events = [e for e in got if isinstance(e, MetadataEvent)]
    assert [(e.data["brokerId"], e.source) for e in events] == \
        [(2, "kafka-request.log.1"), (3, "kafka-request.log.1"), (4, "kafka-request.log")]
    assert {e.cluster_id for e in events} == {"c1"} and not [q for q in got if isinstance(q, Quarantined)]


@pytest.mark.spark
def test_a_brokers_log_dir_is_scanned_again_when_its_replicas_change(spark, tmp_path):
    data = tmp_path / "broker-2"
    (data / "orders-0").mkdir(parents=True)
    (data / "meta.properties").write_text("version=1\nnode.id=2\ncluster.id=c1\n")
    got: list = []

    def sink(df, _batch_id):
        got.extend(event_rows.from_row(r.asDict()) for r in df.collect())

    def run_once():
        q = (all_events(spark, SourcesConfig(log_dir_inventories=(LogSource(str(data)),))).writeStream
             .foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
        q.awaitTermination()

    def seen():
        return [[(p["partition"], p["isStray"]) for d in e.data["logDirs"] for p in d["partitions"]]
                for e in got]

    run_once()
    assert seen() == [[("orders-0", False)]] and got[0].data["brokerId"] == 2
    got.clear()
    (data / "orders-0" / "00000000000000000000.log").write_bytes(b"x" * 10)  # sizes alone: no new scan
    run_once()
    assert got == []
    (data / "orders-0").rename(data / "orders-0.3f2a-stray")  # Kafka marks it stray at startup
    run_once()
    assert seen() == [[("orders-0", True)]]
