"""The periodic preferred election on a real cluster, kept as a fixture: a controller whose
leader.imbalance.check.interval.seconds is a few seconds, two brokers, a topic whose
partitions prefer one broker or the other. Each broker in turn is stopped (a controlled
shutdown moves its leaderships away) and started again; once it is back in the ISR, the
controller's periodic task (auto.leader.rebalance.enable, Kafka's default) elects it back as
the leader of the partitions it prefers. The log goes on a few check intervals after each
election, so that a log missing one of them would hold an imbalance open past the bound.

tests/fixtures/kraft-liveness/<version>/ keeps each line's controller log with a
`server.properties` beside it: the controller's static configs the audit needs (what
`kraft-audit check --server-properties` reads), read by the mutation tests too
(kraft_audit/testing/mutate.py).

    python -m kraft_audit.testing.realkafka.liveness VERSION TARGET_DIR [--workdir DIR]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from kraft_audit.testing.mutate import SETTINGS_FILE
from kraft_audit.testing.realkafka.cluster import KafkaCluster, elr_features, wait_until
from kraft_audit.testing.realkafka.story import keep

INTERVAL_S = 3  # the controller's leader.imbalance.check.interval.seconds
TOPIC = "rebalanced"
ASSIGNMENT = [[1, 2], [2, 1], [1, 2], [2, 1]]  # each broker the preferred replica of two
QUIET_S = 3 * INTERVAL_S  # after each election: past the bound twice, as a dropped one would be


def liveness_cluster(version: str, workdir: Path) -> KafkaCluster:
    return KafkaCluster(version, workdir, brokers=2, features=elr_features(version),
                        controller_config={
                            "leader.imbalance.check.interval.seconds": str(INTERVAL_S),
                            # a NoOp every 2 s (not 0.5 s): the log's time goes on, the file stays small
                            "metadata.max.idle.interval.ms": "2000"})


def _partitions(cluster: KafkaCluster):
    from kraft_audit.cli.describe import replay

    state = replay(cluster.metadata_log_dir, cluster.cluster_id, None)
    tid = state.topic_ids.get(TOPIC)
    return [state.partitions.get((tid, i)) for i in range(len(ASSIGNMENT))] if tid else []


def _wait(cluster: KafkaCluster, what: str, check, timeout: float = 90) -> None:
    wait_until(what, lambda: (ps := _partitions(cluster)) and all(p is not None for p in ps)
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
        time.sleep(QUIET_S)
        for broker in (1, 2):
            cluster.broker(broker).stop()  # controlled shutdown: its leaderships move away
            _wait(cluster, f"nothing led by {broker}", lambda p, b=broker: p.leader not in (b, -1))
            cluster.broker(broker).start()  # back in the ISR: the periodic task elects it
            _wait(cluster, "led by the preferred replicas again", balanced, timeout=120)
            time.sleep(QUIET_S)
        cluster.controller.stop()
        return cluster
    finally:
        cluster.close()


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m kraft_audit.testing.realkafka.liveness")
    parser.add_argument("version")
    parser.add_argument("target", type=Path)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix=f"kraft-liveness-{args.version}-"))
    cluster = run_liveness(args.version, workdir)
    keep(cluster, args.target)
    (args.target / SETTINGS_FILE).write_text(
        "# the controller's static configs the audit needs (the rest of its file names this\n"
        "# machine's paths and ports)\n"
        f"leader.imbalance.check.interval.seconds={INTERVAL_S}\n")
    if args.workdir is None:  # a failed run raised above and left its files to look at
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"kept {args.target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
