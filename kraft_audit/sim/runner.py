"""Runs a scenario through the controller model into a sink: the one entry
point the CLI, the tests and the benchmark use.

    result = simulate(load_scenario("unclean-shutdown-elr"), "out/", seed=1,
                      faults=[("wrong-elr", 0)])
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from kraft_audit.sim import partition_change as pc
from kraft_audit.sim.chaos import run_chaos
from kraft_audit.sim.faults import FaultInjector
from kraft_audit.sim.model import (
    ELR_VERSION,
    METADATA_VERSION,
    NO_FAULTS,
    ClusterModel,
    MemorySink,
    Settings,
    new_uuid,
)
from kraft_audit.sim.scenario import Scenario, ScenarioError, Step

HEARTBEAT_TIMEOUT_MS = 9000  # broker.session.timeout.ms


@dataclass
class SimResult:
    cluster_id: str
    out_dir: Path | None
    records: int
    last_offset: int
    partitions: int
    faults: list[dict]
    unfired: list[str]
    model: ClusterModel
    sink: object
    seconds: float


def simulate(
    scenario: Scenario,
    out_dir: str | Path | None = None,
    *,
    seed: int = 0,
    faults: Iterable[tuple[str, int]] = (),
    live_rate: float | None = None,
    cluster_id: str | None = None,
    final_log_dirs: bool | None = None,
) -> SimResult:
    """Run `scenario`; write to `out_dir` (a real log dir and side files) or keep
    everything in memory (`result.sink` is a MemorySink) when out_dir is None.
    `faults` are (fault name, scenario step) pairs; `live_rate` paces the writes
    (batches per second); `final_log_dirs` (default: up to 100,000 partitions)
    ends with every live broker's log-dir inventory."""
    started = time.perf_counter()
    spec = scenario.cluster
    settings = Settings(
        metadata_version=spec.metadata_version,
        elr_version=spec.elr_version,
        min_insync_replicas=spec.min_insync_replicas,
        use_last_known_leader=spec.use_last_known_leader,
        controller_ids=tuple(3000 + i for i in range(spec.controllers)),
    )
    faults = list(faults)
    injector = FaultInjector(faults, seed) if faults else NO_FAULTS
    start_ms = int(time.time() * 1000) if live_rate else 1_750_000_000_000 + seed * 1000
    cluster_id = cluster_id or new_uuid(random.Random(f"cluster-{seed}"))
    writer = (
        None if out_dir is None else _open_output(out_dir, cluster_id, spec, settings, live_rate)
    )
    sink = MemorySink() if writer is None else writer
    model = ClusterModel(
        settings, sink, cluster_id=cluster_id, seed=seed, start_ms=start_ms, injector=injector
    )
    # the scenario's own random stream, independent of the model's
    run = _Run(model, scenario, injector, writer, random.Random(f"scenario-{seed}"))
    try:
        run.start()
        for step in scenario.steps:
            run.checked_step(step)
    except BaseException:
        if writer is not None:
            writer.close()
        raise
    total = sum(len(t.partitions) for t in model.topics.values())
    # a million-partition inventory would be a JSON of hundreds of MB
    if final_log_dirs if final_log_dirs is not None else total <= 100_000:
        model.log_dir_inventories()
    model.advance(spec.step_gap_ms)
    if spec.controllers > 1:
        # a quorum's log proves its records committed only up to its newest epoch's start
        # (kraft_audit/core/raft.py): the run ends with the active controller handing over, the
        # next one's LeaderChange and first NoOp proving the rest (in this model all of it is)
        model.leader_change()
        model.advance(spec.step_gap_ms)
    injected = injector.injected if faults else []
    unfired = injector.unfired if faults else []
    seconds = time.perf_counter() - started
    if writer is not None:
        summary = {
            "scenario": scenario.name,
            "seed": seed,
            "cluster_id": cluster_id,
            "records": model.records_written,
            "last_offset": model.next_offset - 1,
            "partitions": total,
            "brokers": len(model.brokers),
            "faults_injected": len(injected),
            "faults_unfired": unfired,
            "seconds": round(seconds, 3),
        }
        writer.finish(injected, model.final_state(), summary)
    out = Path(out_dir) if out_dir is not None else None
    return SimResult(
        cluster_id,
        out,
        model.records_written,
        model.next_offset - 1,
        total,
        injected,
        unfired,
        model,
        sink,
        seconds,
    )


def _open_output(out_dir, cluster_id: str, spec, settings: Settings, live_rate: float | None):
    from kraft_audit.sim.output import OutputWriter, Pacer

    bootstrap = [
        (
            "FEATURE_LEVEL_RECORD",
            0,
            {"name": METADATA_VERSION, "featureLevel": spec.metadata_version},
        )
    ]
    if spec.elr_version:
        bootstrap.append(
            ("FEATURE_LEVEL_RECORD", 0, {"name": ELR_VERSION, "featureLevel": spec.elr_version})
        )
    return OutputWriter(
        out_dir,
        cluster_id,
        node_id=settings.controller_ids[0],
        bootstrap_records=bootstrap,
        metadata_version=spec.metadata_version,
        segment_bytes=spec.segment_bytes,
        pacer=Pacer(live_rate) if live_rate else None,
    )


