"""`kraft-audit check`: findings, open conditions and gauges, as a table or JSON."""

from __future__ import annotations

import argparse
import json

import pytest

from conftest import REAL_FIXTURES
from log_cuts import later_segment

from kraft_audit.cli import check
from kraft_audit.cli.main import UsageError
from kraft_audit.core.replay.settings import CoreSettings

TID = "JJJJJJJJJJJJJJJJJJJJJJ"


def run_check(*argv) -> int:
    parser = argparse.ArgumentParser()
    check.add_arguments(parser)
    return check.run(parser.parse_args([str(a) for a in argv]))


def payload(rtype: str, data: dict) -> str:
    return json.dumps({"type": rtype, "version": 0, "data": data})


@pytest.fixture
def dump_file(tmp_path):
    lines = [
        payload("FEATURE_LEVEL_RECORD", {"name": "metadata.version", "featureLevel": 21}),
        payload("REGISTER_BROKER_RECORD", {"brokerId": 1, "brokerEpoch": 1, "incarnationId": "AAAAAAAAAAAAAAAAAAAAAQ",
                                           "fenced": False}),
        payload("REGISTER_BROKER_RECORD", {"brokerId": 2, "brokerEpoch": 2, "incarnationId": "AAAAAAAAAAAAAAAAAAAAAg",
                                           "fenced": False}),
        payload("TOPIC_RECORD", {"name": "orders", "topicId": TID}),
        payload("PARTITION_RECORD", {"partitionId": 0, "topicId": TID, "replicas": [1, 2], "isr": [1, 2],
                                     "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0}),
        payload("PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": TID, "isr": [2]}),
    ]
    path = tmp_path / "dump.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_real_log_with_its_broker_stopped_is_offline_and_says_so(capsys):
    # a one-broker cluster whose broker shut down: no rule broken, every partition offline
    assert run_check(REAL_FIXTURES / "Niloufar1171__LDI-POC") == 1
    out = capsys.readouterr().out
    assert "4929 records applied" in out and "findings (0):" in out
    assert "2026-01-30T16:43:54Z to 2026-01-30T17:23:55Z" in out  # times a person reads
    assert "verdict: no rule broken; 54 partitions offline at the end of the log" in out
    # grouped by condition, with the topics and their counts, and a few examples
    assert "leaderless x54; topics __consumer_offsets (50), " in out
    assert "... 49 more (--all or --json lists them)" in out
    assert "brokers (1): 0 active, 1 fenced, 1 in controlled shutdown; active controller 1" in out
    assert "min ISR unknown (assumed 1)" in out


def test_min_isr_from_a_flag_or_server_properties(tmp_path, capsys):
    log = REAL_FIXTURES / "Niloufar1171__LDI-POC"
    run_check(log, "--json")
    assert json.loads(capsys.readouterr().out)["min_isr"] == {"value": 1, "source": "assumed", "given": None,
                                                              "given_by": None}
    props = tmp_path / "server.properties"
    props.write_text("process.roles=broker,controller\n# min.insync.replicas=3\nmin.insync.replicas = 2\n")
    run_check(log, "--json", "--server-properties", props)
    assert json.loads(capsys.readouterr().out)["min_isr"] == {
        "value": 2, "source": "setting", "given": 2, "given_by": f"min.insync.replicas in {props}"}
    run_check(log, "--json", "--server-properties", props, "--min-insync-replicas", "3")
    assert json.loads(capsys.readouterr().out)["min_isr"] == {
        "value": 3, "source": "setting", "given": 3, "given_by": f"--min-insync-replicas, over {props}'s 2"}


def test_dump_log_file_with_a_finding_as_json(dump_file, capsys):
    assert run_check(dump_file, "--json", "--min-isr-default", "2") == 1
    report = json.loads(capsys.readouterr().out)
    assert [(f["rule_id"], f["offset"], f["topic"]) for f in report["findings"]] == [
        ("kip966.leader-in-isr", 5, "orders")]
    assert report["gauges"]["under_min_isr"] == 1
    assert {c["condition"] for c in report["open_conditions"]} == {"under_min_isr"}


def test_side_inputs(dump_file, tmp_path, capsys):
    log_dirs = tmp_path / "log-dirs.json"
    log_dirs.write_text(json.dumps({"brokers": [{"broker": 3, "logDirs": [
        {"logDir": "/d", "error": None,
         "partitions": [{"partition": "orders-0", "size": 7, "offsetLag": 0, "isFuture": False}]}]}]}))
    registrations = tmp_path / "registrations.jsonl"
    registrations.write_text(json.dumps({"brokerId": 5, "incarnationId": "x", "previousBrokerEpoch": 9,
                                         "timestampMs": 1}) + "\n")
    run_check(dump_file, "--json", "--log-dir-inventory", log_dirs, "--registrations", registrations)
    rules = sorted(f["rule_id"] for f in json.loads(capsys.readouterr().out)["findings"])
    assert rules == ["input.unknown-broker", "kip550.stray-replica", "kip966.leader-in-isr"]


@pytest.mark.parametrize("argv,message", [
    (["/no/such/path"], "does not exist"),
    (["{dump}", "--rules", "/no/rules"], "does not exist"),
    (["{dump}", "--min-isr-default", "0"], "at least 1"),
    (["{dump}", "--log-dir-inventory", "/no/such/inventory"], "does not exist"),
    (["{dump}", "--registrations", "/no/such/request.log"], "does not exist"),
])
def test_usage_errors(dump_file, argv, message):
    with pytest.raises(UsageError, match=message):
        run_check(*[a.format(dump=dump_file) for a in argv])


def test_side_input_counts_balance_and_bad_lines_are_quarantined(dump_file, tmp_path, capsys):
    """Real request-log lines (three accepted registrations, rejected attempts, other
    APIs) plus bad lines and a bad inventory: every registration and inventory is
    applied or quarantined, the rest of the request log is no input."""
    request_log = tmp_path / "kafka-request.log"
    samples = REAL_FIXTURES.parent / "kafka-side-inputs"
    request_log.write_text((samples / "request-log-4.3.1.log").read_text() + "garbage line\n"
                           + '{"brokerId": "two", "incarnationId": "x"}\n')
    inventories = tmp_path / "inventories"
    inventories.mkdir()
    (inventories / "good.txt").write_text((samples / "log-dirs-4.3.1.txt").read_text())
    (inventories / "bad.txt").write_text("Querying brokers for log directories information\n{oops\n")
    run_check(dump_file, "--json", "--cluster-id", "NVSi3S7ER3aRJS_RNgUTNQ", "--registrations", request_log,
              "--log-dir-inventory", inventories)
    report = json.loads(capsys.readouterr().out)
    reasons = sorted(q["reason"].split(":")[0] for q in report["quarantined"])
    assert reasons == ["log-dir inventory is not kafka-log-dirs JSON",
                       "registration event lacks brokerId (int)",
                       "registration line is neither a JSON object nor a kafka.request.logger 'Completed request"]
    records = report["records"]
    assert records["quarantined"] == len(report["quarantined"]) == 3
    # 6 log records + 3 registrations + 1 inventory, each applied once
    assert records["applied"] + records["duplicates"] == 6 + 3 + 1


def test_a_log_that_starts_mid_history_is_judged_only_where_it_can_be(tmp_path, capsys):
    # a later segment of a real log, alone: cut at a batch boundary, named by its base offset
    later, start = later_segment(tmp_path)

    assert run_check(later, "--json", "--cluster-id", "c") == 1  # still offline at the end
    report = json.loads(capsys.readouterr().out)
    assert report["partial_from_offset"] == start
    assert report["records"]["first_offset"] == start
    # brokers and partitions from before the cut are unknown, not broken invariants
    assert report["findings"] == []
    unknown = [q for q in report["quarantined"] if q["reason"].startswith(
        "created before this log's first record (no snapshot holds it)")]
    # ... and the reader said where the log starts (a row, not a record)
    missing = f"offsets 0..{start - 1} are missing: the log starts at offset {start}"
    assert [q["reason"][:len(missing)] for q in report["quarantined"] if q not in unknown] == [missing]
    assert unknown and len(unknown) + 1 == report["records"]["quarantined"]
    assert report["records"]["applied"] + len(unknown) == 4929 - start  # counts balance
    run_check(later, "--cluster-id", "c")
    assert f"partial log: it starts at offset {start} without a snapshot" in capsys.readouterr().out


def many_topics_offline(tmp_path, topics: int):
    lines = [payload("REGISTER_BROKER_RECORD", {"brokerId": 1, "brokerEpoch": 1,
                                                "incarnationId": "AAAAAAAAAAAAAAAAAAAAAQ", "fenced": True})]
    for i in range(topics):  # broker 1 fenced: offline, with no one the controller could elect
        tid = f"T{i:03d}" + "A" * 18
        lines.append(payload("TOPIC_RECORD", {"name": f"topic-with-a-long-name-{i:03d}", "topicId": tid}))
        lines.append(payload("PARTITION_RECORD", {"partitionId": 0, "topicId": tid, "replicas": [1], "isr": [1],
                                                  "leader": -1, "leaderEpoch": 0, "partitionEpoch": 0}))
    path = tmp_path / f"offline-{topics}.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_group_line_names_a_few_topics_and_counts_the_rest(tmp_path, capsys):
    path = many_topics_offline(tmp_path, 63)
    assert run_check(path) == 1
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("  leaderless x63"))
    assert f", and {63 - check.NAMED} more; oldest " in line
    assert len(line) < 400 and line.count("topic-with-a-long-name-") == check.NAMED
    run_check(path, "--all")
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("  leaderless x63"))
    assert line.count("topic-with-a-long-name-") == 63 and "more" not in line
    run_check(path, "--json")
    assert len(json.loads(capsys.readouterr().out)["open_conditions"]) == 63


