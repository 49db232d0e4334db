"""Settings of replay and audit: where Kafka versions differ, which behaviour to expect."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

# metadata.version feature levels (server-common MetadataVersion.java)
MV_3_2_IV0 = 3  # leader recovery state (KIP-704) written by the controller
MV_3_6_IV0 = 12  # from here an ISR shrink no longer forces a leader-epoch bump (KAFKA-15021)
MV_4_0_IV0 = 22  # the first 4.x level: no ZooKeeper migration (a 3.6-3.9 controller migrating
# from ZooKeeper also bumps the leader epoch on an ISR shrink)
MV_4_0_IV1 = 23  # ELR records (PartitionRecord/PartitionChangeRecord v2)

ELR_FEATURE = "eligible.leader.replicas.version"
METADATA_VERSION = "metadata.version"


@dataclass(frozen=True)
class CoreSettings:
    """The functional core's settings (replay and rules; `audit.settings` in the job
    configuration): which Kafka behaviour to expect where versions differ."""

    # `min.insync.replicas` when neither the topic nor the cluster sets it in the log: the
    # controller's static config (server.properties). None: not known, Kafka's default 1 is
    # assumed and every view says so.
    min_insync_replicas_default: int | None = None
    # `unclean.leader.election.enable` when not set dynamically.
    unclean_leader_election_default: bool = False
    # ELR gating. None (every released line with ELR, 4.0.2 to 4.3.1 checked on real
    # clusters): ELR is on when the feature eligible.leader.replicas.version >= 1.
    # True/False: a controller config eligible.leader.replicas.enable that also needs
    # MV >= 4.0-IV1 and writes no ClearElrRecord, an early design no released jar holds.
    elr_controller_config: bool | None = None
    # How a restart is judged clean: "previous_epoch" (every released line with ELR, checked
    # on real clusters: request version >= 3 and PreviousBrokerEpoch == stored epoch) or
    # "incarnation" (an early reading: any new incarnation is unclean once MV >= 4.0-IV1).
    clean_shutdown_detection: str = "previous_epoch"
    # What LastKnownElr holds: "leader" (Kafka's code: the last leader only) or
    # "set" (KIP-966 text: the last ELR members).
    last_known_elr: str = "leader"
    # The controller's auto.leader.rebalance.enable (static, never in the log; Kafka's default
    # true): whether it promises to elect each partition's preferred replica once that one
    # could lead. False: the leader_imbalanced condition never opens.
    auto_leader_rebalance_enable: bool = True
    # The controller's leader.imbalance.check.interval.seconds (Kafka's default 300): how often
    # it elects the preferred replicas, so the bound of a leader_imbalanced interval.
    leader_imbalance_check_interval_seconds: int = 300
    # The controller's delegation.token.expiry.check.interval.ms (Kafka's default one hour): how
    # often it removes the delegation tokens that have expired, so the bound of a
    # delegation_token_expired interval.
    delegation_token_expiry_check_interval_ms: int = 3_600_000
    # Whether the controller sweeps expired delegation tokens: it does when tokens are enabled
    # (delegation.token.secret.key set), and one without them creates no token, so a log's
    # DelegationTokenRecords say they were (True, the default). False (a server.properties
    # whose delegation.token.secret.key is empty): delegation_token_expired never opens.
    delegation_token_expiry_sweep: bool = True
    # The controller's unclean.leader.election.interval.ms (Kafka's default five minutes): how
    # often its unclean-election task elects the leaderless partitions of topics that allow it,
    # so the bound of an unclean_election_overdue interval opened by a config change
    unclean_leader_election_interval_ms: int = 300_000
    # How long a replica may stay UNASSIGNED on a broker that can report its directory: the
    # broker's report comes half a second after it makes the replica, its retries back off
    # from 100 ms, and a broker that cannot reach the controller is fenced within its session
    # timeout (9 s by default); the bound of a directory_unassigned interval.
    directory_assignment_bound_seconds: int = 30
    # How long (event time) a registration request may wait for its RegisterBrokerRecord.
    registration_match_timeout_ms: int = 300_000
    # The log as the quorum commits it (core/raft.py): how many records may wait behind a hole
    # in the input (offsets no copy has shown) for it to fill before the audit goes on without
    # it, saying so (None: for ever; 0: at once, the reader that skipped reporting it, as one
    # pass over one log does, and the streaming job unless `audit.settings` says otherwise)
    hole_patience_records: int | None = 0
    # how many records not proven committed are held (audited only as provisional) before the
    # oldest are audited without proof, saying so (None: no bound; the job bounds its state)
    max_unproven_records: int | None = None
    # take whatever the input holds as committed, as a caller that knows says (a quiesced
    # cluster's log, a view of a log dir); the proof then says "assumed"
    assume_committed: bool = False
    # False when this auditor judges only some partitions (a Spark bucket): then a
    # replica on disk of a partition it has never seen is not called stray.
    sees_all_partitions: bool = True

    @classmethod
    def of(cls, value: CoreSettings | Mapping[str, Any] | None) -> CoreSettings:
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"unknown audit settings {unknown}; known: {sorted(known)}")
        settings = cls(**value)
        if settings.min_insync_replicas_default is not None and (
                isinstance(settings.min_insync_replicas_default, bool)
                or not isinstance(settings.min_insync_replicas_default, int)
                or settings.min_insync_replicas_default < 1):
            raise ValueError("min_insync_replicas_default must be an integer of at least 1, got "
                             f"{settings.min_insync_replicas_default!r}")
        for name in ("leader_imbalance_check_interval_seconds",
                     "delegation_token_expiry_check_interval_ms",
                     "unclean_leader_election_interval_ms", "directory_assignment_bound_seconds"):
            interval = getattr(settings, name)
            if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
                raise ValueError(f"{name} must be an integer of at least 1, got {interval!r}")
        for name in ("hole_patience_records", "max_unproven_records"):
            bound = getattr(settings, name)
            if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 0):
                raise ValueError(f"{name} must be null or an integer of at least 0, got {bound!r}")
        if not isinstance(settings.assume_committed, bool):
            raise ValueError(f"assume_committed must be true or false, got {settings.assume_committed!r}")
        if not isinstance(settings.delegation_token_expiry_sweep, bool):
            raise ValueError("delegation_token_expiry_sweep must be true or false, got "
                             f"{settings.delegation_token_expiry_sweep!r}")
        if not isinstance(settings.auto_leader_rebalance_enable, bool):
            raise ValueError("auto_leader_rebalance_enable must be true or false, got "
                             f"{settings.auto_leader_rebalance_enable!r}")
        if settings.clean_shutdown_detection not in ("previous_epoch", "incarnation"):
            raise ValueError("clean_shutdown_detection must be 'previous_epoch' or 'incarnation'")
        if settings.last_known_elr not in ("leader", "set"):
            raise ValueError("last_known_elr must be 'leader' or 'set'")
        return settings
