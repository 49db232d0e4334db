"""The delta-spark backend for real: the streaming job writes every table
through Spark's Delta connector (jars from `make delta-spark`), exactly once
across a crash and restart; delta-rs and Spark read what the other wrote; the
analysts' questions as Spark SQL answer like `kraft-audit query`.

Kept small (about 175 records, a few micro-batches per run): every Delta
commit through Spark costs a Spark job or two on 2 cores."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from deltalake import DeltaTable

from kraft_audit import questions
from kraft_audit.config import Config, load_config
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import parse_scenario
from kraft_audit.spark import questions_sql
from kraft_audit.spark.job import AuditJob
from kraft_audit.spark.session import DELTA_VERSION, delta_spark_jars
from kraft_audit.spark.sinks import DeltaSinks
from kraft_audit.tables import TABLES
from kraft_audit.tables.read import spark_frame

pytestmark = pytest.mark.spark

# Under-min-ISR intervals (closed and still open), unclean elections and their
# recovery, registrations and log-dir inventories, and two injected controller
# bugs, so every table and every question has rows.
SCENARIO = """
name: delta-spark
cluster: {brokers: 3, metadata_version: 3.7-IV4, min_insync_replicas: 2}
topics:
  - {name: orders, partitions: 3, replication_factor: 3, configs: {unclean.leader.election.enable: true}}
  - {name: ledger, partitions: 2, replication_factor: 3}
steps:
  - crash: 1
  - heartbeat_timeout: 1
  - crash: 2
  - heartbeat_timeout: 2
  - restart: 2
  - catch_up
  - crash: 3
  - heartbeat_timeout: 3
  - crash: 2
  - heartbeat_timeout: 2
  - register: 1
  - unfence: 1
  - unclean_elections
  - finish_recovery
  - log_dirs
