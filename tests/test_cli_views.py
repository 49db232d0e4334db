"""`kraft-audit query` reads like the other human-facing views: no leader as "none",
times in ISO-8601 UTC; --json keeps the tables' values. The tables are the audit of a
simulated incident written by the job's own Delta sinks."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from kraft_audit.core.audit import Auditor
from kraft_audit.cli.log_input import read_path
from kraft_audit.cli.main import main
from kraft_audit.core.rules import load_catalog
from kraft_audit.sim import load_scenario, simulate
from kraft_audit.spark.sinks import DeltaSinks
from kraft_audit.tables import core_to_arrow

INCIDENT = Path(__file__).parent / "fixtures" / "timeline-incident.yaml"


@pytest.fixture(scope="module")
def incident(tmp_path_factory):
    """(tables dir, the partition rows of payments-0) of the incident of docs/timeline.md."""
    log = tmp_path_factory.mktemp("views-incident")
    simulate(load_scenario(str(INCIDENT)), log, seed=0)
    out = Auditor(load_catalog()).process(read_path(log, None, "earliest"))
    tables = tmp_path_factory.mktemp("views-tables")
    DeltaSinks(str(tables), app_id="views").write_batch(0, {
        name: core_to_arrow(name, rows) for name, rows in
        {"violations": out.violations, "partition_history": out.partitions,
         "conditions": out.conditions, "brokers": out.brokers}.items()})
    return tables, [r for r in out.partitions if r.topic == "payments" and r.partition == 0]


def query(capsys, tables, *argv) -> str:
    assert main(["query", str(tables), *argv]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_partition_without_a_leader_reads_none_in_text_and_minus_one_in_json(incident, capsys):
    tables, states = incident
    leaderless = next(s for s in states if s.leader == -1)
    argv = ["partition", "--topic", "payments", "--partition", "0",
            "--at-offset", str(leaderless.offset)]
    header, row = query(capsys, tables, *argv).splitlines()
    cells = dict(zip(header.split(), row.split()))
    assert cells["offset"] == str(leaderless.offset)
    assert cells["leader"] == "none"
    assert cells["time"] == iso(leaderless.timestamp_ms)
    [raw] = [json.loads(line) for line in query(capsys, tables, *argv, "--json").splitlines()]
    assert (raw["leader"], raw["timestamp_ms"]) == (-1, leaderless.timestamp_ms)


def test_unclean_election_names_the_leader_before_as_none(incident, capsys):
    """The unclean election of the incident elects broker 3 from no leader at all."""
    tables, _ = incident
    header, row = query(capsys, tables, "unclean-elections").splitlines()
    cells = dict(zip(header.split(), row.split()))
    assert cells["leader_before"] == "none" and cells["leader"] == "3"
    assert dt.datetime.strptime(cells["time"], "%Y-%m-%dT%H:%M:%SZ")
    [raw] = [json.loads(line) for line in
             query(capsys, tables, "unclean-elections", "--json").splitlines()]
    assert raw["leader_before"] == -1
