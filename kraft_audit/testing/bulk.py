"""Large, regular logs for the scale benchmark and the crash test.

A cluster created with N partitions (brokers, topics, then PartitionRecords
in atomic batches, as at cluster creation or in a snapshot), then a trickle
or a flood of PartitionChangeRecords (ISR shrinks and expansions) on random
partitions. `fault_every` makes every k-th partition's leader a replica out of
its ISR, so the audit has verdicts to write.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path

from kraft_audit.core.codec import wire
from kraft_audit.core.codec.logdir import LogDirWriter

BROKERS = 6
PER_TOPIC = 100
START_MS = 1_750_000_000_000


def topic_id(index: int) -> str:
    """Random-looking like Kafka's (they do not compress), and the same every run."""
    return wire.uuid_to_str(uuid.uuid5(uuid.NAMESPACE_OID, f"topic-{index}").bytes)


def replicas_of(partition: int) -> list[int]:
    return [(partition + i) % BROKERS + 1 for i in range(3)]


class BulkLog:
    def __init__(self, path: Path, partitions: int, cluster_id: str = "bulk-cluster", seed: int = 1,
                 batch: int = 500, fault_every: int = 0):
        self.writer = LogDirWriter(path, cluster_id)
        self.partitions = partitions
        self.batch = batch
        self.fault_every = fault_every
        self.rng = random.Random(seed)
        self.ms = START_MS
        self.shrunk: set[int] = set()  # partitions whose ISR is two replicas now
        self.records = 0

    def _append(self, records: list) -> None:
        self.writer.append(records, self.ms)
        self.records += len(records)

    def key(self, index: int) -> tuple[str, int]:
        return topic_id(index // PER_TOPIC), index % PER_TOPIC

    def _write(self, groups, per_batch: int, ms_step: int = 0) -> int:
        """Append the records of `groups` (lists kept in one batch) in atomic batches of
        about `per_batch` (each full batch `ms_step` later than the one before); returns
        how many were written."""
        start = self.records
        pending: list = []
        for group in groups:
            pending.extend(group)
            if len(pending) >= per_batch:
                self.ms += ms_step
                self._append(pending)
                pending = []
        if pending:
            self._append(pending)
        self.writer.flush()
        return self.records - start

    def bootstrap(self) -> int:
        """Brokers, topics and every PartitionRecord; returns the records written."""
        start = self.records
        self._append([("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 25})])
        self._append([("REGISTER_BROKER_RECORD", 0, {"brokerId": b, "brokerEpoch": 10 + b,
                                                      "incarnationId": topic_id(1000 + b), "fenced": False})
                      for b in range(1, BROKERS + 1)])
        self._write(self._topics_and_partitions(), self.batch)
        return self.records - start

    def _topics_and_partitions(self):
        for t in range((self.partitions + PER_TOPIC - 1) // PER_TOPIC):
            topic = [("TOPIC_RECORD", 0, {"name": f"topic-{t}", "topicId": topic_id(t)})]
            for p in range(t * PER_TOPIC, min(self.partitions, (t + 1) * PER_TOPIC)):
                replicas = replicas_of(p)
                isr = replicas[1:] if self.fault_every and p % self.fault_every == 0 else replicas
                tid, index = self.key(p)
                yield [*topic, ("PARTITION_RECORD", 0, {
                    "partitionId": index, "topicId": tid, "replicas": replicas, "isr": isr,
                    "removingReplicas": [], "addingReplicas": [], "leader": replicas[0],
                    "leaderEpoch": 0, "partitionEpoch": 0})]
                topic = []  # a topic's record goes in the batch of its first partition

    def changes(self, count: int, per_batch: int = 1, ms_step: int = 1) -> int:
        """`count` PartitionChangeRecords, `per_batch` to an atomic batch, on random
        partitions: each shrinks a full ISR to two replicas or expands it back."""
        return self._write(self._isr_changes(count), per_batch, ms_step)

    def idle(self, batches: int, change_every: int = 30, ms_step: int = 500) -> int:
        """A controller at rest, as real logs are: `batches` batches of one NoOpRecord,
        `ms_step` apart (metadata.max.idle.interval.ms), and after every `change_every`-th an
        ISR change; returns the records written."""
        start = self.records
        changes = self._isr_changes(batches // change_every + 1)
        for index in range(1, batches + 1):
            self.ms += ms_step
            self._append([("NO_OP_RECORD", 0, {})])
            if change_every and index % change_every == 0:
                self._append(next(changes))
        self.writer.flush()
        return self.records - start

    def _isr_changes(self, count: int):
        for _ in range(count):
            p = self.rng.randrange(self.partitions)
            replicas = replicas_of(p)
            if p in self.shrunk:
                self.shrunk.discard(p)
                isr = replicas
            else:
                self.shrunk.add(p)
                isr = replicas[:2]
            tid, index = self.key(p)
            yield [("PARTITION_CHANGE_RECORD", 0, {"topicId": tid, "partitionId": index, "isr": isr})]

    def close(self) -> None:
        self.writer.close()
