"""Scenario files: built-ins load, errors name the line and the problem."""

from __future__ import annotations

import pytest

from kraft_audit.sim.chaos import random_scenario
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import ScenarioError, builtin_names, load_scenario, parse_scenario

REQUIRED = {
    "rolling-restart",
    "unclean-shutdown-elr",
    "unclean-election-recovery",
    "min-isr-change",
    "reassignment",
    "stray-replicas",
    "chaos",
}


def test_builtin_scenarios_exist_and_parse():
    assert REQUIRED <= set(builtin_names())
    for name in builtin_names():
        scenario = load_scenario(name)
        assert scenario.name == name and scenario.steps and scenario.description


def test_full_syntax():
    s = parse_scenario("""
name: demo
cluster: {brokers: [1, 2, 5], metadata_version: 4.0-IV3, elr: true, min_insync_replicas: 2,
          controllers: 3}
topics:
  - {name: a, partitions: 3, replication_factor: 2, configs: {unclean.leader.election.enable: true}}
  - {name: b, assignment: [[1, 2], [2, 5]]}
steps:
  - crash: 5
  - shrink_isr: {topic: a, partition: 0, broker: 2}
  - set_min_isr: 1
  - set_min_isr: {topic: a, value: 2}
  - catch_up
  - chaos: 7
""")
    assert (
        s.cluster.brokers == [1, 2, 5]
        and s.cluster.metadata_version == 25
        and s.cluster.elr_version == 1
    )
    assert s.topics[0].configs == {"unclean.leader.election.enable": "true"}
    assert (s.topics[1].partitions, s.topics[1].replication_factor) == (2, 2)
    assert [st.kind for st in s.steps] == [
        "crash",
        "shrink_isr",
        "set_min_isr",
        "set_min_isr",
        "catch_up",
        "chaos",
    ]
    assert s.steps[0].args == {"broker": 5} and s.steps[0].line == 9
    assert s.steps[2].args == {"value": 1}
    assert s.step_count() == 5 + 7


@pytest.mark.parametrize(
    "text, where, problem",
    [
        ("name: x\nsteps:\n  - explode: 1\n", ":3:", "unknown step 'explode'"),
        ("name: x\ncluster: {brokers: 3}\nsteps:\n  - crash: 9\n", ":4:", "broker 9 is not one of"),
        ("name: x\nsteps:\n  - shrink_isr: {topic: a}\n", ":3:", "missing 'partition'"),
        (
            "name: x\nsteps:\n  - shrink_isr: {topic: a, partition: x, broker: 1}\n",
            ":3:",
            "must be an integer",
        ),
        (
            "name: x\ntopics:\n  - {name: a, partitions: 2, replication_factor: 5}\n",
            ":3:",
            "replication_factor 5",
        ),
        (
            "name: x\ncluster:\n  metadata_version: 3.9-IV0\n  elr: true\n",
            ":3:",
            "needs metadata_version >= 23",
        ),
        ("name: x\ncluster:\n  metadata_version: 9.9\n", ":3:", "unknown metadata.version"),
        ("name: x\ncluster:\n  colour: blue\n", ":3:", "unknown cluster setting 'colour'"),
        ("name: x\nsurprise: 1\n", ":2:", "unknown key 'surprise'"),
        ("name: x\nsteps: [\n", ":3:", "not valid YAML"),
        ("name: x\nsteps:\n  - {crash: 1, restart: 1}\n", ":3:", "exactly one kind"),
        ("", ":1:", "empty"),
    ],
)
def test_errors_name_the_line_and_the_problem(text, where, problem):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, "s.yaml")
    assert f"s.yaml{where}" in str(info.value) and problem in str(info.value)


def test_runtime_errors_name_the_step_line():
    s = parse_scenario(
        "name: x\ntopics:\n  - {name: a, partitions: 1, replication_factor: 1}\nsteps:\n"
        "  - wait: 10\n  - shrink_isr: {topic: b, partition: 0, broker: 1}\n",
        "s.yaml",
    )
    with pytest.raises(
        ScenarioError, match=r"s.yaml:6: step shrink_isr failed: there is no topic named 'b'"
    ):
        simulate(s)


def test_unknown_name_lists_the_builtins():
    with pytest.raises(ScenarioError, match="rolling-restart"):
        load_scenario("no-such-scenario")


def test_scaling_spreads_partitions_and_sets_brokers():
    s = load_scenario("rolling-restart").scaled(partitions=1001, brokers=7)
    assert sum(t.partitions for t in s.topics) == 1001 and s.cluster.brokers == list(range(1, 8))
    with pytest.raises(ScenarioError):
        load_scenario("rolling-restart").scaled(brokers=2)  # RF 3 topics


def test_random_scenario_is_a_function_of_its_seed():
    a, b = simulate(random_scenario(5, 30), seed=5), simulate(random_scenario(5, 30), seed=5)
    assert list(a.sink.records()) == list(b.sink.records())
    c = simulate(random_scenario(6, 30), seed=6)
    assert list(c.sink.records()) != list(a.sink.records())
