"""`kraft-audit describe`: partition state after replay, like kafka-topics --describe."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

import pytest

from conftest import REAL_FIXTURES
from log_cuts import RENO, RENO_SNAPSHOT, RENO_SNAPSHOT_END, booted_from_snapshot

from kraft_audit.cli import describe
from kraft_audit.cli.log_input import read_path
from kraft_audit.cli.main import EXIT_USAGE, UsageError, main
from kraft_audit.core.events import MetadataEvent
from kraft_audit.sim import load_scenario, simulate

INCIDENT = Path(__file__).parent / "fixtures" / "timeline-incident.yaml"

FIXTURE = REAL_FIXTURES / "subpxl__streamprocessing"


def run_describe(*argv) -> int:
    parser = argparse.ArgumentParser()
    describe.add_arguments(parser)
    return describe.run(parser.parse_args([str(a) for a in argv]))


def test_table_at_the_end_of_the_log(capsys):
    assert run_describe(FIXTURE, "--topic", "__consumer_offsets") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Topic: __consumer_offsets\tTopicId: A1HQPtsjSJmoitW78c4jaA\t"
                               "PartitionCount: 50\tReplicationFactor: 1")
    assert lines[1] == ("\tTopic: __consumer_offsets\tPartition: 0\tLeader: none\tReplicas: 1\tIsr: 1\t"
                        "Elr: \tLastKnownElr: \tLeaderRecoveryState: RECOVERED\tLeaderEpoch: 5\t"
                        "PartitionEpoch: 5")
    assert len(lines) == 51


def test_json_at_an_offset(capsys):
    run_describe(FIXTURE, "--json", "--at-offset", "300", "--topic", "__consumer_offsets")
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 50
    assert (rows[0]["leader"], rows[0]["leader_epoch"], rows[0]["partition_epoch"]) == (1, 0, 0)


def test_unknown_topic_is_a_usage_error():
    with pytest.raises(UsageError, match="does not exist at offset 5"):
        run_describe(FIXTURE, "--topic", "__consumer_offsets", "--at-offset", "5")


# ------------------------------------------------------------------ helpers


def json_rows(capsys, *argv) -> list[dict]:
    assert run_describe(*argv, "--json") == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def text_of(capsys, *argv) -> str:
    assert run_describe(*argv) == 0
    return capsys.readouterr().out


def partition_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("\tTopic: ")]


def records(path: Path) -> list[MetadataEvent]:
    return [e for e in read_path(path, None, "earliest") if isinstance(e, MetadataEvent)]


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def crashes(tmp_path_factory) -> Path:
    """A simulated 3-broker cluster through crashes, an unclean election and restarts
    (the scenario of docs/timeline.md), min.insync.replicas=2."""
    out = tmp_path_factory.mktemp("describe-crashes")
    simulate(load_scenario(str(INCIDENT)), out, seed=0)
    return out


@pytest.fixture(scope="module")
def shutdowns(tmp_path_factory) -> Path:
    """Crashes and a controlled shutdown on 4 brokers, two topics (min ISR 2 and 3)."""
    out = tmp_path_factory.mktemp("describe-shutdowns")
    simulate(load_scenario("unclean-shutdown-elr"), out, seed=1)
    return out


def busiest_offset(path: Path, keep) -> int:
    """The offset after which the most partitions are kept by `keep(row)`, replayed
    independently of the filters (describe --json at each partition record)."""
    best, best_count = None, -1
    for event in records(path):
        if event.type != "PARTITION_CHANGE_RECORD":
            continue
        rows = describe.describe(describe.replay(path, None, event.offset), None)
        count = sum(1 for row in rows if keep(row))
        if 0 < count < len(rows) and count > best_count:
            best, best_count = event.offset, count
    assert best is not None, "the log must have a point where some, not all, partitions match"
    return best


# ------------------------------------------------------------------ kafka-topics' filters


def test_unavailable_partitions_are_those_without_a_leader(capsys):
    """Niloufar's cluster ends after a clean shutdown with every partition leaderless."""
    fixture = REAL_FIXTURES / "Niloufar1171__LDI-POC"
    lines = partition_lines(text_of(capsys, fixture, "--unavailable-partitions"))
    assert len(lines) == 54 and all("\tLeader: none\t" in line for line in lines)
    # earlier, while the broker led them, none was unavailable
    assert text_of(capsys, FIXTURE, "--unavailable-partitions", "--at-offset", "300") == "(none)\n"


@pytest.mark.parametrize("flag, keep", [
    ("--unavailable-partitions", lambda r: r["leader"] == -1),
    ("--under-replicated-partitions",
     lambda r: len(r["isr"]) < len(r["replicas"]) - len(r["adding_replicas"])),
    ("--under-min-isr-partitions", lambda r: len(r["isr"]) < r["effective_min_isr"]),
])
def test_filters_keep_exactly_the_matching_partitions(shutdowns, capsys, flag, keep):
    offset = busiest_offset(shutdowns, keep)
    everything = json_rows(capsys, shutdowns, "--at-offset", offset)
    expected = [(r["topic"], r["partition"]) for r in everything if keep(r)]
    kept = json_rows(capsys, shutdowns, "--at-offset", offset, flag)
    assert [(r["topic"], r["partition"]) for r in kept] == expected
    text = text_of(capsys, shutdowns, "--at-offset", offset, flag)
    assert len(partition_lines(text)) == len(expected)
    # the topic line still counts all of the topic's partitions
    assert "Topic: orders\tTopicId: " not in text or "PartitionCount: 8\t" in text


