"""What an operator sees in an incident, end to end: two clusters' metadata logs
(a real one whose broker stopped, every partition offline; a simulated one
under min ISR with fenced brokers) through the real streaming job → /metrics →
a real Prometheus evaluating deploy/prometheus/alerts.yml → Alertmanager → the
pager. Then every panel of deploy/grafana/kraft-audit.json is asked of that
Prometheus and must return data (there is no Grafana here to draw them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kraft_audit.config import load_config
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import load_scenario
from kraft_audit.spark.job import AuditJob
from monitoring import PROMETHEUS_DIR, Webhook, alertmanager, instant, prometheus, ready
from services import wait_for

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "deploy" / "grafana" / "kraft-audit.json"
REAL_OFFLINE = ROOT / "tests" / "fixtures" / "kraft-real" / "Niloufar1171__LDI-POC"
REAL_CLUSTER = "q1w2e3r4t5y6u7i8o9p0"
# Grafana's variables as a dashboard user would have them: every cluster, an hour's range
GRAFANA_VARIABLES = {"$cluster": ".+", "$__rate_interval": "1m", "$__range": "1h"}


def panel_queries() -> list[tuple[str, str]]:
    """(panel title, PromQL with Grafana's variables filled in) of every panel."""
    queries = []
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for variable, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(variable, value)
            queries.append((panel["title"], expr))
    return queries


def quick_rules(path: Path) -> Path:
    """alerts.yml with every `for:` at 2 s: the test waits seconds, not minutes."""
    doc = yaml.safe_load((PROMETHEUS_DIR / "alerts.yml").read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = "2s"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_offline_partitions_page_per_topic_and_every_dashboard_panel_has_data(spark, tmp_path):
    chaos = simulate(load_scenario("chaos"), tmp_path / "chaos", seed=1)
    cfg = load_config(None, {"sources.log_dirs": [str(tmp_path / "chaos"), str(REAL_OFFLINE)],
                             "checkpoint": str(tmp_path / "ck"), "tables": str(tmp_path / "tables"),
                             "audit.buckets": 2, "trigger.interval": "1 second", "metrics.port": 0},
                      environ={})
    webhook = Webhook()
    services = []
    job = None
    try:
        am, am_port = alertmanager(tmp_path, webhook)
        services.append(am)
        job = AuditJob(cfg, spark=spark)
        job.start(available_now=False)
        prom, base = prometheus(tmp_path, job.metrics_port, am_port, quick_rules(tmp_path / "rules.yml"))
        services.append(prom)
        wait_for("Prometheus and Alertmanager", lambda: ready(base)
                 and ready(f"http://127.0.0.1:{am_port}"), timeout=60)
        offline = 'kraft_audit_topic_leaderless_partitions{topic="__consumer_offsets"}'
        wait_for("the real log's offline partitions in Prometheus",
                 lambda: [float(s["value"][1]) for s in instant(base, offline)] == [50.0], timeout=240)
        wait_for("the chaos cluster's gauges in Prometheus", lambda: instant(
            base, f'kraft_audit_topic_under_min_isr_partitions{{cluster="{chaos.cluster_id}"}}'),
            timeout=120)
        # a few scrapes more, so rates and increases have two samples to work on
        wait_for("rates", lambda: instant(base, "rate(kraft_audit_records_total[1m])"), timeout=60)

        paged = {("page", "KraftPartitionsOffline", REAL_CLUSTER, "__consumer_offsets"),
                 ("page", "KraftPartitionsOffline", REAL_CLUSTER, "TestTopicPatient")}

        def offline_pages():
            return {(receiver, a["labels"]["alertname"], a["labels"].get("cluster"),
                     a["labels"].get("topic"))
                    for receiver, note in webhook.received for a in note["alerts"]
                    if a["status"] == "firing" and a["labels"]["alertname"] == "KraftPartitionsOffline"}

        # the chaos cluster ends with a leaderless partition: its page comes too, maybe later
        wait_for("offline pages at the webhook", lambda: offline_pages() >= paged and any(
            c == chaos.cluster_id for _r, _a, c, _t in offline_pages()), timeout=120)
        empty = [(title, expr) for title, expr in panel_queries() if not instant(base, expr)]
    finally:
        if job is not None:
            job.stop()
        for service in reversed(services):
            service.stop()
        webhook.close()

    assert not empty, f"dashboard panels without data: {empty}"
    # every offline topic of both clusters paged, each with its cluster and topic
    topics = {(c, t) for _r, _a, c, t in offline_pages()}
    assert {(REAL_CLUSTER, t) for t in ("__consumer_offsets", "TestTopicPatient",
                                         "Retry.TestTopicPatient")} <= topics
    assert any(c == chaos.cluster_id for c, _t in topics)
