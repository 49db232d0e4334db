"""Random cluster events, driven by a seed: crashes, restarts, controlled
shutdowns, ISR churn, min ISR changes, unclean elections, reassignments,
topic churn, Raft leader changes. Every event is one a real cluster can
produce from the current state, so a fault-free run must audit clean."""

from __future__ import annotations

import random
from typing import Callable

from kraft_audit.sim import partition_change as pc
from kraft_audit.sim.model import ELR_VERSION, ClusterModel
from kraft_audit.sim.versions import elr_supported

HEARTBEAT_TIMEOUT_MS = 9000


def run_chaos(
    model: ClusterModel, rng: random.Random, events: int, done: Callable[[], None]
) -> None:
    """`events` random events; `done()` after each (fault scheduling, time)."""
    counter = [0]
    for _ in range(events):
        event = _pick(model, rng)
        event(model, rng, counter)
        done()


def _pick(model: ClusterModel, rng: random.Random):
    alive = [b for b, reg in model.brokers.items() if reg.alive]
    dead = [b for b, reg in model.brokers.items() if not reg.alive]
    choices: list[tuple[float, Callable]] = [
        (3, _shrink_isr),
        (3, _catch_up),
        (1, _min_isr_change),
        (1, _preferred_election),
        (0.5, _leader_change),
        (1, _reassign),
        (1, _finish_reassignments),
        (0.7, _log_dirs),
        (0.5, _topic_churn),
        (1, _unclean_config),
        (1, _finish_recovery),
    ]
    if len(alive) > 1:
        choices += [(2, _crash_and_timeout), (2, _controlled_shutdown), (1, _quick_unclean_restart)]
    if dead:
        choices += [(4, _restart)]
    if elr_supported(model.metadata_version) and not model.elr_enabled:
        choices.append((0.3, _enable_elr))
    total = sum(w for w, _ in choices)
    x = rng.uniform(0, total)
    for weight, event in choices:
        x -= weight
        if x <= 0:
            return event
    return choices[-1][1]


def _alive(model):
    return sorted(b for b, reg in model.brokers.items() if reg.alive)


def _random_partition(model, rng):
    topics = [t for t in model.topics.values() if t.partitions]
    if not topics:
        return None
    topic = rng.choice(topics)
    pid = rng.randrange(len(topic.partitions))
    return topic, pid, topic.partitions[pid]


def _crash_and_timeout(model, rng, _):
    b = rng.choice(_alive(model))
    model.crash(b)
    model.advance(HEARTBEAT_TIMEOUT_MS)
    model.fence(b)


def _controlled_shutdown(model, rng, _):
    model.controlled_shutdown(rng.choice(_alive(model)))


def _quick_unclean_restart(model, rng, _):
    # crashes and comes back before its session times out: still in ISRs when it re-registers
    b = rng.choice(_alive(model))
    model.crash(b)
    model.restart(b)


def _restart(model, rng, _):
    dead = sorted(b for b, reg in model.brokers.items() if not reg.alive)
    model.restart(rng.choice(dead))


def _shrink_isr(model, rng, _):
    for _attempt in range(5):
        picked = _random_partition(model, rng)
        if picked is None:
            return
        topic, pid, p = picked
        followers = [r for r in p.isr if r != p.leader]
        if p.leader >= 0 and followers:
            model.shrink_isr(topic.name, pid, rng.choice(followers))
            return


def _catch_up(model, rng, _):
    alive = _alive(model)
    model.catch_up(rng.choice(alive) if alive and rng.random() < 0.7 else None)


def _finish_recovery(model, rng, _):
    for topic, pid, p in model.partitions():
        if p.leader_recovery_state == pc.RECOVERING and p.leader >= 0 and model.is_active(p.leader):
            model.finish_recovery(topic.name, pid)
            return


def _min_isr_change(model, rng, _):
    value = str(rng.choice([1, 2, 2, 3]))
    if model.topics and rng.random() < 0.6:
        model.set_config(rng.choice(list(model.topics.values())).name, "min.insync.replicas", value)
    else:
        model.set_config(None, "min.insync.replicas", value)


def _unclean_config(model, rng, _):
    if not model.topics:
        return
    topic = rng.choice(list(model.topics.values()))
    enable = rng.random() < 0.6
    model.set_config(topic.name, "unclean.leader.election.enable", "true" if enable else "false")
    if enable:
        model.unclean_elections()


