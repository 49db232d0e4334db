"""The election_overdue condition: a partition left leaderless past the operation that made
it so, although an ISR or ELR member could lead (below, its unclean twin). Kafka runs its election over the partitions
an operation touches in the same records (an unfence: over every leaderless partition), so
the condition is judged where an atomic batch, or a metadata transaction, ends."""

from __future__ import annotations

from kraft_audit.core.audit import Auditor
from kraft_audit.core.events import KIND_RECORD, MetadataEvent
from kraft_audit.core.rules import load_catalog
from kraft_audit.sim.output import read_output
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import parse_scenario

CATALOG = load_catalog()
TID = "BBBBBBBBBBBBBBBBBBBBBB"
DIR_A, DIR_B = "AAAAAAAAAAAAAAAAAAAAAw", "AAAAAAAAAAAAAAAAAAAABA"


class Log:
    """Records in atomic batches, offsets counted."""

    def __init__(self):
        self.events: list[MetadataEvent] = []

    def batch(self, *records: tuple[str, dict]) -> int:
        base = len(self.events)
        last = base + len(records) - 1
        for i, (type_, data) in enumerate(records):
            self.events.append(MetadataEvent("c", "00000000000000000000.log", 0, base + i, base, last,
                                             1_000 * (base + i), KIND_RECORD, type_, 0, dict(data)))
        return last


def register(broker: int, epoch: int, log_dirs=(DIR_A,)) -> tuple[str, dict]:
    return "REGISTER_BROKER_RECORD", {"brokerId": broker, "brokerEpoch": epoch,
                                      "incarnationId": f"inc{broker}{epoch}", "fenced": True,
                                      "logDirs": list(log_dirs)}


def fencing(broker: int, epoch: int, change: int, **more) -> tuple[str, dict]:
    return "BROKER_REGISTRATION_CHANGE_RECORD", {"brokerId": broker, "brokerEpoch": epoch,
                                                 "fenced": change, **more}


def change(**fields) -> tuple[str, dict]:
    return "PARTITION_CHANGE_RECORD", {"topicId": TID, "partitionId": 0, "leader": -2, **fields}


def leaderless_partition(log: Log) -> None:
    """Brokers 1 and 2 up; partition 0 on [1, 2]; broker 1 fenced with the partition left to it
    alone (ISR [1], leader -1, as Kafka leaves the last ISR member without ELR); broker 2 out."""
    log.batch(("FEATURE_LEVEL_RECORD", {"name": "metadata.version", "featureLevel": 21}))
    log.batch(register(1, 10), fencing(1, 10, -1))
    log.batch(register(2, 20), fencing(2, 20, -1))
    log.batch(("TOPIC_RECORD", {"name": "t", "topicId": TID}),
              ("PARTITION_RECORD", {"topicId": TID, "partitionId": 0, "replicas": [1, 2], "isr": [1, 2],
                                    "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0,
                                    "directories": [DIR_A, DIR_A]}))
    log.batch(change(isr=[1]), ("FENCE_BROKER_RECORD", {"id": 2, "epoch": 20}))  # 2 fenced
    log.batch(change(leader=-1), fencing(1, 10, 1))  # 1 fenced: no one left to lead


def overdue(out) -> list[tuple[int, int | None]]:
    return [(c.start_offset, c.end_offset) for c in out.conditions if c.condition == "election_overdue"]


def test_an_unfence_that_elects_opens_nothing():
    log = Log()
    leaderless_partition(log)
    log.batch(fencing(1, 10, -1), change(leader=1))  # as Kafka writes an unfence
    out = Auditor(CATALOG).process(log.events)
    assert overdue(out) == []
    assert any(c.condition == "leaderless" and c.end_offset is not None for c in out.conditions)


def test_an_unfence_that_leaves_the_partition_leaderless_opens_it_until_the_election():
    log = Log()
    leaderless_partition(log)
    unfenced = log.batch(fencing(1, 10, -1))  # no election: the controller forgot the partition
    log.batch(("NO_OP_RECORD", {}))
    elected = log.batch(change(leader=1))
    auditor = Auditor(CATALOG)
    out = auditor.process(log.events)
    assert overdue(out) == [(unfenced, None), (unfenced, elected)]
    assert auditor.gauges().election_overdue == 0


def test_open_until_the_candidate_leaves_and_counted_in_the_gauge():
    log = Log()
    leaderless_partition(log)
    unfenced = log.batch(fencing(1, 10, -1))
    auditor = Auditor(CATALOG)
    auditor.process(log.events)
    assert auditor.gauges().election_overdue == 1
    start = len(log.events)
    log.batch(fencing(1, 10, 1))
    out = auditor.process(log.events[start:])
    assert overdue(out) == [(unfenced, start)]
    assert auditor.gauges().election_overdue == 0


def test_a_transaction_is_judged_where_it_ends():
    """One operation across several batches (a metadata transaction): the election may come in
    a later batch of the same transaction."""
    log = Log()
    leaderless_partition(log)
    log.batch(("BEGIN_TRANSACTION_RECORD", {"name": "unfence"}), fencing(1, 10, -1))
    log.batch(change(leader=1), ("END_TRANSACTION_RECORD", {}))
    assert overdue(Auditor(CATALOG).process(log.events)) == []