class _Run:
    """The step interpreter: scenario steps -> model events."""

    def __init__(
        self, model: ClusterModel, scenario: Scenario, injector, writer, rng: random.Random
    ) -> None:
        self.model = model
        self.scenario = scenario
        self.injector = injector
        self.writer = writer
        self.rng = rng
        self.gap = scenario.cluster.step_gap_ms
        self._last_snapshot = 0

    def start(self) -> None:
        m = self.model
        m.bootstrap()
        m.advance(self.gap)
        for b in self.scenario.cluster.brokers:
            m.register_broker(b)
        m.advance(self.gap)
        for b in self.scenario.cluster.brokers:
            m.unfence(b)
        m.advance(self.gap)
        cluster_min_isr = self.scenario.cluster.min_insync_replicas
        if cluster_min_isr > 1 and "min.insync.replicas" not in m.cluster_configs:
            m.set_config(None, "min.insync.replicas", str(cluster_min_isr))
        for t in self.scenario.topics:
            m.create_topic(t.name, t.partitions, t.replication_factor, t.configs, t.replica_lists())
        m.advance(self.gap)

    def done(self) -> None:
        """After each event: rogue-record faults, snapshots, time passes."""
        m = self.model
        if self.injector.active:
            self.injector.at_step_end(m)
        m.step += 1
        every = self.scenario.cluster.snapshot_every
        if self.writer is not None and every and m.next_offset - self._last_snapshot >= every:
            self.snapshot()
        m.advance(self.gap)

    def snapshot(self) -> None:
        m = self.model
        if self.writer is not None and m.next_offset > 0:
            self.writer.write_snapshot(m.image_records(), m.next_offset, m.raft_epoch, m.now_ms)
            self._last_snapshot = m.next_offset

    def checked_step(self, step: Step) -> None:
        """One step; a model error becomes a ScenarioError naming the step's line."""
        try:
            self.step(step)
        except ScenarioError:
            raise
        except (KeyError, ValueError, IndexError) as exc:
            problem = exc.args[0] if exc.args else exc
            where = f"{self.scenario.source or self.scenario.name}:{step.line}"
            raise ScenarioError(f"{where}: step {step.kind} failed: {problem}") from None

    def step(self, step: Step) -> None:
        m, a = self.model, step.args
        kind = step.kind
        if kind == "chaos":
            run_chaos(m, random.Random(self.rng.getrandbits(64)), a["events"], self.done)
            return
        if "broker" in a and a["broker"] is not None and a["broker"] not in m.brokers:
            raise ScenarioError(
                f"{self.scenario.source or self.scenario.name}:{step.line}: {kind}: broker "
                f"{a['broker']} is not registered"
            )
        if kind == "wait":
            m.advance(a["ms"])
        elif kind == "create_topic":
            assignment = a.get("assignment")
            m.create_topic(
                a["name"],
                a.get("partitions") or len(assignment),
                a.get("replication_factor") or len(assignment[0]),
                {k: str(v) for k, v in (a.get("configs") or {}).items()},
                assignment,
            )
        elif kind == "delete_topic":
            m.delete_topic(a["name"])
        elif kind == "controlled_shutdown":
            m.controlled_shutdown(a["broker"], self.gap)
        elif kind == "crash":
            m.crash(a["broker"])
        elif kind == "heartbeat_timeout":
            m.advance(HEARTBEAT_TIMEOUT_MS)
            m.fence(a["broker"])
        elif kind == "restart":
            m.restart(a["broker"], self.gap)
        elif kind == "register":
            m.register_broker(a["broker"])
        elif kind == "unfence":
            m.unfence(a["broker"])
        elif kind == "catch_up":
            m.catch_up(a.get("broker"))
        elif kind == "shrink_isr":
            m.shrink_isr(a["topic"], a["partition"], a["broker"])
        elif kind == "expand_isr":
            m.expand_isr(a["topic"], a["partition"], a["broker"])
        elif kind == "finish_recovery":
            self._finish_recovery(a.get("topic"), a.get("partition"))
        elif kind == "set_config":
            m.set_config(a.get("topic"), a["name"], a.get("value"))
        elif kind == "set_min_isr":
            m.set_config(a.get("topic"), "min.insync.replicas", str(a["value"]))
        elif kind == "update_feature":
            m.update_feature(a["name"], a["level"])
        elif kind == "reassign":
            m.reassign(a["topic"], a["partition"], [int(r) for r in a["replicas"]])
        elif kind == "elect_preferred":
            m.elect_leaders(pc.PREFERRED, a.get("topic"))
        elif kind == "unclean_elections":
            m.unclean_elections()
        elif kind == "leader_change":
            m.leader_change()
        elif kind == "log_dirs":
            m.log_dir_inventories()
        elif kind == "snapshot":
            self.snapshot()
        elif kind == "rolling_restart":
            self._rolling_restart(
                a.get("brokers"), a.get("gap_ms", self.gap), a.get("preferred", True)
            )
            return
        self.done()

    def _finish_recovery(self, topic: str | None, partition: int | None) -> None:
        m = self.model
        for t, pid, p in m.partitions():
            if (
                (topic is None or t.name == topic)
                and (partition is None or pid == partition)
                and p.leader_recovery_state == pc.RECOVERING
            ):
                m.finish_recovery(t.name, pid)

    def _rolling_restart(self, brokers, gap_ms: int, preferred: bool) -> None:
        m = self.model
        for b in brokers or sorted(m.brokers):
            m.controlled_shutdown(b, gap_ms)
            m.advance(gap_ms)
            m.restart(b, gap_ms)
            if preferred:  # auto.leader.rebalance.enable moves leadership back
                m.elect_leaders(pc.PREFERRED)
            self.done()
