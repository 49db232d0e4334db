"""DeltaSinks against real Delta tables, read back with delta-rs."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from kraft_audit.spark.sinks import DELTA_SPARK_PACKAGE, DeltaSinks
from kraft_audit.tables import TABLES


def read(root, table: str) -> list[dict]:
    if TABLES[table].compacted_from:  # as of now: the stored rows and its source's tail
        from kraft_audit.tables.read import read_rows

        return read_rows(str(root), table)
    return DeltaTable(str(root / table)).to_pyarrow_table().to_pylist()


def versions(root) -> dict[str, int]:
    return {name: DeltaTable(str(root / name)).version() for name in TABLES}


@pytest.fixture
def sinks(tmp_path) -> DeltaSinks:
    return DeltaSinks(str(tmp_path), app_id="query-1")


def a_batch(rows, batch_id: int, first_offset: int) -> dict[str, list[dict]]:
    offsets = range(first_offset, first_offset + 3)
    return {
        "violations": [rows.violation(o) for o in offsets],
        "partition_history": [rows.partition(o) for o in offsets],
        "partition_state": [rows.partition(o) for o in offsets],
        "conditions": [rows.condition(first_offset)],
        "brokers": [rows.broker(1, first_offset)],
        "quarantine": [rows.quarantine(first_offset)],
        "gauges": [rows.gauges(bucket=0, partitions=1, last_offset=first_offset + 2)],
        "progress": [rows.progress(batch_id, first_offset + 2)],
    }


def test_first_write_creates_every_table_with_its_schema(sinks, tmp_path, output_rows):
    written = sinks.write_batch(0, {"violations": [output_rows.violation(1)]})

    assert written["violations"] == 1 and sum(written.values()) == 1
    for name, spec in TABLES.items():
        table = DeltaTable(str(tmp_path / name))
        assert pa.schema(table.schema().to_arrow()).names == spec.schema.names, name
        assert table.metadata().partition_columns == list(spec.partition_by), name
    assert read(tmp_path, "brokers") == []


def test_rows_read_back_with_batch_id_and_date(sinks, tmp_path, output_rows):
    sinks.write_batch(
        7, {"violations": [output_rows.violation(42)], "quarantine": [output_rows.quarantine(100)]}
    )

    [violation] = read(tmp_path, "violations")
    assert violation["offset"] == 42 and violation["batch_id"] == 7
    assert str(violation["date"]) == "2025-11-21"
    [bad] = read(tmp_path, "quarantine")
    assert bad["raw"] == b"\x00\x01" and bad["batch_id"] == 7 and bad["ingested_ms"] > 0


def test_replaying_a_batch_writes_nothing_twice(sinks, tmp_path, output_rows):
    batch = a_batch(output_rows, 0, first_offset=10)
    first = sinks.write_batch(0, batch)
    before = versions(tmp_path)

    again = sinks.write_batch(0, batch)

    assert first == {
        "violations": 3,
        "conditions": 1,
        "partition_state": 3,  # through partition_history (compacted later: one key)
        "partition_history": 3,
        "brokers": 1,
        "quarantine": 1,
        "gauges": 1,
        "progress": 1,
    }
    assert set(again.values()) == {0}
    assert versions(tmp_path) == before  # not even an empty commit
    assert len(read(tmp_path, "violations")) == 3
    assert len(read(tmp_path, "partition_history")) == 3


def test_crash_between_write_and_checkpoint_replays_without_duplicates(tmp_path, output_rows):
    """Batch 1 reached Delta, Spark died before committing its checkpoint, and
    the restarted query (a new process: a new sink) runs batch 1 again."""
    DeltaSinks(str(tmp_path), app_id="q").write_batch(0, a_batch(output_rows, 0, 10))
    DeltaSinks(str(tmp_path), app_id="q").write_batch(1, a_batch(output_rows, 1, 20))

    restarted = DeltaSinks(str(tmp_path), app_id="q")
    assert restarted.write_batch(1, a_batch(output_rows, 1, 20))["violations"] == 0
    assert restarted.write_batch(2, a_batch(output_rows, 2, 30))["violations"] == 3

    violation_ids = [r["violation_id"] for r in read(tmp_path, "violations")]
    assert len(violation_ids) == len(set(violation_ids)) == 9
    assert sorted(r["batch_id"] for r in read(tmp_path, "progress")) == [0, 1, 2]
    assert [r["offset"] for r in read(tmp_path, "partition_state")] == [32]
    assert restarted.committed_batch("violations") == 2


def test_crash_half_way_through_a_batch_writes_only_the_missing_tables(
    sinks, tmp_path, output_rows
):
    """The sink died after `violations` but before `conditions`: the replay
    completes `conditions` and leaves `violations` alone."""
    full = a_batch(output_rows, 5, 10)
    sinks.write_batch(5, {"violations": full["violations"]})

    replay = sinks.write_batch(5, full)

    assert replay["violations"] == 0 and replay["conditions"] == 1
    assert len(read(tmp_path, "violations")) == 3
    assert len(read(tmp_path, "conditions")) == 1


def test_a_table_with_no_rows_in_a_batch_gets_no_commit_and_replays_stay_exactly_once(
    tmp_path, output_rows
):
    """Batch 1 has violations only: no other table commits (its txn stays at batch 0).
    A restarted sink replaying batch 1, then batch 2 with rows for every table, writes
    each row once."""
    DeltaSinks(str(tmp_path), app_id="q").write_batch(0, a_batch(output_rows, 0, 10))
    before = versions(tmp_path)
    sink = DeltaSinks(str(tmp_path), app_id="q")
    sink.write_batch(1, {"violations": [output_rows.violation(20)], "progress": [output_rows.progress(1, 20)]})
    after = versions(tmp_path)
    assert {n for n in TABLES if after[n] != before[n]} == {"violations", "progress"}
    assert sink.committed_batch("conditions") == 0 and sink.committed_batch("violations") == 1

    restarted = DeltaSinks(str(tmp_path), app_id="q")
    replay = restarted.write_batch(1, {"violations": [output_rows.violation(20)],
                                       "progress": [output_rows.progress(1, 20)]})
    assert set(replay.values()) == {0} and versions(tmp_path) == after
    written = restarted.write_batch(2, a_batch(output_rows, 2, 30))
    assert written["conditions"] == 1 and written["violations"] == 3
    assert sorted(r["offset"] for r in read(tmp_path, "violations")) == [10, 11, 12, 20, 30, 31, 32]
    assert len(read(tmp_path, "conditions")) == 2
    assert sorted(r["batch_id"] for r in read(tmp_path, "progress")) == [0, 1, 2]


def test_another_app_id_is_another_writer(tmp_path, output_rows):
    """A fresh checkpoint restarts batch ids at 0: a new app id must write them."""
    DeltaSinks(str(tmp_path), app_id="old-query").write_batch(
        3, {"violations": [output_rows.violation(1)]}
    )
    new = DeltaSinks(str(tmp_path), app_id="new-query").write_batch(
        0, {"violations": [output_rows.violation(2)]}
    )
    assert new["violations"] == 1


def test_condition_close_updates_the_open_interval(sinks, tmp_path, output_rows):
    sinks.write_batch(
        0, {"conditions": [output_rows.condition(10), output_rows.condition(12, partition=1)]}
    )
    sinks.write_batch(1, {"conditions": [output_rows.condition(10, end=15)]})
    # a late replay of the open row (e.g. re-emitted after a state restore) must not reopen it
    sinks.write_batch(2, {"conditions": [output_rows.condition(10)]})

    rows = {r["partition"]: r for r in read(tmp_path, "conditions")}
    assert len(rows) == 2
    assert (rows[0]["start_offset"], rows[0]["end_offset"]) == (10, 15)
    assert rows[0]["end_ms"] - rows[0]["start_ms"] == 5000
    assert rows[1]["end_offset"] is None


def test_interval_opened_and_closed_in_one_batch_is_one_closed_row(sinks, tmp_path, output_rows):
    sinks.write_batch(
        0, {"conditions": [output_rows.condition(10), output_rows.condition(10, end=11)]}
    )
    [row] = read(tmp_path, "conditions")
    assert row["end_offset"] == 11


def test_partition_state_keeps_the_row_with_the_highest_offset(sinks, tmp_path, output_rows):
    def both(rows):  # partition_state's rows reach it through partition_history
        return {"partition_state": rows, "partition_history": rows}

    sinks.write_batch(0, both([output_rows.partition(20, isr=[1, 2]),
                               output_rows.partition(10, isr=[1])]))
    sinks.write_batch(1, both([output_rows.partition(15, isr=[3]),
                               output_rows.partition(16, partition=1)]))
    sinks.write_batch(2, both([output_rows.partition(30, isr=[1, 2, 3])]))

    rows = {r["partition"]: r for r in read(tmp_path, "partition_state")}
    assert (rows[0]["offset"], rows[0]["isr"]) == (30, [1, 2, 3])
    assert rows[1]["offset"] == 16
    assert len(read(tmp_path, "partition_state")) == 2


def test_partition_state_rows_without_their_history_are_refused(sinks, output_rows):
    rows = [output_rows.partition(20)]
    with pytest.raises(ValueError, match="compacted from partition_history"):
        sinks.write_batch(0, {"partition_state": rows})
    with pytest.raises(ValueError, match="compacted from partition_history"):
        sinks.write_batch(0, {"partition_state": rows,
                              "partition_history": [output_rows.partition(21)]})


def merged_per_batch(path: str, batches: list[list[dict]]):
    """The reference: partition_state as a MERGE of every micro-batch writes it."""
    from kraft_audit.spark.sinks import _DeltaRsWriter
    from kraft_audit.tables import PARTITION_STATE, core_to_arrow, dedupe_latest_arrow, stamp_arrow

    writer = _DeltaRsWriter()
    writer.create(path, PARTITION_STATE)
    for batch_id, rows in enumerate(batches):
        data = stamp_arrow("partition_state", core_to_arrow("partition_state", rows), batch_id, "q")
        writer.merge(DeltaTable(path), path, PARTITION_STATE,
                     dedupe_latest_arrow("partition_state", data), "q", batch_id)
        yield DeltaTable(path).to_pyarrow_table().to_pylist()


def random_partition_batches(output_rows, seed: int, batches: int = 10) -> list[list[dict]]:
    """Changes to 12 partitions of two clusters, out of order across batches, with
    equal offsets across batches (a batch holds one row per partition and offset,
    as the operator emits them)."""
    import random

    rnd = random.Random(seed)
    out = []
    for b in range(batches):
        rows = []
        for offset in rnd.sample(range(16), 12):
            rows.append(output_rows.partition(offset, partition=rnd.randrange(6), leader=b,
                                              cluster_id=rnd.choice(["c1", "c2"])))
        out.append(rows)
    return out


@pytest.mark.parametrize("compact_every", [0, 1, 3])
def test_partition_state_as_of_now_is_what_a_merge_per_batch_gives(tmp_path, output_rows,
                                                                    compact_every):
    """Before and after any compaction, read as of now, the same rows (batch ids
    included) as the MERGE every micro-batch that partition_state was until then."""
    from kraft_audit.tables.read import read_tail

    batches = random_partition_batches(output_rows, seed=compact_every)
    sinks = DeltaSinks(str(tmp_path / "tables"), app_id="q")
    reference = merged_per_batch(str(tmp_path / "merged"), batches)
    compactions = 0
    for batch_id, rows in enumerate(batches):
        sinks.write_batch(batch_id, {"partition_state": rows, "partition_history": rows})
        if compact_every and (batch_id + 1) % compact_every == 0:
            assert sinks.compact() > 0
            compactions += 1
        want = sorted(next(reference), key=repr)
        assert sorted(read(tmp_path / "tables", "partition_state"), key=repr) == want, batch_id
    assert compactions == (len(batches) // compact_every if compact_every else 0)
    # compacted, the Delta table alone holds those rows; compacting again merges nothing
    sinks.compact()
    stored = DeltaTable(str(tmp_path / "tables" / "partition_state")).to_pyarrow_table().to_pylist()
    assert sorted(stored, key=repr) == want
    assert sinks.compact() == 0 and read_tail(str(tmp_path / "tables"), "partition_state") == (None, None)
    assert sorted(read(tmp_path / "tables", "partition_state"), key=repr) == want


def test_brokers_and_gauges_merge_on_their_keys(sinks, tmp_path, output_rows):
    sinks.write_batch(
        0,
        {
            "brokers": [output_rows.broker(1, 5), output_rows.broker(2, 6)],
            "gauges": [
                output_rows.gauges(0, under_min_isr=3),
                output_rows.gauges(1, under_min_isr=1),
            ],
        },
    )
    sinks.write_batch(
        1,
        {
            "brokers": [output_rows.broker(1, 9, fenced=True)],
            "gauges": [output_rows.gauges(0, under_min_isr=0, electable_leaders={"0": 1, "3": 4})],
        },
    )

    brokers = {r["broker_id"]: r for r in read(tmp_path, "brokers")}
    assert brokers[1]["fenced"] is True and brokers[1]["offset"] == 9
    assert brokers[2]["fenced"] is False
    gauges = {r["bucket"]: r for r in read(tmp_path, "gauges")}
    assert gauges[0]["under_min_isr"] == 0 and dict(gauges[0]["electable_leaders"]) == {
        "0": 1,
        "3": 4,
    }
    assert gauges[1]["under_min_isr"] == 1 and gauges[0]["batch_id"] == 1


def test_a_merged_table_written_by_an_older_release_gains_the_new_columns(tmp_path, output_rows):
    """The gauges table of a release before reassignment_stalled existed, continued."""
    from kraft_audit.tables import GAUGES

    old = GAUGES.schema.remove(GAUGES.schema.get_field_index("reassignment_stalled"))
    DeltaTable.create(str(tmp_path / "gauges"), old, partition_by=None)
    DeltaSinks(str(tmp_path), app_id="query-1").write_batch(
        0, {"gauges": [output_rows.gauges(0, reassignment_stalled=2, under_min_isr=1)]})
    [row] = read(tmp_path, "gauges")
    assert (row["reassignment_stalled"], row["under_min_isr"]) == (2, 1)


def test_a_conditions_table_of_an_older_release_gains_the_min_isr_source(tmp_path, output_rows):
    """Conditions made before min_isr_source and resource existed, with an interval open:
    continued, the old interval closes (its source unknown: null), a new one says its source,
    a delegation token's names its token."""
    from kraft_audit.tables import CONDITIONS

    old = CONDITIONS.schema.remove(CONDITIONS.schema.get_field_index("min_isr_source"))
    old = old.remove(old.get_field_index("resource"))
    path = str(tmp_path / "conditions")
    DeltaTable.create(path, old, partition_by=None)
    from deltalake import write_deltalake
    from kraft_audit.tables import core_to_arrow, stamp_arrow
    opened = stamp_arrow("conditions", core_to_arrow("conditions", [output_rows.condition(10)]), 0, "old")
    write_deltalake(path, opened.select(old.names).cast(old), mode="append")
    DeltaSinks(str(tmp_path), app_id="query-1").write_batch(0, {"conditions": [
        output_rows.condition(10, end=15), output_rows.condition(20, partition=1, min_isr_source="log"),
        output_rows.condition(30, condition="delegation_token_expired", partition=-1, topic=None, topic_id="",
                              resource="tok-a", interval_id="c/delegation_token_expired/token/tok-a/30")]})
    rows = {r["partition"]: r for r in read(tmp_path, "conditions")}
    assert (rows[0]["end_offset"], rows[0]["min_isr_source"], rows[0]["resource"]) == (15, None, None)
    assert (rows[1]["end_offset"], rows[1]["min_isr_source"]) == (None, "log")
    assert (rows[-1]["condition"], rows[-1]["topic_id"], rows[-1]["resource"]) == (
        "delegation_token_expired", "", "tok-a")


