"""The core's fast paths against a straightforward reference path: the same events through an
event loop that calls every rule on every change whatever the state it leaves (the `when`
bits that only save calls all set; the fields a record sets still decide what is judged
again) and at every batch end, and reads every min ISR source from the state (no cache),
must give the same findings, condition intervals, partition rows, broker rows, quarantine,
gauges and stored state. Judged on the real logs in tests/fixtures
(whole, booted from their newest snapshot, and cut in the middle), a sample of their mutants,
and simulated clusters with injected controller faults; every rule enabled."""

from __future__ import annotations

import random
from dataclasses import asdict, replace

import pytest

from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.logdir import read_log_dir, read_meta_properties
from kraft_audit.core.event_loop import EventLoop
from kraft_audit.core.events import MetadataEvent
from kraft_audit.core.image import verify_snapshots
from kraft_audit.core.replay.settings import CoreSettings
from kraft_audit.core.replay.state import ClusterState
from kraft_audit.core.rules import load_catalog
from kraft_audit.core.rules.catalog import Catalog
from kraft_audit.core.rules.registry import HAS_ELR, ONLY_SAVE_CALLS
from kraft_audit.sim.chaos import random_scenario
from kraft_audit.sim.faults import CATALOG as FAULTS
from kraft_audit.sim.faults import parse_fault_option
from kraft_audit.sim.output import read_output
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import load_scenario
from kraft_audit.testing.mutate import _log_name, fixture_logs, generate, write_log

_shipped = load_catalog()
EVERY_RULE = Catalog([replace(s, enabled=True) for s in _shipped.rules], _shipped.directory)


class UncachedState(ClusterState):
    """Reads where a topic's min ISR comes from off the topics and configs, every time."""

    def min_isr_source(self, topic_id: str) -> str:
        return self._min_isr_source(topic_id)


class EveryRuleLoop(EventLoop):
    """Every rule of the fields a change sets, whatever state it leaves; every batch-end rule;
    every batch opened and closed."""

    quiet_batches_skipped = False

    def _shaped(self, record_type: str, shape: int) -> tuple[list, list]:
        return super()._shaped(record_type, shape | ONLY_SAVE_CALLS)

    def _batch_end_rules(self, shape: int) -> list:
        return self._rules_batch_end


def reference_auditor(catalog: Catalog) -> Auditor:
    settings = CoreSettings()
    return Auditor.of_loop(EveryRuleLoop(catalog, settings, True, UncachedState(settings)))


def outputs(auditor: Auditor, events: list, comparisons: list = ()) -> dict:
    out = auditor.process(events)
    judged = [v for c in comparisons for v in auditor.judge_snapshot(c).violations]
    snap = auditor.snapshot()
    return {
        "violations": [asdict(v) for v in out.violations + judged],
        "conditions": [asdict(c) for c in out.conditions],
        "partitions": [asdict(p) for p in out.partitions],
        "brokers": [asdict(b) for b in out.brokers],
        "quarantined": [(q.source, q.position, q.offset, q.reason) for q in out.quarantined],
        "counts": (out.applied, out.duplicates, auditor.quarantined),
        "gauges": asdict(auditor.gauges()),
        "open": [asdict(c) for c in auditor.open_conditions()],
        "stored": (snap.meta, snap.topology,
                   {name: sorted(blobs.items()) for name, blobs in snap.shards.items()}),
    }


def assert_same(name: str, events: list, comparisons: list = (), runs=None) -> dict:
    """`runs`: the same log read with its NoOp batches in runs (what `check` reads)."""
    events = list(events)
    fast = outputs(Auditor(EVERY_RULE), events, comparisons)
    reference = outputs(reference_auditor(EVERY_RULE), events, comparisons)
    for part in fast:
        assert fast[part] == reference[part], f"{name}: {part} differ"
    if runs is not None:
        assert outputs(Auditor(EVERY_RULE), list(runs), comparisons) == fast, f"{name}: NoOp runs differ"
    # without partition rows (`check`): the same findings, intervals, gauges and state
    lean = outputs(Auditor(EVERY_RULE, partition_rows=False), events, comparisons)
    assert lean.pop("partitions") == []
    assert lean == {k: v for k, v in fast.items() if k != "partitions"}, f"{name}: rows off differ"
    return fast


def log_inputs(log) -> list:
    cluster_id = read_meta_properties(log).get("cluster.id", "")
    return list(read_log_dir(log, cluster_id)), list(verify_snapshots(log, cluster_id))


def with_runs(log, start: str = "earliest"):
    return read_log_dir(log, read_meta_properties(log).get("cluster.id", ""), start, noop_runs=True)


