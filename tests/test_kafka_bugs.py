"""Controller bugs Kafka really shipped, reproduced on a release that has each and on the
first release that fixed it: the auditor must report the bug where it happened on the
first, and nothing on the second. The rules that catch them state invariants any correct
controller keeps (docs/rules.md); nothing here is known to them.

Run alone: `make test-bugs` (or `pytest -m bugs`); not part of `make test`. The table of
bugs, versions and evidence is in docs/real-kafka.md.
"""

from __future__ import annotations

import functools
import json
import shutil
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from kraft_audit.testing.realkafka import KafkaCluster, wait_until
from kraft_audit.testing.realkafka import oracles
from kraft_audit.testing.realkafka.cluster import elr_features, jmx_exporter_agent
from kraft_audit.testing.realkafka.jmx import CONTROLLER_METRICS, read_metrics
from kraft_audit.testing.realkafka.live_audit import LiveAudit
import kafka_waits
from kafka_waits import replay
from services import Service, free_port

DEPLOY_PROMETHEUS = Path(__file__).resolve().parents[1] / "deploy" / "prometheus"

pytestmark = [pytest.mark.kafka, pytest.mark.bugs]

MIN_ISR = {"min.insync.replicas": "2"}


@pytest.fixture
def new_cluster(request):
    """Starts a cluster of a version; its dirs are kept when the test fails."""
    started = []

    def start(version: str, brokers: int, jmx_exporter: bool = False) -> KafkaCluster:
        workdir = Path(tempfile.mkdtemp(prefix=f"kraft-audit-bug-{version}-"))
        cluster = KafkaCluster(
            version, workdir, brokers=brokers, features=elr_features(version),
            jmx_exporter=(jmx_exporter_agent(), DEPLOY_PROMETHEUS / "kafka-jmx-exporter.yml")
            if jmx_exporter else None,
            # a killed broker stays registered while a reassignment naming it is submitted
            # (kafka-reassign-partitions refuses a target that is not alive)
            controller_config={"broker.session.timeout.ms": "10000"})
        started.append(cluster)
        cluster.start()
        return cluster

    failed_before = request.session.testsfailed
    yield start
    for cluster in started:
        cluster.close()
        if request.session.testsfailed == failed_before:
            shutil.rmtree(cluster.workdir, ignore_errors=True)
        else:
            print(f"\nKafka {cluster.version} logs and log dirs kept in {cluster.workdir}")


# the recipes' topic unless a test names another
wait_partition = functools.partial(kafka_waits.wait_partition, topic="moving")


def audit(cluster: KafkaCluster, name: str) -> dict:
    """`kraft-audit check --json` on a copy of the controller's log as it is now."""
    return oracles.kraft_audit_check(oracles.snapshot_of_log(cluster, name), cluster.cluster_id)


def change_records(cluster: KafkaCluster, name: str, topic: str = "moving") -> list[dict]:
    """kafka-dump-log's PartitionChangeRecords of the topic, with their offsets."""
    files = sorted((cluster.workdir / "oracle-describe" / name).glob("*.log"))
    kafka = oracles.parse_kafka_dump(cluster.tools.dump_log(files))
    state = replay(cluster)
    tid = state.topic_ids.get(topic) or next(t for t, n in state.deleted_topics.items() if n == topic)
    return [r for recs in kafka.values() for r in recs
            if r["type"] == "PARTITION_CHANGE_RECORD" and r["data"]["topicId"] == tid]


def start_moving_with_target_down(cluster: KafkaCluster, target: list[int], adding: int):
    """moving-0 on [1, 2, 3], min ISR 2, reassigned to `target` right after the adding broker
    was killed (not yet fenced: a paused one would hang the tool's calls), so it cannot catch
    up until it is started again."""
    cluster.tools.create_topic("moving", assignment=[[1, 2, 3]], configs=MIN_ISR)
    cluster.tools.produce("moving", 500)
    cluster.broker(adding).kill()
    cluster.tools.reassign({("moving", 0): target})
    wait_partition(cluster, f"reassigning to {target}", lambda p: adding in p.adding_replicas)
    # fenced before it comes back, so it joins the ISR under its new registration only
    wait_until(f"broker {adding} fenced", lambda: replay(cluster).brokers[adding].fenced, 60)