def test_a_progress_table_of_an_older_release_takes_the_new_counts(tmp_path, output_rows):
    """An append table (progress) made before side_inputs, unreadable and held existed, continued."""
    from kraft_audit.tables import PROGRESS

    old = PROGRESS.schema
    for name in ("side_inputs", "unreadable", "held"):
        old = old.remove(old.get_field_index(name))
    DeltaTable.create(str(tmp_path / "progress"), old, partition_by=None)
    row = output_rows.progress(0, max_offset=9, records=10)
    row.update(side_inputs=3, unreadable=0, held=1)
    DeltaSinks(str(tmp_path), app_id="query-1").write_batch(0, {"progress": [row]})
    [written] = read(tmp_path, "progress")
    assert (written["records"], written["side_inputs"], written["held"]) == (10, 3, 1)


def test_gauges_of_a_new_run_replace_those_of_the_old_one(tmp_path, output_rows):
    old = DeltaSinks(str(tmp_path), app_id="old-checkpoint")
    old.write_batch(9, {"gauges": [output_rows.gauges(0, under_min_isr=5)]})
    new = DeltaSinks(str(tmp_path), app_id="new-checkpoint")
    new.write_batch(0, {"gauges": [output_rows.gauges(0, under_min_isr=1)]})
    [row] = read(tmp_path, "gauges")
    assert (row["under_min_isr"], row["batch_id"]) == (1, 0)


