"""The simulator's output directory: a real metadata log H1's decoder reads,
whose replay gives final-state.json, plus the side files."""

from __future__ import annotations

import argparse
import json

import pytest

from kraft_audit.cli import simulate as simulate_cli
from kraft_audit.cli.main import UsageError
from kraft_audit.core.codec.logdir import (
    list_segments,
    list_snapshots,
    read_log_dir,
    read_meta_properties,
)
from kraft_audit.core.events import KIND_LOG_DIRS, KIND_REGISTRATION, MetadataEvent
from kraft_audit.sim.output import Pacer, read_output
from kraft_audit.sim.partition_change import PartitionState, apply_change, clear_elr
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import load_scenario


def replay_partitions(events):
    """A minimal independent replay of partition records (Kafka's merge rules)."""
    topics, parts = {}, {}
    for e in events:
        d = e.data
        if e.type == "TOPIC_RECORD":
            topics[d["topicId"]] = d["name"]
        elif e.type == "REMOVE_TOPIC_RECORD":
            parts = {k: v for k, v in parts.items() if k[0] != d["topicId"]}
        elif e.type == "PARTITION_RECORD":
            parts[(d["topicId"], d["partitionId"])] = PartitionState(
                tuple(d["replicas"]),
                tuple(d["isr"]),
                tuple(d.get("eligibleLeaderReplicas") or ()),
                tuple(d.get("lastKnownElr") or ()),
                d["leader"],
                d["leaderRecoveryState"],
                d["leaderEpoch"],
                d["partitionEpoch"],
                tuple(d["removingReplicas"]),
                tuple(d["addingReplicas"]),
            )
        elif e.type == "PARTITION_CHANGE_RECORD":
            key = (d["topicId"], d["partitionId"])
            parts[key] = apply_change(
                parts[key], d
            )  # decoded defaults: leader -2, lists None = unchanged
        elif e.type == "CLEAR_ELR_RECORD":
            for key in parts:
                if not d["topicName"] or topics[key[0]] == d["topicName"]:
                    parts[key] = clear_elr(parts[key])
    return topics, parts


@pytest.mark.parametrize(
    "name",
    [
        "unclean-shutdown-elr",
        "unclean-election-recovery",
        "reassignment",
        "min-isr-change",
        "chaos",
    ],
)
def test_log_decodes_and_replays_to_final_state(tmp_path, name):
    result = simulate(load_scenario(name), tmp_path, seed=4)
    events = list(read_log_dir(tmp_path))
    assert all(isinstance(e, MetadataEvent) for e in events)
    assert [e.offset for e in events] == list(range(result.records))
    assert read_meta_properties(tmp_path)["cluster.id"] == result.cluster_id
    assert (tmp_path / "bootstrap.checkpoint").is_file()
    topics, parts = replay_partitions(events)
    final = json.loads((tmp_path / "final-state.json").read_text())
    assert len(final) == len(parts) == result.partitions
    for row in final:
        p = parts[(row["topic_id"], row["partition"])]
        assert row["topic"] == topics[row["topic_id"]]
        assert (
            row["replicas"],
            row["isr"],
            row["elr"],
            row["last_known_elr"],
            row["leader"],
            row["leader_epoch"],
            row["partition_epoch"],
            row["leader_recovery_state"],
        ) == (
            list(p.replicas),
            list(p.isr),
            list(p.elr),
            list(p.last_known_elr),
            p.leader,
            p.leader_epoch,
            p.partition_epoch,
            p.leader_recovery_state,
        )


def test_batches_keep_their_atomic_limits(tmp_path):
    simulate(load_scenario("unclean-shutdown-elr"), tmp_path, seed=1)
    events = [e for e in read_log_dir(tmp_path)]
    registrations = [e for e in events if e.type == "REGISTER_BROKER_RECORD"]
    assert all(e.data["brokerEpoch"] == e.offset for e in registrations)
    # an unclean restart: the removals and the registration are one batch
    batches = {}
    for e in events:
        batches.setdefault(e.batch_base_offset, []).append(e.type)
    assert any(
        types[-1] == "REGISTER_BROKER_RECORD" and "PARTITION_CHANGE_RECORD" in types
        for types in batches.values()
    )


def test_segments_roll_and_snapshots_are_written(tmp_path):
    scenario = load_scenario("chaos")
    scenario.cluster.segment_bytes = 16 << 10
    scenario.cluster.snapshot_every = 300
    result = simulate(scenario, tmp_path, seed=2)
    assert len(list_segments(tmp_path / "__cluster_metadata-0")) > 3
    snapshots = list_snapshots(tmp_path / "__cluster_metadata-0")
    assert snapshots
    end, _epoch, path = snapshots[-1]
    snap_events = list(read_log_dir(tmp_path, start="snapshot"))
    assert snap_events[-1].offset == result.records - 1  # snapshot then the segments after it
    _topics, from_snapshot = replay_partitions(snap_events)
    _topics, from_log = replay_partitions(read_log_dir(tmp_path))
    assert from_snapshot == from_log


