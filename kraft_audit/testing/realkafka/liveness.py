"""The periodic preferred election on a real cluster, kept as a fixture: a controller whose
leader.imbalance.check.interval.seconds is a few seconds, two brokers, a topic whose
partitions prefer one broker or the other. Each broker in turn is stopped (a controlled
shutdown moves its leaderships away) and started again; once it is back in the ISR, the
controller's periodic task (auto.leader.rebalance.enable, Kafka's default) elects it back as
the leader of the partitions it prefers. The log goes on a few check intervals after each
election, so that a log missing one of them would hold an imbalance open past the bound.

Then the controller's own unclean election: a topic of one partition on [1, 2] that allows
it (unclean.leader.election.enable=true, a topic config). Broker 2 is killed (fenced after
the session timeout: out of the ISR), broker 1, the last ISR member, stopped (a controlled
shutdown: the partition goes leaderless), and broker 2 started again: its unfence elects it
uncleanly, out of the ISR (and ELR), RECOVERING (ReplicationControlManager's unfence runs
PartitionChangeBuilder's unclean election over the leaderless partitions of topics that
allow it, on 3.9 as on 4.x). Broker 1 started again joins its ISR (the leader's ISR
expansion carries RECOVERED) and the periodic task gives every partition back to its
preferred replica. Broker 1 is stopped, not killed: on a line with ELR a broker that comes
back from a kill -9 leaves every ELR (unclean shutdown), and the other topic's partitions,
which do not allow an unclean election, would stay leaderless for good.

First of all the controller's sweep of expired delegation tokens: the controller and brokers
have delegation tokens enabled (delegation.token.secret.key) and the controller a
delegation.token.expiry.check.interval.ms of a few seconds; a token is created (over a SCRAM
listener, as Kafka requires) with a max lifetime of a few seconds, and the controller's
periodic sweep removes it once it has expired (a RemoveDelegationTokenRecord), after a NoOp
past the token's deadline (so that delegation_token_expired opens and closes: _token_swept).
The rest of the scenario runs for minutes after it: a log missing that removal would hold the
token expired past the bound.

tests/fixtures/kraft-liveness/<version>/ keeps each line's controller log with a
`server.properties` beside it: the controller's static configs the audit needs (what
`kraft-audit check --server-properties` reads), read by the mutation tests too
(kraft_audit/testing/mutate.py).

    python -m kraft_audit.testing.realkafka.liveness VERSION TARGET_DIR [--workdir DIR]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kraft_audit.core.events import MetadataEvent
from kraft_audit.testing.mutate import SETTINGS_FILE
from kraft_audit.testing.realkafka.cluster import KafkaCluster, elr_features, wait_until
from kraft_audit.testing.realkafka.story import (ADMIN_PASSWORD, ADMIN_USER, SCRAM, TOKEN_COMMAND,
                                                 StoryRun, add_sasl_listeners, keep_run)
from kraft_audit.testing.realkafka.tools import CONFIG_COMMAND, ToolError

INTERVAL_S = 3  # the controller's leader.imbalance.check.interval.seconds
TOPIC = "rebalanced"
ASSIGNMENT = [[1, 2], [2, 1], [1, 2], [2, 1]]  # each broker the preferred replica of two
QUIET_S = 3 * INTERVAL_S  # after each election: past the bound twice, as a dropped one would be
UNCLEAN_TOPIC = "unclean"  # allows the controller to elect uncleanly by itself
TOKEN_CHECK_MS = 8000  # the controller's delegation.token.expiry.check.interval.ms
TOKEN_LIFE_MS = 3000  # the token's max lifetime: expired a few seconds after its creation
TOKEN_SECRET = "liveness-token-secret"  # delegation.token.secret.key: tokens enabled
TOKEN_ATTEMPTS = 4


def liveness_cluster(version: str, workdir: Path) -> KafkaCluster:
    cluster = KafkaCluster(version, workdir, brokers=2, features=elr_features(version),
                           common_config={"delegation.token.secret.key": TOKEN_SECRET},
                           controller_config={
                               "leader.imbalance.check.interval.seconds": str(INTERVAL_S),
                               "delegation.token.expiry.check.interval.ms": str(TOKEN_CHECK_MS),
                               # a NoOp every 2 s (not 0.5 s): the log's time goes on, the file stays small
                               "metadata.max.idle.interval.ms": "2000"})
    add_sasl_listeners(cluster)
    return cluster


def _partitions(cluster: KafkaCluster, topics: dict[str, int]):
    from kraft_audit.cli.describe import replay

    state = replay(cluster.metadata_log_dir, cluster.cluster_id, None)
    ids = [state.topic_ids.get(t) for t in topics]
    return [state.partitions.get((tid, i)) for tid, n in zip(ids, topics.values()) for i in range(n)] \
        if all(ids) else []


def _wait(cluster: KafkaCluster, what: str, check, timeout: float = 90,
          topics: dict[str, int] | None = None) -> None:
    topics = topics or {TOPIC: len(ASSIGNMENT)}
    wait_until(what, lambda: (ps := _partitions(cluster, topics)) and all(p is not None for p in ps)
               and all(check(p) for p in ps), timeout, every=0.5)


def run_liveness(version: str, workdir: Path) -> KafkaCluster:
    """Run the scenario on a fresh cluster in `workdir`; the controller is stopped cleanly at
    the end (first: its log ends with every partition led), the brokers killed."""
    cluster = liveness_cluster(version, workdir)
    try:
        cluster.start()
        cluster.tools.create_topic(TOPIC, assignment=ASSIGNMENT)
        balanced = lambda p: p.leader == p.replicas[0] and sorted(p.isr) == sorted(p.replicas)  # noqa: E731
        _wait(cluster, "every partition led by its preferred replica, in sync", balanced)
        _token_swept(cluster)
        time.sleep(QUIET_S)
        for broker in (1, 2):
            cluster.broker(broker).stop()  # controlled shutdown: its leaderships move away
            _wait(cluster, f"nothing led by {broker}", lambda p, b=broker: p.leader not in (b, -1))
            cluster.broker(broker).start()  # back in the ISR: the periodic task elects it
            _wait(cluster, "led by the preferred replicas again", balanced, timeout=120)
            time.sleep(QUIET_S)
        _unclean_election(cluster, balanced)
        cluster.controller.stop()
        return cluster
    finally:
        cluster.close()


def _token_swept(cluster: KafkaCluster) -> None:
    """A token of a short max lifetime, removed by the controller's sweep once expired. The
    sweep runs on its own timer, so it may come before any other record past the token's
    deadline (a NoOp every 2 s): then delegation_token_expired never opens, and another token
    is made until one is swept after such a record (the interval then opens and closes)."""
    from kraft_audit.cli.describe import replay
    from kraft_audit.core.codec.logdir import read_log_dir

    story = StoryRun(cluster)
    cluster.tools.admin(CONFIG_COMMAND, "--alter", "--entity-type", "users", "--entity-name", ADMIN_USER,
                        "--add-config", f"{SCRAM}=[iterations=4096,password={ADMIN_PASSWORD}]")
    conf = str(story.sasl_config())

    def create() -> bool:  # the credential reaches the brokers shortly after its record
        try:
            cluster.tools.run(TOKEN_COMMAND, "--bootstrap-server", story.sasl_bootstrap(),
                              "--command-config", conf, "--create",
                              "--max-life-time-period", str(TOKEN_LIFE_MS))
            return True
        except ToolError:
            return False

    def records():
        return [e for e in read_log_dir(cluster.metadata_log_dir, cluster.cluster_id)
                if isinstance(e, MetadataEvent)]

    tokens = lambda: replay(cluster.metadata_log_dir, cluster.cluster_id, None).tokens  # noqa: E731
    for _attempt in range(TOKEN_ATTEMPTS):
        wait_until("a delegation token created", create, 60, every=1)
        wait_until("the token in the log", lambda: bool(tokens()), 30, every=0.5)
        wait_until("the token swept by the controller", lambda: not tokens(), 60, every=0.5)
        events = records()
        made = [e for e in events if e.type == "DELEGATION_TOKEN_RECORD"][-1]
        swept = next(e for e in events if e.type == "REMOVE_DELEGATION_TOKEN_RECORD"
                     and e.data["tokenId"] == made.data["tokenId"])
        deadline = made.data["expirationTimestamp"]
        if any(deadline < e.timestamp_ms and e.offset < swept.offset for e in events):
            return
    raise RuntimeError(f"no sweep came after a record past its token's deadline in {TOKEN_ATTEMPTS} tries")


def _unclean_election(cluster: KafkaCluster, balanced) -> None:
    """The controller's own unclean election, at broker 2's unfence (the module's docstring)."""
    unclean = {UNCLEAN_TOPIC: 1}
    everything = {TOPIC: len(ASSIGNMENT), UNCLEAN_TOPIC: 1}
    cluster.tools.create_topic(UNCLEAN_TOPIC, assignment=[[1, 2]],
                               configs={"unclean.leader.election.enable": "true"})
    _wait(cluster, "unclean-0 led by 1, in sync", balanced, topics=unclean)
    cluster.broker(2).kill()  # fenced after the session timeout: out of every ISR
    _wait(cluster, "everything led by 1 alone", lambda p: p.leader == 1 and list(p.isr) == [1],
          topics=everything)
    cluster.broker(1).stop()  # the last ISR member's controlled shutdown: leaderless
    _wait(cluster, "everything leaderless", lambda p: p.leader == -1, topics=everything)
    cluster.broker(2).start()  # its unfence elects it uncleanly where the topic allows it
    _wait(cluster, "unclean-0 led by 2, RECOVERING",
          lambda p: p.leader == 2 and p.leader_recovery_state == 1, topics=unclean)
    cluster.broker(1).start()  # in the ISR again (RECOVERED), then the preferred replica again
    _wait(cluster, "led by the preferred replicas again, RECOVERED",
          lambda p: balanced(p) and p.leader_recovery_state == 0, timeout=120, topics=everything)
    time.sleep(QUIET_S)


def main(argv: list[str]) -> int:
    args, _cluster = keep_run(argv, "liveness", run_liveness)
    (args.target / SETTINGS_FILE).write_text(
        "# the controller's static configs the audit needs (the rest of its file names this\n"
        "# machine's paths and ports)\n"
        f"leader.imbalance.check.interval.seconds={INTERVAL_S}\n"
        f"delegation.token.expiry.check.interval.ms={TOKEN_CHECK_MS}\n")
    print(f"kept {args.target}")
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