"""
FAULTS = [("leader-epoch-not-bumped", 0), ("isr-not-shrunk-on-fence", 4)]

# Columns that differ between two correct runs: wall-clock times and the writer's id.
VOLATILE = {"ingested_ms", "app_id", "started_ms", "duration_seconds", "process_seconds",
            "write_seconds"}


@pytest.fixture(scope="module")
def sim(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("delta-spark-sim")
    result = simulate(parse_scenario(SCENARIO), out, seed=1, faults=FAULTS)
    assert not result.unfired
    return out


def config(work: Path, sim: Path, backend: str) -> Config:
    return load_config(None, {
        "sources.log_dirs": str(sim), "sources.registrations": str(sim / "registrations.jsonl"),
        "sources.log_dir_inventories": str(sim / "log-dirs"),
        "checkpoint": str(work / "checkpoint"), "tables": str(work / "tables"),
        "sources.max_records_per_trigger": 100, "audit.buckets": 2, "metrics.enabled": False,
        "sink.backend": backend}, environ={})


def run_job(spark, cfg, after_write=None) -> AuditJob:
    job = AuditJob(cfg, spark=spark, after_write=after_write)
    job.run(available_now=True)
    return job


@pytest.fixture(scope="module")
def spark_run(spark, sim, tmp_path_factory) -> Config:
    """An uninterrupted run of the job with backend delta-spark."""
    delta_spark_jars()  # without them: "run make delta-spark"
    cfg = config(tmp_path_factory.mktemp("delta-spark-run"), sim, "delta-spark")
    job = run_job(spark, cfg)
    assert job.query.exception() is None
    assert job.writer.batches == 2  # 100 records per trigger over 174
    return cfg


@pytest.fixture(scope="module")
def rs_run(spark, sim, tmp_path_factory) -> Config:
    """The same job with the default backend, delta-rs."""
    cfg = config(tmp_path_factory.mktemp("delta-rs-run"), sim, "deltalake")
    assert run_job(spark, cfg).query.exception() is None
    return cfg


def canon(value):
    """A value as plain JSON-able data, the same whichever engine read it
    (Spark Rows and bytearrays; Arrow maps as lists of pairs)."""
    if hasattr(value, "asDict"):
        value = value.asDict(recursive=True)
    if isinstance(value, dict):  # an empty map reads as [] from Arrow
        return {k: canon(v) for k, v in sorted(value.items())} if value else []
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {str(k): canon(v) for k, v in sorted(value)}
        return [canon(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def rows_key(row: dict) -> str:
    return json.dumps(canon({k: v for k, v in row.items() if k not in VOLATILE}), sort_keys=True)


def by_delta_rs(cfg, table: str) -> Counter:
    return Counter(rows_key(r) for r in
                   questions.read_table(cfg.tables, table).to_pylist())


def by_spark(spark, cfg, table: str) -> Counter:
    frame = spark_frame(spark, cfg.tables, table)  # partition_state as of now, like read_table
    return Counter(rows_key(r.asDict(recursive=True)) for r in frame.collect())


def schema(cfg, table: str) -> dict:
    """The table's Delta schema, NOT NULL inside arrays aside: Spark's
    connector cannot keep it there (progress.clusters.cluster_id)."""
    def relax(node, in_array=False):
        if isinstance(node, dict):
            out = {k: relax(v, in_array or k == "elementType") for k, v in node.items()}
            if in_array and "nullable" in out:
                out["nullable"] = True
            return out
        if isinstance(node, list):
            return [relax(v, in_array) for v in node]
        return node
    return relax(json.loads(DeltaTable(str(Path(cfg.tables) / table)).schema().to_json()))


def commit_infos(cfg, table: str) -> list[dict]:
    log = Path(cfg.tables) / table / "_delta_log"
    infos = []
    for f in sorted(log.glob("*.json")):
        for line in f.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                infos.append(action["commitInfo"])
    return infos


def test_job_writes_every_table_through_the_spark_connector(spark, spark_run, rs_run):
    for name in TABLES:
        infos = commit_infos(spark_run, name)
        assert infos and all(f"Delta-Lake/{DELTA_VERSION}" in i.get("engineInfo", "")
                             for i in infos), (name, infos)
        # the delta-rs run's commits are delta-rs's own: two writers, one format
        assert not any("Delta-Lake" in i.get("engineInfo", "") for i in commit_infos(rs_run, name))
        # one schema, whichever backend created the table
        assert schema(spark_run, name) == schema(rs_run, name), name

        written_by_spark = by_delta_rs(spark_run, name)  # Spark's writes, read by delta-rs
        assert max(written_by_spark.values(), default=1) == 1, f"{name} has duplicate rows"
        if name != "quarantine":  # nothing in this log is unreadable
            assert written_by_spark, f"{name} is empty"
        # the same audit through either backend, and delta-rs's tables read by Spark
        assert written_by_spark == by_delta_rs(rs_run, name), name
        assert by_spark(spark, rs_run, name) == written_by_spark, name

    rules = {r["rule_id"] for r in questions.violations(spark_run.tables)}
    assert "kraft.leader-epoch-bump" in rules and len(rules) >= 2, rules


# in `make test-variants`, for make test's budget: make test holds the default backend to
# exactly once across the same crash (tests/test_spark_e2e.py)
@pytest.mark.variants
def test_exactly_once_across_a_crash_and_restart(spark, sim, spark_run, tmp_path):
    cfg = config(tmp_path, sim, "delta-spark")

    def crash(batch_id):
        if batch_id == 0:
            raise RuntimeError("killed after the Delta writes of batch 0, before Spark's commit")

    first = run_job(spark, cfg, after_write=crash)
    ck = Path(cfg.checkpoint)
    assert (ck / "offsets" / "0").exists() and not (ck / "commits" / "0").exists()
    # batch 0 is in Delta (through Spark) but not in the checkpoint: Spark will replay it
    progress = DeltaTable(str(Path(cfg.tables) / "progress"))
    assert progress.transaction_version(first.writer.app_id) == 0

    restarted = run_job(spark, cfg)  # Spark replays batch 0: the sink must skip every table
    assert restarted.query.exception() is None
    assert restarted.writer.totals["progress"] == 1  # batch 1 only: the replay wrote nothing
    for name in TABLES:
        assert by_delta_rs(cfg, name) == by_delta_rs(spark_run, name), name
    batches = Counter(p["batch_id"] for p in questions.read_table(cfg.tables, "progress").to_pylist())
    assert max(batches.values()) == 1 and sorted(batches) == list(range(len(batches)))


def a_batch(rows, batch_id: int) -> dict[str, list[dict]]:
    """Rows for every table; batch 1 closes batch 0's interval and moves partition 0 on."""
    first = 10 * (batch_id + 1)
    return {
        "violations": [rows.violation(first)],
        "partition_history": [rows.partition(first), rows.partition(first + 1, partition=1)],
        "partition_state": [rows.partition(first), rows.partition(first + 1, partition=1)],
        "conditions": [rows.condition(10, end=None if batch_id == 0 else first)],
        "brokers": [rows.broker(1, first)],
        "quarantine": [rows.quarantine(first)],
        "gauges": [rows.gauges(bucket=0, partitions=2, last_offset=first + 1)],
        "progress": [rows.progress(batch_id, first + 1)],
    }


