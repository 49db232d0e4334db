"""A KRaft controller simulator that writes realistic metadata logs, with
controller bugs to catch.

    from kraft_audit.sim import load_scenario, simulate
    result = simulate(load_scenario("unclean-shutdown-elr"), "out/", seed=1,
                      faults=[("wrong-elr", 0)])

Modules, in the order data flows:
- `versions`: metadata.version feature levels and what they gate;
- `partition_change`: Kafka's PartitionChangeBuilder as pure functions;
- `model`: the controller (brokers, topics, configs, features) writing
  Kafka's records in Kafka's batches;
- `scenario`: scenarios from YAML (or Python), with line-numbered errors;
- `chaos`: random events and whole random scenarios from a seed;
- `faults`: named controller bugs, their rules, ground truth and scoring;
- `output`: the log dir and side files (and `read_output` to read them back);
- `runner`: `simulate()`, the step interpreter.
"""

from kraft_audit.sim.chaos import random_scenario
from kraft_audit.sim.faults import CATALOG as FAULTS
from kraft_audit.sim.faults import parse_fault_option, score
from kraft_audit.sim.runner import SimResult, simulate
from kraft_audit.sim.scenario import (
    Scenario,
    ScenarioError,
    builtin_names,
    load_scenario,
    parse_scenario,
)

__all__ = [
    "FAULTS",
    "Scenario",
    "ScenarioError",
    "SimResult",
    "builtin_names",
    "load_scenario",
    "parse_fault_option",
    "parse_scenario",
    "random_scenario",
    "score",
    "simulate",
]
