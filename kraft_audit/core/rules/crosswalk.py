"""The invariants others wrote down for a correct controller, and which rule checks each.

Two lists are crossed with the catalog: the properties of the TLA+ models of Kafka's
replication (Vanlightly/kafka-tlaplus: the KIP-966 model and the v3.5 model it extends,
and the KIP-853/KIP-996 models of the Raft layer), and the scenarios of Kafka's own
controller tests (PartitionChangeBuilderTest, ReplicationControlManagerTest). A property
is observable when the metadata log alone can show it broken; many of the models'
properties speak of brokers' data logs, fetchers or high watermarks, which the metadata
log never records, and are marked so with what the log does show in their place.

docs/rules.md renders this table (kraft_audit.core.rules.docs); a test holds that every
rule and condition named here exists.
"""

from __future__ import annotations

from typing import NamedTuple

OBSERVABLE = "yes"
PARTLY = "partly"
NOT_OBSERVABLE = "no"
UNCHECKED = "yes, not checked yet"  # a gap the table keeps visible

KIP966_MODEL = "KIP-966 model"  # kafka_data_replication/kraft/kip-966/kip_966_properties.tla
V35_MODEL = "v3.5 model"  # kafka_data_replication/kraft/v3.5/v3_5_properties.tla
RAFT_MODEL = "KIP-853/996 model"  # kraft/kip_853, kraft/kip_996: the metadata log's own Raft
CONTROLLER_TESTS = "Kafka's controller tests"


class Property(NamedTuple):
    source: str
    name: str
    says: str
    observable: str
    checked_by: tuple[str, ...]  # rule ids, or "condition:<name>" for a watched condition
    how: str


