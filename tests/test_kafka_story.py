"""The "every record type" story live on real Kafka, on every version in
KRAFT_TEST_KAFKA_VERSIONS (`make test-kafka-matrix`: every line from 3.7 to 4.3; marked `story`,
so `make test` leaves it out): the controller's log audits clean, every snapshot equal to the
log replayed to its end. Steps a line cannot do are skipped by the story and printed."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from kraft_audit.core.image import verify_snapshots
from kraft_audit.testing.mutate import audit_log
from kraft_audit.testing.realkafka.story import run_story
from services import KAFKA_VERSIONS

pytestmark = [pytest.mark.kafka, pytest.mark.story]


@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_the_every_record_type_story_audits_clean(version):
    workdir = Path(tempfile.mkdtemp(prefix=f"kraft-audit-story-{version}-"))
    cluster, skipped = run_story(version, workdir)
    for step, why in skipped.items():
        print(f"\n{version}: skipped {step}: {why}")
    log = cluster.metadata_log_dir
    assert audit_log(log.parent) == []
    comparisons = list(verify_snapshots(log))
    assert comparisons and all(c.differences == [] for c in comparisons), comparisons
    shutil.rmtree(workdir, ignore_errors=True)  # kept when the test fails