def test_progress_records_the_cost_of_the_writes(sinks, tmp_path, output_rows):
    sinks.write_batch(0, a_batch(output_rows, 0, 10))
    [progress] = read(tmp_path, "progress")
    assert 0 < progress["write_seconds"] == pytest.approx(sinks.last_write_seconds)
    assert progress["clusters"][0]["max_offset"] == 12


def test_mistakes_are_clear_errors(sinks, output_rows):
    with pytest.raises(ValueError, match="no such table.*violation"):
        sinks.write_batch(0, {"violation": [output_rows.violation(1)]})
    with pytest.raises(ValueError, match="column cluster_id is null"):
        sinks.write_batch(0, {"violations": [output_rows.violation(1, cluster_id=None)]})
    with pytest.raises(ValueError, match="unknown Delta backend"):
        DeltaSinks("x", "parquet", app_id="q")
    with pytest.raises(ValueError, match="needs the SparkSession"):
        DeltaSinks("x", "delta-spark", app_id="q")


def test_delta_spark_backend_without_the_jars_says_how_to_get_them(tmp_path, monkeypatch):
    from kraft_audit.spark.session import DeltaJarsMissing, build_session, delta_spark_jars

    monkeypatch.setenv("DELTA_SPARK_JARS_DIR", str(tmp_path))
    with pytest.raises(DeltaJarsMissing, match="run make delta-spark"):
        delta_spark_jars()
    # a local session is refused before a JVM starts without them
    with pytest.raises(DeltaJarsMissing, match=DELTA_SPARK_PACKAGE):
        build_session("local[1]", delta_spark=True)


