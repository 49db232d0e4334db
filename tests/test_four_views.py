"""One story across views: `check`, `describe`, `query` over the Delta tables
of the real streaming job, and the /metrics it serves over HTTP, agree on every
count and name things the same way, on one simulated log with every kind of
finding: the demo's five injected bugs (a bad ELR, an election from outside the
ISR and ELR that forgets RECOVERING, a fence that leaves the ISR, an unclean
shutdown ignored, a stray replica), an ELR election, and a real unclean election
whose recovery is still open at the end, beside an open under-min-ISR interval."""

from __future__ import annotations

import json
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kraft_audit.cli.demo import DEMO_FAULTS
from kraft_audit.cli.main import EXIT_FINDINGS, EXIT_OK, main
from kraft_audit.config import load_config
from kraft_audit.questions import read_table
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import load_scenario
from kraft_audit.spark.job import AuditJob

pytestmark = pytest.mark.spark

# The demo's scenario, then an unclean election on the partition left with no
# clean candidate: it stays RECOVERING to the end of the log.
SCENARIO = """\
name: four-views
cluster: {brokers: 4, metadata_version: 4.1-IV0, elr: true, min_insync_replicas: 2}
topics:
  - {name: orders, partitions: 8, replication_factor: 3}
  - {name: strict, partitions: 4, replication_factor: 3, configs: {min.insync.replicas: 3}}
steps:
  - crash: 1
  - heartbeat_timeout: 1
  - crash: 2
  - heartbeat_timeout: 2
  - restart: 2
  - controlled_shutdown: 3
  - crash: 4
  - heartbeat_timeout: 4
  - restart: 4
  - restart: 1
  - restart: 3
  - catch_up
  - finish_recovery
  - catch_up
  - elect_preferred
  - log_dirs
  - set_config: {topic: orders, name: unclean.leader.election.enable, value: "true"}
  - unclean_elections
"""


@pytest.fixture(scope="module")
def sim(tmp_path_factory) -> tuple[Path, Path, object]:
    """The simulated log, and the inventories of its `log_dirs` step (the first set;
    the stray replica is in it) merged into one file: `check` takes one inventory
    file, `run` a directory of them."""
    root = tmp_path_factory.mktemp("four-views")
    scenario = root / "four-views.yaml"
    scenario.write_text(SCENARIO)
    out = root / "sim"
    result = simulate(load_scenario(str(scenario)), out, seed=1, faults=DEMO_FAULTS)
    assert not result.unfired
    files = sorted((out / "log-dirs").iterdir())
    taken = min(f.name.split("-")[0] for f in files)
    brokers = [b for f in files if f.name.startswith(taken) for b in json.loads(f.read_text())["brokers"]]
    inventories = root / "inventories"
    inventories.mkdir()
    (inventories / f"{taken}-all.json").write_text(json.dumps({"version": 1, "brokers": brokers}))
    return out, inventories / f"{taken}-all.json", result


