"""Shared test fixtures. The real Kafka logs live in tests/fixtures/kraft-real (copied with provenance)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REAL_FIXTURES = REPO / "tests" / "fixtures" / "kraft-real"
REAL_FIXTURE_NAMES = sorted(p.name for p in REAL_FIXTURES.iterdir() if p.is_dir()) if REAL_FIXTURES.is_dir() else []


@pytest.fixture(params=REAL_FIXTURE_NAMES)
def real_fixture(request) -> Path:
    """Each real fixture directory (holding __cluster_metadata-0/ and EXPECTED.json)."""
    return REAL_FIXTURES / request.param


# --- Rows of the output tables, as the core emits them (sinks, metrics, query tests) ---

T0_MS = 1_763_700_000_000  # 2025-11-21T04:40:00Z


class OutputRows:
    """Factories for the dict rows of kraft_audit.core.rows, with sane defaults."""

    cluster = "cluster-a"
    topic_id = "AAAAAAAAAAAAAAAAAAAAAQ"

    def violation(self, offset: int, rule_id: str = "elr-not-subset-of-replicas", **kw) -> dict:
        from kraft_audit.core.rows import Violation

        row = dict(rule_id=rule_id, kip="KIP-966", severity="error", cluster_id=self.cluster,
                   topic="orders", topic_id=self.topic_id, partition=0, broker_id=None,
                   offset=offset, timestamp_ms=T0_MS + offset * 1000, message="bad", evidence="{}")
        row.update(kw)
        row.setdefault("violation_id", f"{row['cluster_id']}/{row['rule_id']}/{offset}/"
                                       f"{row['topic_id']}/{row['partition']}/{row['broker_id']}")
        return _asdict(Violation(**row))

    def condition(self, start: int, end: int | None = None, condition: str = "under_min_isr",
                  partition: int = 0, **kw) -> dict:
        from kraft_audit.core.rows import ConditionChange

        row = dict(interval_id=f"{self.cluster}/{condition}/{self.topic_id}/{partition}/{start}",
                   condition=condition, cluster_id=self.cluster, topic="orders",
                   topic_id=self.topic_id, partition=partition, start_offset=start,
                   start_ms=T0_MS + start * 1000, end_offset=end,
                   end_ms=None if end is None else T0_MS + end * 1000)
        row.update(kw)
        return _asdict(ConditionChange(**row))

    def partition(self, offset: int, partition: int = 0, **kw) -> dict:
        from kraft_audit.core.rows import PartitionRow

        row = dict(cluster_id=self.cluster, topic="orders", topic_id=self.topic_id,
                   partition=partition, replicas=[1, 2, 3], isr=[1, 2, 3], elr=[],
                   last_known_elr=[], adding_replicas=[], removing_replicas=[], leader=1,
                   leader_epoch=offset, partition_epoch=offset, leader_recovery_state=0,
                   effective_min_isr=2, deleted=False, offset=offset,
                   timestamp_ms=T0_MS + offset * 1000, record_type="PARTITION_CHANGE_RECORD")
        row.update(kw)
        return _asdict(PartitionRow(**row))

    def broker(self, broker_id: int, offset: int, **kw) -> dict:
        from kraft_audit.core.rows import BrokerRow

        row = dict(cluster_id=self.cluster, broker_id=broker_id, broker_epoch=offset,
                   incarnation_id="inc", registered=True, fenced=False,
                   in_controlled_shutdown=False, last_shutdown=None, offset=offset,
                   timestamp_ms=T0_MS + offset * 1000)
        row.update(kw)
        return _asdict(BrokerRow(**row))

    def gauges(self, bucket: int = 0, cluster: str | None = None, **kw) -> dict:
        from kraft_audit.core.rows import ClusterGauges

        row = _asdict(ClusterGauges(cluster_id=cluster or self.cluster, **kw))
        return {**row, "bucket": bucket}

    def quarantine(self, position: int, reason: str = "CRC-32C mismatch") -> dict:
        from kraft_audit.core.events import Quarantined

        return _asdict(Quarantined(cluster_id=self.cluster, source="00000000000000000000.log",
                                   position=position, reason=reason, raw=b"\x00\x01"))

    def progress(self, batch_id: int, max_offset: int, newest_offset: int | None = None,
                 records: int = 10, violations: int = 0, quarantined: int = 0,
                 duration_seconds: float = 0.5, lag_seconds: float = 0.0) -> dict:
        newest = max_offset if newest_offset is None else newest_offset
        return dict(batch_id=batch_id, started_ms=T0_MS, records=records, applied=records,
                    duplicates=0, quarantined=quarantined, side_inputs=0, unreadable=quarantined,
                    held=0, violations=violations,
                    duration_seconds=duration_seconds, process_seconds=duration_seconds / 2,
                    write_seconds=None,
                    clusters=[dict(cluster_id=self.cluster, records=records,
                                   min_offset=max_offset - records + 1, max_offset=max_offset,
                                   last_timestamp_ms=T0_MS + max_offset * 1000,
                                   newest_offset=newest, lag_records=newest - max_offset,
                                   lag_seconds=lag_seconds)])


def _asdict(row) -> dict:
    from dataclasses import asdict

    return asdict(row)


@pytest.fixture(scope="session")
def output_rows() -> OutputRows:
    return OutputRows()


# --- One local SparkSession for every Spark test (they are heavy: 2 cores) ---

@pytest.fixture(scope="session")
def spark():
    """local[2], 2 shuffle partitions, no UI; workers run this interpreter."""
    import os
    import sys

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from kraft_audit.spark.session import DeltaJarsMissing, build_session

    # One JVM per process, so the connector's jars go in from the start (make
    # test resolves them); without them the delta-spark tests fail saying so.
    # (the same for Spark's Kafka source, which the shipper tests read through)
    for jars in ({"delta_spark": True, "kafka_source": True}, {"delta_spark": True}, {}):
        try:
            session = build_session("local[2]", app_name="kraft-audit-tests", shuffle_partitions=2,
                                    bounded=True, **jars)  # it ends with the tests
            break
        except DeltaJarsMissing:
            continue
    yield session
    session.stop()


# --------------------------------------------------------------------------- hand-built logs

from kraft_audit.core.events import (BROKER_LOG_DIRS, BROKER_REGISTRATION_REQUEST,  # noqa: E402
                                KIND_CONTROL, KIND_LOG_DIRS, KIND_RECORD, KIND_REGISTRATION, MetadataEvent)


class LogBuilder:
    """Builds MetadataEvents the way a metadata log holds them: consecutive offsets,
    atomic batches, record data by camelCase name with defaults left out."""

    def __init__(self, cluster_id: str = "c1", start_offset: int = 0, start_ms: int = 1_000_000):
        self.cluster_id = cluster_id
        self.next_offset = start_offset
        self.now_ms = start_ms
        self.events: list[MetadataEvent] = []

    # --- batches and side inputs
    def batch(self, *records: tuple[str, dict]) -> list[MetadataEvent]:
        self.now_ms += 100
        base, last = self.next_offset, self.next_offset + len(records) - 1
        out = [MetadataEvent(self.cluster_id, "00000000000000000000.log", base + i, base + i, base,
                             last, self.now_ms, KIND_RECORD, rtype, 0, dict(data))
               for i, (rtype, data) in enumerate(records)]
        self.next_offset = last + 1
        self.events.extend(out)
        return out

    def leader_change(self, raft_epoch: int, leader: int = 3000) -> MetadataEvent:
        """A controller's first batch in a new Raft epoch: its LeaderChange control record."""
        self.now_ms += 100
        at = self.next_offset
        event = MetadataEvent(self.cluster_id, "00000000000000000000.log", at, at, at, at, self.now_ms,
                              KIND_CONTROL, "LEADER_CHANGE", 0,
                              {"leaderId": leader, "voters": [{"voterId": leader}]}, leader_epoch=raft_epoch)
        self.next_offset += 1
        self.events.append(event)
        return event

    def registration(self, broker_id: int, incarnation: str, previous_epoch: int,
                     version: int = 3, at_ms: int | None = None) -> MetadataEvent:
        event = MetadataEvent(self.cluster_id, "registrations", len(self.events), -1, -1, -1,
                              self.now_ms if at_ms is None else at_ms, KIND_REGISTRATION,
                              BROKER_REGISTRATION_REQUEST, 0,
                              {"brokerId": broker_id, "incarnationId": incarnation,
                               "previousBrokerEpoch": previous_epoch, "requestVersion": version})
        self.events.append(event)
        return event

    def log_dirs(self, broker_id: int, replicas: list[tuple[str, int]]) -> MetadataEvent:
        data = {"brokerId": broker_id, "logDirs": [{"logDir": "/data/kafka", "error": None,
                "partitions": [{"partition": name, "size": size, "offsetLag": 0, "isFuture": False}
                               for name, size in replicas]}]}
        event = MetadataEvent(self.cluster_id, "log-dirs", len(self.events), -1, -1, -1,
                              self.now_ms, KIND_LOG_DIRS, BROKER_LOG_DIRS, 0, data)
        self.events.append(event)
        return event

    # --- records
    @staticmethod
    def feature(name: str, level: int) -> tuple[str, dict]:
        return "FEATURE_LEVEL_RECORD", {"name": name, "featureLevel": level}

    def elr_features(self, elr: bool = True, mv: int = 25) -> list[tuple[str, dict]]:
        records = [self.feature("metadata.version", mv)]
        if elr:
            # as Kafka's controller turns the ELR on: the cluster-level min ISR first
            records.append(self.config(4, "", "min.insync.replicas", "1"))
            records.append(self.feature("eligible.leader.replicas.version", 1))
        return records

    @staticmethod
    def register(broker_id: int, incarnation: str | None = None, epoch: int = 0,
                 fenced: bool = False) -> tuple[str, dict]:
        return "REGISTER_BROKER_RECORD", {"brokerId": broker_id, "brokerEpoch": epoch,
                                          "incarnationId": incarnation or f"inc-{broker_id}",
                                          "fenced": fenced}

    @staticmethod
    def fence(broker_id: int) -> tuple[str, dict]:
        return "BROKER_REGISTRATION_CHANGE_RECORD", {"brokerId": broker_id, "fenced": 1}

    @staticmethod
    def unfence(broker_id: int) -> tuple[str, dict]:
        return "BROKER_REGISTRATION_CHANGE_RECORD", {"brokerId": broker_id, "fenced": -1}

    @staticmethod
    def controlled_shutdown(broker_id: int) -> tuple[str, dict]:
        return "BROKER_REGISTRATION_CHANGE_RECORD", {"brokerId": broker_id, "inControlledShutdown": 1}

    @staticmethod
    def topic(name: str, topic_id: str) -> tuple[str, dict]:
        return "TOPIC_RECORD", {"name": name, "topicId": topic_id}

    @staticmethod
    def remove_topic(topic_id: str) -> tuple[str, dict]:
        return "REMOVE_TOPIC_RECORD", {"topicId": topic_id}

    @staticmethod
    def partition(topic_id: str, partition: int, replicas: list[int], isr: list[int] | None = None,
                  leader: int | None = None, **extra) -> tuple[str, dict]:
        isr = list(replicas) if isr is None else isr
        data = {"partitionId": partition, "topicId": topic_id, "replicas": replicas, "isr": isr,
                "removingReplicas": [], "addingReplicas": [],
                "leader": isr[0] if leader is None and isr else (-1 if leader is None else leader),
                "leaderEpoch": 0, "partitionEpoch": 0}
        data.update(extra)
        return "PARTITION_RECORD", data

    @staticmethod
    def change(topic_id: str, partition: int, **fields) -> tuple[str, dict]:
        names = {"elr": "eligibleLeaderReplicas", "lke": "lastKnownElr",
                 "lrs": "leaderRecoveryState"}
        data = {"partitionId": partition, "topicId": topic_id}
        data.update({names.get(k, k): v for k, v in fields.items()})
        return "PARTITION_CHANGE_RECORD", data

    @staticmethod
    def config(resource_type: int, resource_name: str, name: str, value: str | None) -> tuple[str, dict]:
        return "CONFIG_RECORD", {"resourceType": resource_type, "resourceName": resource_name,
                                 "name": name, "value": value}

    @staticmethod
    def clear_elr(topic_name: str = "") -> tuple[str, dict]:
        return "CLEAR_ELR_RECORD", {"topicName": topic_name}