def test_run_with_delta_spark_but_no_jars_is_a_usage_error(tmp_path, monkeypatch, capsys):
    from kraft_audit.cli.main import main
    from kraft_audit.sim.runner import simulate
    from kraft_audit.sim.scenario import load_scenario

    monkeypatch.setenv("DELTA_SPARK_JARS_DIR", str(tmp_path))
    simulate(load_scenario("min-isr-change"), tmp_path / "sim", seed=1)
    code = main(["run", "--once", "--log-dir", str(tmp_path / "sim"), "--backend", "delta-spark",
                 "--checkpoint", str(tmp_path / "ck"), "--tables", str(tmp_path / "tables"),
                 "--no-metrics"])
    assert code == 2
    assert "run make delta-spark" in capsys.readouterr().err


# ------------------------------------------------- Arrow tables as input


def as_core_arrow(batch: dict[str, list[dict]]) -> dict:
    """The batch as the streaming job hands it over: core-column Arrow tables
    (gauges and progress stay row dicts)."""
    from kraft_audit.tables import core_to_arrow

    return {
        name: rows if name in ("gauges", "progress") else core_to_arrow(name, rows)
        for name, rows in batch.items()
    }


def test_arrow_tables_are_written_like_row_dicts(tmp_path, output_rows):
    as_rows = DeltaSinks(str(tmp_path / "rows"), app_id="q")
    as_arrow = DeltaSinks(str(tmp_path / "arrow"), app_id="q")
    for batch_id, first in ((0, 10), (1, 12)):  # partition 0 moves on: the merge replaces it
        batch = a_batch(output_rows, batch_id, first)
        batch["conditions"].append(output_rows.condition(first, end=first + 1))  # close in-batch
        assert as_rows.write_batch(batch_id, batch) == as_arrow.write_batch(
            batch_id, as_core_arrow(batch)
        )
    drop = {"ingested_ms", "write_seconds", "duration_seconds"}  # wall-clock figures

    def rows(root, name):
        got = [{k: v for k, v in r.items() if k not in drop} for r in read(root, name)]
        return sorted(got, key=repr)

    for name in TABLES:
        assert rows(tmp_path / "rows", name) == rows(tmp_path / "arrow", name), name
    [state] = read(tmp_path / "arrow", "partition_state")
    assert (state["offset"], state["batch_id"]) == (14, 1)
    history = read(tmp_path / "arrow", "partition_history")
    assert str(history[0]["date"]) == "2025-11-21" and len(history) == 6
    [bad, _] = read(tmp_path / "arrow", "quarantine")
    assert bad["ingested_ms"] > 0 and bad["raw"] == b"\x00\x01"
    # a replayed batch writes nothing twice, Arrow or not
    replay = as_arrow.write_batch(1, as_core_arrow(a_batch(output_rows, 1, 12)))
    assert sum(replay.values()) == 0