def from_the_middle(events: list) -> list:
    """The log from the atomic batch at its middle record: it starts mid-history."""
    records = [e for e in events if isinstance(e, MetadataEvent) and e.offset >= 0]
    cut = records[len(records) // 2].batch_base_offset
    return [e for e in events if isinstance(e, MetadataEvent) and e.offset >= cut]


@pytest.mark.parametrize("log", fixture_logs(), ids=_log_name)
def test_real_logs_whole_from_a_snapshot_and_from_the_middle(log):
    events, comparisons = log_inputs(log)
    whole = assert_same(f"{_log_name(log)}", events, comparisons, with_runs(log))
    assert whole["partitions"], "the log changes no partition: nothing was compared"
    cluster_id = read_meta_properties(log).get("cluster.id", "")
    assert_same(f"{_log_name(log)} from its snapshot", read_log_dir(log, cluster_id, "snapshot"),
                runs=with_runs(log, "snapshot"))
    assert_same(f"{_log_name(log)} from the middle", from_the_middle(events))


# the story's logs hold every record type (the real ones are mostly NoOps, and slower to mutate)
@pytest.mark.parametrize("log", [p for p in fixture_logs() if p.parent.name == "kraft-story"], ids=_log_name)
def test_a_sample_of_mutants(tmp_path, log):
    mutants = list(generate(log, per_kind=1))
    found = 0
    for n, mutant in enumerate(random.Random(22).sample(mutants, min(16, len(mutants)))):
        target = write_log(log, mutant.frames, tmp_path / str(n), mutant.snapshots)
        found += len(assert_same(f"{_log_name(log)}: {mutant.what}", *log_inputs(target),
                                 runs=with_runs(target))["violations"])
    assert found, "no mutant was flagged: the sample compared no finding"


def test_simulated_clusters_with_every_fault(tmp_path):
    found = set()
    for n, fault in enumerate(sorted(FAULTS)):
        out = tmp_path / fault
        simulate(load_scenario("chaos"), out, seed=n % 4 + 1, faults=[(fault, 0)])
        found |= {v["rule_id"] for v in assert_same(fault, read_output(out))["violations"]}
    for seed in range(4):
        scenario = random_scenario(seed, 80)
        out = tmp_path / f"random-{seed}"
        simulate(scenario, out, seed=seed, faults=parse_fault_option("random:6", scenario.step_count(), seed))
        found |= {v["rule_id"] for v in assert_same(f"random {seed}", read_output(out))["violations"]}
    # the shape-filtered rules were among those that fired
    assert {"kip966.elr-matches-kafka", "kip966.last-known-elr-matches-kafka"} <= found, sorted(found)


def test_the_reference_loop_differs_where_a_when_would_hide_a_finding(kraft_log):
    """The comparison can fail: a rule given a `when` it does not keep (it fires on
    partitions without an ELR, declared for those with one) loses findings the reference
    still has."""
    spec = EVERY_RULE.get("user.isr-shrank-by-two")
    wrong = replace(spec, impl=replace(spec.impl, when=HAS_ELR))
    catalog = Catalog([wrong], "")
    t = "TTTTTTTTTTTTTTTTTTTTTQ"
    kraft_log.batch(*kraft_log.elr_features(False), *(kraft_log.register(b) for b in (1, 2, 3)),
                    kraft_log.topic("t", t), kraft_log.partition(t, 0, [1, 2, 3]))
    kraft_log.batch(("PARTITION_CHANGE_RECORD", {"topicId": t, "partitionId": 0, "isr": [1]}))
    fast = outputs(Auditor(catalog), kraft_log.events)
    reference = outputs(reference_auditor(catalog), kraft_log.events)
    assert [v["rule_id"] for v in reference["violations"]] == ["user.isr-shrank-by-two"]
    assert fast["violations"] == []


def test_stored_state_round_trips_between_the_paths():
    """A state stored by the fast path goes on in the reference path as it would have."""
    log = fixture_logs()[-1]
    events, _ = log_inputs(log)
    half = len(events) // 2
    fast = Auditor(EVERY_RULE)
    fast.process(events[:half])
    restored = Auditor.from_bytes(fast.to_bytes(), EVERY_RULE)
    reference = reference_auditor(EVERY_RULE)
    reference.process(events[:half])
    # (the stored bytes may differ: a restored table re-pickles only the shards it wrote)
    after_restore, straight = outputs(restored, events[half:]), outputs(reference, events[half:])
    assert after_restore.pop("stored") and straight.pop("stored")
    assert after_restore == straight


def test_a_registration_batch_sees_every_change_of_its_batch(kraft_log):
    """The registration matcher notes where a re-registering broker left an ELR from every
    change of its batch, those no batch-end rule judges too (ELR disabled here)."""
    t = "TTTTTTTTTTTTTTTTTTTTTQ"
    kraft_log.batch(*kraft_log.elr_features(False), *(kraft_log.register(b) for b in (1, 2, 3)),
                    kraft_log.topic("t", t), kraft_log.partition(t, 0, [1, 2, 3]))
    kraft_log.batch(("PARTITION_CHANGE_RECORD", {"topicId": t, "partitionId": 0, "isr": [1],
                                                 "eligibleLeaderReplicas": [2]}))
    kraft_log.batch(("PARTITION_CHANGE_RECORD", {"topicId": t, "partitionId": 0,
                                                 "eligibleLeaderReplicas": []}),
                    kraft_log.register(2, incarnation="inc-2-again", epoch=5))
    fast = Auditor(EVERY_RULE)
    assert outputs(fast, kraft_log.events) == outputs(reference_auditor(EVERY_RULE), kraft_log.events)
    waiting = fast.registrations.pending_records[(2, "inc-2-again")]  # no request came
    assert waiting.removed_from_elr == [((t, 0), kraft_log.events[-2].offset)]
