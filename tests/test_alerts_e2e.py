"""Alerts end to end: a controller bug injected into a metadata log that the
real streaming job tails → /metrics → a real Prometheus evaluating
deploy/prometheus/alerts.yml → Debian's prometheus-alertmanager routing with
deploy/prometheus/alertmanager.yml → the pager's webhook (a tiny HTTP server
here). Only the timings of the shipped configs are shortened, and the
receivers' URLs pointed at the local webhook."""

from __future__ import annotations


import pytest
import yaml

from kraft_audit.config import load_config
from kraft_audit.questions import read_table
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import load_scenario
from kraft_audit.spark.job import AuditJob
from log_cuts import live_half
from monitoring import PROMETHEUS_DIR, Webhook, alertmanager, instant, prometheus, ready
from services import Service, wait_for

pytestmark = pytest.mark.spark

FAULT = ("leader-not-in-isr", 2)  # a replica outside the ISR elected: a critical rule
# the violations alert: page for a critical finding, ticket for an error, nothing for a warning
SEVERITY_ROUTE = {"critical": "page", "error": "ticket"}
# the alerts without a `for:` delay: the others wait minutes by design
IMMEDIATE = {r["alert"]
             for g in yaml.safe_load((PROMETHEUS_DIR / "alerts.yml").read_text())["groups"]
             for r in g["rules"] if "for" not in r}


def test_an_injected_controller_bug_reaches_the_pager_with_its_labels(spark, tmp_path):
    # The log as the controller wrote it, then split before the faulty batch:
    # the job first tails the clean part, the rest arrives while it runs.
    staged, live = tmp_path / "staged", tmp_path / "live"
    result = simulate(load_scenario("unclean-shutdown-elr"), staged, seed=3, faults=[FAULT])
    [fault] = result.faults
    live_segment, data, cut = live_half(staged, live, fault["offset"])

    cfg = load_config(None, {"sources.log_dirs": str(live), "checkpoint": str(tmp_path / "ck"),
                             "tables": str(tmp_path / "tables"), "audit.buckets": 2,
                             "trigger.interval": "1 second", "metrics.port": 0}, environ={})
    webhook = Webhook()
    services: list[Service] = []
    job = None
    try:
        am, am_port = alertmanager(tmp_path, webhook)
        services.append(am)
        job = AuditJob(cfg, spark=spark)
        job.start(available_now=False)
        prom, base = prometheus(tmp_path, job.metrics_port, am_port)
        services.append(prom)
        wait_for("Prometheus and Alertmanager", lambda: ready(base)
                 and ready(f"http://127.0.0.1:{am_port}"), timeout=60)

        # Prometheus holds the rule's series at 0 before the bug is in the log
        rule = f'kraft_audit_violations_total{{rule="{fault["rule_id"]}"}}'
        wait_for("a scrape of the clean log", lambda: instant(base, rule), timeout=180)
        assert [float(s["value"][1]) for s in instant(base, rule)] == [0.0]

        with live_segment.open("ab") as f:
            f.write(data[cut:])  # the controller writes the faulty batch and the rest

        def caught_up():
            p = job.writer.last_progress
            return p and max((c["max_offset"] or -1) for c in p["clusters"]) >= result.last_offset

        wait_for("the job to audit the whole log", caught_up, timeout=180)
        violations = read_table(cfg.tables, "violations").to_pylist()
        unclean = sum(g["unclean_elections_total"] for g in read_table(cfg.tables, "gauges")
                      .to_pylist())
        # (receiver, alert, cluster, rule, severity) the tables call for
        expected = {(SEVERITY_ROUTE[v["severity"]], "KraftAuditViolation", v["cluster_id"],
                     v["rule_id"], SEVERITY_ROUTE[v["severity"]])
                    for v in violations if v["severity"] in SEVERITY_ROUTE}
        if unclean:
            expected.add(("page", "KraftUncleanLeaderElection", result.cluster_id, None, "page"))
        wanted = ("page", "KraftAuditViolation", result.cluster_id, fault["rule_id"], "page")
        assert wanted in expected
        wait_for("the alerts at the webhook", lambda: webhook.firing() >= expected, timeout=120)
    finally:
        if job is not None:
            job.stop()
        for service in reversed(services):
            service.stop()
        webhook.close()

    assert not any(v["offset"] < fault["offset"] for v in violations), "the clean part broke rules"
    got = webhook.firing()
    assert {a for a in got if a[1] in IMMEDIATE} == expected
    # the critical finding paged, and only the pager got it
    assert [a for a in got if a[3] == fault["rule_id"]] == [wanted]
    note = next(n for r, n in webhook.received if r == "page"
                and any(a["labels"].get("rule") == fault["rule_id"] for a in n["alerts"]))
    [alert] = [a for a in note["alerts"] if a["labels"].get("rule") == fault["rule_id"]]
    assert alert["annotations"]["summary"] == \
        f"Rule {fault['rule_id']} broken in cluster {result.cluster_id}"