@pytest.mark.variants  # (make test's budget; CI runs it)
def test_either_backend_continues_the_others_tables(spark, tmp_path, output_rows):
    delta_spark_jars()
    mixed, reference = tmp_path / "mixed", tmp_path / "reference"
    batches = [a_batch(output_rows, b) for b in range(3)]
    DeltaSinks(str(mixed), "deltalake", app_id="q").write_batch(0, batches[0])
    by_spark_sinks = DeltaSinks(str(mixed), "delta-spark", app_id="q", spark=spark)
    # delta-rs's txn action is the one Spark's connector and the sink read back
    assert set(by_spark_sinks.write_batch(0, batches[0]).values()) == {0}
    by_spark_sinks.write_batch(1, batches[1])
    assert by_spark_sinks.compact() == 2  # partition_state by Spark's MERGE; batch 2 stays a tail
    DeltaSinks(str(mixed), "deltalake", app_id="q").write_batch(2, batches[2])

    only_rs = DeltaSinks(str(reference), "deltalake", app_id="q")
    for batch_id, batch in enumerate(batches):
        only_rs.write_batch(batch_id, batch)
    for name in TABLES:
        got = by_delta_rs(Config(tables=str(mixed)), name)
        assert got == by_delta_rs(Config(tables=str(reference)), name), name
        assert max(got.values()) == 1, name
        engines = {"spark" if "Delta-Lake" in i.get("engineInfo", "") else "delta-rs"
                   for i in commit_infos(Config(tables=str(mixed)), name)}
        assert engines == {"spark", "delta-rs"}, (name, engines)
    # partition_state as of now through Spark: compacted by Spark plus a tail, and never compacted
    state = by_delta_rs(Config(tables=str(reference)), "partition_state")
    assert len(state) == 2  # each batch moves partitions 0 and 1 on: as a MERGE, a row each
    assert by_spark(spark, Config(tables=str(mixed)), "partition_state") == state
    assert by_spark(spark, Config(tables=str(reference)), "partition_state") == state

    # and delta-rs writes into tables Spark's connector created (no NOT NULL in arrays there)
    spark_made = tmp_path / "spark-made"
    DeltaSinks(str(spark_made), "delta-spark", app_id="q", spark=spark)._create_missing_tables()
    rs_into_spark_made = DeltaSinks(str(spark_made), "deltalake", app_id="q")
    for batch_id, batch in enumerate(batches):
        rs_into_spark_made.write_batch(batch_id, batch)
    for name in TABLES:
        assert by_delta_rs(Config(tables=str(spark_made)), name) == \
            by_delta_rs(Config(tables=str(reference)), name), name


def test_spark_sql_questions_answer_like_kraft_audit_query(spark, spark_run):
    root = spark_run.tables
    newest = max(questions.newest_record_ms(root).values())
    windows = [None, questions.parse_since("30s"), questions.Since(at_ms=newest - 20_000)]
    asked = 0
    for since in windows:
        asked += compare(questions_sql.under_min_isr(spark, root, since=since),
                         questions.under_min_isr(root, since=since))
        asked += compare(questions_sql.offline(spark, root, since=since),
                         questions.offline(root, since=since))
        asked += compare(questions_sql.unclean_elections(spark, root, since=since),
                         questions.unclean_elections(root, since=since))
        asked += compare(questions_sql.violations(spark, root, since=since),
                         questions.violations(root, since=since))
    asked += compare(questions_sql.violations(spark, root, rule="kraft.leader-epoch-bump",
                                              severity="error"),
                     questions.violations(root, rule="kraft.leader-epoch-bump", severity="error"))
    for topic, partition, at in (("orders", 0, None), ("orders", 1, 60), ("ledger", 1, 100)):
        asked += compare(questions_sql.partition_at(spark, root, topic, partition, at),
                         questions.partition_at(root, topic, partition, at))
    assert asked > 20  # the questions had answers to compare


def compare(by_sql: list[dict], by_python: list[dict]) -> int:
    """Same rows in the same order (on the Python answer's columns)."""
    assert len(by_sql) == len(by_python)
    for got, want in zip(by_sql, by_python):
        assert canon({k: got[k] for k in want}) == canon(want)
    return len(by_python)


def test_a_conditions_table_of_an_older_release_gains_the_min_isr_source(spark, tmp_path, output_rows):
    """Spark's MERGE too adds a column a newer release declares to a table an older one made."""
    from deltalake import write_deltalake

    from kraft_audit.tables import CONDITIONS, core_to_arrow, stamp_arrow

    delta_spark_jars()
    old = CONDITIONS.schema.remove(CONDITIONS.schema.get_field_index("min_isr_source"))
    old = old.remove(old.get_field_index("resource"))
    path = str(tmp_path / "conditions")
    DeltaTable.create(path, old, partition_by=None)
    opened = stamp_arrow("conditions", core_to_arrow("conditions", [output_rows.condition(10)]), 0, "old")
    write_deltalake(path, opened.select(old.names).cast(old), mode="append")
    DeltaSinks(str(tmp_path), "delta-spark", app_id="q", spark=spark).write_batch(0, {"conditions": [
        output_rows.condition(10, end=15), output_rows.condition(20, partition=1, min_isr_source="log"),
        output_rows.condition(30, condition="delegation_token_expired", partition=-1, topic=None, topic_id="",
                              resource="tok-a", interval_id="c/delegation_token_expired/token/tok-a/30")]})
    rows = {r["partition"]: r for r in DeltaTable(path).to_pyarrow_table().to_pylist()}
    assert (rows[0]["end_offset"], rows[0]["min_isr_source"], rows[0]["resource"]) == (15, None, None)
    assert (rows[1]["end_offset"], rows[1]["min_isr_source"]) == (None, "log")
    assert (rows[-1]["topic_id"], rows[-1]["resource"]) == ("", "tok-a")