def _preferred_election(model, rng, _):
    model.elect_leaders(pc.PREFERRED)


def _leader_change(model, rng, _):
    model.leader_change()


def _reassign(model, rng, _):
    picked = _random_partition(model, rng)
    if picked is None:
        return
    topic, pid, p = picked
    # The new replicas copy the log and join the ISR straight away, completing the move
    # within this event: the leader must be there to accept their AlterPartitions.
    if p.leader < 0 or not model.is_active(p.leader):
        return
    usable = [b for b in sorted(model.brokers) if model.is_active(b) and model.brokers[b].alive]
    if len(usable) < len(p.replicas):
        return
    target = rng.sample(usable, len(p.replicas))
    if _completion_leaves_removed_replicas_in_elr(model, topic, pid, p, target):
        return
    model.reassign(topic.name, pid, target)
    for r in target:
        if r in topic.partitions[pid].adding:
            model.expand_isr(topic.name, pid, r)


def _completion_leaves_removed_replicas_in_elr(model, topic, pid, p, target) -> bool:
    """Kafka's gap, kept out of fault-free runs: a reassignment that completes below the
    effective min ISR moves the removed replicas of the old ISR (and keeps those of the
    ELR) into the ELR, where they are no replicas (kip966.subset-of-replicas)."""
    removing = set(p.replicas) - set(target)
    adding = [r for r in target if r not in p.replicas]
    completed_isr = [r for r in p.isr if r not in removing] + adding
    if not model.elr_enabled or not removing & (set(p.isr) | set(p.elr)):
        return False
    # the completing record is built while partition 0 still has its removed replicas
    replicas_of_0 = len(p.replicas) + len(adding) if pid == 0 else None
    return len(completed_isr) < model.effective_min_isr(topic, replicas_of_0)


def _finish_reassignments(model, rng, _):
    """Adding replicas that are up catch up, which completes reassignments."""
    for topic, pid, p in model.partitions():
        if p.adding:
            for r in p.adding:
                if model.is_active(r) and model.brokers[r].alive:
                    model.expand_isr(topic.name, pid, r)


def _log_dirs(model, rng, _):
    model.log_dir_inventories()


def _topic_churn(model, rng, counter):
    unfenced = [
        b for b, reg in model.brokers.items() if not reg.fenced and not reg.in_controlled_shutdown
    ]
    if model.topics and (rng.random() < 0.4 or len(unfenced) < 1):
        model.delete_topic(rng.choice(list(model.topics.values())).name)
        return
    if not unfenced:
        return
    counter[0] += 1
    rf = rng.randint(1, min(3, len(unfenced)))
    model.create_topic(
        f"chaos-{model.step}-{counter[0]}",
        rng.randint(1, 4),
        rf,
        {"min.insync.replicas": str(rng.randint(1, rf))},
    )


def _enable_elr(model, rng, _):
    model.update_feature(ELR_VERSION, 1)


def random_scenario(
    seed: int, events: int = 60, *, brokers: int | None = None, topics: int | None = None
):
    """A whole random scenario from a seed: cluster shape, metadata version,
    ELR on or off, topics with their min ISR and unclean-election settings,
    then `events` chaos events (for soak and property tests)."""
    from kraft_audit.sim.scenario import ClusterSpec, Scenario, Step, TopicSpec

    rng = random.Random(seed)
    n = brokers or rng.randint(3, 6)
    mv = rng.choice([14, 19, 21, 25, 26])
    elr = int(mv >= 23 and rng.random() < 0.6)
    cluster = ClusterSpec(
        brokers=list(range(1, n + 1)),
        metadata_version=mv,
        elr_version=elr,
        min_insync_replicas=rng.choice([1, 2, 2]),
        controllers=rng.choice([1, 3]),
    )
    specs = []
    for i in range(topics or rng.randint(1, 4)):
        rf = rng.randint(1, min(3, n))
        configs = {"min.insync.replicas": str(rng.randint(1, rf))}
        if rng.random() < 0.2:
            configs["unclean.leader.election.enable"] = "true"
        specs.append(TopicSpec(f"topic-{i}", rng.randint(1, 6), rf, configs))
    return Scenario(
        f"random-{seed}",
        cluster,
        specs,
        [Step("chaos", {"events": events})],
        f"random scenario from seed {seed}",
    )