@pytest.fixture
def kraft_log() -> LogBuilder:
    """A fresh LogBuilder."""
    return LogBuilder()


def catalog_for_loaded_states():
    """The shipped rules without the one that judges a partition's birth. Hand-built logs
    that create a partition in the state a test starts from (fenced replicas in its ISR,
    an ELR already filled, as Kafka's own tests build a PartitionRegistration) show a
    birth no controller writes; what they test is what follows it."""
    from dataclasses import replace

    from kraft_audit.core.rules import load_catalog
    from kraft_audit.core.rules.catalog import Catalog

    shipped = load_catalog()
    return Catalog([replace(s, enabled=s.enabled and s.rule_id != "kraft.new-partition-isr-live")
                    for s in shipped.rules], shipped.directory)


# --------------------------------------------------------------------------- simulated clusters

@pytest.fixture(scope="session")
def simulated_log(tmp_path_factory):
    """`simulated_log(scenario, seed=1, faults=())` -> a simulator output dir (log dir,
    registrations.jsonl, log-dirs/, faults.json, final-state.json), made once per session
    for each distinct request. `faults` is a list of (fault name, scenario step)."""
    from kraft_audit.sim import load_scenario, simulate

    made: dict = {}

    def make(scenario: str = "unclean-shutdown-elr", seed: int = 1, faults=()) -> Path:
        key = (scenario, seed, tuple(tuple(f) for f in faults))
        if key not in made:
            out = tmp_path_factory.mktemp(f"sim-{scenario}-{seed}")
            simulate(load_scenario(scenario), out, seed=seed, faults=list(key[2]))
            made[key] = out
        return made[key]

    return make