def test_one_is_singular(tmp_path, dump_file, capsys):
    run_check(many_topics_offline(tmp_path, 1))
    out = capsys.readouterr().out
    assert "1 partition offline at the end of the log" in out and "1 partitions" not in out
    text = dump_file.read_text().replace('"isr": [2]}', '"isr": [2], "leader": 1}')  # one finding
    dump_file.write_text(text)
    run_check(dump_file)
    out = capsys.readouterr().out
    assert "verdict: 1 finding; none offline" in out
    assert "1 records" not in out and "1 findings" not in out and "1 duplicates" not in out


def test_min_isr_says_which_source_gave_it_and_when_the_log_overrides_a_flag(tmp_path, dump_file, capsys):
    log = REAL_FIXTURES / "Niloufar1171__LDI-POC"
    props = tmp_path / "server.properties"
    props.write_text("min.insync.replicas=2\n")

    def line(path, *argv) -> str:
        run_check(path, *argv)
        return next(x for x in capsys.readouterr().out.splitlines() if x.startswith("min ISR"))

    assert line(log, "--min-insync-replicas", 3) == "min ISR 3 (from --min-insync-replicas)"
    assert line(log, "--server-properties", props) == f"min ISR 2 (from min.insync.replicas in {props})"
    assert line(log, "--server-properties", props, "--min-insync-replicas", 3) == \
        f"min ISR 3 (from --min-insync-replicas, over {props}'s 2)"
    # a cluster-level config record in the log is Kafka's own value: it wins, and says so
    cluster_config = payload("CONFIG_RECORD", {"resourceType": 4, "resourceName": "",
                                               "name": "min.insync.replicas", "value": "2"})
    dump_file.write_text(cluster_config + "\n" + dump_file.read_text())
    assert line(dump_file) == "min ISR 2 (the log's cluster config record)"
    assert line(dump_file, "--min-insync-replicas", 3) == (
        "min ISR 2 (the log's cluster config record); --min-insync-replicas gave 3, overridden: "
        "a config record in the log is Kafka's own value for the cluster")
    run_check(dump_file, "--json", "--min-insync-replicas", 3)
    assert json.loads(capsys.readouterr().out)["min_isr"] == {
        "value": 2, "source": "log", "given": 3, "given_by": "--min-insync-replicas"}


