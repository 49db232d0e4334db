"""KIP-966: Eligible Leader Replicas, judged against what Kafka's controller does.

The ELR shadow (`kip966.elr-matches-kafka`) recomputes the ELR from the state
before each change as PartitionChangeBuilder would and compares; the other
rules are the invariants of the KIP and of Kafka's TLA+ model, restricted to
what Kafka's code actually guarantees (for instance |ISR| + |ELR| may exceed
min ISR, and LastKnownElr holds the last leader only).
"""

from __future__ import annotations

from kraft_audit.core.replay.partition import NO_LEADER, NO_LEADER_CHANGE
from kraft_audit.core.replay.settings import ELR_FEATURE
from kraft_audit.core.replay.state import BROKER_RESOURCE, MIN_ISR
from kraft_audit.core.rules.elections import (cleanly_electable, expected_elr, expected_last_known_elr,
                                         has_unclean_signature, is_elr_election)
from kraft_audit.core.events import SNAPSHOT_SUFFIX
from kraft_audit.core.rules.registry import (BATCH_BROKERS, BATCH_MIN_ISR_CONFIG, ELR_ENABLED,
                                        EMPTIES_ISR, HAS_ELR, SCOPE_CLUSTER, SETS_ASSIGNMENT,
                                        SETS_ELR, SETS_ISR, SETS_LEADER, Finding, rule)

CHANGE = ("PARTITION_CHANGE_RECORD",)
STATE_RECORDS = ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD")


@rule("kip966.subset-of-replicas", on="partition", records=STATE_RECORDS,
      when=SETS_LEADER | SETS_ISR | SETS_ELR | SETS_ASSIGNMENT)
def subset_of_replicas(c):
    after = c.after
    replicas = set(after.replicas)
    if replicas.issuperset(after.isr) and replicas.issuperset(after.elr) and (
            after.leader < 0 or after.leader in replicas):
        return None
    outside = {name: [b for b in values if b not in replicas]
               for name, values in (("ISR", after.isr), ("ELR", after.elr))}
    problems = [f"{name} members {bad} are not replicas" for name, bad in outside.items() if bad]
    if after.leader >= 0 and after.leader not in replicas:
        problems.append(f"leader {after.leader} is not a replica")
    if problems:
        return "; ".join(problems) + f" (replicas {list(after.replicas)})"
    return None


@rule("kip966.elr-isr-disjoint", on="partition", records=STATE_RECORDS, when=SETS_ISR | SETS_ELR)
def elr_isr_disjoint(c):
    if not c.after.elr:
        return None
    both = sorted(set(c.after.elr) & set(c.after.isr))
    if both:
        return f"brokers {both} are in both the ISR {list(c.after.isr)} and the ELR {list(c.after.elr)}"
    return None


@rule("kip966.elr-only-below-min-isr", on="partition", records=CHANGE, when=HAS_ELR)
def elr_only_below_min_isr(c):
    after = c.after
    if c.elr_enabled and after.elr and len(after.isr) >= c.min_isr:
        return (f"ELR {list(after.elr)} kept while the ISR {list(after.isr)} is at or above the "
                f"effective min ISR {c.min_isr}; Kafka clears the ELR there")
    return None


@rule("kip966.elr-matches-kafka", on="partition_batch_end", records=CHANGE, when=ELR_ENABLED)
def elr_matches_kafka(c):
    if not c.elr_enabled:
        return None
    before, after, data = c.before, c.after, c.event.data
    if not before.elr and not after.elr and len(after.isr) >= c.min_isr:
        return None  # no ELR before (so no ELR election) and the ISR is at min ISR: none expected
    expected = expected_elr(before, after, data, c.min_isr)
    actual = set(after.elr)
    extra = sorted(actual - expected)
    missing = sorted(expected - actual)
    if not extra and not missing:
        return None
    # Kafka also drops replicas that shut down uncleanly; they re-register in the same batch.
    restarted = c.batch.unclean_shutdown_candidates()
    explained = tuple(b for b in missing if b in restarted)
    if not extra and len(explained) == len(missing):
        return Finding(f"ELR {sorted(actual)} lacks {missing}, which restarted in this batch but "
                       "shut down cleanly, so Kafka keeps them in the ELR",
                       evidence={"expected_elr": sorted(expected)}, unless_unclean=explained)
    missing = [b for b in missing if b not in restarted]
    parts = []
    if extra:
        parts.append(f"has {extra} that Kafka would not keep")
    if missing:
        parts.append(f"lacks {missing}")
    return Finding(f"ELR {sorted(actual)} {' and '.join(parts)}: expected {sorted(expected)} "
                   f"from ELR {list(before.elr)} ∪ old ISR {list(before.isr)} − new ISR "
                   f"{list(after.isr)} (effective min ISR {c.min_isr})",
                   evidence={"expected_elr": sorted(expected)})


