"""The side-input parsers of the core (no Spark): registration requests from Kafka's
request log or JSON lines, kafka-log-dirs inventories, and file following across
log4j rotation. The request log and inventory samples were written by real Kafka
(tests/fixtures/kafka-side-inputs/PROVENANCE.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kraft_audit.core.events import BROKER_LOG_DIRS, BROKER_REGISTRATION_REQUEST, MetadataEvent, Quarantined
from kraft_audit.sideinputs import parse_inventory, parse_registration_line, read_inventories, read_registrations
from kraft_audit.sideinputs.inventories import scan_log_dir
from kraft_audit.sideinputs.tail import plan_all, read_lines

SAMPLES = Path(__file__).parent / "fixtures" / "kafka-side-inputs"
INCARNATION = "AAAAAAAAAAAAAAAAAAAAAQ"


def registrations_of(path, cluster_id=None):
    items = list(read_registrations(path, cluster_id))
    return ([i for i in items if isinstance(i, MetadataEvent)],
            [i for i in items if isinstance(i, Quarantined)])


def test_kafka_4_request_log_gives_the_accepted_registrations():
    events, bad = registrations_of(SAMPLES / "request-log-4.3.1.log")
    assert not bad
    # the rejected attempts (errorCode 101) and other APIs are no registrations
    got = [(e.data["brokerId"], e.data["incarnationId"], e.data["previousBrokerEpoch"],
            e.data["requestVersion"], e.data["brokerEpoch"]) for e in events]
    assert got == [(2, "8BdmOu3ZQCiFKf71VNzpww", -1, 4, 23),
                   (2, "pIfp8qlWQPqGeNUyEQnxrA", 23, 4, 313),
                   (2, "PdFD9dYMTveeaqbYF9m_ng", -1, 4, 355)]
    assert {e.cluster_id for e in events} == {"NVSi3S7ER3aRJS_RNgUTNQ"}
    assert all(e.type == BROKER_REGISTRATION_REQUEST and e.offset == -1 for e in events)
    # the log line's time (log4j's layout, UTC here): 2026-11-23 08:16:39,146
    assert events[0].timestamp_ms == 1795421799146
    # positions are byte positions of the lines in the file
    text = (SAMPLES / "request-log-4.3.1.log").read_bytes()
    for e in events:
        assert text[e.position:].startswith(b"[") and e.data["incarnationId"].encode() in \
            text[e.position:text.index(b"\n", e.position)]


def test_kafka_3_request_log_reads_the_same():
    events, bad = registrations_of(SAMPLES / "request-log-3.9.2.log")
    assert not bad
    assert [(e.data["previousBrokerEpoch"], e.data["requestVersion"]) for e in events] == [(-1, 4), (17, 4)]


def test_request_log_lines_that_cannot_be_used_are_quarantined_with_a_reason():
    good = next(line for line in (SAMPLES / "request-log-4.3.1.log").read_text().splitlines()
                if '"BROKER_REGISTRATION"' in line and '"errorCode":0' in line)
    doc = json.loads(good[good.index("{"):good.rindex("}") + 1])
    debug_only = dict(doc)
    del debug_only["request"]  # kafka.request.logger at DEBUG prints no body
    no_incarnation = json.loads(json.dumps(doc))
    del no_incarnation["request"]["incarnationId"]
    prefix = "[2026-11-23 08:16:39,146] DEBUG Completed request:"
    lines = [prefix + json.dumps(debug_only), prefix + json.dumps(no_incarnation),
             prefix + "{truncated", "INFO something else entirely"]
    items = [parse_registration_line(line, None, "req.log", n) for n, line in enumerate(lines)]
    assert all(isinstance(i, Quarantined) for i in items)
    reasons = [i.reason for i in items]
    assert "TRACE" in reasons[0]
    assert "lacks incarnationId" in reasons[1]
    assert "request JSON" in reasons[2]
    assert "neither" in reasons[3]
    assert [i.position for i in items] == [0, 1, 2, 3]


def test_the_log_time_is_utc_unless_the_layout_names_an_offset():
    line = next(x for x in (SAMPLES / "request-log-4.3.1.log").read_text().splitlines()
                if '"errorCode":0' in x and "BROKER_REGISTRATION" in x)
    body = line[line.index("DEBUG"):]
    times = [parse_registration_line(f"[{stamp}] {body}", None, "r", 0).timestamp_ms
             for stamp in ("2026-11-23 08:16:39,146", "2026-11-23T10:16:39,146+02:00",
                           "2026-11-23T03:16:39.146-0500", "2026-11-23T08:16:39,146Z")]
    assert times == [1795421799146] * 4


def test_json_lines_stay_a_neutral_format():
    good = {"brokerId": 1, "incarnationId": INCARNATION, "previousBrokerEpoch": 12, "requestVersion": 3,
            "timestampMs": 1000, "clusterId": "c1"}
    lines = [json.dumps(good), "", "{not json", json.dumps({"incarnationId": INCARNATION}),
             json.dumps({**good, "clusterId": "other"}), json.dumps({**good, "previousBrokerEpoch": "7"})]
    items = [parse_registration_line(line, "c1", "reg.jsonl", n) for n, line in enumerate(lines)]
    event = items[0]
    assert (event.type, event.kind, event.timestamp_ms, event.version, event.data) == \
        (BROKER_REGISTRATION_REQUEST, "registration", 1000, 3, good)
    assert items[1] is None
    problems = items[2:]
    assert all(isinstance(q, Quarantined) for q in problems)
    assert "not JSON" in problems[0].reason and "lacks brokerId" in problems[1].reason
    assert "cluster other" in problems[2].reason and "non-integer previousBrokerEpoch" in problems[3].reason


def test_real_kafka_log_dirs_output():
    items = list(read_inventories(SAMPLES / "log-dirs-4.3.1.txt", "c1"))
    assert len(items) == 1 and items[0].type == BROKER_LOG_DIRS
    assert items[0].data["brokerId"] == 2
    assert sorted(p["partition"] for d in items[0].data["logDirs"] for p in d["partitions"]) == ["t1-0", "t1-1"]
    assert items[0].timestamp_ms == int((SAMPLES / "log-dirs-4.3.1.txt").stat().st_mtime * 1000)


def test_inventory_problems_are_quarantined_per_broker():
    doc = {"version": 1, "brokers": [
        {"broker": 1, "logDirs": [{"logDir": "/d", "error": None, "partitions": [
            {"partition": "orders-0", "size": 10, "offsetLag": 0, "isFuture": False}]}]},
        {"broker": 2, "logDirs": []}, {"nobroker": True},
        {"broker": 4, "logDirs": [{"logDir": "/d", "partitions": [{"size": 1}]}]},
        {"broker": 5, "logDirs": [{"logDir": "/d", "partitions": [{"partition": "a-0", "size": "big"}]}]}]}
    text = "Querying brokers for log directories information\nReceived log directory information " \
           "from brokers 1,2\n" + json.dumps(doc, indent=1)
    items = list(parse_inventory(text, "c1", "inv.json", 5000))
    assert [(i.type, i.data["brokerId"], i.timestamp_ms) for i in items[:2]] == \
        [(BROKER_LOG_DIRS, 1, 5000), (BROKER_LOG_DIRS, 2, 5000)]
    bad = items[2:]
    assert all(isinstance(q, Quarantined) for q in bad) and len(bad) == 3
    assert ["no broker id" in bad[0].reason, "partition name" in bad[1].reason,
            "non-integer size" in bad[2].reason] == [True] * 3
    broken = list(parse_inventory("Querying brokers\n{broken", "c1", "inv.json", 0))
    assert len(broken) == 1 and "not kafka-log-dirs JSON" in broken[0].reason
    empty = list(parse_inventory("Querying brokers\n", "c1", "inv.json", 0))
    assert len(empty) == 1 and "no JSON" in empty[0].reason


def _line(n: int) -> str:
    return json.dumps({"brokerId": n, "incarnationId": f"{n:022d}"}) + "\n"


def test_following_a_file_across_log4j_rotation_and_a_half_written_line(tmp_path):
    log = tmp_path / "kafka-request.log"
    log.write_text(_line(1) + _line(2) + '{"brokerId": 3, "incar')  # the last line is being written
    spans, pos, notes = plan_all(tmp_path, None)
    first = [line for s in spans for _, _, line in read_lines(s)]
    assert [json.loads(x)["brokerId"] for x in first] == [1, 2] and not notes

    with open(log, "a") as f:
        f.write('nationId": "' + "3" * 22 + '"}\n' + _line(4))
    os.rename(log, tmp_path / "kafka-request.log.1")  # log4j rolls the file over...
    log.write_text(_line(5))  # ...and starts a new one
    spans, pos, notes = plan_all(tmp_path, pos)
    second = [(name, line) for s in spans for name, _, line in read_lines(s)]
    assert [(name, json.loads(x)["brokerId"]) for name, x in second] == \
        [("kafka-request.log.1", 3), ("kafka-request.log.1", 4), ("kafka-request.log", 5)]
    assert plan_all(tmp_path, pos)[0] == []  # nothing new: nothing read twice

    log.write_text("")  # truncated in place (copytruncate): read again from the start
    with open(log, "a") as f:
        f.write(_line(6))
    spans, pos, _ = plan_all(tmp_path, pos)
    assert [json.loads(x)["brokerId"] for s in spans for _, _, x in read_lines(s)] == [6]


def test_lines_rotated_away_before_they_were_read_are_reported(tmp_path):
    log = tmp_path / "req.log"
    log.write_text(_line(1))
    _, pos, _ = plan_all(log, None)
    with open(log, "a") as f:
        f.write(_line(2))
    os.rename(log, tmp_path / "req.log.1")
    (tmp_path / "req.log.1").unlink()  # retention deleted it unread
    log.write_text(_line(3))
    spans, pos, notes = plan_all(log, pos)
    assert [json.loads(x)["brokerId"] for s in spans for _, _, x in read_lines(s)] == [3]
    # (whether the new file reused the deleted one's inode or not)
    assert len(notes) == 1 and "lost" in notes[0]
    items = list(read_registrations(log, "c"))
    assert [i.data["brokerId"] for i in items] == [3]  # read whole: what exists now


def test_a_directory_follows_each_file_and_reads_rotations_once(tmp_path):
    (tmp_path / "a.log").write_text(_line(1))
    (tmp_path / "a.log.1").write_text(_line(0))
    (tmp_path / "b.jsonl").write_text(_line(7) + "garbage\n")
    events, bad = registrations_of(tmp_path, "c")
    assert sorted(e.data["brokerId"] for e in events) == [0, 1, 7]
    assert len(bad) == 1 and bad[0].source == "b.jsonl" and bad[0].position == len(_line(7))


def test_a_brokers_log_dir_is_an_inventory_with_kafkas_strays_marked(tmp_path):
    data = tmp_path / "data"
    for d in ("orders-0", "orders-1.4a6f8f4f2d7e4c1b9e0d7a7c1c3e5f2a-stray", "pay-ments-2.ab-future",
              "old-0.cd-delete", "__cluster_metadata-0", "not a replica"):
        (data / d).mkdir(parents=True)
    (data / "orders-0" / "00000000000000000000.log").write_bytes(b"x" * 70)
    (data / "meta.properties").write_text("version=1\nnode.id=5\ncluster.id=c1\n")
    (data / "recovery-point-offset-checkpoint").write_text("0\n")
    [event] = scan_log_dir(data, None, now_ms=42)
    assert (event.cluster_id, event.timestamp_ms, event.data["brokerId"]) == ("c1", 42, 5)
    [log_dir] = event.data["logDirs"]
    assert [(p["partition"], p["size"], p["isFuture"], p["isStray"]) for p in log_dir["partitions"]] == [
        ("orders-0", 70, False, False), ("orders-1", 0, False, True), ("pay-ments-2", 0, True, False)]
    # found through read_inventories too, beside kafka-log-dirs outputs in the same dir
    (tmp_path / "out.txt").write_text((SAMPLES / "log-dirs-4.3.1.txt").read_text())
    got = [e.data["brokerId"] for e in read_inventories(tmp_path, "c1")]
    assert sorted(got) == [2, 5]
    wrong = list(scan_log_dir(data, "other", now_ms=0))
    assert len(wrong) == 1 and isinstance(wrong[0], Quarantined) and "cluster c1" in wrong[0].reason
