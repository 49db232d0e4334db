"""The sources' rows read by their keys (`KeyRows`, spark/event_rows.key_record_batch) are
the rows of the full decode (`batch_events(keep_values=True)` → `to_record_batch(...,
pack_noops=True)`), on every log in tests/fixtures, on mutants of them and on damaged
input. One difference, by design: a value the key read takes without decoding it and
that does not decode is quarantined by the operator (`from_columns`), not the source:
the row is then a record row carrying the bytes, and the operator's object for it is the
source's Quarantined, reason included (or, for a value cut short, one that says it runs
past the end of its value). The operator's tables from both kinds of rows are compared
in the last test."""

from __future__ import annotations

import itertools
import re
import shutil
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pytest

from kraft_audit.core.codec.batches import (
    COMPRESSION_GZIP,
    COMPRESSION_ZSTD,
    Batch,
    batch_events,
    encode_batch,
    iter_batches,
    problem_to_quarantined,
)
from kraft_audit.core.codec.keyrows import KEY_READERS, NOOP_VALUE, KeyRows, key_layout
from kraft_audit.core.codec.logdir import LogDirWriter, list_segments, list_snapshots, metadata_dir
from kraft_audit.core.codec.records import encode_control, encode_value
from kraft_audit.core.codec.schemas import METADATA_RECORDS
from kraft_audit.core.events import MetadataEvent, Quarantined
from kraft_audit.spark import event_rows
from kraft_audit.testing import mutate

LOGS = mutate.fixture_logs()
TOPIC = "b3Jk6rXXQ9yvPe6F2jvMKw"


def log_files(log_dir: Path) -> list[Path]:
    d = metadata_dir(log_dir)
    return [p for _, p in list_segments(d)] + [p for *_, p in list_snapshots(d)]


def reference(buf: bytes, source: str, min_offset: int = 0) -> list:
    """What the sources sent before: the full decode, events below min_offset dropped."""
    out = []
    for item in iter_batches(buf):
        if isinstance(item, Batch):
            out += [e for e in batch_events(item, "c", source, keep_values=True)
                    if isinstance(e, Quarantined) or e.offset >= min_offset]
        else:
            out.append(problem_to_quarantined(item, "c", source))
    return out


def key_rows(buf: bytes, source: str, min_offset: int = 0) -> KeyRows:
    rows = KeyRows()
    for item in iter_batches(buf):
        if isinstance(item, Batch):
            rows.add_batch(item, "c", source, min_offset)
        else:
            rows.add(problem_to_quarantined(item, "c", source))
    return rows


def objects(batch: pa.RecordBatch) -> list:
    """The operator's objects for rows (NOOP_OFFSETS rows as their offsets)."""
    cols = batch.to_pydict()
    return event_rows.from_columns(cols), cols


_CUT = re.compile(r"(.* does not decode: )(.*)")


def same_reason(got: str, want: str) -> bool:
    """The source's reason, or, for a value cut short (which the source read on past, into
    the next bytes of its batch), one that says so with the same place."""
    if got == want:
        return True
    g, w = _CUT.match(got), _CUT.match(want)
    return bool(g and w and g.group(1) == w.group(1) and "runs past the end of its" in g.group(2))


def split_epochs(batch):
    """The batch without its BATCH_EPOCHS rows, and their entries as a set of tuples."""
    kinds = batch.column("kind").to_pylist()
    raws = batch.column("raw").to_pylist()
    entries = {tuple(e.tolist()) for k, r in zip(kinds, raws) if k == event_rows.KIND_EPOCHS
               for e in event_rows.batch_epochs(r)}
    return batch.take([i for i, k in enumerate(kinds) if k != event_rows.KIND_EPOCHS]), entries