def test_a_candidate_whose_directory_is_offline_cannot_lead():
    log = Log()
    leaderless_partition(log)
    # 1 comes back with only DIR_B online: its replica of the partition lives in DIR_A
    log.batch(fencing(1, 10, -1, logDirs=[DIR_B]))
    assert overdue(Auditor(CATALOG).process(log.events)) == []


def test_a_candidate_in_controlled_shutdown_cannot_lead():
    log = Log()
    leaderless_partition(log)
    log.batch(fencing(1, 10, 0, inControlledShutdown=1), fencing(1, 10, -1))
    assert overdue(Auditor(CATALOG).process(log.events)) == []


def test_the_condition_survives_the_stored_form():
    log = Log()
    leaderless_partition(log)
    unfenced = log.batch(fencing(1, 10, -1))
    auditor = Auditor(CATALOG)
    auditor.process(log.events)
    restored = Auditor.from_bytes(auditor.to_bytes(), CATALOG)
    start = len(log.events)
    elected = log.batch(change(leader=1))
    out = restored.process(log.events[start:])
    assert overdue(out) == [(unfenced, elected)]


def test_correct_simulated_restarts_never_open_it(tmp_path):
    """The controller model elects on every unfence, as Kafka does."""
    simulate(parse_scenario("""
name: restarts-with-elr
cluster: {brokers: 4, metadata_version: 4.0-IV3, elr: true, min_insync_replicas: 2}
topics:
  - {name: t, assignment: [[1, 2, 3], [2, 3, 4], [3, 4, 1]], configs: {min.insync.replicas: 2}}
steps:
  - crash: 1
  - heartbeat_timeout: 1
  - crash: 2
  - heartbeat_timeout: 2
  - crash: 3
  - heartbeat_timeout: 3
  - restart: 2
  - restart: 1
  - restart: 3
"""), tmp_path, seed=0)
    out = Auditor(CATALOG).process(read_output(tmp_path))
    assert any(c.condition == "leaderless" for c in out.conditions)  # the story does go offline
    assert overdue(out) == []


# ------------------------------------------------------------ unclean_election_overdue
# The same partition, its topic allowing unclean elections: broker 2, out of the ISR, can
# lead uncleanly once unfenced. Kafka's unfence runs its (unclean, where allowed) election
# over every leaderless partition in the same records.

def unclean_allowed() -> tuple[str, dict]:
    return "CONFIG_RECORD", {"resourceType": 2, "resourceName": "t",
                             "name": "unclean.leader.election.enable", "value": "true"}


def unclean_overdue(out) -> list[tuple[int, int | None]]:
    return [(c.start_offset, c.end_offset) for c in out.conditions
            if c.condition == "unclean_election_overdue"]


def test_an_unfence_that_elects_uncleanly_opens_nothing():
    log = Log()
    log.batch(unclean_allowed())
    leaderless_partition(log)
    log.batch(fencing(2, 20, -1), change(leader=2, isr=[2], leaderRecoveryState=1))
    out = Auditor(CATALOG).process(log.events)
    assert unclean_overdue(out) == [] and overdue(out) == []


def test_an_unfence_that_leaves_it_leaderless_opens_it_until_the_unclean_election():
    log = Log()
    log.batch(unclean_allowed())
    leaderless_partition(log)
    unfenced = log.batch(fencing(2, 20, -1))
    auditor = Auditor(CATALOG)
    auditor.process(log.events)
    assert auditor.gauges().unclean_election_overdue == 1
    start = len(log.events)
    elected = log.batch(change(leader=2, isr=[2], leaderRecoveryState=1))
    out = auditor.process(log.events[start:])
    assert unclean_overdue(out) == [(unfenced, elected)]
    assert auditor.gauges().unclean_election_overdue == 0


def test_nothing_is_due_where_the_topic_does_not_allow_it():
    log = Log()
    leaderless_partition(log)
    log.batch(fencing(2, 20, -1))
    out = Auditor(CATALOG).process(log.events)
    assert unclean_overdue(out) == [] and overdue(out) == []


def test_a_config_change_that_allows_it_opens_it_until_the_timers_election():
    log = Log()
    leaderless_partition(log)
    log.batch(fencing(2, 20, -1))
    allowed = log.batch(unclean_allowed())
    log.batch(("NO_OP_RECORD", {}))
    elected = log.batch(change(leader=2, isr=[2], leaderRecoveryState=1))
    out = Auditor(CATALOG).process(log.events)
    assert unclean_overdue(out) == [(allowed, None), (allowed, elected)]


def test_a_clean_candidate_makes_it_election_overdue_instead():
    """Broker 1, the ISR's last member, comes back: a clean election is due, not an unclean one;
    when it goes again only broker 2 is left, and the unclean election is due."""
    log = Log()
    log.batch(unclean_allowed())
    leaderless_partition(log)
    log.batch(fencing(2, 20, -1), change(leader=2, isr=[2], leaderRecoveryState=1))
    log.batch(change(leader=-1, isr=[2]), fencing(2, 20, 1))  # 2 fenced again, 1 still fenced
    both = log.batch(fencing(1, 10, -1), fencing(2, 20, -1))  # neither elected: 2 is in the ISR
    one_left = log.batch(fencing(2, 20, 1))  # 2 fenced: only 1 is left, outside the ISR
    out = Auditor(CATALOG).process(log.events)
    assert overdue(out) == [(both, None), (both, one_left)]
    assert unclean_overdue(out) == [(one_left, None)]
