"""Mutation testing over the real logs (`make test-mutations`): every class of controller
mistake is flagged at its place in at least 95% of its mutants, the unmutated logs give no
finding, and docs/rules.md shows the score as measured."""

from __future__ import annotations

import pytest

from kraft_audit.core.rules.docs import SCORES
from kraft_audit.testing.mutate import (CLASSES, Frame, audit_log, fixture_logs, generate,
                                        read_frames, score, type_table, write_log)

pytestmark = pytest.mark.mutations

# the rules written for the whole image (off in the "before" column)
NEW_RULES = ("kraft.snapshot-equals-log", "kraft.partition-ids-in-range", "kraft.broker-epoch",
             "kraft.producer-ids-increase", "kraft.topic-name-and-id", "kraft.config-value-parses",
             "kraft.acl-fields", "kraft.scram-fields", "kraft.quota-fields", "kraft.token-fields",
             "kraft.acl-unique", "kraft.removal-names-live", "kraft.token-renewal",
             "kraft.feature-level-supported", "kraft.leader-change-voters", "kraft.feature-level-fields",
             "kraft.config-resource-exists", "kraft.producer-ids-to-registered-broker",
             "kraft.controller-registration-fields", "kraft.transaction-markers",
             "kraft.change-sets-new-values", "kraft.leader-bump-has-cause",
             "kraft.leader-leaves-unavailable-broker", "kraft.election-safety",
             "kraft.metadata-version-downgrade", "kraft.registration-log-dirs", "kraft.partition-directories",
             "kraft.record-names-registered-node", "kraft.kraft-version-voters",
             "kip966.min-isr-one-value-with-elr", "kraft.feature-dependencies",
             "kip966.elr-enters-from-isr", "kip966.last-known-elr-enters-from-isr", "kraft.replica-placement",
             "kraft.new-partition-isr-live", "kraft.replica-in-offline-directory")


def test_a_log_re_framed_without_a_mutation_reads_and_audits_as_the_original(tmp_path):
    for log in fixture_logs():
        frames = read_frames(log / "__cluster_metadata-0")
        target = write_log(log, frames, tmp_path / log.parent.name / log.name)
        assert audit_log(target) == []
        assert sum(len(f.records) for f in read_frames(target / "__cluster_metadata-0")) == \
            sum(len(f.records) for f in frames)


def test_every_class_has_mutants_of_every_log_that_holds_its_material():
    classes = {m.cls for log in fixture_logs() for m in generate(log, per_kind=1)}
    assert classes == set(CLASSES)
    assert all(isinstance(f, Frame) for m in generate(fixture_logs()[0], per_kind=1) for f in m.frames)


def test_every_record_type_of_the_story_logs_gets_mutants():
    story = [log for log in fixture_logs() if log.parent.name == "kraft-story"]
    assert len(story) >= 2
    for log in story:
        types = {m.rtype for m in generate(log, per_kind=1)}
        assert {"ACCESS_CONTROL_ENTRY_RECORD", "USER_SCRAM_CREDENTIAL_RECORD", "CLIENT_QUOTA_RECORD",
                "DELEGATION_TOKEN_RECORD", "REMOVE_DELEGATION_TOKEN_RECORD", "FEATURE_LEVEL_RECORD",
                "PRODUCER_IDS_RECORD", "REGISTER_CONTROLLER_RECORD", "CONFIG_RECORD",
                "REMOVE_TOPIC_RECORD"} <= types, log
        assert "?" not in types


def test_the_score_per_class_is_at_least_95_percent_and_the_docs_show_it(tmp_path):
    now, clean, by_type = score(fixture_logs(), tmp_path / "now")
    before, _, _ = score(fixture_logs(), tmp_path / "before", disabled=NEW_RULES)
    print("\nclass               mutants  before  now")
    for c in CLASSES:
        print(f"{c:<20}{now[c].mutants:>7}{before[c].percent:>7.0f}%{now[c].percent:>5.0f}%")
    print(type_table(by_type))
    assert clean == {f"{log.parent.name}/{log.name}": 0 for log in fixture_logs()}
    missed = {c: s.missed for c, s in now.items() if s.percent < 95}
    assert not missed, missed
    measured = tuple((c, now[c].mutants, before[c].caught, now[c].caught) for c in CLASSES)
    print(f"SCORES = {measured!r}")  # what docs.py keeps, printed to paste after a change
    assert measured == SCORES, "update SCORES in kraft_audit/core/rules/docs.py and re-render docs/rules.md"
