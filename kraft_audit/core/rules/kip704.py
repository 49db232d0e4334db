"""KIP-704: the leader recovery state after an unclean election.

An unclean election makes the new leader RECOVERING with ISR = [leader]; the
ISR cannot grow and the state cannot be cleared by a leader change until the
leader reports RECOVERED through AlterPartition.
"""

from __future__ import annotations

from kraft_audit.core.replay.partition import (NO_LEADER, NO_LEADER_CHANGE, NO_RECOVERY_CHANGE, RECOVERED,
                                          RECOVERING)
from kraft_audit.core.replay.settings import MV_3_2_IV0
from kraft_audit.core.rules.elections import cleanly_electable
from kraft_audit.core.rules.registry import (IS_RECOVERING, PARTITION_RECORDS, SETS_LEADER,
                                        SETS_RECOVERY_STATE, rule)

CHANGE = ("PARTITION_CHANGE_RECORD",)


@rule("kip704.field-range", on="partition", records=("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"),
      when=SETS_LEADER | SETS_RECOVERY_STATE)
def field_range(c):
    data = c.event.data
    leader = data.get("leader", NO_LEADER_CHANGE)
    if c.event.type == "PARTITION_RECORD":
        lrs = data.get("leaderRecoveryState", RECOVERED)
        if lrs not in (RECOVERED, RECOVERING):
            return f"PartitionRecord has LeaderRecoveryState {lrs}; only 0 (RECOVERED) and 1 (RECOVERING) exist"
        if leader < NO_LEADER:
            return f"PartitionRecord has Leader {leader}"
        return None
    lrs = data.get("leaderRecoveryState", NO_RECOVERY_CHANGE)
    if lrs not in (NO_RECOVERY_CHANGE, RECOVERED, RECOVERING):
        return f"PartitionChangeRecord has LeaderRecoveryState {lrs}; only -1 (unchanged), 0 and 1 exist"
    if leader < NO_LEADER_CHANGE:
        return f"PartitionChangeRecord has Leader {leader}"
    return None


@rule("kip704.recovering-isr-is-leader", on="partition", records=PARTITION_RECORDS, when=IS_RECOVERING)
def recovering_isr_is_leader(c):
    after = c.after
    if after is None or after.leader_recovery_state != RECOVERING:
        return None
    isr = after.isr
    if len(isr) > 1 or (after.leader >= 0 and isr != (after.leader,)):
        return (f"partition is RECOVERING with ISR {list(isr)} and leader {after.leader}; "
                "while recovering the ISR holds at most the leader")
    return None


@rule("kip704.recovering-only-by-unclean-election", on="partition_batch_end", records=CHANGE,
      when=SETS_RECOVERY_STATE)
def recovering_only_by_unclean_election(c):
    """Kafka marks RECOVERING only with an unclean election: a new leader x, ISR = [x], where x
    was no valid candidate: outside the previous ISR, and not an ELR member it could elect
    cleanly (ELR members are valid once the ISR empties, as when its members are fenced)."""
    before, after, data = c.before, c.after, c.event.data
    if not (before.leader_recovery_state == RECOVERED and after.leader_recovery_state == RECOVERING):
        return None
    leader = data.get("leader", NO_LEADER_CHANGE)
    unclean_shape = (leader >= 0 and leader != before.leader and data.get("isr") is not None
                     and after.isr == (leader,) and leader not in before.isr)
    if unclean_shape and leader in before.elr:
        leaving = c.batch.fenced | c.batch.unclean_shutdown_candidates()
        unclean_shape = any(b not in leaving for b in before.isr)  # the ISR did not empty
    if unclean_shape:
        return None
    return (f"RECOVERED -> RECOVERING (counted as an unclean election) by a record that elects "
            f"no leader uncleanly (record leader {leader}, "
            f"isr {data.get('isr')}, previous ISR {list(before.isr)}, ELR {list(before.elr)})")


@rule("kip704.unclean-election-sets-recovering", on="partition", records=CHANGE, when=SETS_LEADER)
def unclean_election_sets_recovering(c):
    before, after, data = c.before, c.after, c.event.data
    leader = data.get("leader", NO_LEADER_CHANGE)
    if leader < 0 or leader == before.leader or cleanly_electable(before, after, leader):
        return None
    mv = c.state.metadata_version
    if mv is not None and mv < MV_3_2_IV0:  # the controller writes RECOVERING from MV 3.2
        return None
    if after.leader_recovery_state != RECOVERING:
        return (f"broker {leader} was elected from outside the ISR {list(before.isr)} and ELR "
                f"{list(before.elr)} but the partition is not RECOVERING: an unclean election "
                "hidden from Kafka's count (and ours)")
    return None


@rule("kip704.no-isr-growth-while-recovering", on="partition", records=CHANGE, when=IS_RECOVERING)
def no_isr_growth_while_recovering(c):
    before, after, data = c.before, c.after, c.event.data
    if before.leader_recovery_state != RECOVERING or after.leader_recovery_state != RECOVERING:
        return None
    new_leader = data.get("leader", NO_LEADER_CHANGE)
    added = [b for b in after.isr if b not in before.isr and b != new_leader]
    if added:
        return (f"ISR grew by {added} while the leader is still RECOVERING; followers may join "
                "only after the leader reports RECOVERED")
    return None


@rule("kip704.leader-change-keeps-recovering", on="partition", records=CHANGE, when=IS_RECOVERING)
def leader_change_keeps_recovering(c):
    before, after, data = c.before, c.after, c.event.data
    if before.leader_recovery_state != RECOVERING or after.leader_recovery_state != RECOVERED:
        return None
    leader = data.get("leader", NO_LEADER_CHANGE)
    # Leader rewritten to the same broker is an epoch bump (a reassignment completing in the
    # recovering leader's own AlterPartition), not a new leader.
    if leader != NO_LEADER_CHANGE and leader != before.leader:
        return (f"RECOVERING cleared by a record that also changes the leader from {before.leader} "
                f"to {leader}; only the recovering leader may report RECOVERED (AlterPartition), "
                "a leader change keeps it")
    return None
