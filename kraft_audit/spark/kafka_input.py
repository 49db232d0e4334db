"""The shipper's topic through Spark's own Kafka source (`sources.kafka`).

Each Kafka message is what `kraft-audit ship` produced (kraft_audit/ship/tail.py):
one record batch as it is on disk, keyed by cluster id, with the file and byte
position it came from in headers. Read here by the same codec as the files (each
record by its key columns, its value decoded by the operator), so the events,
and from them the operator and the tables, are the same as a file-based run of
the same log; Kafka's offsets live in the Spark checkpoint.
A batch shipped twice (a shipper restarted before Kafka acknowledged it) is a
duplicate offset, which the auditor counts and skips as after any restart.
"""

from __future__ import annotations

from kraft_audit.config import KafkaSource
from kraft_audit.core.codec.batches import Batch, iter_batches
from kraft_audit.core.codec.keyrows import KeyRows
from kraft_audit.core.codec.logdir import batch_events, problem_to_quarantined
from kraft_audit.core.collector import paused_each
from kraft_audit.core.events import Quarantined
from kraft_audit.ship.tail import COMPARISON, comparison_event
from kraft_audit.sideinputs.registrations import UNKNOWN_CLUSTER
from kraft_audit.spark import event_rows



def message_events(key: bytes | None, value: bytes | None, headers: dict[str, bytes],
                   where: str, keep_values: bool = False, rows: KeyRows | None = None) -> list:
    """The events of one shipped message; a quarantine row when it is not one.
    `keep_values`: the events keep their record values (the rows carry those, as the
    file source's do). `rows`: the message's rows go there instead, its batches read
    by their key columns (`KeyRows.add_batch`), and the list is empty."""
    items: list = []
    add = items.append if rows is None else rows.add
    cluster_id = key.decode(errors="replace") if key else UNKNOWN_CLUSTER
    try:
        file = headers["kraft.file"].decode()
        position = int(headers["kraft.position"])
    except (KeyError, ValueError, UnicodeDecodeError):
        add(Quarantined(cluster_id, where, 0, f"{where} is not a message of kraft-audit ship "
                        "(no kraft.file / kraft.position headers)", bytes(value or b"")[:1024]))
        return items
    if headers.get("kraft.kind") == COMPARISON.encode():
        add(comparison_event(cluster_id, value, where))
        return items
    for item in iter_batches(value or b"", base_position=position):
        if not isinstance(item, Batch):
            add(problem_to_quarantined(item, cluster_id, file))
        elif rows is None:
            items.extend(batch_events(item, cluster_id, file, keep_values))
        else:
            rows.add_batch(item, cluster_id, file)
    return items


# Event rows per Arrow batch handed back to Spark: a message is a whole KRaft batch (up to
# thousands of records), so a batch of messages is cut by the events it makes.
EVENTS_PER_CHUNK = 5000
# Messages per micro-batch unless the entry says (the file source's bound is in records).
# A real log is mostly one-NoOp batches: at 2000 a micro-batch held 2000 records, and
# its fixed cost (group calls, state commits, Delta writes) was most of the time.
# 20000 messages is the file source's 200k records at ten records a message; a topic
# of large batches (a bootstrap of many partitions) wants a smaller bound.
DEFAULT_MAX_OFFSETS_PER_TRIGGER = 20_000


def _decode(batches):
    """mapInArrow: (key, value, headers, topic, partition, offset) rows → event rows.
    Never raises on content: what cannot be read becomes a quarantine row. Each chunk is
    made with the cyclic collector paused, as the file source's are."""
    for batch in batches:
        yield from paused_each(_decoded_chunks(batch))


def _decoded_chunks(batch):
    """One input batch's messages as chunks of event rows."""
    cols = batch.to_pydict()
    rows = KeyRows()
    for key, value, headers, topic, partition, offset in zip(
            cols["key"], cols["value"], cols["headers"], cols["topic"], cols["partition"],
            cols["offset"]):
        where = f"kafka {topic}-{partition}@{offset}"
        before = len(rows)
        try:
            message_events(key, value, {h["key"]: h["value"] for h in headers or []}, where,
                           rows=rows)
        except Exception as exc:  # noqa: BLE001 - a decoder bug must not kill the query
            rows.truncate(before)  # none of the message's rows, as before: one quarantine row
            rows.add(Quarantined(key.decode(errors="replace") if key else UNKNOWN_CLUSTER,
                                 where, 0, f"could not decode {where}: {type(exc).__name__}: {exc}",
                                 bytes(value or b"")[:1024]))
        if len(rows) >= EVENTS_PER_CHUNK:
            yield event_rows.key_record_batch(rows)
            rows = KeyRows()
    if rows:
        yield event_rows.key_record_batch(rows)


def kafka_stream(spark, entry: KafkaSource):
    """One `sources.kafka` entry as event rows."""
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", entry.bootstrap_servers)
              .option("subscribe", entry.topic)
              .option("startingOffsets", entry.starting_offsets)
              .option("includeHeaders", "true")
              # retention deleting messages not yet read is reported, not fatal: the auditor
              # sees the offsets jump
              .option("failOnDataLoss", "false"))
    reader = reader.option("maxOffsetsPerTrigger", str(entry.max_offsets_per_trigger
                                                        or DEFAULT_MAX_OFFSETS_PER_TRIGGER))
    for key, value in entry.options.items():  # e.g. kafka.security.protocol
        reader = reader.option(key, str(value))
    return (reader.load().select("key", "value", "headers", "topic", "partition", "offset")
            .mapInArrow(_decode, event_rows.EVENT_DDL))