def assert_same_rows(buf: bytes, source: str = "00000000000000000000.log", min_offset: int = 0) -> int:
    """Returns how many rows' values the operator quarantines (the source did before)."""
    want = event_rows.to_record_batch(reference(buf, source, min_offset), pack_noops=True, epochs=True)
    got = event_rows.key_record_batch(key_rows(buf, source, min_offset))
    assert got.schema == event_rows.EVENT_ARROW_SCHEMA
    if got.equals(want):
        return 0
    got, got_epochs = split_epochs(got)
    want, want_epochs = split_epochs(want)
    assert got.num_rows == want.num_rows
    got_items, got_cols = objects(got)
    want_items, want_cols = objects(want)
    moved, moved_offsets = 0, []
    for i, (g, w) in enumerate(zip(got_items, want_items)):
        if not (want_cols["kind"][i] == event_rows.KIND_QUARANTINE and got_cols["kind"][i] == "record"):
            assert {c: got_cols[c][i] for c in got_cols} == {c: want_cols[c][i] for c in want_cols}
            continue
        # the quarantine moved to the operator: a record row with the value's bytes
        assert isinstance(g, Quarantined) and isinstance(w, Quarantined), (g, w)
        assert (g.cluster_id, g.source, g.position, g.offset, g.raw) == \
            (w.cluster_id, w.source, w.position, w.offset, w.raw)
        assert same_reason(g.reason, w.reason), (g.reason, w.reason)
        assert KEY_READERS[got_cols["raw"][i][:3]].type_name == got_cols["type"][i]
        moved_offsets.append(g.offset)
        moved += 1
    # The batches' epochs: the same, but for a batch whose every value the operator
    # quarantines (the full decode left it no record, so it had no entry)
    extra = got_epochs - want_epochs
    assert want_epochs <= got_epochs
    assert all(any(base <= o <= last for o in moved_offsets) for base, last, *_ in extra), extra
    return moved


def test_every_record_type_and_version_is_read_at_its_keys_or_decoded():
    """Every (type, version) whose key fields sit at fixed places is read there; the
    others (a key after a variable-width field) take the full decode."""
    for schema in METADATA_RECORDS:
        for version in schema.versions:
            layout = key_layout(schema, version)
            prefix = bytes((1, schema.api_key, version))
            assert (prefix in KEY_READERS) == (layout is not None), (schema.type_name, version)
    assert key_layout(METADATA_RECORDS[2], 0) is None  # TopicRecord: its name comes first
    partition = next(s for s in METADATA_RECORDS if s.type_name == "PARTITION_CHANGE_RECORD")
    assert key_layout(partition, 2) == {"partition_id": 0, "topic_id": 4}
    fence = next(s for s in METADATA_RECORDS if s.type_name == "FENCE_BROKER_RECORD")
    assert key_layout(fence, 0) == {"broker_id": 0}
    assert NOOP_VALUE == encode_value("NO_OP_RECORD", 0, {})