# --------------------------------------------------------------------------- the version matrix

_MATRIX: dict[str, dict[str, str]] = {}  # test name -> version -> outcome


def pytest_runtest_logreport(report):
    """Outcome of each real-cluster test per Kafka version (the `[version]` of its id)."""
    if "kafka" not in report.keywords or "bugs" in report.keywords or "[" not in report.nodeid:
        return
    if report.when != "call" and report.outcome == "passed":
        return
    name, _, param = report.nodeid.partition("[")
    version = param.rstrip("]")
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        return  # not a story parametrised by version alone
    cell = {"passed": "agrees", "failed": "FAILED", "skipped": "skipped"}[report.outcome]
    row = _MATRIX.setdefault(name.split("::")[-1] + f" ({name.split('::')[0].split('/')[-1]})", {})
    if row.get(version) != "FAILED":
        row[version] = "FAILED" if report.when != "call" and report.failed else cell


def pytest_terminal_summary(terminalreporter):
    """`make test-kafka-matrix` prints a version × scenario table: "agrees" means Kafka's
    views (kafka-topics, the metadata shell, dump-log, JMX) and kraft-audit's agreed and
    `check` found nothing; FAILED names a disagreement or a finding (its message above)."""
    if not _MATRIX:
        return
    versions = sorted({v for row in _MATRIX.values() for v in row},
                      key=lambda v: tuple(int(x) for x in v.split(".") if x.isdigit()))
    width = max(len(name) for name in _MATRIX)
    terminalreporter.section("real Kafka: version x scenario")
    terminalreporter.write_line(f"{'scenario':<{width}} | " + " | ".join(f"{v:^7}" for v in versions))
    for name, row in _MATRIX.items():
        terminalreporter.write_line(f"{name:<{width}} | " + " | ".join(
            f"{row.get(v, '-'):^7}" for v in versions))
