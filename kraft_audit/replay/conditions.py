"""Watched partition conditions: each is a bit, so a partition's conditions are one int.

- under_min_isr: |ISR| < effective min ISR.
- leaderless: leader == -1.
- recovering: LeaderRecoveryState == RECOVERING (an unclean recovery in progress).
- manual_election_required: leaderless with an empty ISR and an empty ELR, so no clean
  election can ever bring it back, and the topic does not allow the controller to elect
  uncleanly by itself (unclean.leader.election.enable false): an operator must run an
  unclean election (kafka-leader-election --election-type unclean), or wait for Kafka's
  last-known-leader election (itself unclean) when that broker returns.
- elr_in_use: the ELR is not empty.
"""

from __future__ import annotations

from kraft_audit.replay.partition import NO_LEADER, RECOVERING, Partition
from kraft_audit.replay.state import ClusterState

UNDER_MIN_ISR = 1
LEADERLESS = 2
RECOVERING_BIT = 4
MANUAL_ELECTION_REQUIRED = 8
ELR_IN_USE = 16

CONDITIONS: tuple[tuple[str, int], ...] = (
    ("under_min_isr", UNDER_MIN_ISR),
    ("leaderless", LEADERLESS),
    ("recovering", RECOVERING_BIT),
    ("manual_election_required", MANUAL_ELECTION_REQUIRED),
    ("elr_in_use", ELR_IN_USE),
)


def condition_mask(p: Partition, min_isr: int, state: ClusterState) -> int:
    mask = 0
    if len(p.isr) < min_isr:
        mask |= UNDER_MIN_ISR
    if p.leader == NO_LEADER:
        mask |= LEADERLESS
        if not p.isr and not p.elr and not state.unclean_election_enabled(p.topic_id):
            mask |= MANUAL_ELECTION_REQUIRED
    if p.leader_recovery_state == RECOVERING:
        mask |= RECOVERING_BIT
    if p.elr:
        mask |= ELR_IN_USE
    return mask