def test_under_min_isr_uses_the_topics_effective_min_isr(shutdowns, capsys):
    """`strict` sets min.insync.replicas=3 on replication factor 3, `orders` inherits 2:
    an ISR of two is under min ISR in strict only."""
    rows = json_rows(capsys, shutdowns)
    assert {r["topic"]: r["effective_min_isr"] for r in rows} == {"orders": 2, "strict": 3}
    for event in records(shutdowns):
        if event.type != "PARTITION_CHANGE_RECORD":
            continue
        state = json_rows(capsys, shutdowns, "--at-offset", event.offset)
        two = {(r["topic"], r["partition"]) for r in state if len(r["isr"]) == 2}
        if {t for t, _ in two} == {"orders", "strict"}:
            kept = json_rows(capsys, shutdowns, "--at-offset", event.offset,
                             "--under-min-isr-partitions")
            kept = {(r["topic"], r["partition"]) for r in kept}
            assert {k for k in two if k[0] == "strict"} <= kept
            assert not {k for k in two if k[0] == "orders"} & kept
            return
    pytest.fail("no point where both topics have a partition with an ISR of two")


def test_nothing_matching_prints_none(capsys):
    assert text_of(capsys, FIXTURE, "--under-replicated-partitions") == "(none)\n"
    assert text_of(capsys, FIXTURE, "--under-min-isr-partitions") == "(none)\n"
    assert run_describe(FIXTURE, "--under-min-isr-partitions", "--json") == 0
    assert capsys.readouterr().out == ""  # JSON lines: no line, not a word


def test_filters_exclude_each_other_and_the_views():
    for argv in (["--unavailable-partitions", "--under-min-isr-partitions"],
                 ["--brokers", "--under-replicated-partitions"], ["--brokers", "--features"]):
        with pytest.raises(SystemExit) as exit_info:
            run_describe(FIXTURE, *argv)
        assert exit_info.value.code == 2


# ------------------------------------------------------------------ --at-time