def _offline_at_end(log) -> set[tuple[str, int]]:
    """The partitions whose last record in `log` that sets a leader sets -1 (as
    kafka-dump-log prints the records): read from the records, not from the replay."""
    from kraft_audit.core.codec.logdir import read_log_dir
    from kraft_audit.core.events import MetadataEvent

    leader = {}
    for e in read_log_dir(log):
        if isinstance(e, MetadataEvent) and e.type in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD") \
                and e.data.get("leader", -2) != -2:
            leader[(e.data["topicId"], e.data["partitionId"])] = e.data["leader"]
    return {key for key, value in leader.items() if value == -1}


@pytest.mark.parametrize("until, offline", [(557, 51), (844, 0)], ids=["during-outage", "after-recovery"])
def test_a_log_kept_by_retention_still_says_what_is_offline(tmp_path, capsys, until, offline):
    """A real log cut after its topics were created (no PartitionRecord, no snapshot), ending
    during an outage or after it: the partitions its last records set leaderless are offline,
    named by topic id, and nothing about them is a finding or quarantined."""
    from kraft_audit.cli.main import main
    from kraft_audit.core.codec.logdir import read_log_dir
    from kraft_audit.core.events import MetadataEvent
    from log_cuts import SUBPXL

    log, start = later_segment(tmp_path, SUBPXL, from_offset=300, until_offset=until)
    expected = _offline_at_end(log.parent)
    assert len(expected) == offline

    assert run_check(log, "--json", "--all") == (1 if offline else 0)
    report = json.loads(capsys.readouterr().out)
    assert report["partial_from_offset"] == start and report["findings"] == []
    assert report["offline_partitions"] == offline
    leaderless = {(c["topic_id"], c["partition"]) for c in report["open_conditions"]
                  if c["condition"] == "leaderless"}
    assert leaderless == expected
    assert all(c["topic"] == c["topic_id"] for c in report["open_conditions"])  # named by id
    # the per-topic gauge the offline alert is labelled by (topic ids here)
    by_topic = report["gauges"]["topics_leaderless"]
    assert sum(by_topic.values()) == offline and set(by_topic) == {t for t, _ in expected}
    assert not [q for q in report["quarantined"] if "PartitionChangeRecord" in q["reason"]]
    records = report["records"]
    in_cut = sum(1 for e in read_log_dir(log.parent) if isinstance(e, MetadataEvent))
    # counts balance: every record applied (the missing-offsets row is not a record)
    assert records["applied"] + records["duplicates"] + records["quarantined"] - 1 == in_cut

    run_check(log, "--all")
    out = capsys.readouterr().out
    assert (f"{offline} partitions offline" if offline else "none offline") in out
    for topic_id, partition in expected:
        assert f"{topic_id}-{partition} since offset" in out or not offline

    assert main(["describe", "--unavailable-partitions", "--json", str(log)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {(r["topic_id"], r["partition"]) for r in rows} == expected
    # what no record said is unknown, not a made-up value
    assert all(r["leader"] == -1 and r["replicas"] is None and r["leader_epoch"] is None for r in rows)
    assert main(["describe", "--unavailable-partitions", str(log)]) == 0
    text = capsys.readouterr().out
    assert ("Replicas: unknown" in text) == bool(offline)


def test_what_is_inferred_says_so_on_real_logs(capsys):
    """Without the controller's request log a restart verdict is inferred from the metadata
    log, and without a min ISR given or logged it is assumed: every view says which."""
    from kraft_audit.cli.main import main

    log = REAL_FIXTURES / "subpxl__streamprocessing"  # three restarts, each after a controlled shutdown
    run_check(log, "--json")
    [broker] = json.loads(capsys.readouterr().out)["brokers"]
    assert (broker["last_shutdown"], broker["last_shutdown_source"]) == ("clean", "inferred")
    run_check(log)
    assert "last restart clean (inferred from the metadata log)" in capsys.readouterr().out
    assert main(["describe", "--json", str(log)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and {r["min_isr_source"] for r in rows} == {"assumed"}
    assert main(["describe", "--json", "--min-insync-replicas", "2", str(log)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["min_isr_source"] for r in rows} == {"setting"}


def test_the_controllers_rebalancing_and_unclean_configs_come_from_server_properties(tmp_path, capsys):
    # partition 0 on [1, 2] left to 1 alone, 1 fenced: leaderless; 2 is up but not in the ISR
    lines = [
        payload("FEATURE_LEVEL_RECORD", {"name": "metadata.version", "featureLevel": 21}),
        *(payload("REGISTER_BROKER_RECORD", {"brokerId": b, "brokerEpoch": b, "fenced": False,
                                             "incarnationId": f"AAAAAAAAAAAAAAAAAAAAA{b}"}) for b in (1, 2)),
        payload("TOPIC_RECORD", {"name": "orders", "topicId": TID}),
        payload("PARTITION_RECORD", {"partitionId": 0, "topicId": TID, "replicas": [1, 2], "isr": [1],
                                     "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0}),
        payload("PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": TID, "leader": -1}),
        payload("BROKER_REGISTRATION_CHANGE_RECORD", {"brokerId": 1, "brokerEpoch": 1, "fenced": 1}),
    ]
    log = tmp_path / "dump.txt"
    log.write_text("\n".join(lines) + "\n")
    props = tmp_path / "server.properties"

    def report(text: str | None) -> dict:
        argv = [log, "--json"]
        if text is not None:
            props.write_text(text)
            argv += ["--server-properties", props]
        run_check(*argv)
        out = json.loads(capsys.readouterr().out)
        return {"bounds": out["condition_bounds_seconds"],
                "open": sorted(c["condition"] for c in out["open_conditions"])}

    # Kafka's 1 h sweep and its 5 min unclean-election task, each with a grace; a broker's
    # directory report (no controller config moves it)
    tasks = {"delegation_token_expired": 3605, "unclean_election_overdue": 305, "directory_unassigned": 30}
    assert report(None) == {"bounds": {"leader_imbalanced": 300, **tasks}, "open": ["leaderless"]}
    assert report("leader.imbalance.check.interval.seconds=60\n")["bounds"] == {"leader_imbalanced": 60,
                                                                               **tasks}
    assert report("auto.leader.rebalance.enable=false\n")["bounds"] == tasks
    assert report("delegation.token.secret.key=\n")["bounds"] == {
        "leader_imbalanced": 300, "unclean_election_overdue": 305, "directory_unassigned": 30}
    assert report("unclean.leader.election.interval.ms=2500\n")["bounds"] == {
        "leader_imbalanced": 300, "delegation_token_expired": 3605, "unclean_election_overdue": 8,
        "directory_unassigned": 30}
    # the controller elects uncleanly where its static config allows it: overdue until it does
    assert report("unclean.leader.election.enable=true\n")["open"] == ["leaderless", "unclean_election_overdue"]
    props.write_text("auto.leader.rebalance.enable=yes\n")
    with pytest.raises(UsageError, match="auto.leader.rebalance.enable='yes' must be true or false"):
        run_check(log, "--server-properties", props)
    props.write_text("unclean.leader.election.interval.ms=0\n")
    with pytest.raises(UsageError, match="unclean.leader.election.interval.ms='0' must be at least 1"):
        run_check(log, "--server-properties", props)
    with pytest.raises(ValueError, match="unclean_leader_election_interval_ms must be an integer"):
        CoreSettings.of({"unclean_leader_election_interval_ms": True})
