"""Invariants of record fields that no rule of a KIP reads: what a correct controller never
writes in a partition's identifiers, a broker's epochs, the producer-id blocks, a topic's
name and id, and a config's value (the record types' consumers need each to hold).

The cluster-record rules run before the record is applied (`on="record"`): they compare
it with the image it is about to change.
"""

from __future__ import annotations

import re

from kraft_audit.core.rules.registry import SETS_ASSIGNMENT, SETS_ELR, SETS_ISR, Finding, rule

# Kafka's Topic.validate: 1..249 of [a-zA-Z0-9._-], not "." or ".."
LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
# LastKnownElr is left out: Kafka's builder records the leader there, -1 when there was none
BROKER_LISTS = (("replicas", "replicas"), ("isr", "isr"), ("elr", "ELR"),
                ("adding_replicas", "adding replicas"), ("removing_replicas", "removing replicas"))


# a change record that sets no broker list leaves them as judged before (when=): the hot path stays cheap
@rule("kraft.partition-ids-in-range", on="partition", records=("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"),
      when=SETS_ISR | SETS_ELR | SETS_ASSIGNMENT)
def partition_ids_in_range(c):
    """Partition ids and broker ids are never negative; a broker appears once in the replicas
    and once in the ISR."""
    after = c.after
    replicas, isr = after.replicas, after.isr
    # the usual partition, answered without building the problem list: it runs on most changes
    if (after.partition >= 0 and not (after.elr or after.adding_replicas or after.removing_replicas)
            and (replicas in _SOUND or _sound(replicas)) and (isr in _SOUND or _sound(isr))):
        return None
    problems = []
    if after.partition < 0:
        problems.append(f"partition id {after.partition} is negative")
    for name, label in BROKER_LISTS:
        ids = getattr(after, name)
        if ids and min(ids) < 0:  # min() first: this runs on most changes of a busy log
            problems.append(f"{label} {list(ids)} hold negative broker ids {[b for b in ids if b < 0]}")
    for name in ("replicas", "isr"):
        ids = getattr(after, name)
        if len(set(ids)) != len(ids):
            problems.append(f"{name} {list(ids)} name a broker twice")
    return "; ".join(problems) if problems else None


# broker id lists seen with no negative and no repeated id: the same few lists recur on most
# changes, and a lookup costs less than checking them again
_SOUND: set[tuple[int, ...]] = set()


def _sound(ids: tuple[int, ...]) -> bool:
    if ids and min(ids) < 0 or len(set(ids)) != len(ids):
        return False
    if len(_SOUND) >= 4096:
        _SOUND.clear()
    _SOUND.add(ids)
    return True


_BROKER_RECORDS = ("REGISTER_BROKER_RECORD", "UNREGISTER_BROKER_RECORD", "FENCE_BROKER_RECORD",
                   "UNFENCE_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD")


@rule("kraft.broker-epoch", on="record", records=_BROKER_RECORDS, scope="cluster")
def broker_epoch(c):
    """A registration's broker epoch is never negative nor lower than the broker's previous
    one; every later record about the broker carries that epoch."""
    event, data = c.event, c.event.data
    if event.type == "REGISTER_BROKER_RECORD":
        broker_id, epoch = data.get("brokerId"), data.get("brokerEpoch")
        if type(epoch) is not int or type(broker_id) is not int:
            return None
        before = c.state.brokers.get(broker_id)
        if epoch < 0:
            return Finding(f"broker {broker_id} registered with a negative broker epoch {epoch}", broker_id=broker_id)
        if before is not None and before.epoch >= 0 and epoch < before.epoch:
            return Finding(f"broker {broker_id} re-registered with broker epoch {epoch}, lower than "
                           f"its previous epoch {before.epoch}", broker_id=broker_id)
        return None
    broker_id = data.get("id", data.get("brokerId"))
    epoch = data.get("epoch", data.get("brokerEpoch"))
    broker = c.state.brokers.get(broker_id)
    if type(epoch) is not int or type(broker_id) is not int or broker is None or not broker.registered \
            or broker.epoch < 0:
        return None
    if epoch != broker.epoch:
        return Finding(f"{event.type} for broker {broker_id} carries broker epoch {epoch}, not its "
                       f"registration's epoch {broker.epoch}", broker_id=broker_id)
    return None