def test_arrow_rows_without_a_key_are_refused(sinks, output_rows):
    from kraft_audit.tables import core_to_arrow

    data = core_to_arrow("violations", [output_rows.violation(1, cluster_id=None)])
    with pytest.raises(ValueError, match="column cluster_id is null"):
        sinks.write_batch(0, {"violations": data})


def dedupe_latest(table: str, rows: list[dict]) -> list[dict]:
    """The reference: one row per key, the highest `order_by` (null lowest; on
    ties the later row), written the plain way."""
    from kraft_audit.tables import TABLES

    spec = TABLES[table]

    def rank(row):
        value = row.get(spec.order_by) if spec.order_by else None
        return (value is not None, value if value is not None else 0)

    latest: dict[tuple, dict] = {}
    for row in rows:
        key = tuple(row.get(k) for k in spec.keys)
        if key not in latest or rank(row) >= rank(latest[key]):
            latest[key] = row
    return list(latest.values())


def test_dedupe_latest_arrow_keeps_what_dedupe_latest_keeps(output_rows):
    import random

    from kraft_audit.tables import core_to_arrow, dedupe_latest_arrow

    rnd = random.Random(7)
    partitions = [
        output_rows.partition(rnd.randrange(6), partition=rnd.randrange(4), leader=i)
        for i in range(200)  # many ties on offset: the later row must win
    ]
    conditions = [  # null end_offset ranks lowest; end_ms tells the rows apart
        output_rows.condition(rnd.randrange(3), end=rnd.choice([None, None, 5, 6]), end_ms=i)
        for i in range(200)
    ]
    for name, rows, table in (
        ("partition_state", partitions, "partition_history"),
        ("conditions", conditions, "conditions"),
    ):
        expected = dedupe_latest(name, rows)
        got = dedupe_latest_arrow(name, core_to_arrow(table, rows)).to_pylist()
        assert len(expected) < len(rows)
        strip = [{k: r[k] for k in got[0]} for r in expected]
        assert sorted(got, key=repr) == sorted(strip, key=repr), name


