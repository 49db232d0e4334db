"""Replay + rules throughput on a partition-change-heavy log, all rules on.

Builds a log in memory (no decoding: this measures the core): brokers are fenced
and unfenced one at a time; each fence writes a PartitionChangeRecord per
partition the broker was in (ISR shrink, leader moved when it led), each unfence
an ISR expansion per partition (AlterPartition). ELR is enabled, RF 3; with
--min-isr 3 every fence also moves the broker into the ELR and every expansion
clears it. Prints records/s of CPU (time.process_time: the machine may be shared) for
replay alone and for the full Auditor.

    .venv/bin/python bench/bench_replay.py [--partitions 5000] [--rounds 40] [--min-isr 2]
"""

from __future__ import annotations

import argparse
import gc
import time

from kraft_audit.core.audit import Auditor
from kraft_audit.core.events import KIND_RECORD, MetadataEvent
from kraft_audit.core.replay import CoreSettings, ClusterState
from kraft_audit.core.rules import load_catalog

BROKERS = (1, 2, 3, 4, 5)
TOPIC_ID = "QmVuY2htYXJrVG9waWMxMQ"


class Log:
    def __init__(self):
        self.events: list[MetadataEvent] = []
        self.offset = 0
        self.ms = 1_700_000_000_000

    def batch(self, records):
        self.ms += 50
        base, last = self.offset, self.offset + len(records) - 1
        for i, (rtype, data) in enumerate(records):
            self.events.append(MetadataEvent("bench", "bench.log", base + i, base + i, base, last,
                                             self.ms, KIND_RECORD, rtype, 0, data))
        self.offset = last + 1


def build(partitions: int, rounds: int, min_isr: int) -> list[MetadataEvent]:
    log = Log()
    log.batch([("FEATURE_LEVEL_RECORD", {"name": "metadata.version", "featureLevel": 25}),
               ("FEATURE_LEVEL_RECORD", {"name": "eligible.leader.replicas.version", "featureLevel": 1})])
    log.batch([("REGISTER_BROKER_RECORD", {"brokerId": b, "brokerEpoch": b, "incarnationId": f"i{b}",
                                           "fenced": False}) for b in BROKERS])
    log.batch([("TOPIC_RECORD", {"name": "bench", "topicId": TOPIC_ID}),
               ("CONFIG_RECORD", {"resourceType": 2, "resourceName": "bench",
                                  "name": "min.insync.replicas", "value": str(min_isr)})])
    state = {}
    creates = []
    for p in range(partitions):
        replicas = [BROKERS[(p + i) % len(BROKERS)] for i in range(3)]
        state[p] = (replicas, list(replicas), replicas[0], [])
        creates.append(("PARTITION_RECORD", {"partitionId": p, "topicId": TOPIC_ID, "replicas": replicas,
                                             "isr": replicas, "removingReplicas": [], "addingReplicas": [],
                                             "leader": replicas[0], "leaderEpoch": 0, "partitionEpoch": 0}))
    for i in range(0, len(creates), 500):
        log.batch(creates[i:i + 500])
    for r in range(rounds):
        broker = BROKERS[r % len(BROKERS)]
        fence = []
        for p, (replicas, isr, leader, elr) in state.items():
            if broker in isr:
                new_isr = [b for b in isr if b != broker]
                data = {"partitionId": p, "topicId": TOPIC_ID, "isr": new_isr}
                if leader == broker:
                    leader = next(b for b in replicas if b in new_isr)
                    data["leader"] = leader
                if len(new_isr) < min_isr:  # PartitionChangeBuilder: (ELR ∪ ISR) − new ISR
                    elr = sorted((set(elr) | set(isr)) - set(new_isr))
                    data["eligibleLeaderReplicas"] = elr
                state[p] = (replicas, new_isr, leader, elr)
                fence.append(("PARTITION_CHANGE_RECORD", data))
        fence.append(("BROKER_REGISTRATION_CHANGE_RECORD", {"brokerId": broker, "fenced": 1}))
        log.batch(fence)
        log.batch([("BROKER_REGISTRATION_CHANGE_RECORD", {"brokerId": broker, "fenced": -1})])
        for p, (replicas, isr, leader, elr) in state.items():
            if broker in replicas and broker not in isr:
                new_isr = [b for b in replicas if b in isr or b == broker]
                data = {"partitionId": p, "topicId": TOPIC_ID, "isr": new_isr}
                if elr:
                    elr = [] if len(new_isr) >= min_isr else [b for b in elr if b not in new_isr]
                    data["eligibleLeaderReplicas"] = elr
                state[p] = (replicas, new_isr, leader, elr)
                log.batch([("PARTITION_CHANGE_RECORD", data)])
    return log.events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--min-isr", type=int, default=2, choices=(1, 2, 3))
    args = parser.parse_args()
    events = build(args.partitions, args.rounds, args.min_isr)
    changes = sum(1 for e in events if e.type == "PARTITION_CHANGE_RECORD")
    print(f"log: {len(events)} records, {changes} PartitionChangeRecords, "
          f"{args.partitions} partitions, {args.rounds} fence/unfence rounds, min ISR {args.min_isr}")

    state = ClusterState(CoreSettings())
    started = time.process_time()
    for event in events:
        state.apply(event)
    replay_s = time.process_time() - started
    print(f"replay only:          {len(events) / replay_s:>10,.0f} records/s")

    catalog = load_catalog()
    auditor = Auditor(catalog)
    started = time.process_time()
    out = auditor.process(events)
    audit_s = time.process_time() - started
    print(f"replay + all rules:   {len(events) / audit_s:>10,.0f} records/s "
          f"({sum(1 for s in catalog.rules if s.enabled)} rules enabled, {len(out.violations)} violations, "
          f"{len(out.partitions)} partition rows, {len(out.conditions)} condition rows)")
    del events
    del out  # the state is saved per micro-batch, without a quarter million rows alive
    gc.collect()
    started = time.perf_counter()
    blob = auditor.to_bytes()
    print(f"state: {len(blob):,} bytes pickled in {(time.perf_counter() - started) * 1000:.1f} ms "
          f"({len(blob) / args.partitions:.0f} bytes/partition)")


if __name__ == "__main__":
    main()