PROPERTIES: tuple[Property, ...] = (
    Property(KIP966_MODEL, "ValidControllerIsrAndElr",
             "ISR and ELR are replicas; no broker is in both; |ISR| >= min ISR means an empty ELR",
             OBSERVABLE,
             ("kip966.subset-of-replicas", "kip966.elr-isr-disjoint", "kip966.elr-only-below-min-isr"),
             "each conjunct is one rule, judged on every partition record"),
    Property(KIP966_MODEL, "ValidControllerState",
             "the fenced flag agrees with the unfenced set; a fenced broker is in no ISR",
             OBSERVABLE, ("kip966.fenced-out-of-isr", "input.unknown-broker"),
             "replay keeps one fenced flag per broker (so the first conjunct holds by "
             "construction); a fence or unregistration that leaves the broker in an ISR at the "
             "end of its batch is a finding, a fence of a broker never registered is quarantined"),
    Property(KIP966_MODEL, "MinIsrRecoveryQuorum",
             "with ISR and ELR empty, |LastKnownElr| equals min ISR",
             PARTLY, ("kip966.last-known-elr-matches-kafka",),
             "Kafka departs from the model: its LastKnownElr holds only the last known leader, "
             "so the rule checks the value Kafka's PartitionChangeBuilder writes, not the model's "
             "cardinality"),
    Property(KIP966_MODEL, "LeaderCompletenessProperty",
             "the elected leader holds every acknowledged record",
             PARTLY,
             ("kip966.election-order", "kip966.leader-in-isr", "kip966.leader-registered-unfenced",
              "kip704.unclean-election-sets-recovering"),
             "the metadata log holds no data offsets; it shows whom the controller elected, so "
             "the rules check that the leader came from the ISR, then the ELR, in Kafka's order, "
             "and that any other choice is marked an unclean election (RECOVERING)"),
    Property(KIP966_MODEL, "LeaderCandidateCompletenessProperty",
             "no running ISR or ELR member lacks a committed record",
             PARTLY,
             ("kip966.unclean-shutdown-removed", "kip966.clean-shutdown-detection",
              "kip966.empty-isr-requires-elr", "kip966.elr-matches-kafka"),
             "LEOs are not in the log; what is: a broker back from an unclean shutdown (its log "
             "may have lost its tail) must leave every ISR and ELR when it registers, and the ELR "
             "must hold exactly the replicas Kafka would keep as candidates"),
    Property(KIP966_MODEL, "ReplicationQuorumSupersetProperty",
             "a current leader's maximal ISR contains the controller's ISR and ELR",
             NOT_OBSERVABLE, (),
             "the maximal ISR lives in the leader's memory; the log shows only the ISR the "
             "controller accepted"),
    Property(KIP966_MODEL, "MetadataLogMatchingProperty",
             "every broker's copy of the metadata log equals the controller's, offset by offset",
             PARTLY, ("input.offset-regression", "kraft.snapshot-equals-log"),
             "one controller's log is read at a time: offsets that go backwards in it are a "
             "finding, and each snapshot it wrote must hold the image its log builds to the "
             "snapshot's end (a broker loading either sees the same); comparing several "
             "replicas of the log is not done"),
    Property(KIP966_MODEL, "LogMatchingProperty, ConsistentReadProperty, "
             "NoCommittedRecordLostGlobally",
             "data logs agree below the high watermark; reads repeat; no acknowledged record is "
             "lost", NOT_OBSERVABLE, (),
             "about partitions' data, which the metadata log never records"),
    Property(KIP966_MODEL, "TypeOK, ValidBrokerState, ValidReplicaState, ValidFetcherState",
             "the model's own variables have legal values",
             PARTLY, ("kip704.field-range", "kraft.epochs-monotonic"),
             "for the fields the log carries: leader recovery state and leader in range, epochs "
             "from 0 and never back; broker-side status and fetchers are not in the log"),
    Property(KIP966_MODEL, "EventuallyUnfenced, EventuallyRuns",
             "a fenced or starting broker is eventually unfenced and running",
             NOT_OBSERVABLE, (),
             "a broker that never comes back is an operator's matter, not the controller's; the "
             "brokers table and the fenced-broker alert show how long each has been fenced"),
    Property(KIP966_MODEL, "EventuallyReassignmentCompletes",
             "a reassignment eventually completes",
             OBSERVABLE, ("condition:reassignment_stalled", "kraft.reassignment-keeps-min-isr"),
             "a reassignment whose adding replicas are all in the ISR and that can complete "
             "without going under min ISR opens the condition until the controller completes it"),
    Property(KIP966_MODEL, "EventuallyMetadataConverges, AlterPartitionEpochEventuallyReachedOrZero, "
             "EventuallyWriteIsAcceptedOrRejected, EventuallyAcknowledgedValueFullyReplicated",
             "brokers converge on the controller's metadata; requests and writes are answered",
             NOT_OBSERVABLE, (),
             "about brokers and clients, not the controller's log"),
    Property(V35_MODEL, "ValidControllerState (fenced broker not in ISR)",
             "as in the KIP-966 model, without ELR", OBSERVABLE, ("kip966.fenced-out-of-isr",),
             "without ELR the last ISR member stays; the rule allows exactly that"),
    Property(V35_MODEL, "LeaderCompletenessProperty, LeaderCandidateCompletenessProperty",
             "as in the KIP-966 model, with the ISR alone as candidates",
             PARTLY, ("kip966.election-order", "kip966.leader-in-isr",
                      "kip704.unclean-election-sets-recovering"),
             "the same proxies; an election from outside the ISR must be unclean"),
    Property(RAFT_MODEL, "NeverTwoLeadersInSameEpoch / ElectionSafety",
             "at most one leader per Raft epoch", OBSERVABLE, ("kraft.election-safety",),
             "each batch's partitionLeaderEpoch is its writer's Raft epoch: LeaderChange records "
             "of one epoch name one leader, epochs never decrease along the log, and a batch's "
             "epoch is one whose leader was announced (the Spark job: in bucket 0, from the "
             "batches' epochs its sources send)"),
    Property(RAFT_MODEL, "NoLogDivergence / LogMatching, LeaderHasAllAckedValues, Durability",
             "replicas of the metadata log agree; committed entries survive",
             PARTLY, ("input.offset-regression", "kraft.snapshot-equals-log"),
             "within the one log read, and between that log and the snapshots written from "
             "it"),
    Property(CONTROLLER_TESTS, "PartitionChangeBuilderTest: ELR on ISR shrink and expansion, "
             "unclean-shutdown removal, ISR shrinking to zero",
             "the ELR and LastKnownElr a change writes", OBSERVABLE,
             ("kip966.elr-matches-kafka", "kip966.last-known-elr-matches-kafka",
              "kip966.empty-isr-requires-elr"),
             "the rules recompute the builder's targets from the state before and compare"),
    Property(CONTROLLER_TESTS, "PartitionChangeBuilderTest: ELR and last-known-leader elections, "
             "unclean election",
             "who is elected, and that an unclean election sets RECOVERING with ISR = [leader]",
             OBSERVABLE,
             ("kip966.election-order", "kip704.unclean-election-sets-recovering",
              "kip704.recovering-only-by-unclean-election"),
             "judged at the end of the atomic batch, with each broker's liveness as of the record"),
    Property(CONTROLLER_TESTS, "PartitionChangeBuilderTest: "
             "testChangeInLeadershipDoesNotChangeRecoveryState",
             "a leader change leaves a RECOVERING partition RECOVERING", OBSERVABLE,
             ("kip704.leader-change-keeps-recovering",), "one rule"),
    Property(CONTROLLER_TESTS, "PartitionChangeBuilderTest: leader epoch tests",
             "which changes bump the leader epoch", OBSERVABLE,
             ("kraft.leader-epoch-bump", "kraft.partition-epoch-bump"),
             "the bump follows the metadata version the log is at"),
    Property(CONTROLLER_TESTS, "ReplicationControlManagerTest: broker fence, clean election, "
             "unclean shutdown, shrink to empty ISR",
             "what a fence, an unclean restart or a clean shutdown writes to every partition",
             OBSERVABLE,
             ("kip966.fenced-out-of-isr", "kip966.unclean-shutdown-removed",
              "kip966.elr-matches-kafka"),
             "judged at the end of the atomic batch that fences or registers the broker"),
    Property(CONTROLLER_TESTS, "ReplicationControlManagerTest: testEligibleLeaderReplicas_CleanElection",
             "unfencing an ELR member of a leaderless partition elects it in the same operation",
             OBSERVABLE, ("condition:election_overdue", "kip966.election-order"),
             "an unfence runs the election over every leaderless partition; one left leaderless "
             "with an acceptable ISR or ELR member past the operation opens the condition"),
    Property(CONTROLLER_TESTS, "ReplicationControlManagerTest: "
             "testMaybeTriggerUncleanLeaderElectionForLeaderlessPartitions",
             "the unclean-election task elects an acceptable replica of each leaderless partition "
             "whose topic allows it", OBSERVABLE, ("condition:unclean_election_overdue",),
             "every operation that runs an election elects uncleanly where the topic allows; one "
             "left leaderless past its operation with an acceptable replica opens the condition "
             "(a config change that allows it waits for the task)"),
    Property(CONTROLLER_TESTS, "ReplicationControlManagerTest: testBalancePartitionLeaders",
             "the periodic preferred election moves each partition whose preferred replica is in "
             "the ISR and may lead back to it", OBSERVABLE, ("condition:leader_imbalanced",),
             "the interval opens at the record (or broker record) that makes the first replica "
             "electable while another leads, and closes at the election; its bound is the "
             "controller's leader.imbalance.check.interval.seconds"),
    Property(CONTROLLER_TESTS, "ReplicationControlManagerTest: testElrsRemovedOnMinIsrUpdate",
             "a min.insync.replicas change clears the ELR of the topics it covers", OBSERVABLE,
             ("kip966.elr-cleared-on-min-isr-change",), "topic and cluster scope"),
    Property(CONTROLLER_TESTS, "ReplicationControlManagerTest: effective min ISR",
             "min ISR above the replication factor acts as the replication factor",
             OBSERVABLE, ("kip966.elr-only-below-min-isr", "condition:under_min_isr"),
             "replay computes the effective min ISR the same way for every rule and condition"),
    Property(CONTROLLER_TESTS,
             "ReplicationControlManagerTest: testProcessBrokerHeartbeatInControlledShutdown",
             "a heartbeat asking to shut down marks the broker in controlled shutdown, then moves "
             "its leadership and drops it from the ISR, in one operation", OBSERVABLE,
             ("kraft.leader-leaves-unavailable-broker", "kip966.election-order"),
             "at the end of the batch of the registration change, the broker leads nothing; each "
             "election is judged as of its record"),
    Property(CONTROLLER_TESTS, "FeatureControlManagerTest: testUpgradeElrFeatureLevel",
             "eligible.leader.replicas.version 1 is finalized at metadata.version 4.0-IV1 or above",
             OBSERVABLE, ("kraft.feature-dependencies",),
             "every finalized level's dependencies (the *Version enums' dependencies(), as data) "
             "at the end of each batch that finalizes levels"),
)
