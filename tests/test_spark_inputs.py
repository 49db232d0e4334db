"""Side inputs and dump-log files: the plain parsers, then the Spark file
streams that feed them whole files."""

from __future__ import annotations

import json

import pytest

from kraft_audit.codec.dumplog import format_dump_log
from kraft_audit.codec.logdir import read_log_dir
from kraft_audit.events import BROKER_LOG_DIRS, BROKER_REGISTRATION_REQUEST, MetadataEvent, Quarantined
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import load_scenario
from kraft_audit.spark import event_rows
from kraft_audit.spark.inputs import file_stream, log_dir_events, registration_events

INCARNATION = "AAAAAAAAAAAAAAAAAAAAAQ"


def test_registration_lines_become_events_or_say_what_is_wrong():
    good = {"brokerId": 1, "incarnationId": INCARNATION, "previousBrokerEpoch": 12, "requestVersion": 3,
            "timestampMs": 1000, "clusterId": "c1"}
    lines = [json.dumps(good), "", "{not json", json.dumps({"incarnationId": INCARNATION}),
             json.dumps({**good, "clusterId": "other"})]
    items = list(registration_events(lines, "c1", "reg.jsonl"))
    event = items[0]
    assert isinstance(event, MetadataEvent)
    assert (event.type, event.kind, event.offset, event.timestamp_ms, event.position, event.data) == \
        (BROKER_REGISTRATION_REQUEST, "registration", -1, 1000, 1, good)
    problems = items[1:]
    assert [type(q) for q in problems] == [Quarantined] * 3
    assert [q.position for q in problems] == [3, 4, 5]
    assert "not JSON" in problems[0].reason and "lacks brokerId" in problems[1].reason
    assert "cluster other" in problems[2].reason


def test_log_dir_inventory_gives_one_event_per_broker():
    doc = {"version": 1, "brokers": [
        {"broker": 1, "logDirs": [{"logDir": "/d", "error": None, "partitions": [
            {"partition": "orders-0", "size": 10, "offsetLag": 0, "isFuture": False}]}]},
        {"broker": 2, "logDirs": []}, {"nobroker": True}]}
    text = "Querying brokers for log directories information\nReceived log directory information " \
           "from brokers 1,2\n" + json.dumps(doc, indent=1)
    items = list(log_dir_events(text, "c1", "inv.json", 5000))
    assert [(i.type, i.data["brokerId"], i.timestamp_ms) for i in items[:2]] == \
        [(BROKER_LOG_DIRS, 1, 5000), (BROKER_LOG_DIRS, 2, 5000)]
    assert items[0].data["logDirs"] == doc["brokers"][0]["logDirs"]
    assert isinstance(items[2], Quarantined) and "no broker id" in items[2].reason
    bad = list(log_dir_events("Querying brokers\n{broken", "c1", "inv.json", 0))
    assert len(bad) == 1 and "not kafka-log-dirs JSON" in bad[0].reason


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
    records = sorted((e for e in got if isinstance(e, MetadataEvent) and e.kind != event_rows.KIND_MARKER),
                     key=lambda e: e.offset)
    assert [(e.offset, e.type, e.data, e.batch_last_offset) for e in records] == \
        [(e.offset, e.type, e.data, e.batch_last_offset) for e in events if isinstance(e, MetadataEvent)]
    assert {e.cluster_id for e in records} == {result.cluster_id}
    bad = [e for e in got if isinstance(e, Quarantined)]
    assert len(bad) == 1 and bad[0].source == "part-2.txt" and "not kafka-dump-log output" in bad[0].reason
    assert sum(1 for e in got if getattr(e, "kind", None) == event_rows.KIND_MARKER) == 2  # one per file
