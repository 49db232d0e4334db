"""The paging alerts on real logs: a real cluster's metadata log audited, its
gauges put on /metrics as the job would, and promtool checking that
deploy/prometheus/alerts.yml raises exactly the alerts they call for."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.logdir import read_log_dir
from kraft_audit.core.rules import load_catalog
from promtool_cases import promtool_test

pytestmark = pytest.mark.prometheus

REAL = Path(__file__).parent / "fixtures" / "kraft-real"


def audit(log: Path, min_isr: int | None = None):
    auditor = Auditor(load_catalog(), {"min_insync_replicas_default": min_isr})
    auditor.process(read_log_dir(log))
    return auditor.gauges()


def test_a_real_cluster_with_its_broker_stopped_pages_per_topic(tmp_path):
    gauges = audit(REAL / "Niloufar1171__LDI-POC")
    expected = promtool_test(gauges, tmp_path)
    offline = {labels["topic"]: n for labels, n in expected["KraftPartitionsOffline"]}
    assert sum(offline.values()) == gauges.leaderless == 54 and offline["__consumer_offsets"] == 50
    assert [labels["broker"] for labels, _ in expected["KraftBrokerFenced"]] == ["1"]
    assert expected["KraftMinIsrUnknown"]  # nothing said min ISR: a ticket says so


def test_a_known_min_isr_raises_no_unknown_ticket(tmp_path):
    gauges = audit(REAL / "Niloufar1171__LDI-POC", min_isr=1)
    assert not promtool_test(gauges, tmp_path)["KraftMinIsrUnknown"]
