"""`kraft-audit check`: findings, open conditions and gauges, as a table or JSON."""

from __future__ import annotations

import argparse
import json

import pytest

from conftest import REAL_FIXTURES

from kraft_audit.cli import check
from kraft_audit.cli.main import UsageError

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
        payload("TOPIC_RECORD", {"name": "orders", "topicId": TID}),
        payload("PARTITION_RECORD", {"partitionId": 0, "topicId": TID, "replicas": [1, 2], "isr": [1, 2],
                                     "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0}),
        payload("PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": TID, "isr": [2]}),
    ]
    path = tmp_path / "dump.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_clean_real_log_table(capsys):
    assert run_check(REAL_FIXTURES / "Niloufar1171__LDI-POC") == 0
    out = capsys.readouterr().out
    assert "4929 records applied" in out and "findings (0):" in out
    assert "open conditions (54):" in out and "leaderless" in out


def test_dump_log_file_with_a_finding_as_json(dump_file, capsys):
    assert run_check(dump_file, "--json", "--min-isr-default", "2") == 1
    report = json.loads(capsys.readouterr().out)
    assert [(f["rule_id"], f["offset"], f["topic"]) for f in report["findings"]] == [
        ("kip966.leader-in-isr", 4, "orders")]
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
    # 5 log records + 3 registrations + 1 inventory, each applied once
    assert records["applied"] + records["duplicates"] == 5 + 3 + 1