def test_every_table_is_fed_by_an_operator_output_its_spec_names():
    from kraft_audit.spark import operator as op
    from kraft_audit.tables import routes

    outputs = {op.T_VIOLATIONS, op.T_CONDITIONS, op.T_PARTITIONS, op.T_BROKERS, op.T_QUARANTINE,
               op.T_GAUGES}
    assert set(routes()) == outputs
    fed = {table for tables in routes().values() for table in tables}
    assert fed == set(TABLES) - {"progress"}  # progress is the job's own row
    # the operator's Arrow outputs carry the core columns of a table they feed
    for output, table in op.ARROW_TABLES.items():
        assert table in routes()[output]


def test_kraft_audit_compact_merges_the_tail_once(tmp_path, output_rows, capsys):
    from kraft_audit.cli.main import EXIT_USAGE, main

    root = tmp_path / "tables"
    sinks = DeltaSinks(str(root), app_id="q")
    batches = random_partition_batches(output_rows, seed=5, batches=4)
    for batch_id, rows in enumerate(batches):
        sinks.write_batch(batch_id, {"partition_state": rows, "partition_history": rows})
    as_of_now = sorted(read(root, "partition_state"), key=repr)
    assert DeltaTable(str(root / "partition_state")).to_pyarrow_table().num_rows == 0

    assert main(["compact", str(root)]) == 0
    assert f"partition_state: {len(as_of_now)} rows merged" in capsys.readouterr().out
    stored = DeltaTable(str(root / "partition_state")).to_pyarrow_table().to_pylist()
    assert sorted(stored, key=repr) == as_of_now == sorted(read(root, "partition_state"), key=repr)
    assert main(["compact", str(root)]) == 0
    assert "partition_state: 0 rows merged" in capsys.readouterr().out
    assert main(["compact", str(tmp_path / "nothing")]) == EXIT_USAGE
    assert "no Delta table 'partition_state'" in capsys.readouterr().err