@rule("kip966.last-known-elr-matches-kafka", on="partition", records=CHANGE, when=ELR_ENABLED)
def last_known_elr_matches_kafka(c):
    if not c.elr_enabled:
        return None
    mode = c.settings.last_known_elr
    before, after = c.before, c.after
    if mode == "leader" and not before.last_known_elr and not after.last_known_elr and after.leader >= 0:
        return None  # nothing to set (the partition has a leader) and nothing to clear
    options = expected_last_known_elr(before, after, c.event.data, c.min_isr, mode)
    actual = set(after.last_known_elr) if mode == "set" else after.last_known_elr
    if actual in options:
        return None
    shown = " or ".join(dict.fromkeys(str(sorted(o)) for o in options))
    return Finding(f"LastKnownElr {list(after.last_known_elr)} is not what Kafka writes "
                   f"(expected {shown}; mode {mode!r})",
                   evidence={"expected_last_known_elr": [sorted(o) for o in options]})


@rule("kip966.elr-cleared-on-min-isr-change", on="batch_end", records=("CONFIG_RECORD", "CLEAR_ELR_RECORD"),
      when=BATCH_MIN_ISR_CONFIG)
def elr_cleared_on_min_isr_change(c):
    """The controller follows every min.insync.replicas ConfigRecord with a ClearElrRecord."""
    if c.settings.elr_controller_config is not None:
        return None  # the controller-config gating of ELR has no ClearElrRecord
    partitions = c.state.partitions
    findings = []
    for key in sorted(c.batch.elr_before_min_isr_change):
        part = partitions.get(key)
        if part is not None and (part.elr or part.last_known_elr):
            findings.append(Finding(
                f"min.insync.replicas changed but ELR {list(part.elr)} / LastKnownElr "
                f"{list(part.last_known_elr)} was not cleared (no ClearElrRecord)", key=key))
    return findings


@rule("kip966.min-isr-one-value-with-elr", on="record", scope=SCOPE_CLUSTER,
      records=("CONFIG_RECORD", "FEATURE_LEVEL_RECORD"))
def min_isr_one_value_with_elr(c):
    """While the ELR is on, min ISR is one cluster-wide value: the cluster-level
    min.insync.replicas is set and no broker has its own. Judged before each record: a config
    record must not set a broker's value or remove the cluster's, and the record that turns
    the ELR on must find the image already so (the controller writes the configs that make
    it so first, in the same atomic batch). Inside a metadata transaction (a bootstrap
    writes the cluster value after the features) and in snapshots the order differs: not
    judged there."""
    event, state = c.event, c.state
    if (c.settings.elr_controller_config is not None or state.transaction_open
            or SNAPSHOT_SUFFIX in event.source):
        return None
    data = event.data
    if event.type == "CONFIG_RECORD":
        if (not state.elr_enabled or data.get("name") != MIN_ISR
                or data.get("resourceType") != BROKER_RESOURCE):
            return None
        broker = data.get("resourceName") or ""
        if broker:
            done = "set" if data.get("value") is not None else "removed"
            return (f"min.insync.replicas {done} for broker {broker} while the ELR is on: the "
                    "controller refuses a broker-level value then")
        if data.get("value") is None:
            return ("the cluster-level min.insync.replicas removed while the ELR is on: the "
                    "controller refuses that")
        return None
    if (data.get("name") != ELR_FEATURE or state.elr_enabled or state.history_from is not None
            or type(data.get("featureLevel")) is not int or data["featureLevel"] < 1):
        return None
    problems = []
    if state.configs.get((BROKER_RESOURCE, ""), {}).get(MIN_ISR) is None:
        problems.append("no cluster-level min.insync.replicas is set")
    brokers = sorted(name for (kind, name), values in state.configs.items()
                     if kind == BROKER_RESOURCE and name and MIN_ISR in values)
    if brokers:
        problems.append(f"broker(s) {', '.join(brokers)} still have their own min.insync.replicas")
    if problems:
        return f"the ELR turned on while {' and '.join(problems)}"
    return None


@rule("kip966.no-elr-when-disabled", on="partition", records=CHANGE, when=HAS_ELR)
def no_elr_when_disabled(c):
    if not c.elr_enabled and c.after.elr:
        return (f"ELR {list(c.after.elr)} present while ELR is disabled; a change record then "
                "clears it")
    return None


