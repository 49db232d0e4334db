"""KIP-550: stray replicas, found by comparing a broker's disks with the metadata."""

from __future__ import annotations

from kraft_audit.core.rules.registry import Finding, rule

METADATA_TOPIC = "__cluster_metadata"


def split_partition_name(name: str) -> tuple[str, int] | None:
    """"orders-3" -> ("orders", 3); topic names may themselves contain '-'."""
    topic, sep, index = str(name).rpartition("-")
    if not sep or not topic or not index.isdigit():
        return None
    return topic, int(index)


@rule("kip550.stray-replica", on="log_dirs", params={"min_size_bytes": 0})
def stray_replica(c):
    """A replica on a broker's disk that the metadata does not assign to that broker."""
    data, state = c.event.data, c.state
    broker_id = data.get("brokerId")
    findings = []
    for log_dir in data.get("logDirs") or ():
        for replica in log_dir.get("partitions") or ():
            parsed = split_partition_name(replica.get("partition", ""))
            if parsed is None or parsed[0] == METADATA_TOPIC:
                continue
            size = replica.get("size") or 0
            if size < c.params["min_size_bytes"]:
                continue
            finding = _judge(state, c.settings, broker_id, parsed, replica, log_dir, size)
            if finding is not None:
                findings.append(finding)
    return findings


def _judge(state, settings, broker_id, parsed, replica, log_dir, size) -> Finding | None:
    topic, index = parsed
    evidence = {"log_dir": log_dir.get("logDir"), "partition": replica.get("partition"),
                "size": size, "is_future": bool(replica.get("isFuture")),
                # Kafka's own verdict, when the inventory is the log dir itself
                "marked_stray_by_kafka": bool(replica.get("isStray"))}
    # The id on disk (partition.metadata) names the topic the replica belongs to; the name
    # alone may since belong to a topic created again after a deletion.
    on_disk_id = replica.get("topicId")
    if on_disk_id:
        evidence["topic_id"] = on_disk_id
        topic_id = on_disk_id if on_disk_id in state.topics else None
    else:
        topic_id = state.topic_ids.get(topic)
    if topic_id is None:
        deleted = _deleted_topic_id(state, topic, on_disk_id)
        if deleted:
            why = "whose topic was deleted"
            if state.topic_ids.get(topic):
                why += " (a topic created again under its name has another id)"
        else:
            why = "of a topic the metadata does not know"
        return Finding(f"stray replica {topic}-{index} ({size} bytes) on broker {broker_id}, {why}",
                       key=(deleted, index) if deleted else None, broker_id=broker_id,
                       evidence=evidence, cluster_scoped=True)
    part = state.partitions.get((topic_id, index))
    if part is None:
        if not settings.sees_all_partitions:
            return None  # another auditor holds this partition
        return Finding(f"stray replica {topic}-{index} ({size} bytes) on broker {broker_id}: the "
                       "topic has no such partition", key=(topic_id, index), broker_id=broker_id,
                       evidence=evidence, cluster_scoped=True)
    if broker_id in part.replicas or broker_id in part.adding_replicas:
        if not replica.get("isStray"):
            return None
        # an assigned replica lives beside it under the plain name: this copy is left over
        return Finding(f"stray replica {topic}-{index} ({size} bytes) on broker {broker_id}, "
                       "renamed -stray by the broker although the partition is assigned to it: "
                       "a left-over copy", key=(topic_id, index), broker_id=broker_id,
                       evidence=evidence, cluster_scoped=False)
    return Finding(f"stray replica {topic}-{index} ({size} bytes) on broker {broker_id}, which is "
                   f"not among its replicas {list(part.replicas)}", key=(topic_id, index),
                   broker_id=broker_id, evidence=evidence, cluster_scoped=False)


def _deleted_topic_id(state, topic: str, on_disk_id: str | None) -> str | None:
    """The deleted topic a replica belongs to: its id on disk, else the last one of its name."""
    if on_disk_id:
        return on_disk_id if on_disk_id in state.deleted_topics else None
    return next((tid for tid, name in reversed(state.deleted_topics.items()) if name == topic),
                None)
