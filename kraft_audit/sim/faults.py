"""Named controller bugs, injected into the simulated log, with ground truth.

Each fault breaks one rule (its `rule_id`, the one the auditor must report)
and may legitimately trip a few others (`also_rules`). A fault is armed for a
scenario step and fires at the first opportunity at or after it: the model
calls `on_partition_change` for every PartitionChangeRecord it is about to
write and `on_event` at the other decision points; `at_step_end` lets the
"rogue record" faults write a PartitionRecord of their own. Every fault that
fires is written to faults.json; one that never finds an opportunity is
listed in `unfired`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from kraft_audit.sim.partition_change import NO_LEADER, RECOVERED, RECOVERING, PartitionState
from kraft_audit.sim.versions import elr_supported, partition_record_version

NOT_APPLICABLE = object()  # a hook's answer when this opportunity does not fit the fault

PARTITION_CHANGE = "partition_change"
MIN_ISR_CHANGE = "min_isr_change"
REGISTRATION = "registration"
LOG_DIRS = "log_dirs"
ROGUE_RECORD = "rogue_record"
FENCED = "fenced"  # the model wrote a fence record (resolves the offset of isr-not-shrunk-on-fence)


@dataclass(frozen=True)
class FaultSpec:
    name: str
    rule_id: str
    also_rules: tuple[str, ...]
    point: str
    apply: Callable
    description: str
    # partition-change faults stay out of reassignments (their ground truth would be
    # ambiguous), except those about reassignments
    in_reassignment: bool = False


@dataclass
class Change:
    """What a partition-change hook sees."""

    model: object
    topic: object
    pid: int
    before: PartitionState
    change: dict | None
    reason: str

    def usable(self, broker_id: int) -> bool:
        """Active, and not the broker this very event is fencing or shutting down."""
        return self.model.is_active(broker_id) and broker_id not in self.model.leaving

    @property
    def new_isr(self) -> list[int]:
        return (
            list(self.change.get("isr", self.before.isr)) if self.change else list(self.before.isr)
        )


# ---------------------------------------------------------------- partition-change faults


def _elr_overlaps_isr(c: Change):
    if not c.change or not c.change.get("eligibleLeaderReplicas") or not c.new_isr:
        return NOT_APPLICABLE
    return {
        **c.change,
        "eligibleLeaderReplicas": [*c.change["eligibleLeaderReplicas"], c.new_isr[0]],
    }


def _wrong_elr(c: Change):
    elr = (c.change or {}).get("eligibleLeaderReplicas")
    if not elr or len(elr) < 2:
        return NOT_APPLICABLE
    return {**c.change, "eligibleLeaderReplicas": elr[:-1]}


def _wrong_last_known_elr(c: Change):
    lke = (c.change or {}).get("lastKnownElr")
    if not lke or len(lke) != 1:
        return NOT_APPLICABLE
    others = [r for r in c.before.replicas if r != lke[0]]
    if not others:
        return NOT_APPLICABLE
    return {**c.change, "lastKnownElr": [others[0]]}


def _elr_above_min_isr(c: Change):
    if (
        not c.change
        or c.change.get("eligibleLeaderReplicas") != []
        or "isr" not in c.change
        or "leader" in c.change
    ):
        return NOT_APPLICABLE
    if len(c.new_isr) < c.model.effective_min_isr(c.topic):
        return NOT_APPLICABLE
    if set(c.before.elr) & set(c.new_isr) or not c.before.elr:
        return NOT_APPLICABLE
    kept = {
        k: v for k, v in c.change.items() if k not in ("eligibleLeaderReplicas", "lastKnownElr")
    }
    return kept


def _elr_outside_replicas(c: Change):
    elr = (c.change or {}).get("eligibleLeaderReplicas")
    if not elr:
        return NOT_APPLICABLE
    stranger = (
        max([*c.model.brokers, *c.before.replicas]) + 1000
    )  # never registered, so never elected
    return {**c.change, "eligibleLeaderReplicas": [*elr, stranger]}


def _elr_written_when_disabled(c: Change):
    m = c.model
    if (
        m.elr_enabled
        or not elr_supported(m.metadata_version)
        or not c.change
        or "isr" not in c.change
    ):
        return NOT_APPLICABLE
    dropped = [r for r in c.before.isr if r not in c.change["isr"]]
    if not dropped:
        return NOT_APPLICABLE
    return {**c.change, "eligibleLeaderReplicas": dropped}


def _isr_emptied_without_elr(c: Change):
    if not c.change or c.change.get("isr") != [] or not c.change.get("eligibleLeaderReplicas"):
        return NOT_APPLICABLE
    return {**c.change, "eligibleLeaderReplicas": []}


def _is_unclean_election(c: Change) -> bool:
    ch = c.change or {}
    return (
        ch.get("leaderRecoveryState") == RECOVERING
        and ch.get("leader", -2) >= 0
        and ch.get("isr") == [ch["leader"]]
    )


def _unclean_election_without_recovering(c: Change):
    if not _is_unclean_election(c):
        return NOT_APPLICABLE
    return {k: v for k, v in c.change.items() if k != "leaderRecoveryState"}


def _recovering_isr_not_leader(c: Change):
    if not _is_unclean_election(c):
        return NOT_APPLICABLE
    leader = c.change["leader"]
    extra = [r for r in c.before.replicas if r != leader and c.usable(r)]
    if not extra:
        return NOT_APPLICABLE
    return {**c.change, "isr": [leader, extra[0]]}


def _isr_grows_while_recovering(c: Change):
    # The leader of a RECOVERING partition reports RECOVERED; the buggy controller
    # instead grows the ISR and keeps it RECOVERING.
    if c.reason != "alter_partition" or c.before.leader_recovery_state != RECOVERING:
        return NOT_APPLICABLE
    if c.change != {"leaderRecoveryState": RECOVERED}:
        return NOT_APPLICABLE
    extra = [r for r in c.before.replicas if r not in c.before.isr and c.usable(r)]
    if not extra:
        return NOT_APPLICABLE
    return {"isr": [*c.before.isr, extra[0]]}


def _recovering_without_unclean_election(c: Change):
    # RECOVERING set by a record that elects nobody (an ISR change from AlterPartition)
    ch = c.change or {}
    if (
        c.before.leader_recovery_state != RECOVERED
        or not ch
        or "leader" in ch
        or "leaderRecoveryState" in ch
    ):
        return NOT_APPLICABLE
    if c.before.leader < 0 or c.model.metadata_version < 3:
        return NOT_APPLICABLE
    return {**ch, "leaderRecoveryState": RECOVERING}


def _recovery_state_lost_on_leader_change(c: Change):
    ch = c.change or {}
    if (
        c.before.leader_recovery_state != RECOVERING
        or ch.get("leader", c.before.leader) == c.before.leader  # an epoch bump is no new leader
        or "leaderRecoveryState" in ch
    ):
        return NOT_APPLICABLE
    return {**ch, "leaderRecoveryState": RECOVERED}


def _invalid_recovery_state(c: Change):
    ch = c.change or {}
    if (
        c.before.leader_recovery_state != RECOVERING
        or "leader" not in ch
        or "leaderRecoveryState" in ch
    ):
        return NOT_APPLICABLE
    return {**ch, "leaderRecoveryState": 2}


def _fenced_broker_elected(c: Change):
    ch = c.change or {}
    if ch.get("leader", -2) < 0 or "leaderRecoveryState" in ch:  # a clean election goes wrong
        return NOT_APPLICABLE
    if c.before.leader_recovery_state != RECOVERED:
        return NOT_APPLICABLE
    fenced = [r for r in c.before.replicas if r in c.model.brokers and c.model.brokers[r].fenced]
    if not fenced:
        return NOT_APPLICABLE
    return {**ch, "leader": fenced[0]}


def _leader_not_in_isr(c: Change):
    ch = c.change or {}
    if (
        ch.get("leader", -2) < 0
        or "leaderRecoveryState" in ch
        or c.before.leader_recovery_state != RECOVERED
    ):
        return NOT_APPLICABLE
    outside = [
        r
        for r in c.before.replicas
        if r not in c.new_isr
        and c.usable(r)
        and r not in ch.get("eligibleLeaderReplicas", c.before.elr)
    ]
    if not outside:
        return NOT_APPLICABLE
    return {**ch, "leader": outside[0]}


def _election_order_violated(c: Change):
    ch = c.change or {}
    leader = ch.get("leader", -2)
    if (
        leader < 0
        or leader == c.before.leader
        or "leaderRecoveryState" in ch
        or "eligibleLeaderReplicas" in ch
    ):
        return NOT_APPLICABLE
    isr = c.new_isr
    later = [
        r
        for r in c.before.replicas
        if r in isr and r not in (leader, c.before.leader) and c.usable(r)
    ]
    if leader not in isr or not later:
        return NOT_APPLICABLE
    return {**ch, "leader": later[0]}


def _reassignment_completed_under_min_isr(c: Change):
    """Completes a reassignment as soon as its adding replicas are in sync, although dropping
    the in-sync removing replicas leaves the ISR under min ISR."""
    before, ch = c.before, dict(c.change or {})
    adding = ch.get("addingReplicas", before.adding)
    removing = ch.get("removingReplicas", before.removing)
    if not adding or not removing:
        return NOT_APPLICABLE
    isr = c.new_isr
    kept = [r for r in isr if r not in removing]
    min_isr = c.model.effective_min_isr(c.topic)
    if not kept or any(r not in isr for r in adding) or not len(kept) < min_isr <= len(isr):
        return NOT_APPLICABLE
    replicas = [r for r in ch.get("replicas", before.replicas) if r not in removing]
    ch.update(isr=kept, replicas=replicas, addingReplicas=[], removingReplicas=[])
    leader = ch.get("leader", before.leader)
    if leader not in kept:
        ch["leader"] = kept[0]
    return ch


def _isr_not_shrunk_on_fence(c: Change):
    if (
        c.reason != "fence"
        or not c.change
        or "isr" not in c.change
        or "leaderRecoveryState" in c.change
    ):
        return NOT_APPLICABLE
    if len(c.before.isr) < 2 and not c.model.elr_enabled:
        return NOT_APPLICABLE  # without ELR Kafka keeps the last ISR member anyway
    return None  # the record is never written: the fenced broker stays in the ISR


# ---------------------------------------------------------------- other decision points


def _elr_not_cleared_at_min_isr(model, topic_name=None, **_):
    topics = [model.topic(topic_name)] if topic_name else list(model.topics.values())
    for topic in topics:
        for pid, p in enumerate(topic.partitions):
            if p.elr or p.last_known_elr:
                return True, topic, pid
    return NOT_APPLICABLE


def _unclean_shutdown_ignored(model, broker_id=None, verdict=None, **_):
    if verdict != "unclean":
        return NOT_APPLICABLE
    held = [(t, i) for t, i, p in model.partitions() if broker_id in p.isr or broker_id in p.elr]
    return ("ignored", held) if held else NOT_APPLICABLE


def _clean_restart_treated_unclean(model, broker_id=None, verdict=None, **_):
    if verdict != "clean" or not model.elr_enabled:
        return NOT_APPLICABLE
    held = [(t, i) for t, i, p in model.partitions() if broker_id in p.isr or broker_id in p.elr]
    if not any(broker_id in t.partitions[i].elr for t, i in held):
        return NOT_APPLICABLE
    return "unclean", held


def _stray_replica_left(model, rng=None, **_):
    live = sorted(b for b, reg in model.brokers.items() if reg.alive)
    # KIP-550's case first: a replica moved off the broker, or of a deleted topic
    for topic, pid, b in reversed(model.former_replicas):
        current = model.topics.get(topic.topic_id)
        hosted = current is not None and (
            b in current.partitions[pid].replicas or b in current.partitions[pid].adding
        )
        if b in live and not hosted:
            return {b: [(topic.name, pid)]}, topic, pid, b
    for topic, pid, p in model.partitions():
        for b in live:
            if b not in p.replicas and b not in p.adding:
                return {b: [(topic.name, pid)]}, topic, pid, b
    return NOT_APPLICABLE


# ------------------------------------------------------ rogue PartitionRecords (epoch bugs)


def _candidates(model):
    for topic, pid, p in model.partitions():
        if p.leader != NO_LEADER and model.is_active(p.leader) and not p.removing and not p.adding:
            yield topic, pid, p


def _partition_epoch_not_bumped(model):
    for topic, pid, p in _candidates(model):
        drop = [r for r in p.isr if r != p.leader]
        if (
            drop
            and (not model.elr_enabled or len(p.isr) - 1 >= model.effective_min_isr(topic))
            and not p.elr
        ):
            return topic, pid, p._replace(isr=tuple(r for r in p.isr if r != drop[-1]))
    return NOT_APPLICABLE


def _leader_epoch_not_bumped(model):
    for topic, pid, p in _candidates(model):
        if p.leader_recovery_state != RECOVERED:
            continue
        others = [r for r in p.isr if r != p.leader and model.is_active(r)]
        if others:
            return topic, pid, p._replace(leader=others[0], partition_epoch=p.partition_epoch + 1)
    return NOT_APPLICABLE


def _epoch_regressed(model):
    for topic, pid, p in _candidates(model):
        if p.partition_epoch >= 1:
            return topic, pid, p._replace(partition_epoch=p.partition_epoch - 1)
    return NOT_APPLICABLE


# ---------------------------------------------------------------- the catalog

_ELR_MATCH = ("kip966.elr-matches-kafka", "kip966.last-known-elr-matches-kafka")

CATALOG: dict[str, FaultSpec] = {
    f.name: f
    for f in [
        FaultSpec(
            "elr-not-cleared-at-min-isr",
            "kip966.elr-cleared-on-min-isr-change",
            ("kip966.elr-only-below-min-isr", *_ELR_MATCH, "kip966.empty-isr-requires-elr"),
            MIN_ISR_CHANGE,
            _elr_not_cleared_at_min_isr,
            "min.insync.replicas changes but no ClearElrRecord follows",
        ),
        FaultSpec(
            "elr-overlaps-isr",
            "kip966.elr-isr-disjoint",
            (*_ELR_MATCH, "kip966.election-order"),
            PARTITION_CHANGE,
            _elr_overlaps_isr,
            "an ISR member is also written into the ELR",
        ),
        FaultSpec(
            "wrong-elr",
            "kip966.elr-matches-kafka",
            # the ELR written can be the one the partition already had
            ("kip966.last-known-elr-matches-kafka", "kip966.empty-isr-requires-elr",
             "kraft.change-sets-new-values"),
            PARTITION_CHANGE,
            _wrong_elr,
            "the ELR written leaves out a replica Kafka would keep",
        ),
        FaultSpec(
            "wrong-last-known-elr",
            "kip966.last-known-elr-matches-kafka",
            ("kip966.elr-matches-kafka",),
            PARTITION_CHANGE,
            _wrong_last_known_elr,
            "LastKnownElr names a replica that was not the last leader",
        ),
        FaultSpec(
            "elr-above-min-isr",
            "kip966.elr-only-below-min-isr",
            _ELR_MATCH,
            PARTITION_CHANGE,
            _elr_above_min_isr,
            "the ISR grows back to min ISR but the ELR is kept",
        ),
        FaultSpec(
            "elr-outside-replicas",
            "kip966.subset-of-replicas",
            (*_ELR_MATCH, "kip966.elr-only-below-min-isr", "kip966.elr-enters-from-isr"),
            PARTITION_CHANGE,
            _elr_outside_replicas,
            "the ELR names a broker that is not a replica",
        ),
        FaultSpec(
            "elr-written-when-disabled",
            "kip966.no-elr-when-disabled",
            (*_ELR_MATCH, "kip966.elr-only-below-min-isr"),
            PARTITION_CHANGE,
            _elr_written_when_disabled,
            "ELR written while eligible.leader.replicas.version is 0",
        ),
        FaultSpec(
            "isr-emptied-without-elr",
            "kip966.empty-isr-requires-elr",
            (*_ELR_MATCH, "kraft.change-sets-new-values"),  # the wiped ELR may have been empty
            PARTITION_CHANGE,
            _isr_emptied_without_elr,
            "the ISR becomes empty and the ELR is wiped with it",
        ),
        FaultSpec(
            "unclean-election-without-recovering",
            "kip704.unclean-election-sets-recovering",
            ("kip966.election-order",),
            PARTITION_CHANGE,
            _unclean_election_without_recovering,
            "an unclean election leaves the partition RECOVERED",
        ),
        FaultSpec(
            "recovering-isr-not-leader",
            "kip704.recovering-isr-is-leader",
            (
                "kip704.no-isr-growth-while-recovering",
                "kip704.unclean-election-sets-recovering",
                "kip704.recovering-only-by-unclean-election",
            ),
            PARTITION_CHANGE,
            _recovering_isr_not_leader,
            "an unclean election writes RECOVERING with more than the leader in the ISR",
        ),
        FaultSpec(
            "isr-grows-while-recovering",
            "kip704.no-isr-growth-while-recovering",
            ("kip704.recovering-isr-is-leader",),
            PARTITION_CHANGE,
            _isr_grows_while_recovering,
            "the ISR of a RECOVERING partition grows",
        ),
        FaultSpec(
            "recovering-without-unclean-election",
            "kip704.recovering-only-by-unclean-election",
            ("kip704.recovering-isr-is-leader", "kip704.no-isr-growth-while-recovering"),
            PARTITION_CHANGE,
            _recovering_without_unclean_election,
            "an ISR change without an election marks the partition RECOVERING",
        ),
        FaultSpec(
            "recovery-state-lost-on-leader-change",
            "kip704.leader-change-keeps-recovering",
            ("kip704.unclean-election-sets-recovering",),
            PARTITION_CHANGE,
            _recovery_state_lost_on_leader_change,
            "a leader change of a RECOVERING partition resets it to RECOVERED",
        ),
        FaultSpec(
            "invalid-recovery-state",
            "kip704.field-range",
            (
                "kip704.leader-change-keeps-recovering",
                "kip704.recovering-isr-is-leader",
                "kip704.recovering-only-by-unclean-election",
                "kip704.no-isr-growth-while-recovering",
                # the simulator's next record re-sets the state it believes changed
                "kraft.change-sets-new-values",
            ),
            PARTITION_CHANGE,
            _invalid_recovery_state,
            "LeaderRecoveryState 2, which does not exist",
        ),
        FaultSpec(
            "fenced-broker-elected",
            "kip966.leader-registered-unfenced",
            (
                "kip966.leader-in-isr",
                "kip966.election-order",
                "kip704.unclean-election-sets-recovering",
                *_ELR_MATCH,
            ),
            PARTITION_CHANGE,
            _fenced_broker_elected,
            "a fenced replica is elected leader",
        ),
        FaultSpec(
            "leader-not-in-isr",
            "kip966.leader-in-isr",
            ("kip966.election-order", "kip704.unclean-election-sets-recovering", *_ELR_MATCH),
            PARTITION_CHANGE,
            _leader_not_in_isr,
            "a replica outside the ISR is elected without an unclean election",
        ),
        FaultSpec(
            "election-order-violated",
            "kip966.election-order",
            (),
            PARTITION_CHANGE,
            _election_order_violated,
            "a later ISR replica is elected over the first valid one",
        ),
        FaultSpec(
            "reassignment-completed-under-min-isr",
            "kraft.reassignment-keeps-min-isr",
            ("kraft.leader-epoch-bump", "kip966.election-order", *_ELR_MATCH),
            PARTITION_CHANGE,
            _reassignment_completed_under_min_isr,
            "a reassignment completes into an ISR under min ISR by dropping in-sync replicas",
            in_reassignment=True,
        ),
        FaultSpec(
            "isr-not-shrunk-on-fence",
            "kip966.fenced-out-of-isr",
            ("kip966.leader-registered-unfenced", *_ELR_MATCH),
            PARTITION_CHANGE,
            _isr_not_shrunk_on_fence,
            "a broker is fenced but stays in a partition's ISR",
        ),
        FaultSpec(
            "unclean-shutdown-ignored",
            "kip966.unclean-shutdown-removed",
            (
                "kip966.clean-shutdown-detection",
                "kip966.fenced-out-of-isr",
                "kip966.leader-registered-unfenced",
                *_ELR_MATCH,
            ),
            REGISTRATION,
            _unclean_shutdown_ignored,
            "a broker re-registers after an unclean shutdown and stays in ISR/ELR",
        ),
        FaultSpec(
            "clean-restart-treated-unclean",
            "kip966.clean-shutdown-detection",
            ("kip966.unclean-shutdown-removed", *_ELR_MATCH),
            REGISTRATION,
            _clean_restart_treated_unclean,
            "a clean restart (PreviousBrokerEpoch matches) is handled as an unclean shutdown",
        ),
        FaultSpec(
            "stray-replica-left",
            "kip550.stray-replica",
            (),
            LOG_DIRS,
            _stray_replica_left,
            "a broker keeps a replica the controller no longer assigns to it",
        ),
        FaultSpec(
            "partition-epoch-not-bumped",
            "kraft.partition-epoch-bump",
            ("kraft.epochs-monotonic",),
            ROGUE_RECORD,
            _partition_epoch_not_bumped,
            "a partition changes without a partition epoch bump",
        ),
        FaultSpec(
            "leader-epoch-not-bumped",
            "kraft.leader-epoch-bump",
            ("kraft.epochs-monotonic", "kip966.election-order"),
            ROGUE_RECORD,
            _leader_epoch_not_bumped,
            "the leader changes without a leader epoch bump",
        ),
        FaultSpec(
            "epoch-regressed",
            "kraft.epochs-monotonic",
            ("kraft.partition-epoch-bump", "kraft.leader-epoch-bump"),
            ROGUE_RECORD,
            _epoch_regressed,
            "a partition's epoch goes backwards",
        ),
    ]
}


def parse_fault_option(text: str, steps: int, seed: int) -> list[tuple[str, int]]:
    """`NAME[@STEP],...` or `random:N` -> [(fault name, step)]; ValueError on a bad name."""
    text = text.strip()
    if not text:
        return []
    if text.startswith("random:"):
        count = int(text.split(":", 1)[1])
        rng = random.Random(seed ^ 0x5EED)
        names = sorted(CATALOG)
        return [(rng.choice(names), rng.randrange(max(1, steps))) for _ in range(count)]
    out = []
    for item in text.split(","):
        name, _, when = item.strip().partition("@")
        if name not in CATALOG:
            raise ValueError(f"unknown fault {name!r}; known: {', '.join(sorted(CATALOG))}")
        out.append((name, int(when) if when else 0))
    return out


class FaultInjector:
    """Arms faults at scenario steps and records those that fire."""

    active = True

    def __init__(self, requests: list[tuple[str, int]], seed: int = 0) -> None:
        self.pending: list[tuple[FaultSpec, int]] = [
            (CATALOG[name], step) for name, step in requests
        ]
        self.injected: list[dict] = []
        self.rng = random.Random(seed)
        self._tainted: set[tuple[str, int]] = set()
        self._deferred: list[dict] = []  # truths whose offset is the next record written

    def _due(self, model, point: str):
        return [
            (spec, step)
            for spec, step in self.pending
            if spec.point == point and model.step >= step
        ]

    def _fire(
        self,
        item,
        model,
        *,
        offset,
        topic=None,
        pid=None,
        broker=None,
        deferred=False,
        affected=None,
    ) -> None:
        spec = item[0]
        self.pending.remove(item)
        truth = {
            "fault": spec.name,
            "rule_id": spec.rule_id,
            "also_rules": list(spec.also_rules),
            "offset": offset,
            "topic_id": topic.topic_id if topic else None,
            "topic": topic.name if topic else None,
            "partition": pid,
            "broker_id": broker,
        }
        if affected:  # a broker-wide fault: every partition it touched, [topic_id, partition]
            truth["affected"] = [[t.topic_id, i] for t, i in affected]
            self._tainted.update((t.topic_id, i) for t, i in affected)
        self.injected.append(truth)
        if deferred:
            self._deferred.append(truth)
        if topic is not None and pid is not None:
            self._tainted.add((topic.topic_id, pid))

    def next_offset(self, model) -> int:
        return model.next_offset + len(model._pending)

    def resolve_deferred(self, offset: int) -> None:
        for truth in self._deferred:
            truth["offset"] = offset
        self._deferred.clear()

    # -- hooks the model calls

    def on_partition_change(self, model, topic, pid, before, change, reason):
        if (topic.topic_id, pid) in self._tainted:
            return change
        reassigning = bool(before.adding or before.removing or (change and "replicas" in change))
        for item in self._due(model, PARTITION_CHANGE):
            if reassigning != item[0].in_reassignment:
                continue
            result = item[0].apply(Change(model, topic, pid, before, change, reason))
            if result is NOT_APPLICABLE:
                continue
            if result is None:  # the record is dropped: the violation shows at the fence record
                broker = [r for r in before.isr if r not in change["isr"]][0]
                self._fire(
                    item, model, offset=None, topic=topic, pid=pid, broker=broker, deferred=True
                )
            else:
                new_leader = result.get("leader", -2)
                self._fire(
                    item,
                    model,
                    offset=self.next_offset(model),
                    topic=topic,
                    pid=pid,
                    broker=new_leader if new_leader >= 0 else None,
                )
            return result
        return change

    def on_event(self, model, point, **context):
        if point == FENCED:
            self.resolve_deferred(context["offset"])
            return None
        for item in self._due(model, point):
            result = item[0].apply(model, rng=self.rng, **context)
            if result is NOT_APPLICABLE:
                continue
            if point == MIN_ISR_CHANGE:  # every partition of the topic (or cluster) keeps its ELR
                _skip, topic, _pid = result
                self._fire(
                    item,
                    model,
                    offset=context["offset"],
                    topic=topic if context.get("topic_name") else None,
                )
                return True
            if point == REGISTRATION:  # every partition holding the broker is affected
                verdict, held = result
                self._fire(
                    item,
                    model,
                    offset=self.next_offset(model),
                    topic=held[0][0],
                    pid=held[0][1],
                    broker=context["broker_id"],
                    affected=held,
                )
                return verdict
            if point == LOG_DIRS:
                extra, topic, pid, broker = result
                self._fire(item, model, offset=-1, topic=topic, pid=pid, broker=broker)
                return extra
        return None

    def at_step_end(self, model) -> None:
        """Rogue PartitionRecords for the epoch faults, each in its own batch."""
        for item in self._due(model, ROGUE_RECORD):
            result = item[0].apply(model)
            if result is NOT_APPLICABLE:
                continue
            topic, pid, p = result
            if (topic.topic_id, pid) in self._tainted:
                continue
            version = partition_record_version(model.metadata_version)
            offset = model.emit(
                "PARTITION_RECORD", version, model.partition_record(topic, pid, p, version)
            )
            topic.partitions[pid] = p
            self._fire(item, model, offset=offset, topic=topic, pid=pid)
            model.flush(atomic=True)

    @property
    def unfired(self) -> list[str]:
        return [spec.name for spec, _ in self.pending]


def score(faults: list[dict], violations: list[dict]) -> dict:
    """Recall: injected faults whose primary rule was reported on their partition
    (or broker) at or after their offset. Precision: reported violations that an
    injected fault explains (its primary or also-rules, same partition/broker).

    `violations` are dicts with rule_id, topic_id, partition, broker_id, offset."""

    def same_place(f, v) -> bool:
        if f["topic_id"] is None and f["broker_id"] is None:
            return True  # cluster-wide (a cluster-level min ISR change)
        if [v.get("topic_id"), v.get("partition")] in f.get("affected", ()):
            return True
        if (
            f["topic_id"] is not None
            and v.get("topic_id") == f["topic_id"]
            and (f["partition"] is None or v.get("partition") in (None, f["partition"]))
        ):
            return True
        return f["broker_id"] is not None and v.get("broker_id") == f["broker_id"]

    def after(f, v) -> bool:
        return f["offset"] is None or v.get("offset", -1) < 0 or v["offset"] >= f["offset"]

    found = [
        f
        for f in faults
        if any(
            v["rule_id"] == f["rule_id"] and same_place(f, v) and after(f, v) for v in violations
        )
    ]
    explained = [
        v
        for v in violations
        if any(
            v["rule_id"] in (f["rule_id"], *f["also_rules"]) and same_place(f, v) and after(f, v)
            for f in faults
        )
    ]
    return {
        "faults": len(faults),
        "detected": len(found),
        "violations": len(violations),
        "explained": len(explained),
        "recall": len(found) / len(faults) if faults else 1.0,
        "precision": len(explained) / len(violations) if violations else 1.0,
        "missed": [f["fault"] for f in faults if f not in found],
        "unexplained": [v for v in violations if v not in explained],
    }