DISAGREEMENT = "KafkaUncleanElectionMeterDisagreesWithLog"
FOR_SECONDS = 5  # the rules' `for:` shortened, so the test waits seconds, not minutes


def start_prometheus(root: Path, cluster: KafkaCluster, audit_port: int) -> Service:
    """Debian's Prometheus scraping the controller's JMX exporter agent and kraft-audit's
    /metrics (both labelled with the cluster id, as deploy/prometheus says to), evaluating
    kafka-vs-log.yml every second."""
    groups = yaml.safe_load((DEPLOY_PROMETHEUS / "kafka-vs-log.yml").read_text())
    for group in groups["groups"]:
        for rule in group["rules"]:
            rule["for"] = f"{FOR_SECONDS}s"
    (root / "kafka-vs-log.yml").write_text(yaml.safe_dump(groups))
    label = {"cluster": cluster.cluster_id}
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(root / "kafka-vs-log.yml")],
        "scrape_configs": [
            {"job_name": "kafka", "static_configs": [
                {"targets": [f"127.0.0.1:{cluster.controller.exporter_port}"], "labels": label}]},
            {"job_name": "kraft-audit", "static_configs": [
                {"targets": [f"127.0.0.1:{audit_port}"]}]},
        ],
    }
    (root / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("the Prometheus server is needed: `make prometheus`")
    service = Service([binary, f"--config.file={root / 'prometheus.yml'}",
                       f"--storage.tsdb.path={root / 'prometheus-data'}",
                       f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                      root / "prometheus.log")
    service.url = f"http://127.0.0.1:{port}"
    wait_until("Prometheus ready", lambda: _get(service.url + "/-/ready") is not None, 60)
    return service


def _get(url: str):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.load(response) if "/api/" in url else response.status
    except OSError:
        return None


def instant(base: str, promql: str) -> list[dict]:
    answer = _get(f"{base}/api/v1/query?{urllib.parse.urlencode({'query': promql})}")
    return answer["data"]["result"] if answer else []


def alerts(base: str) -> list[dict]:
    answer = _get(f"{base}/api/v1/alerts")
    return answer["data"]["alerts"] if answer else []


def findings(report: dict, rule_id: str) -> list[tuple[str, int]]:
    return [(f["topic"], f["offset"]) for f in report["findings"] if f["rule_id"] == rule_id]


# ------------------------------------------------ a reassignment completed under min ISR

@pytest.mark.parametrize("version,has_bug", [("3.7.2", True), ("3.8.0", False), ("4.3.1", True),
                                             ("4.3.2", True), ("4.4.0", True)])
def test_completing_a_reassignment_under_min_isr(new_cluster, version, has_bug):
    """[1, 2, 3] -> [2, 3, 4] at min ISR 2 with the kept replicas 2 and 3 shut down: the
    record that brings 4 into the ISR [1] may complete the reassignment only if dropping 1
    keeps min ISR; it does not (ISR [4]). Fixed in 3.8.0 by waiting for every target
    replica; the relaxation that lets a reassignment complete past a kept replica out of
    sync (4.3.0) brought it back for reassignments that do not shrink the replica set."""
    c = new_cluster(version, brokers=4)
    start_moving_with_target_down(c, [2, 3, 4], adding=4)
    c.broker(2).stop()
    c.broker(3).stop()
    wait_partition(c, "ISR [1]", lambda p: list(p.isr) == [1])
    c.broker(4).start()
    p = wait_partition(c, "4 in sync", lambda p: 4 in p.isr)
    report = audit(c, "caught-up")
    completing = [r for r in change_records(c, "caught-up") if r["data"].get("replicas") == [2, 3, 4]]
    if has_bug:
        assert (list(p.replicas), list(p.isr)) == ([2, 3, 4], [4])  # Kafka dropped 1
        assert findings(report, "kraft.reassignment-keeps-min-isr") == [
            ("moving", completing[0]["offset"])]
    else:
        assert (sorted(p.replicas), sorted(p.isr), list(p.adding_replicas)) == (
            [1, 2, 3, 4], [1, 4], [4])  # waits for 2 or 3
        assert completing == [] and report["findings"] == []
        assert "reassignment_stalled" not in {o["condition"] for o in report["open_conditions"]}


# ------------------------------------------------ a reassignment that never completes

@pytest.mark.parametrize("version,has_bug", [("4.2.1", True), ("4.3.0", False), ("4.4.0", False)])
def test_a_reassignment_held_back_by_a_replica_it_keeps(new_cluster, version, has_bug):
    """[1, 2, 3] -> [2, 3, 4] at min ISR 2 with the kept replica 3 shut down: once 4 is in
    sync, dropping 1 leaves ISR [2, 4], at min ISR, so the reassignment can complete. A
    controller that waits for 3 keeps it stalled for as long as 3 is away."""
    c = new_cluster(version, brokers=4)
    start_moving_with_target_down(c, [2, 3, 4], adding=4)
    c.broker(3).stop()
    wait_partition(c, "3 out of the ISR", lambda p: 3 not in p.isr)
    c.broker(4).start()
    if has_bug:
        p = wait_partition(c, "4 in sync", lambda p: 4 in p.isr)
        report = audit(c, "caught-up")
        assert sorted(p.adding_replicas) == [4] and sorted(p.isr) == [1, 2, 4]
        # the interval open now began with the last record that brought 4 into the ISR (a
        # killed broker restarted within its session can join, then leave the ISR as an
        # unclean shutdown when it registers again, and join once more)
        isr_changes = [r for r in change_records(c, "caught-up") if r["data"].get("isr") is not None]
        joined = isr_changes[-1]
        assert 4 in joined["data"]["isr"]
        stalled = [(o["topic"], o["start_offset"]) for o in report["open_conditions"]
                   if o["condition"] == "reassignment_stalled"]
        assert stalled == [("moving", joined["offset"])]
        assert report["gauges"]["reassignment_stalled"] == 1
        assert report["findings"] == []  # a liveness condition, not a broken safety rule
    else:
        p = wait_partition(c, "reassigned", lambda p: not p.adding_replicas and 4 in p.isr)
        report = audit(c, "completed")
        assert (list(p.replicas), sorted(p.isr)) == ([2, 3, 4], [2, 4])
        assert report["findings"] == [] and report["gauges"]["reassignment_stalled"] == 0
        assert report["open_conditions"] == [] or "reassignment_stalled" not in {
            o["condition"] for o in report["open_conditions"]}


# ------------------------------------------------ a clean election counted as unclean

@pytest.mark.parametrize("version,has_bug", [("4.0.2", True), ("4.1.0", False), ("4.4.0", False)])
def test_the_controllers_unclean_election_meter_against_the_log(new_cluster, spark, tmp_path,
                                                                version, has_bug):
    """moving-0 on [1] reassigned to [2]: the record that brings 2 into the ISR completes the
    reassignment and makes 2 leader, a clean election (RECOVERED stays). The log is right; a
    controller meter that counts it as unclean disagrees with it. Prometheus scrapes Kafka's
    meter through the JMX exporter agent and kraft-audit's streaming job, and the rule of
    deploy/prometheus/kafka-vs-log.yml fires on the disagreement, and only there."""
    c = new_cluster(version, brokers=2, jmx_exporter=True)
    c.tools.create_topic("moving", assignment=[[1]], configs={"min.insync.replicas": "1"})
    c.tools.produce("moving", 500)
    live = LiveAudit(spark, c, tmp_path / "live-audit")
    try:
        prom = start_prometheus(tmp_path, c, live.job.metrics_port)
        try:
            wait_until("Prometheus scraping the controller's meter and the job", lambda: len(
                instant(prom.url, "kafka_controller_controllerstats_uncleanleaderelectionspersec_total"
                        " or kraft_audit_unclean_elections_total")) == 2, 120)
            c.tools.reassign({("moving", 0): [2]})
            p = wait_partition(c, "moved to [2]", lambda p: list(p.replicas) == [2] and p.leader == 2)
            assert p.leader_recovery_state == 0
            report = audit(c, "moved")
            meter = read_metrics(c.controller, CONTROLLER_METRICS)["unclean_elections"]
            assert report["findings"] == [] and report["gauges"]["unclean_elections_total"] == 0
            wait_until("the job at the end of the log", lambda: live.metrics().get(
                "last_offset", -1) >= report["gauges"]["last_offset"], 120)

            def firing():
                return [a for a in alerts(prom.url)
                        if a["labels"]["alertname"] == DISAGREEMENT and a["state"] == "firing"]

            if has_bug:
                assert meter == 1  # Kafka's meter says unclean; the log says clean
                [alert] = wait_until("the disagreement alert firing", firing, 120)
                assert alert["labels"]["cluster"] == c.cluster_id
            else:
                assert meter == 0
                # both sides scraped after the election, several rule evaluations later
                wait_until("Prometheus past the election", lambda: instant(
                    prom.url, "kraft_audit_last_offset") and float(instant(
                        prom.url, "max(kraft_audit_last_offset)")[0]["value"][1])
                    >= report["gauges"]["last_offset"], 120)
                time.sleep(3 * FOR_SECONDS)
                assert firing() == [] and not [a for a in alerts(prom.url)
                                               if a["labels"]["alertname"] == DISAGREEMENT]
        finally:
            prom.stop()
    finally:
        live.stop()


# ------------------------------------------------ the last known leader elected while fenced

@pytest.mark.parametrize("version,has_bug", [("4.0.2", True), ("4.1.0", False), ("4.4.0", False)])
def test_the_last_known_leader_is_elected_only_when_it_can_lead(new_cluster, version, has_bug):
    """lke-0 on [1, 2, 3], min ISR 2, ELR on: 2, 3, then 1 killed, so the ISR empties into
    the ELR and LastKnownElr holds 1; 2 and 3 come back uncleanly and leave the ELR; when 1
    registers again (uncleanly, fenced) the ELR empties and only the last known leader is
    left to elect. It may lead once unfenced, not in the batch that registers it fenced."""
    c = new_cluster(version, brokers=3)
    c.tools.create_topic("lke", assignment=[[1, 2, 3]], configs=MIN_ISR)
    c.tools.produce("lke", 500)
    for broker in (2, 3, 1):
        c.broker(broker).kill()
        wait_until(f"broker {broker} fenced", lambda b=broker: replay(c).brokers[b].fenced, 90)
    wait_partition(c, "ISR empty, LastKnownElr [1]",
                   lambda p: not p.isr and list(p.last_known_elr) == [1], topic="lke")
    for broker in (2, 3):
        c.broker(broker).start()
    wait_partition(c, "ELR [1]", lambda p: list(p.elr) == [1], topic="lke")
    c.broker(1).start()
    wait_partition(c, "1 leads", lambda p: p.leader == 1, topic="lke")
    wait_until("broker 1 unfenced", lambda: not replay(c).brokers[1].fenced, 90)
    report = audit(c, "elected")
    elected = next(r for r in change_records(c, "elected", topic="lke")
                   if r["data"].get("leader") == 1)
    found = findings(report, "kip966.leader-registered-unfenced")
    if has_bug:
        assert found == [("lke", elected["offset"])]
    else:
        assert found == [] and report["findings"] == []
    # the last known leader's election is unclean either way: the record that elects it says
    # RECOVERING (read from the log: polling the partition can miss it when a follower
    # rejoins at once and the leader reports RECOVERED)
    assert elected["data"].get("leaderRecoveryState") == 1


# ------------------------------------------------ an ELR naming replicas the partition lost

@pytest.mark.parametrize("version", ["4.0.2", "4.3.1", "4.3.2", "4.4.0"])
def test_an_elr_never_names_a_replica_the_partition_no_longer_has(new_cluster, version):
    """shrink-0 on [1, 2] with min.insync.replicas 3, reassigned to [3, 4]: while the
    reassignment runs the partition has four replicas, so its effective min ISR is 3; the
    record that completes it leaves ISR [3, 4] under that and fills the ELR from the old ISR,
    with 1 and 2, which are no longer replicas. No release fixes it yet."""
    c = new_cluster(version, brokers=4)
    c.tools.create_topic("shrink", assignment=[[1, 2]], configs={"min.insync.replicas": "3"})
    c.tools.produce("shrink", 500, acks="1")
    c.tools.reassign({("shrink", 0): [3, 4]})
    p = wait_partition(c, "moved to [3, 4]", lambda p: sorted(p.replicas) == [3, 4]
                       and not p.adding_replicas, topic="shrink")
    report = audit(c, "moved")
    completing = next(r for r in change_records(c, "moved", topic="shrink")
                      if r["data"].get("replicas") is not None and sorted(r["data"]["replicas"]) == [3, 4])
    assert sorted(p.elr) == [1, 2]  # what Kafka wrote
    assert findings(report, "kip966.subset-of-replicas") == [("shrink", completing["offset"])]
