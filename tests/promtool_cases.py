"""promtool unit tests written from an audit's gauges: the series a real log's
gauges put on /metrics, held for an hour, and the alerts of
deploy/prometheus/alerts.yml those gauges call for. promtool then checks that
exactly those fire (for the alerts named)."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml

from kraft_audit.spark.metrics import AuditMetrics

PROMETHEUS_DIR = Path(__file__).resolve().parents[1] / "deploy" / "prometheus"
ALERTS = {r["alert"]: r for g in yaml.safe_load((PROMETHEUS_DIR / "alerts.yml").read_text())["groups"]
          for r in g["rules"]}
HELD_MINUTES = 70
# alerts judged from a cluster's gauges, and the time by which each has fired
JUDGED = {"KraftPartitionsOffline": 5, "KraftPartitionsUnderMinIsr": 10, "KraftBrokerFenced": 15,
          "KraftMinIsrUnknown": 65}


def series(gauges) -> list[dict]:
    """The /metrics series of one cluster's gauges (ClusterGauges), each held constant."""
    metrics = AuditMetrics()
    metrics.update(0, [{**asdict(gauges), "bucket": 0}],
                   {"duration_seconds": 0.1, "quarantined": 0, "clusters": []})
    out = []
    for family in metrics.collect():
        for s in family.samples:
            if "cluster" in s.labels:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                out.append({"series": f"{s.name}{{{labels}}}", "values": f"{s.value:g}x{HELD_MINUTES}"})
    return out


def expected_alerts(gauges) -> dict[str, list[dict]]:
    """What alerts.yml should raise for these gauges: alert -> [labels, value]."""
    cluster = gauges.cluster_id
    return {
        "KraftPartitionsOffline": [({"cluster": cluster, "topic": t}, n)
                                   for t, n in sorted(gauges.topics_leaderless.items())],
        "KraftPartitionsUnderMinIsr": [({"cluster": cluster}, gauges.under_min_isr)]
        if gauges.under_min_isr else [],
        "KraftBrokerFenced": [({"cluster": cluster, "broker": str(b)}, 1)
                              for b in gauges.fenced_broker_ids],
        "KraftMinIsrUnknown": [({"cluster": cluster}, gauges.min_insync_replicas)]
        if gauges.min_isr_source == "assumed" else [],
    }


def _render(template: str, labels: dict, value: float) -> str:
    text = template.replace("{{ $value }}", f"{value:g}")
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], text)


def promtool_test(gauges, tmp_path: Path) -> dict[str, list[dict]]:
    """Run promtool on the test these gauges make; returns the expected alerts."""
    expected = expected_alerts(gauges)
    tests = []
    for alert, fired in expected.items():
        rule = ALERTS[alert]
        exp = [{"exp_labels": {**labels, **rule["labels"]},
                "exp_annotations": {k: _render(v, labels, value) for k, v in rule["annotations"].items()}}
               for labels, value in fired]
        tests.append({"eval_time": f"{JUDGED[alert]}m", "alertname": alert, "exp_alerts": exp})
    doc = {"rule_files": [str(PROMETHEUS_DIR / "alerts.yml")], "evaluation_interval": "1m",
           "tests": [{"name": f"the gauges of cluster {gauges.cluster_id}", "interval": "1m",
                      "input_series": series(gauges), "alert_rule_test": tests}]}
    path = tmp_path / "from_gauges_test.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail("promtool is needed: apt-get install -y prometheus (Debian), or `make prometheus`")
    result = subprocess.run([binary, "test", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return expected
