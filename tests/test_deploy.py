"""deploy/: promtool accepts and unit-tests the alert rules, the alerts use
metrics the exporter really serves, and the submit script and Kubernetes
manifest agree with the code (package coordinates, entry point, port)."""

from __future__ import annotations

import os
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client import generate_latest

from kraft_audit.config import DEFAULTS, load_config
from kraft_audit.ship.shipper import ShipMetrics
from kraft_audit.spark.metrics import AuditMetrics
from kraft_audit.spark.sinks import DELTA_SPARK_PACKAGE

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
PROMETHEUS = DEPLOY / "prometheus"


def promtool(*args: str) -> str:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail(
            "promtool is needed: apt-get install -y prometheus (Debian), or `make prometheus`"
        )
    done = subprocess.run(
        [binary, *args], cwd=PROMETHEUS, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.prometheus
def test_promtool_checks_the_rules_and_the_scrape_config():
    assert "SUCCESS: 23 rules found" in promtool("check", "rules", "alerts.yml")
    assert "SUCCESS" in promtool("check", "config", "prometheus.yml")


@pytest.mark.prometheus
def test_amtool_checks_the_alertmanager_routing():
    binary = shutil.which("amtool")
    if binary is None:
        pytest.fail(
            "amtool is needed: apt-get install -y prometheus-alertmanager, or `make prometheus`"
        )
    done = subprocess.run([binary, "check-config", "alertmanager.yml"], cwd=PROMETHEUS,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr
    # it routes on the severities the alert rules set (one is a template choosing between them)
    config = yaml.safe_load((PROMETHEUS / "alertmanager.yml").read_text())
    routed = {m.split("=")[1].strip('"') for r in config["route"]["routes"] for m in r["matchers"]}
    assert routed == {"page", "ticket"}
    alerts = yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())["groups"]
    assert {r["labels"]["severity"] for g in alerts for r in g["rules"]
            if "{{" not in r["labels"]["severity"]} == routed


@pytest.mark.prometheus
def test_promtool_unit_tests_of_the_alerts_pass():
    assert "SUCCESS" in promtool("test", "rules", "alerts_test.yml")


@pytest.mark.prometheus
def test_promtool_unit_tests_of_kafkas_metrics_against_the_log_pass():
    assert "SUCCESS: 3 rules found" in promtool("check", "rules", "kafka-vs-log.yml")
    assert "SUCCESS" in promtool("test", "rules", "kafka-vs-log_test.yml")


@pytest.mark.parametrize("rules,tests", [("alerts.yml", "alerts_test.yml"),
                                         ("kafka-vs-log.yml", "kafka-vs-log_test.yml")])
def test_every_alert_has_a_unit_test(rules, tests):
    alerts = {
        r["alert"]
        for g in yaml.safe_load((PROMETHEUS / rules).read_text())["groups"]
        for r in g["rules"]
    }
    tested = {
        t["alertname"]
        for case in yaml.safe_load((PROMETHEUS / tests).read_text())["tests"]
        for t in case["alert_rule_test"]
    }
    assert alerts == tested


def test_alerts_only_use_metrics_the_exporter_serves(output_rows):
    metrics = AuditMetrics()
    metrics.update(
        0,
        # per-topic and per-broker series exist only while a topic or broker is in trouble
        [output_rows.gauges(0, topics_leaderless={"orders": 1}, topics_under_min_isr={"orders": 1},
                            fenced_broker_ids=[2], features={"metadata.version": 27},
                            last_timestamp_ms=1)],
        output_rows.progress(0, max_offset=1),
        [output_rows.violation(1)],
    )
    shipper = ShipMetrics("c")  # the sidecars' own /metrics
    shipper.errors.labels(cluster="c", kind="client")
    served = set(
        re.findall(r"^(kraft_audit_\w+?)(?:\{| )", generate_latest(metrics.registry).decode()
                   + generate_latest(shipper.registry).decode(), re.M)
    )
    used = set(re.findall(r"kraft_audit_\w+", (PROMETHEUS / "alerts.yml").read_text()))
    assert used and used <= served, used - served
    # and so does the Grafana dashboard; each of its panels says what question it answers
    dashboard = json.loads((PROMETHEUS.parent / "grafana" / "kraft-audit.json").read_text())
    in_panels = {name for p in dashboard["panels"] for t in p.get("targets", [])
                 for name in re.findall(r"kraft_audit_\w+", t["expr"])}
    assert in_panels and in_panels <= served, in_panels - served
    assert all(p.get("description") for p in dashboard["panels"] if p["type"] != "row")


def test_spark_submit_builds_the_right_command():
    env = {**os.environ, "SPARK_SUBMIT": "echo"}
    default = subprocess.run(
        [str(DEPLOY / "spark-submit.sh"), "--config", "conf/default.yaml"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--packages" not in default
    assert default.split()[-3:] == [
        str(REPO / "jobs" / "audit_job.py"),
        "--config",
        "conf/default.yaml",
    ]
    assert "--py-files" in default

    delta_spark = subprocess.run(
        [str(DEPLOY / "spark-submit.sh")],
        env={**env, "DELTA_BACKEND": "delta-spark"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"--packages {DELTA_SPARK_PACKAGE}" in delta_spark
    assert "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension" in delta_spark

    wrong = subprocess.run(
        [str(DEPLOY / "spark-submit.sh")],
        env={**env, "DELTA_BACKEND": "parquet"},
        capture_output=True,
        text=True,
    )
    assert wrong.returncode == 2 and "deltalake or delta-spark" in wrong.stderr


def test_kubernetes_manifest_matches_the_job(tmp_path):
    manifest = (DEPLOY / "kubernetes" / "kraft-audit.yaml").read_text()
    docs = {d["kind"]: d for d in yaml.safe_load_all(manifest)}
    config_map, app = docs["ConfigMap"], docs["SparkApplication"]
    assert app["apiVersion"] == "sparkoperator.k8s.io/v1beta2" and app["kind"] == "SparkApplication"
    spec = app["spec"]
    assert spec["type"] == "Python" and spec["sparkVersion"] == "4.2.0"
    assert spec["mainApplicationFile"].endswith("/jobs/audit_job.py")
    # the job accepts the ConfigMap's config (paths exist only in the cluster)
    (tmp_path / "audit.yaml").write_text(config_map["data"]["audit.yaml"])
    audit = load_config(tmp_path / "audit.yaml", environ={}, check_paths=False)
    [port] = spec["driver"]["ports"]
    assert (
        port["containerPort"] == audit.metrics.port and audit.metrics.host == "0.0.0.0"
    )
    mounts = {m["name"] for m in spec["driver"]["volumeMounts"]}
    assert mounts == {v["name"] for v in spec["volumes"]}
    # the delta-spark coordinates in the comments are the ones the code asks for
    assert DELTA_SPARK_PACKAGE in (DEPLOY / "kubernetes" / "kraft-audit.yaml").read_text()


def test_scrape_config_targets_the_default_metrics_port():
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    [job] = config["scrape_configs"]
    assert job["job_name"] == "kraft-audit"
    assert job["static_configs"][0]["targets"] == [f"127.0.0.1:{DEFAULTS['metrics']['port']}"]


def test_every_alert_is_in_the_operations_guide_with_its_severity():
    """An operator looks an alert up in docs/operations.md: each one of both rule files has
    its row there, and the Kraft table's severity column is the alert's own."""
    rows = {}
    for line in (REPO / "docs" / "operations.md").read_text().splitlines():
        match = re.match(r"\| `(Kraft\w+|Kafka\w+)` \|", line)
        if match:
            rows[match.group(1)] = [c.strip() for c in line.strip("|").split("|")]
    for rules in ("alerts.yml", "kafka-vs-log.yml"):
        for group in yaml.safe_load((PROMETHEUS / rules).read_text())["groups"]:
            for rule in group["rules"]:
                assert rule["alert"] in rows, f"{rule['alert']} ({rules}) has no row in docs/operations.md"
                if rules == "alerts.yml":  # a templated severity reads "page / ticket"
                    severity = " / ".join(s for s in ("page", "ticket") if s in rule["labels"]["severity"])
                    assert rows[rule["alert"]][-1] == severity, rule["alert"]