def test_side_files(tmp_path):
    result = simulate(
        load_scenario("stray-replicas"), tmp_path, seed=1, faults=[("stray-replica-left", 0)]
    )
    lines = (tmp_path / "registrations.jsonl").read_text().splitlines()
    assert len(lines) == len(
        [e for e in read_log_dir(tmp_path) if e.type == "REGISTER_BROKER_RECORD"]
    )
    inventories = sorted((tmp_path / "log-dirs").glob("*.json"))
    doc = json.loads(inventories[0].read_text())
    assert doc["version"] == 1 and set(doc["brokers"][0]) == {"broker", "logDirs"}
    log_dir = doc["brokers"][0]["logDirs"][0]
    assert set(log_dir) == {"logDir", "error", "partitions"}
    assert set(log_dir["partitions"][0]) == {"partition", "size", "offsetLag", "isFuture"}
    faults = json.loads((tmp_path / "faults.json").read_text())
    assert faults == result.faults and faults[0]["fault"] == "stray-replica-left"
    assert set(faults[0]) == {
        "fault",
        "rule_id",
        "also_rules",
        "offset",
        "topic_id",
        "topic",
        "partition",
        "broker_id",
    }
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["records"] == result.records and summary["faults_injected"] == 1


def test_read_output_merges_side_events_by_time(tmp_path):
    simulate(load_scenario("rolling-restart"), tmp_path, seed=1)
    events = list(read_output(tmp_path))
    kinds = [e.kind for e in events]
    assert KIND_REGISTRATION in kinds and KIND_LOG_DIRS in kinds
    for i, e in enumerate(events):
        if e.kind == KIND_REGISTRATION:  # the request comes before the record it produced
            later = [
                x
                for x in events[i:]
                if x.type == "REGISTER_BROKER_RECORD"
                and x.data["incarnationId"] == e.data["incarnationId"]
            ]
            assert later


def test_pacer_spaces_batches_in_wall_clock_time():
    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    pacer = Pacer(4.0, sleep=sleep, clock=lambda: now[0])
    for _ in range(5):
        pacer.wait()
    assert now[0] == pytest.approx(1.0) and len(slept) == 4


def test_live_mode_appends_over_time(tmp_path):
    scenario = load_scenario("min-isr-change")
    result = simulate(scenario, tmp_path, seed=1, live_rate=2000.0)
    assert len(list(read_log_dir(tmp_path))) == result.records


def run_cli(*argv):
    parser = argparse.ArgumentParser()
    simulate_cli.add_arguments(parser)
    return simulate_cli.run(parser.parse_args(list(argv)))


def test_cli(tmp_path, capsys):
    out = tmp_path / "o"
    assert (
        run_cli(
            "--scenario",
            "reassignment",
            "--out",
            str(out),
            "--seed",
            "3",
            "--faults",
            "wrong-elr@0,stray-replica-left",
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["records"] > 50 and "stray-replica-left" in summary["faults_injected"]
    with pytest.raises(UsageError, match="not an empty directory"):
        run_cli("--scenario", "chaos", "--out", str(out))
    with pytest.raises(UsageError, match="unknown fault"):
        run_cli("--scenario", "chaos", "--out", str(tmp_path / "x"), "--faults", "nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: b\nsteps:\n  - crash: 1\n  - fly: 2\n")
    with pytest.raises(UsageError, match=r"bad.yaml:4: unknown step 'fly'"):
        run_cli("--scenario", str(bad), "--out", str(tmp_path / "y"))
    assert (
        run_cli(
            "--scenario",
            "rolling-restart",
            "--out",
            str(tmp_path / "z"),
            "--partitions",
            "50",
            "--brokers",
            "4",
            "--quiet",
            "--dump-log",
        )
        == 0
    )
    dump = (tmp_path / "z" / "kafka-dump-log.txt").read_text()
    assert "baseOffset: 0 " in dump and '"type":"PARTITION_RECORD"' in dump
    assert len(json.loads((tmp_path / "z" / "final-state.json").read_text())) == 50


def test_shared_fixture_makes_output_once(simulated_log):
    first = simulated_log("min-isr-change", seed=2, faults=[("wrong-elr", 0)])
    assert simulated_log("min-isr-change", seed=2, faults=[("wrong-elr", 0)]) == first
    assert (first / "final-state.json").is_file() and (first / "faults.json").is_file()