def cli_json(capsys, *argv, code=EXIT_OK):
    assert main([str(a) for a in argv]) == code, capsys.readouterr().err
    return capsys.readouterr().out


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_check_describe_query_and_metrics_tell_one_story(spark, sim, tmp_path, capsys):
    log, inventory, result = sim

    # 1. check, single process
    report = json.loads(cli_json(capsys, "check", log, "--json", "--registrations", log / "registrations.jsonl",
                                 "--log-dirs", inventory, code=EXIT_FINDINGS))
    gauges = report["gauges"]
    # 2. describe
    described = {(r["topic"], r["partition"]): r for r in json_lines(cli_json(capsys, "describe", log, "--json"))}
    # 3. the real streaming job into Delta, serving /metrics
    cfg = load_config(None, {
        "sources.log_dirs": str(log), "sources.registrations": str(log / "registrations.jsonl"),
        "sources.log_dir_inventories": str(inventory.parent), "checkpoint": str(tmp_path / "checkpoint"),
        "tables": str(tmp_path / "tables"), "sources.max_records_per_trigger": 80, "audit.buckets": 3,
        "metrics.port": 0}, environ={})
    job = AuditJob(cfg, spark=spark)
    assert job.run(available_now=True)
    scrape = urllib.request.urlopen(f"http://127.0.0.1:{job.metrics_port}/metrics", timeout=10).read().decode()
    metrics = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(scrape) for s in family.samples}
    cluster = (("cluster", result.cluster_id),)

    def metric(name: str, labels=cluster) -> float:
        return metrics[("kraft_audit_" + name, labels)]

    tables = cfg.tables

    def query(*question) -> list[dict]:
        return json_lines(cli_json(capsys, "query", tables, *question, "--json"))

    # Every finding, once, the same in check, query (Delta) and /metrics.
    found = [v["violation_id"] for v in report["findings"]]
    assert len(found) == len(set(found)) >= len(DEMO_FAULTS)
    assert sorted(v["violation_id"] for v in query("violations")) == sorted(found)
    by_rule = Counter((v["rule_id"], v["severity"]) for v in report["findings"])
    assert {(r, s): metric("violations_total", (("cluster", result.cluster_id), ("rule", r), ("severity", s)))
            for r, s in by_rule} == {k: float(n) for k, n in by_rule.items()}
    for fault in result.faults:
        assert [f for f in report["findings"] if f["rule_id"] == fault["rule_id"]
                and f["offset"] == fault["offset"] and f["partition"] == fault["partition"]], fault

    # Unclean elections: one definition (RECOVERED -> RECOVERING) in every view.
    elections = query("unclean-elections")
    assert len(elections) == gauges["unclean_elections_total"] == metric("unclean_elections_total") == 1
    [election] = elections
    assert described[(election["topic"], election["partition"])]["leader_recovery_state"] == "RECOVERING"
    # the election from outside ISR and ELR that forgot RECOVERING is a finding, not a count
    [hidden] = [f for f in report["findings"] if f["rule_id"] == "kip704.unclean-election-sets-recovering"]
    assert (hidden["topic"], hidden["partition"]) != (election["topic"], election["partition"])
    assert described[(hidden["topic"], hidden["partition"])]["leader_recovery_state"] == "RECOVERED"
    assert gauges["elr_elections_total"] == metric("elr_elections_total") >= 1

    # The partition state: describe and query agree on every partition, by Kafka's names.
    recovering = [k for k, r in described.items() if r["leader_recovery_state"] == "RECOVERING"]
    assert len(recovering) == gauges["unclean_recovery"] == metric("unclean_recovery_partitions_count") == 1
    columns = ("leader", "isr", "elr", "last_known_elr", "leader_recovery_state", "leader_epoch",
               "partition_epoch", "effective_min_isr")
    for (topic, index), row in described.items():
        [latest] = query("partition", "--topic", topic, "--partition", str(index))
        assert {c: latest[c] for c in columns} == {c: row[c] for c in columns}, (topic, index)

    # Open conditions: the same intervals, measured to the log's newest record.
    open_in_check = {c["interval_id"]: c["open_seconds"] for c in report["open_conditions"]}
    open_in_delta = query("under-min-isr")
    assert {c["condition"] for c in report["open_conditions"]} >= {"under_min_isr", "recovering"}
    intervals = read_table(tables, "conditions").to_pylist()
    assert {c["interval_id"] for c in intervals if c["end_offset"] is None} == set(open_in_check)
    assert {i["interval_id"]: i["duration_seconds"] for i in open_in_delta if i["open"]} == \
        {k: v for k, v in open_in_check.items() if "/under_min_isr/" in k}
    # the log spans about a minute of 2025: measured to the wall clock they would last months
    assert all(0 < s < 3600 for s in open_in_check.values())
    newest_ms = gauges["last_timestamp_ms"]
    for field, name in (("under_min_isr", "global_under_min_isr_partition_count"),
                        ("leaderless", "leaderless_partitions"),
                        ("manual_election_required", "manual_leader_election_required_partition_count"),
                        ("elr_in_use", "elr_in_use_partitions"), ("partitions", "partitions")):
        assert gauges[field] == metric(name), field
    assert sum(1 for c in report["open_conditions"] if c["condition"] == "under_min_isr") == gauges["under_min_isr"]

    # --since is the log's time: the whole log is within a day of its newest record,
    # and nothing of it is within the wall clock's last day (the log is from 2025).
    assert len(query("violations", "--since", "1d")) == len(found)
    assert query("unclean-elections", "--since", "1d") == elections
    since_newest = query("violations", "--since", "1s")
    assert all(v["timestamp_ms"] >= newest_ms - 1000 for v in since_newest)
    assert len(since_newest) < len(found)