@pytest.mark.parametrize("log_dir", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_rows_of_every_fixture_log_equal_the_full_decode(log_dir):
    types = set()
    for path in log_files(log_dir):
        buf = path.read_bytes()
        assert assert_same_rows(buf, path.name) == 0
        types |= {e.type for e in reference(buf, path.name) if isinstance(e, MetadataEvent)}
        # a range that starts inside the log (after a snapshot): records below it are left out
        offsets = [e.offset for e in reference(buf, path.name) if isinstance(e, MetadataEvent)]
        if offsets and not path.name.endswith(".checkpoint"):
            assert assert_same_rows(buf, path.name, offsets[len(offsets) // 2] + 1) == 0
    assert "PARTITION_CHANGE_RECORD" in types or "PARTITION_RECORD" in types


@pytest.mark.parametrize("log_dir", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_rows_of_mutants_equal_the_full_decode(log_dir, tmp_path):
    n = -1
    for n, mutant in enumerate(itertools.islice(mutate.generate(log_dir, per_kind=1), 0, 30, 3)):
        target = tmp_path / f"m{n}"
        mutate.write_log(log_dir, mutant.frames, target, mutant.snapshots)
        for path in log_files(target):
            assert assert_same_rows(path.read_bytes(), path.name) == 0, mutant.what
        shutil.rmtree(target)
    assert n >= 0


def pcr(partition: int, **fields) -> bytes:
    return encode_value("PARTITION_CHANGE_RECORD", 0, {"partitionId": partition, "topicId": TOPIC, **fields})


def odd_log() -> tuple[bytes, int]:
    """Batches of every shape the reader meets, values that do not decode among them;
    returns (bytes, how many values the source quarantined)."""
    noop = encode_value("NO_OP_RECORD", 0, {})
    fence = encode_value("FENCE_BROKER_RECORD", 0, {"id": 3, "epoch": 7})
    topic = encode_value("TOPIC_RECORD", 0, {"name": "t", "topicId": TOPIC})
    config = encode_value("CONFIG_RECORD", 0, {"resourceType": 2, "resourceName": "t", "name": "x",
                                               "value": "1"})
    leader = encode_control("LEADER_CHANGE", {"leaderId": 1, "voters": []})
    bad = [
        pcr(1, isr=[1, 2]) + b"\x00\x00",  # two bytes too many
        pcr(2, isr=[1, 2])[:-3],  # cut short, past its keys
        pcr(5)[:23],  # its keys alone: read on its own, it ends before its tagged fields
        fence[:5],  # too short for its key: the full decode quarantines it in the source
        config.replace(b"\x02t", b"\x02\xff"),  # not UTF-8, no key field
        b"\x01\x14\x00\x01",  # a NoOp with a tagged-field count and no field
        b"\x02\x05\x00" + pcr(3)[3:],  # frame version 2
        b"\x01",  # only a frame byte
    ]
    batches = [
        encode_batch(0, [topic, pcr(0, leader=1), fence], 1000, 1),
        encode_batch(3, [noop], 1001, 1),
        encode_batch(4, [noop, noop], 1002, 1, timestamp_deltas=[0, 4]),
        encode_batch(6, [noop], 1003, 1, compression=COMPRESSION_GZIP),
        encode_batch(7, [pcr(1, isr=[1]), config, noop], 1004, 1, compression=COMPRESSION_ZSTD),
        encode_batch(10, [leader[1]], 1005, 1, control=True, keys=[leader[0]]),
        encode_batch(11, [noop], 1006, 1, keys=[b"k"]),  # a key: the general path
        encode_batch(12, [noop], 1007, 1, timestamp_deltas=[5]),  # a NoOp with a delta
        encode_batch(13, bad, 1008, 1),
        encode_batch(21, [b"\x01\x14\x00\x01\x05\x01\x07"], 1009, 1),  # a NoOp with an unknown tagged field
        encode_batch(22, [b"\x01\x63\x00\x00", b"\x01\x83\x01\x00\x00"], 1010, 1),  # unknown apiKeys
        encode_batch(24, [encode_value("PARTITION_RECORD", 2, {"partitionId": 4, "topicId": TOPIC,
                                                               "replicas": [1], "isr": [1]})], 1011, 1),
        encode_batch(25, [noop], 1012, 1),
    ]
    return b"".join(batches), len(bad)


def test_odd_batches_bad_values_damage_and_torn_tails():
    log, bad = odd_log()
    reasons = [q.reason for q in reference(log, "x.log") if isinstance(q, Quarantined)]
    assert len(reasons) == bad  # every bad value was quarantined by the source
    moved = assert_same_rows(log, "x.log")
    assert moved == 4  # all but the four the key read leaves to the full decode
    for min_offset in (1, 5, 13, 14, 22, 30):
        assert_same_rows(log, "x.log", min_offset)
    for cut in range(0, len(log), 11):  # torn at every 11th byte
        assert_same_rows(log[:cut], "x.log")
    for flip in range(0, len(log), 7):  # one byte damaged anywhere
        damaged = bytearray(log)
        damaged[flip] ^= 0x5A
        assert_same_rows(bytes(damaged), "x.log")
    assert_same_rows(log + bytes(300), "x.log")  # zero padding
    assert_same_rows(bytes(range(256)) * 3 + log, "x.log")  # garbage before


def test_a_snapshot_s_noops_are_not_packed():
    noop = encode_value("NO_OP_RECORD", 0, {})
    buf = b"".join(encode_batch(i, [noop], 1000 + i, 1) for i in range(4))
    assert assert_same_rows(buf, "00000000000000000004-0000000001.checkpoint") == 0
    rows = event_rows.key_record_batch(key_rows(buf, "00000000000000000004-0000000001.checkpoint"))
    assert rows.num_rows == 4 and event_rows.NOOP_OFFSETS not in rows.column("type").to_pylist()
    packed = event_rows.key_record_batch(key_rows(buf, "00000000000000000000.log"))
    assert packed.column("type").to_pylist() == ["NO_OP_RECORD", event_rows.NOOP_OFFSETS, event_rows.BATCH_EPOCHS]
    assert event_rows.noop_offsets(packed.column("raw")[1].as_py()).tolist() == [0, 1, 2]


def test_the_topic_path_sends_the_rows_of_the_full_decode():
    """kafka_input._decode over the shipper's messages: the key-read rows, equal to the
    rows of the full decode of the same messages, chunk for chunk."""
    from kraft_audit.ship.tail import LogTail
    from kraft_audit.spark.kafka_input import _decode, message_events

    for log_dir in LOGS:
        shipped = LogTail(log_dir).poll(max_bytes=1 << 30)
        assert shipped
        messages = [{"key": b"c", "value": s.value, "headers": [{"key": k, "value": v} for k, v in s.headers()],
                     "topic": "t", "partition": 0, "offset": n} for n, s in enumerate(shipped)]
        # a message that is not the shipper's, and one whose batch is damaged
        messages.append({"key": b"c", "value": b"x", "headers": [], "topic": "t", "partition": 0, "offset": -1})
        damaged = bytearray(shipped[-1].value)
        damaged[30] ^= 0xFF
        messages.append({**messages[len(shipped) - 1], "value": bytes(damaged), "offset": -2})
        got = list(_decode([pa.RecordBatch.from_pylist(messages)]))
        want, items = [], []
        for m in messages:
            items += message_events(m["key"], m["value"], {h["key"]: h["value"] for h in m["headers"]},
                                    f"kafka t-0@{m['offset']}", keep_values=True)
            if len(items) >= 5000:
                want.append(event_rows.to_record_batch(items, pack_noops=True, epochs=True))
                items = []
        if items:
            want.append(event_rows.to_record_batch(items, pack_noops=True, epochs=True))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.equals(w), log_dir


# ------------------------------------------------- the operator's tables from both


def run_rows(batches: list[pa.RecordBatch], buckets: int) -> dict[str, list]:
    """The operator over rows as Spark routes them (one micro-batch per Arrow batch)."""
    from test_spark_operator import new_state

    from kraft_audit.spark import operator as op
    from kraft_audit.testing.operator_calls import decode_output, target_buckets

    audit = op.OperatorConfig(buckets=buckets, timeout_ms=0)
    op._LIVE.clear()
    states: dict = {}
    out = defaultdict(list)
    for batch in batches:
        pdf = batch.to_pandas()
        groups = defaultdict(list)
        for i, (c, t, tid, pid) in enumerate(zip(pdf["cluster_id"], pdf["type"], pdf["topic_id"],
                                                  pdf["partition_id"])):
            for b in target_buckets(t, tid, pid, buckets):
                groups[(c, b)].append(i)
        for key, idx in sorted(groups.items()):
            state = new_state(states.get(key))
            for result in op.audit_group(key, iter([pdf.iloc[idx].reset_index(drop=True)]), state, audit):
                for table, rows in decode_output(result["table"], result["rows"]).items():
                    out[table].extend(rows)
            states[key] = state.get
    return out


def test_the_operator_ends_with_the_same_tables(tmp_path):
    """A real log with bad values appended: the source quarantined them, now the operator
    does, once; every table and the summed counts are the same, and they balance."""
    from test_spark_operator import assert_counts_balance

    log_dir = tmp_path / "log"
    shutil.copytree(mutate.fixture_logs()[0], log_dir)
    topic_id = next(e.data["topicId"] for path in log_files(log_dir)
                    for e in reference(path.read_bytes(), path.name)
                    if isinstance(e, MetadataEvent) and e.type == "PARTITION_RECORD")
    change = encode_value("PARTITION_CHANGE_RECORD", 0, {"partitionId": 0, "topicId": topic_id, "leader": -1})
    with LogDirWriter(log_dir, "c") as w:
        w.append_values([change + b"\x00", change[:-2]], 2_000_000_000_000)
        w.append_values([encode_value("FENCE_BROKER_RECORD", 0, {"id": 1, "epoch": 1})[:-1]], 2_000_000_000_001)
        w.append_values([encode_value("NO_OP_RECORD", 0, {})], 2_000_000_000_002)
    old, new = [], []
    bad = 0
    for path in log_files(log_dir):
        if path.name.endswith(".checkpoint"):
            continue
        buf = path.read_bytes()
        items = reference(buf, path.name)
        bad += sum(isinstance(i, Quarantined) for i in items)
        old.append(event_rows.to_record_batch(items, pack_noops=True, epochs=True))
        new.append(event_rows.key_record_batch(key_rows(buf, path.name)))
    assert bad == 3
    for buckets in (1, 4):
        want, got = run_rows(old, buckets), run_rows(new, buckets)
        assert_counts_balance(got["stats"])
        assert len(got["quarantine"]) == bad
        for table in ("violations", "conditions", "partitions", "brokers", "gauges"):
            assert got[table] == want[table], table
        # the same rows but the reason of a value cut short, which now says so
        for g, w in zip(sorted(got["quarantine"], key=lambda q: q["offset"]),
                        sorted(want["quarantine"], key=lambda q: q["offset"])):
            assert same_reason(g["reason"], w["reason"]), (g["reason"], w["reason"])
            assert {k: v for k, v in g.items() if k != "reason"} == {k: v for k, v in w.items() if k != "reason"}
        for count in ("records", "applied", "duplicates", "quarantined"):
            assert sum(s[count] for s in got["stats"]) == sum(s[count] for s in want["stats"]), count


def test_a_message_that_fails_half_way_leaves_none_of_its_rows():
    """kafka_input._decode drops what a message added before its reader failed
    (`KeyRows.truncate`), NoOps to pack and objects included."""
    noop = encode_value("NO_OP_RECORD", 0, {})
    first = encode_batch(0, [noop, noop], 1000, 1)
    rows = key_rows(first, "a.log")
    kept = event_rows.key_record_batch(key_rows(first, "a.log"))
    rows.add(Quarantined("c", "b.log", 0, "why", b""))
    for batch in iter_batches(encode_batch(2, [noop, noop, pcr(0)], 1001, 1)):
        rows.add_batch(batch, "c", "b.log")
    assert len(rows) == 6 and ("c", "b.log") in rows.noops
    rows.truncate(2)
    assert rows.items == {} and list(rows.noops) == [("c", "a.log")]
    assert event_rows.key_record_batch(rows).equals(kept)


@pytest.mark.parametrize("log_dir", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_file_source_reads_every_planned_range_as_the_full_decode(log_dir):
    """spark/source.read_range(keys=True) (read_segment into KeyRows, chunk by chunk, from
    where planning put each range) against the items read_range gives by the full decode."""
    import json

    from kraft_audit.spark.source import KraftLogStreamReader, ReadRange, read_range

    reader = KraftLogStreamReader({"path": str(log_dir), "maxRecordsPerTrigger": "700"})
    start, chunks = reader.initialOffset(), 0
    while True:
        end = reader.latestOffset(start, reader.getDefaultReadLimit())
        if end == start:
            break
        for part in reader.partitions(start, end):
            r = ReadRange(**json.loads(part.ranges_json))
            for got, want in zip(read_range(r, keys=True), read_range(r), strict=True):
                got = (event_rows.key_record_batch(got) if isinstance(got, KeyRows)
                       else event_rows.to_record_batch(got, pack_noops=True, epochs=True))
                assert got.equals(event_rows.to_record_batch(want, pack_noops=True, epochs=True)), r
                chunks += 1
        start = end
    assert chunks > 1


def noop_runs_log() -> bytes:
    """Runs of NoOp batches, cut by all that ends a run: another batch, a new Raft epoch,
    a gap in the offsets, a NoOp batch the general path takes (compressed, with a key, two
    NoOps, a control batch), a lone NoOp."""
    noop = encode_value("NO_OP_RECORD", 0, {})
    leader = encode_control("LEADER_CHANGE", {"leaderId": 1, "voters": []})

    def run(first: int, last: int, epoch: int = 1) -> list[bytes]:
        return [encode_batch(o, [noop], 1000 + 7 * o, epoch) for o in range(first, last + 1)]

    return b"".join([
        *run(0, 9), encode_batch(10, [pcr(1)], 1070, 1),
        *run(11, 15), *run(16, 19, epoch=2),  # a new epoch
        *run(25, 29, epoch=2),  # a gap
        encode_batch(30, [noop], 1210, 2, compression=COMPRESSION_GZIP), *run(31, 33, epoch=2),
        encode_batch(34, [noop], 1238, 2, keys=[b"k"]), *run(35, 35, epoch=2),
        encode_batch(36, [noop, noop], 1252, 2), *run(38, 41, epoch=2),
        encode_batch(42, [leader[1]], 1294, 3, control=True, keys=[leader[0]]), *run(43, 50, epoch=3),
    ])


def test_runs_of_noop_batches_read_as_the_full_decode(tmp_path, monkeypatch):
    """The file source takes a run of NoOp batches whole (`noop_run_length`, one
    `NoOpBatches` among the rows, packed from its bytes): the rows of the full decode, chunk
    for chunk, wherever a chunk's bound or the range's min_offset cuts a run; and, on
    damaged and torn input, the rows it sent with a Batch for each NoOp batch."""
    from kraft_audit.core.codec import batches, logdir
    from kraft_audit.spark import source
    from kraft_audit.spark.source import ReadRange, read_range

    log = noop_runs_log()
    segment = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    segment.parent.mkdir(parents=True)
    taken = []

    def runs(on: bool) -> None:
        monkeypatch.setattr(logdir, "noop_run_length", (lambda *a: taken.append(
            batches.noop_run_length(*a)) or taken[-1]) if on else (lambda *a: (0, 0, 0)))

    def chunks(buf: bytes, min_offset: int, full_decode: bool = False) -> list:
        segment.write_bytes(buf)
        r = ReadRange(str(tmp_path), "c", segment.name, 0, len(buf), min_offset)
        return [event_rows.to_record_batch(c, pack_noops=True, epochs=True) if full_decode
                else event_rows.key_record_batch(c) if isinstance(c, KeyRows)
                else event_rows.to_record_batch(c, pack_noops=True, epochs=True)
                for c in read_range(r, keys=not full_decode)]

    def same_chunks(buf: bytes, min_offset: int = 0, full_decode: bool = False) -> None:
        runs(False)
        want = chunks(buf, min_offset, full_decode)
        runs(True)
        got = chunks(buf, min_offset)
        assert len(got) == len(want) and all(g.equals(w) for g, w in zip(got, want)), \
            (min_offset, source._READ_CHUNK_RECORDS)

    for chunk in (1, 2, 3, 7, 20_000):
        monkeypatch.setattr(source, "_READ_CHUNK_RECORDS", chunk)
        for min_offset in (0, 3, 12, 17, 40, 60):
            same_chunks(log, min_offset, full_decode=True)
    assert max(count for count, _, _ in taken) == 10  # the runs were taken whole
    monkeypatch.setattr(source, "_READ_CHUNK_RECORDS", 5)
    for cut in range(0, len(log), 13):  # torn anywhere
        same_chunks(log[:cut])
    for flip in range(0, len(log), 11):  # one byte damaged anywhere
        damaged = bytearray(log)
        damaged[flip] ^= 0x5A
        same_chunks(bytes(damaged))
