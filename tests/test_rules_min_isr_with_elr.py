"""kip966.min-isr-one-value-with-elr: while the ELR is on, min ISR is one cluster-wide value.
Each log keeps the order Kafka's controller writes; each mutation is one record Kafka's
controller refuses to write (or writes in another order), flagged at that record."""

from __future__ import annotations

from kraft_audit.core.audit import Auditor
from kraft_audit.core.rules import load_catalog

CATALOG = load_catalog()
RULE = "kip966.min-isr-one-value-with-elr"
BROKER = 4  # ConfigResource.Type.BROKER; name "" is the cluster level


def findings(log) -> list[tuple[str, int]]:
    out = Auditor(CATALOG, {}).process(log.events)
    return sorted((v.rule_id, v.offset) for v in out.violations if v.rule_id == RULE)


def elr_off_then_on(log, *before_feature):
    """MV without the ELR, then the batch that turns it on: `before_feature`, then the feature."""
    log.batch(*log.elr_features(elr=False))
    return log.batch(*before_feature, log.feature("eligible.leader.replicas.version", 1))


def test_turning_the_elr_on_as_kafka_does_is_clean(kraft_log):
    log = kraft_log
    log.batch(*log.elr_features(elr=False))
    log.batch(log.config(BROKER, "1", "min.insync.replicas", "2"))  # allowed while the ELR is off
    # the safety records first: the cluster value, every broker value removed; then the feature
    log.batch(log.config(BROKER, "", "min.insync.replicas", "2"),
              log.config(BROKER, "1", "min.insync.replicas", None),
              log.feature("eligible.leader.replicas.version", 1))
    log.batch(log.config(BROKER, "", "min.insync.replicas", "3"))  # changed, not removed
    assert findings(log) == []


def test_the_elr_turned_on_without_the_cluster_value(kraft_log):
    log = kraft_log
    *_, feature = elr_off_then_on(log)
    assert findings(log) == [(RULE, feature.offset)]


def test_the_elr_turned_on_with_a_broker_value_left(kraft_log):
    log = kraft_log
    log.batch(*log.elr_features(elr=False))
    log.batch(log.config(BROKER, "2", "min.insync.replicas", "2"))
    *_, feature = log.batch(log.config(BROKER, "", "min.insync.replicas", "2"),
                            log.feature("eligible.leader.replicas.version", 1))
    assert findings(log) == [(RULE, feature.offset)]


def test_the_safety_records_after_the_feature_are_out_of_order(kraft_log):
    log = kraft_log
    log.batch(*log.elr_features(elr=False))
    feature, _ = log.batch(log.feature("eligible.leader.replicas.version", 1),
                           log.config(BROKER, "", "min.insync.replicas", "2"))
    assert findings(log) == [(RULE, feature.offset)]


def test_a_bootstrap_transaction_writes_the_cluster_value_after_its_features(kraft_log):
    log = kraft_log
    log.batch(("BEGIN_TRANSACTION_RECORD", {"name": "Bootstrap records"}),
              log.feature("metadata.version", 25), log.feature("eligible.leader.replicas.version", 1),
              log.config(BROKER, "", "min.insync.replicas", "1"), ("END_TRANSACTION_RECORD", {}))
    assert findings(log) == []


def test_a_broker_value_set_or_removed_while_the_elr_is_on(kraft_log):
    log = kraft_log
    log.batch(*log.elr_features())
    (set_,) = log.batch(log.config(BROKER, "2", "min.insync.replicas", "2"))
    (removed,) = log.batch(log.config(BROKER, "2", "min.insync.replicas", None))
    (other,) = log.batch(log.config(BROKER, "2", "log.cleaner.threads", "2"))  # another config: fine
    assert findings(log) == [(RULE, set_.offset), (RULE, removed.offset)]


def test_the_cluster_value_removed_while_the_elr_is_on(kraft_log):
    log = kraft_log
    log.batch(*log.elr_features())
    (removed,) = log.batch(log.config(BROKER, "", "min.insync.replicas", None))
    assert findings(log) == [(RULE, removed.offset)]
