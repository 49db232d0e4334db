"""The simulator against the auditor (H2's Auditor over H1's decoder): fault-free
logs audit clean, every injected fault is found (recall), and what is found is
explained by the injected faults (precision)."""

from __future__ import annotations

import collections
import json
from dataclasses import asdict

import pytest

from kraft_audit.core.audit import Auditor
from kraft_audit.core.rules import load_catalog
from kraft_audit.sim.chaos import random_scenario
from kraft_audit.sim.faults import CATALOG, parse_fault_option, score
from kraft_audit.sim.output import read_output
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import builtin_names, load_scenario


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def audit(catalog, out_dir):
    auditor = Auditor(catalog)
    result = auditor.process(read_output(out_dir))
    return auditor, result


def summary(violations):
    return dict(collections.Counter(v.rule_id for v in violations))


@pytest.mark.parametrize("name", builtin_names())
def test_builtin_scenarios_audit_clean(tmp_path, catalog, name):
    for seed in (1, 2):
        out = tmp_path / str(seed)
        simulate(load_scenario(name), out, seed=seed)
        auditor, result = audit(catalog, out)
        assert not result.violations, summary(result.violations)
        assert not result.quarantined
        # the auditor's replay agrees with the simulator's final state
        final = json.loads((out / "final-state.json").read_text())
        for row in final:
            p = auditor.state.partitions[(row["topic_id"], row["partition"])]
            assert (
                list(p.isr),
                list(p.elr),
                list(p.last_known_elr),
                p.leader,
                p.leader_epoch,
                p.partition_epoch,
                p.leader_recovery_state,
            ) == (
                row["isr"],
                row["elr"],
                row["last_known_elr"],
                row["leader"],
                row["leader_epoch"],
                row["partition_epoch"],
                row["leader_recovery_state"],
            ), row


def test_100_random_seeds_audit_clean(tmp_path, catalog):
    dirty = {}
    for seed in range(100):
        out = tmp_path / str(seed)
        simulate(random_scenario(seed, 40), out, seed=seed)
        _auditor, result = audit(catalog, out)
        if result.violations or result.quarantined:
            dirty[seed] = summary(result.violations)
    assert not dirty


@pytest.mark.parametrize("fault", sorted(CATALOG))
def test_each_fault_is_found_where_it_was_injected(tmp_path, catalog, fault):
    tries = [("chaos", seed) for seed in (1, 2, 3, 4)] + [(name, 1) for name in builtin_names()]
    for i, (name, seed) in enumerate(tries):
        out = tmp_path / str(i)
        result = simulate(load_scenario(name), out, seed=seed, faults=[(fault, 0)])
        if result.faults:
            break
    else:
        pytest.fail(f"{fault} found no opportunity in {tries}")
    _auditor, audited = audit(catalog, out)
    assert json.loads((out / "faults.json").read_text()) == result.faults
    scored = score(result.faults, [asdict(v) for v in audited.violations])
    assert scored["recall"] == 1.0, summary(audited.violations)
    assert scored["precision"] == 1.0, summary(audited.violations)


def test_random_faults_recall_and_precision(tmp_path, catalog, capsys):
    faults = detected = violations = explained = 0
    for seed in range(12):
        scenario = load_scenario("chaos") if seed % 2 else random_scenario(seed, 120)
        out = tmp_path / str(seed)
        result = simulate(
            scenario,
            out,
            seed=seed,
            faults=parse_fault_option("random:6", scenario.step_count(), seed),
        )
        _auditor, audited = audit(catalog, out)
        scored = score(result.faults, [asdict(v) for v in audited.violations])
        faults += scored["faults"]
        detected += scored["detected"]
        violations += scored["violations"]
        explained += scored["explained"]
    recall, precision = detected / faults, explained / violations
    with capsys.disabled():
        print(f"\nsimulated faults: {faults}, recall {recall:.3f}, precision {precision:.3f}")
    assert faults >= 40
    assert recall >= 0.95 and precision >= 0.95