@rule("kraft.producer-ids-increase", on="record", records=("PRODUCER_IDS_RECORD",), scope="cluster")
def producer_ids_increase(c):
    """Each producer-id block starts after the previous one: the next producer id only grows
    and never goes negative (an overflow), and the broker asking for it is registered at the
    epoch it gives."""
    data = c.event.data
    nxt, previous = data.get("nextProducerId"), c.state.next_producer_id
    if type(nxt) is not int:
        return None
    if nxt < 0:
        return f"next producer id {nxt} is negative"
    if previous is not None and nxt <= previous:
        return f"next producer id {nxt} does not grow past the previous block's {previous}"
    broker_id, epoch = data.get("brokerId", -1), data.get("brokerEpoch", -1)
    broker = c.state.brokers.get(broker_id)
    if type(broker_id) is int and broker_id >= 0 and broker is not None and broker.registered and epoch != broker.epoch:
        return Finding(f"producer ids given to broker {broker_id} at broker epoch {epoch}, not its "
                       f"registration's epoch {broker.epoch}", broker_id=broker_id)
    return None


@rule("kraft.topic-name-and-id", on="record", records=("TOPIC_RECORD",), scope="cluster")
def topic_name_and_id(c):
    """A topic's name is a legal topic name that no live topic has, and its id is not a live
    topic's."""
    data = c.event.data
    name, topic_id = data.get("name"), data.get("topicId")
    if not isinstance(name, str) or not isinstance(topic_id, str):
        return None
    if not LEGAL_TOPIC.match(name) or name in (".", ".."):
        return f"topic name {name!r} is not a legal topic name"
    live = c.state.topic_ids.get(name)
    if live is not None and live != topic_id:
        return f"topic {name!r} created with id {topic_id} while topic id {live} has that name"
    if topic_id in c.state.topics and c.state.topics[topic_id] != name:
        return f"topic id {topic_id} of live topic {c.state.topics[topic_id]!r} given to {name!r}"
    return None


def _int(low: int = -(2**63)):
    def check(v: str) -> bool:
        try:
            return int(v.strip()) >= low
        except ValueError:
            return False
    return check


def _one_of(*allowed: str):
    return lambda v: v.strip().lower() in allowed


def _list_of(*allowed: str):
    return lambda v: all(p.strip().lower() in allowed for p in v.split(",")) and v.strip() != ""


_BOOL = _one_of("true", "false")
# Topic (and cluster-default) configs whose type Kafka's ConfigDef declares: the controller
# validates an alteration against it before writing the record.
CONFIG_TYPES = {
    "min.insync.replicas": _int(1), "unclean.leader.election.enable": _BOOL,
    "segment.bytes": _int(14), "segment.ms": _int(1), "retention.ms": _int(-1),
    "retention.bytes": _int(-1), "max.message.bytes": _int(0), "segment.index.bytes": _int(4),
    "flush.messages": _int(1), "flush.ms": _int(0), "delete.retention.ms": _int(0),
    "min.compaction.lag.ms": _int(0), "file.delete.delay.ms": _int(0),
    "local.retention.ms": _int(-2), "local.retention.bytes": _int(-2),
    "cleanup.policy": _list_of("compact", "delete"),
    "compression.type": _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    "message.timestamp.type": _one_of("createtime", "logappendtime"),
    "preallocate": _BOOL, "remote.storage.enable": _BOOL,
}


@rule("kraft.config-value-parses", on="record", records=("CONFIG_RECORD",), scope="cluster")
def config_value_parses(c):
    """A config the controller validated holds a value of its declared type."""
    data = c.event.data
    name, value = data.get("name"), data.get("value")
    check = CONFIG_TYPES.get(name)
    if check is None or not isinstance(value, str) or check(value):
        return None
    return f"config {name} of {data.get('resourceName') or 'the cluster'} set to {value!r}, not a valid value"
