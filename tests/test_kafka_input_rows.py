"""The topic path's rows (kafka_input._decode over the shipper's messages, no Kafka
needed: LogTail makes the messages): a record's value bytes travel, not its JSON, and
the operator's decoding of them gives the events the codec gives from the files."""

from __future__ import annotations

import gc
from dataclasses import replace
from pathlib import Path

import pyarrow as pa

from kraft_audit.core.events import KIND_RECORD, MetadataEvent
from kraft_audit.ship.tail import LogTail
from kraft_audit.spark import event_rows
from kraft_audit.spark.kafka_input import _decode, message_events
from kraft_audit.testing.collector import passes_inside

FIXTURE = Path(__file__).parent / "fixtures" / "kraft-real" / "subpxl__streamprocessing"


def test_shipped_messages_become_rows_carrying_record_values():
    shipped = LogTail(FIXTURE).poll(max_bytes=1 << 30)
    assert shipped
    messages = pa.RecordBatch.from_pylist([
        {"key": b"c", "value": s.value, "headers": [{"key": k, "value": v} for k, v in s.headers()],
         "topic": "t", "partition": 0, "offset": n} for n, s in enumerate(shipped)])
    rows = pa.Table.from_batches(list(_decode([messages]))).to_pandas()
    records = rows[(rows["kind"] == KIND_RECORD) & (rows["type"] != "UNKNOWN_RECORD")]
    assert len(records) and records["data_json"].isna().all() and records["raw"].notna().all()
    expected = [e for n, s in enumerate(shipped)
                for e in message_events(b"c", s.value, dict(s.headers()), f"kafka t-0@{n}")]
    packed = rows["kind"] == event_rows.KIND_NOOPS
    epochs = rows["kind"] == event_rows.KIND_EPOCHS
    got = event_rows.from_columns({c: rows.loc[~packed & ~epochs, c].to_numpy()
                                   for c in event_rows.EVENT_COLUMNS})
    kept = {(e.source, e.offset) for e in got if isinstance(e, MetadataEvent)}
    sent_packed = {int(o) for r in rows.loc[packed, "raw"] for o in event_rows.noop_offsets(r)}
    # every event of the messages: a row decoded back to the same event, or a packed NoOp offset
    assert [e for e in got if isinstance(e, MetadataEvent)] == \
        [replace(e, leader_epoch=-1) for e in expected if (e.source, e.offset) in kept]
    assert len(kept) + len(sent_packed) == len(expected)
    # the batches' Raft epochs, which the event rows do not carry, travel in rows of their own
    sent_epochs = {(int(b["base"]), int(b["epoch"])) for r in rows.loc[epochs, "raw"]
                   for b in event_rows.batch_epochs(r)}
    assert sent_epochs == {(e.batch_base_offset, e.leader_epoch) for e in expected
                           if isinstance(e, MetadataEvent) and e.offset >= 0
                           and not e.source.endswith(".checkpoint")}


def test_the_topic_path_makes_its_chunks_without_the_cyclic_collector():
    """As the file source's: a chunk is decoded and made Arrow with the collector paused (its
    passes walked the live auditors a Python worker keeps), handed to Spark with it on."""
    shipped = LogTail(FIXTURE).poll(max_bytes=1 << 30)
    messages = pa.RecordBatch.from_pylist([
        {"key": b"c", "value": s.value, "headers": [{"key": k, "value": v} for k, v in s.headers()],
         "topic": "t", "partition": 0, "offset": n} for n, s in enumerate(shipped)])
    chunks = 0
    with passes_inside("_decoded_chunks") as passes:
        gc.enable()
        for _batch in _decode([messages]):
            assert gc.isenabled()
            chunks += 1
    assert passes == [] and chunks >= 1