@rule("kip966.empty-isr-requires-elr", on="partition_batch_end", records=CHANGE, when=EMPTIES_ISR)
def empty_isr_requires_elr(c):
    """Kafka empties the ISR only with ELR on, and then the members that left go to the ELR
    (unless they shut down uncleanly, re-registering in the same batch)."""
    isr = c.event.data.get("isr")
    if isr is None or len(isr) != 0:
        return None
    if not c.elr_enabled:
        return "ISR set to [] while ELR is disabled; without ELR Kafka never empties the ISR"
    if c.after.elr:
        return None
    before = c.before
    left = set(before.isr) | set(before.elr)
    restarted = c.batch.unclean_shutdown_candidates()
    kept = sorted(left - restarted)
    if kept:
        return (f"ISR emptied and the ELR wiped although {kept} left cleanly: no replica "
                "is left to elect cleanly")
    if left:
        return Finding(f"ISR emptied and the ELR wiped although {sorted(left)} restarted after a "
                       "clean shutdown: no replica is left to elect cleanly",
                       unless_unclean=tuple(sorted(left)))
    return None


@rule("kip966.election-order", on="partition_batch_end", records=CHANGE, when=SETS_LEADER)
def election_order(c):
    """The leader Kafka's election would have picked, with broker liveness as of the record
    (a batch may hold several operations; see BatchInfo.acceptable_leader_at)."""
    before, after, data = c.before, c.after, c.event.data
    leader = data.get("leader", NO_LEADER_CHANGE)
    if leader == NO_LEADER_CHANGE or (leader >= 0 and leader == before.leader):
        return None
    if any(c.state.unknown_before_history(b) for b in c.after.replicas):
        return None  # a partial log: who could lead is not known
    replicas = after.replicas
    if leader == NO_LEADER:
        candidates = _live(c, after.isr) or (_live(c, after.elr) if c.elr_enabled and not after.isr else [])
        if candidates:
            return f"leader set to none although {candidates[0]} was electable"
        return None
    if not cleanly_electable(before, after, leader):  # unclean or last known leader
        lke = before.last_known_elr
        if c.elr_enabled and not before.isr and not before.elr and len(lke) == 1:
            if leader != lke[0] and _alive(c, lke[0]):
                return f"broker {leader} elected although the last known leader {lke[0]} was electable"
            return None
        clean = _live(c, before.isr) or (_live(c, before.elr) if c.elr_enabled else [])
        if clean:
            return (f"{leader} elected from outside the ISR and ELR although {clean[0]} could be "
                    "elected cleanly")
        return None
    if has_unclean_signature(before, after, data):
        return None
    if is_elr_election(before, after, data):
        in_isr = _live(c, before.isr)
        if in_isr:
            return f"ELR member {leader} elected although ISR member {in_isr[0]} was electable"
        first = _live(c, set(before.elr) | set(before.isr))
        if first and first[0] != leader:
            return f"ELR member {leader} elected before {first[0]}, earlier in replica order"
        return None
    if replicas and leader == replicas[0]:
        return None  # the preferred replica
    if before.leader >= 0 and before.leader in after.isr and _alive(c, before.leader):
        return f"leader moved from {before.leader}, still a valid leader, to {leader}"
    first = _live(c, after.isr)
    if first and first[0] != leader:
        return f"broker {leader} elected before {first[0]}, earlier in replica order"
    return None


# election_order's helpers, at module level: no closure (a compiled closure keeps a reference
# cycle per call)
def _alive(c, broker: int) -> bool:
    """Whether the broker could lead as of the record being judged: registered, unfenced,
    not shutting down, and its replica's directory online (Kafka's LeaderAcceptor)."""
    return c.batch.acceptable_leader_at(c.event.offset, broker, c.state.acceptable_leader(broker)) \
        and _directory_online(c.state, c.before, broker)


def _directory_online(state, part, broker: int) -> bool:
    """Whether the broker's replica of the partition is in a directory online on it, as of
    the batch's end (a directory dropped in the batch is offline for its elections too)."""
    if not part.directories:
        return True
    registration = state.brokers.get(broker)
    if registration is None or not registration.log_dirs:
        return True
    for replica, directory in zip(part.replicas, part.directories):
        if replica == broker:
            return registration.has_online_dir(directory)
    return True


def _live(c, brokers) -> list:
    """The replicas among `brokers` that could lead, in replica order."""
    return [b for b in c.after.replicas if b in brokers and _alive(c, b)]