def test_at_time_is_the_state_after_the_last_record_at_or_before_it(capsys):
    events = records(FIXTURE)
    changes = [e for e in events if e.type == "PARTITION_CHANGE_RECORD"]
    moment = changes[len(changes) // 2].timestamp_ms
    last = max(e.offset for e in events if e.timestamp_ms <= moment)
    at_time = json_rows(capsys, FIXTURE, "--at-time", _iso_ms(moment))
    assert at_time == json_rows(capsys, FIXTURE, "--at-offset", last)
    assert at_time != json_rows(capsys, FIXTURE)  # it is not simply the end of the log
    # the same moment written in another zone
    plus_one = dt.datetime.fromtimestamp(moment / 1000, dt.timezone(dt.timedelta(hours=1)))
    assert json_rows(capsys, FIXTURE, "--at-time", plus_one.isoformat(timespec="milliseconds")) == at_time


def _iso_ms(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds")


def test_at_time_before_the_log_or_malformed_is_a_usage_error(capsys):
    first = records(FIXTURE)[0].timestamp_ms
    with pytest.raises(UsageError, match=f"no record .* is at or before .*its first record is at "
                                         f"{iso(first)}"):
        run_describe(FIXTURE, "--at-time", "2001-01-01")
    for argv in (["--at-time", "yesterday"], ["--at-time", "2026-11-25T09:12:03Z",
                                              "--at-offset", "5"]):
        with pytest.raises(SystemExit) as exit_info:
            main(["describe", str(FIXTURE), *argv])
        assert exit_info.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert "argument --at-time: 'yesterday' is not an ISO-8601 time" in err
    assert "not allowed with argument" in err


# ------------------------------------------------------------------ --brokers, --features


def test_brokers_view_names_the_last_change_of_each_broker(capsys):
    events = [e for e in records(FIXTURE) if e.data.get("brokerId") == 1 or e.data.get("id") == 1]
    last = events[-1]
    [row] = json_rows(capsys, FIXTURE, "--brokers")
    assert (row["broker_id"], row["epoch"], row["fenced"]) == (1, 923, True)  # EXPECTED.json
    assert (row["offset"], row["timestamp_ms"]) == (last.offset, last.timestamp_ms)
    assert row["in_controlled_shutdown"] and row["registered"]
    # three restarts, each after a controlled shutdown: the last one was clean
    assert row["last_shutdown"] == "clean"
    header, line = text_of(capsys, FIXTURE, "--brokers").splitlines()
    # ... read from the log alone (no request log given): the view says so
    assert row["last_shutdown_source"] == "inferred"
    assert header.split() == ["broker", "epoch", "registered", "fenced", "controlled_shutdown",
                              "last_shutdown", "last_shutdown_source", "last_change_offset",
                              "last_change_time"]
    assert line.split() == ["1", "923", "yes", "yes", "yes", "clean", "inferred", str(last.offset),
                            iso(last.timestamp_ms)]


def test_brokers_view_tells_unclean_restarts(crashes, capsys):
    """Every broker of the incident crashed (no controlled shutdown) and came back. From the
    log alone that is unclean for brokers 1 and 2, which led the partition when fenced; broker
    3 led nothing, and Kafka fences a broker that leads nothing at once on a clean stop too
    (never marking it in controlled shutdown): its verdict is unknown. Each says it is inferred."""
    rows = json_rows(capsys, crashes, "--brokers")
    assert [r["broker_id"] for r in rows] == [1, 2, 3]
    assert [r["last_shutdown"] for r in rows] == ["unclean", "unclean", "unknown"]
    assert {r["last_shutdown_source"] for r in rows} == {"inferred"}
    assert all(r["registered"] and not r["fenced"] for r in rows)
    before_any_restart = records(crashes)[0].offset + 30
    early = json_rows(capsys, crashes, "--brokers", "--at-offset", before_any_restart)
    assert {r["last_shutdown"] for r in early} == {None}
    assert "  -  " in text_of(capsys, crashes, "--brokers", "--at-offset", before_any_restart)


def test_features_view_lists_metadata_version_first(capsys):
    expected = json.loads((FIXTURE / "EXPECTED.json").read_text())["features"]
    rows = json_rows(capsys, FIXTURE, "--features")
    assert rows[0] == {"feature": "metadata.version", "level": 25}
    assert {r["feature"]: r["level"] for r in rows} == expected
    lines = text_of(capsys, FIXTURE, "--features").splitlines()
    assert lines[0].split() == ["feature", "level"]
    assert lines[1].split() == ["metadata.version", "25", "(4.0-IV3)"]
    assert sorted(line.split()[0] for line in lines[2:]) == ["group.version", "transaction.version"]


def test_topic_does_not_apply_to_brokers_or_features():
    with pytest.raises(UsageError, match="--topic applies to partitions"):
        run_describe(FIXTURE, "--brokers", "--topic", "x")


# ------------------------------------------------------------------ snapshots: absolute offsets


SNAPSHOT_END = RENO_SNAPSHOT_END


@pytest.fixture(scope="module")
def from_snapshot(tmp_path_factory) -> Path:
    return booted_from_snapshot(tmp_path_factory.mktemp("from-snapshot"))


def test_a_log_booted_from_a_snapshot_describes_like_the_whole_log(from_snapshot, capsys):
    whole = RENO
    assert json_rows(capsys, from_snapshot) == json_rows(capsys, whole)
    for offset in (SNAPSHOT_END - 1, SNAPSHOT_END + 500):
        assert json_rows(capsys, from_snapshot, "--at-offset", offset) == json_rows(
            capsys, whole, "--at-offset", offset)


def test_snapshot_records_are_at_the_snapshots_offset_not_their_position(from_snapshot, capsys):
    snapshot = from_snapshot / "__cluster_metadata-0" / RENO_SNAPSHOT
    header = records(snapshot)[0]
    assert header.type == "SNAPSHOT_HEADER"
    for path in (snapshot, from_snapshot):
        [broker] = json_rows(capsys, path, "--brokers", "--at-offset", SNAPSHOT_END - 1)
        assert (broker["offset"], broker["timestamp_ms"]) == (
            SNAPSHOT_END - 1, header.data["lastContainedLogTimestamp"])
        # position 5 of the snapshot file is not offset 5 of the log: before the snapshot
        # there is nothing to describe
        with pytest.raises(UsageError, match=f"its first record is at offset {SNAPSHOT_END - 1}"):
            run_describe(path, "--at-offset", 5)
    assert f"  {SNAPSHOT_END - 1}  " in text_of(capsys, snapshot, "--brokers")


def test_the_min_isr_it_used_is_said(tmp_path, capsys):
    run_describe(FIXTURE, "--topic", "__consumer_offsets")
    assert "min ISR unknown (assumed 1)" in capsys.readouterr().err
    run_describe(FIXTURE, "--topic", "__consumer_offsets", "--min-insync-replicas", "2")
    captured = capsys.readouterr()
    assert "min ISR 2 (from --min-insync-replicas)" in captured.err
    assert "EffectiveMinIsr: 1" in captured.out  # replication factor 1 caps it


def test_a_log_that_starts_mid_history_is_said_partial(tmp_path, capsys):
    from log_cuts import later_segment

    later, start = later_segment(tmp_path)
    assert run_describe(later, "--cluster-id", "c") == 0
    err = capsys.readouterr().err
    assert f"# partial log: it starts at offset {start} without a snapshot" in err
    assert "skipped offset" not in err  # one line, not one per record about the unknown