@rule("kip966.leader-registered-unfenced", on="partition", records=CHANGE, when=SETS_LEADER)
def leader_registered_unfenced(c):
    leader = c.event.data.get("leader", NO_LEADER_CHANGE)
    if leader < 0 or leader == c.before.leader:
        return None
    if c.state.unknown_before_history(leader):
        return None
    broker = c.state.brokers.get(leader)
    if broker is None or not broker.registered:
        why = "not registered"
    elif broker.fenced:
        why = "fenced"
    elif broker.in_controlled_shutdown:
        why = "in controlled shutdown"
    else:
        return None
    return Finding(f"broker {leader} elected leader while {why}", broker_id=leader)


@rule("kip966.leader-in-isr", on="partition", records=STATE_RECORDS, when=SETS_LEADER | SETS_ISR)
def leader_in_isr(c):
    after = c.after
    if after.leader >= 0 and after.leader not in after.isr:
        return f"leader {after.leader} is not in the ISR {list(after.isr)}"
    return None


@rule("kip966.fenced-out-of-isr", on="batch_end", records=(
    "FENCE_BROKER_RECORD", "UNREGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD"),
      when=BATCH_BROKERS)
def fenced_out_of_isr(c):
    """A fenced (or unregistered) broker leaves every ISR in the batch that fences it; without
    ELR the last ISR member stays (the ISR is never emptied). Visits only the partitions
    that name a fenced broker (the state's index by broker)."""
    fenced = c.batch.fenced
    if not fenced:
        return None
    elr_on = c.state.elr_enabled
    partitions = c.state.partitions
    keys = set()
    for broker in fenced:
        keys.update(c.state.partitions_of(broker))
    findings = []
    for key in sorted(keys):
        part = partitions[key]
        stuck = [b for b in part.isr if b in fenced]
        if stuck and (elr_on or len(part.isr) > 1):
            findings.append(Finding(f"broker {stuck[0]} fenced but still in the ISR {list(part.isr)}",
                                    key=key, broker_id=stuck[0]))
    return findings


@rule("kip966.unclean-shutdown-removed", on="registration", records=("REGISTER_BROKER_RECORD",))
def unclean_shutdown_removed(c):
    m = c.match
    if not m.unclean or not m.record.elr_enabled or not m.record.new_incarnation:
        return None
    return [Finding(f"broker {m.broker_id} restarted after an unclean shutdown but is still in the "
                    f"ISR or ELR at the end of its registration batch (offset {m.record.offset})",
                    key=key, broker_id=m.broker_id) for key in m.record.still_in]


@rule("kip966.clean-shutdown-detection", on="registration", records=("REGISTER_BROKER_RECORD",))
def clean_shutdown_detection(c):
    m = c.match
    if m.unclean or not m.record.elr_enabled or not m.record.new_incarnation:
        return None
    return [Finding(f"broker {m.broker_id} shut down cleanly (PreviousBrokerEpoch "
                    f"{m.request.get('previousBrokerEpoch')} = stored epoch) but was removed from "
                    "the ELR as if unclean", key=key, broker_id=m.broker_id, offset=offset)
            for key, offset in m.record.removed_from_elr]


@rule("kip966.registration-unverifiable", on="registration_timeout", scope=SCOPE_CLUSTER,
      records=("REGISTER_BROKER_RECORD",))
def registration_unverifiable(c):
    m = c.match
    return Finding(f"registration request of broker {m.broker_id} (incarnation {m.incarnation_id}) "
                   "has no RegisterBrokerRecord within the match timeout: its clean/unclean "
                   "handling cannot be verified", broker_id=m.broker_id)



@rule("kip966.elr-enters-from-isr", on="partition", records=CHANGE, when=SETS_ELR)
def elr_enters_from_isr(c):
    """A replica joins the ELR only from the ISR: the ELR holds replicas known to have had
    every committed record when they left the ISR, and none other."""
    came = [b for b in c.after.elr if b not in c.before.elr and b not in c.before.isr]
    if came:
        return (f"brokers {came} entered the ELR {list(c.after.elr)} without having been in the ISR "
                f"{list(c.before.isr)} or the ELR {list(c.before.elr)}")
    return None


@rule("kip966.last-known-elr-enters-from-isr", on="partition", records=CHANGE, when=SETS_ELR)
def last_known_elr_enters_from_isr(c):
    """LastKnownElr names only replicas that were in sync (ISR or ELR, or already in it): it
    decides the last-known-leader election, which must not pick a replica that never was."""
    before = c.before
    known = {*before.isr, *before.elr, *before.last_known_elr}
    came = [b for b in c.after.last_known_elr if b >= 0 and b not in known]  # -1 names no broker
    if came:
        return (f"brokers {came} entered LastKnownElr {list(c.after.last_known_elr)} without having "
                f"been in the ISR {list(before.isr)}, the ELR {list(before.elr)} or LastKnownElr "
                f"{list(before.last_known_elr)}")
    return None
