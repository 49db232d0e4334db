"""The shipper's reading of a log dir (`LogTail`), without Kafka: what it ships, decoded,
is the log as the file readers read it; a resume from the newest shipment's headers goes
on exactly after it; rolls, snapshots, retention, torn tails and garbage are followed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kraft_audit.core.codec.batches import Batch, iter_batches
from kraft_audit.core.codec.logdir import METADATA_DIR, batch_events, list_segments, list_snapshots, read_log_dir
from kraft_audit.core.events import MetadataEvent
from kraft_audit.ship.tail import COMPARISON, SNAPSHOT, LogTail, Resume
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import load_scenario

REAL = Path(__file__).parent / "fixtures" / "kraft-real"


def decoded(shipments) -> list[tuple[int, str]]:
    """(offset, type) of every record the shipments carry, segments only."""
    out = []
    for s in shipments:
        for item in iter_batches(s.value, base_position=s.position):
            if isinstance(item, Batch) and s.kind != SNAPSHOT:
                out += [(e.offset, e.type) for e in batch_events(item, "c", s.file)
                        if isinstance(e, MetadataEvent)]
    return out


def log_records(log_dir) -> list[tuple[int, str]]:
    return [(e.offset, e.type) for e in read_log_dir(log_dir) if isinstance(e, MetadataEvent)]


def drain(tail: LogTail, max_bytes: int = 8 << 20) -> list:
    out = []
    while batch := tail.poll(max_bytes):
        out += batch
    return out


def test_a_rolled_log_ships_whole_in_order_and_a_resume_goes_on_exactly(tmp_path):
    simulate(load_scenario("chaos"), tmp_path / "log", seed=1)  # 64 KiB segments: rolls
    log = tmp_path / "log"
    assert len(list_segments(log)) >= 2
    everything = drain(LogTail(log), max_bytes=20_000)  # small reads: batches cut by the read size
    # each snapshot the simulated controller wrote is compared once the log is shipped past it
    compared = [json.loads(s.value) for s in everything if s.kind == COMPARISON]
    assert [c["endOffset"] for c in compared] == [end for end, _e, _p in list_snapshots(log)]
    assert all(c["differences"] == [] for c in compared)
    shipped = [s for s in everything if s.kind != COMPARISON]
    assert all(s.kind == "segment" for s in shipped)
    assert decoded(shipped) == log_records(log)
    # every batch exactly as on disk, in file order
    assert b"".join(s.value for s in shipped) == b"".join(p.read_bytes() for _, p in list_segments(log))

    # a shipper killed after the k-th message resumes from that message's headers (a
    # comparison's too: it says where the tail stood)
    first_comparison = next(i for i, s in enumerate(everything) if s.kind == COMPARISON)
    for k in (len(everything) // 3, first_comparison + 1):
        newest = everything[k - 1]
        resume = Resume.from_headers(dict(newest.headers()), len(newest.value))
        rest = drain(LogTail(log, resume))
        assert [(s.file, s.position) for s in rest if s.kind != COMPARISON] == \
            [(s.file, s.position) for s in everything[k:] if s.kind != COMPARISON]


def test_a_log_whose_start_was_deleted_ships_the_snapshot_then_the_segments(tmp_path):
    # a real log: the snapshot at 7111 and the segment's bytes from there, as after retention
    real = REAL / "renoagilsaputra__kafka" / METADATA_DIR
    [snapshot] = real.glob("*.checkpoint")
    log = tmp_path / METADATA_DIR
    log.mkdir()
    shutil.copy(snapshot, log / snapshot.name)
    cut = next(e for e in read_log_dir(real.parent) if isinstance(e, MetadataEvent)
               and e.offset >= 7111 and e.offset == e.batch_base_offset and e.source.endswith(".log"))
    segment = real / "00000000000000000000.log"
    (log / f"{cut.offset:020d}.log").write_bytes(segment.read_bytes()[cut.position:])

    shipped = drain(LogTail(log))
    kinds = [s.kind for s in shipped]
    assert kinds[0] == "snapshot" and "segment" in kinds
    assert kinds == sorted(kinds, key=lambda k: k != "snapshot")  # the snapshot, then segments
    assert shipped[-1].next_offset == log_records(real.parent)[-1][0] + 1
    assert decoded(shipped) == [r for r in log_records(real.parent) if r[0] >= cut.offset]


def test_a_torn_tail_is_waited_for_and_garbage_is_shipped_for_quarantine(tmp_path):
    simulate(load_scenario("rolling-restart"), tmp_path / "staged", seed=2)
    [(_, segment)] = list_segments(tmp_path / "staged")
    data = segment.read_bytes()
    live = tmp_path / "live" / METADATA_DIR
    live.mkdir(parents=True)
    half = len(data) // 2
    (live / segment.name).write_bytes(data[:half])
    tail = LogTail(live)
    first = drain(tail)
    assert first and sum(len(s.value) for s in first) < half  # the torn batch waits
    with (live / segment.name).open("ab") as f:
        f.write(data[half:] + b"\x7f" * 300)
    second = drain(tail)
    assert decoded(first + second) == log_records(tmp_path / "staged")
    garbage = second[-1]
    assert (garbage.records, garbage.value, garbage.position) == (0, b"\x7f" * 300, len(data))
    assert tail.log_end_offset() == garbage.next_offset


def test_a_segment_deleted_before_it_was_shipped_goes_on_from_the_newest_snapshot(tmp_path):
    """Retention outran the shipper: its segment is gone; it ships the newest snapshot and
    the segments after it, as the file readers do."""
    simulate(load_scenario("chaos"), tmp_path / "log", seed=1)  # segments and snapshots
    log = tmp_path / "log" / METADATA_DIR
    segments = list_segments(log)
    snapshots = sorted(log.glob("*.checkpoint"))
    assert len(segments) >= 2 and snapshots
    tail = LogTail(log)
    first = tail.poll(max_bytes=4_000)  # a few batches of the first segment
    assert first and first[-1].file == segments[0][1].name
    segments[0][1].unlink()  # retention deletes it, with the shipper in the middle of it
    rest = drain(tail)
    newest = snapshots[-1].name
    assert rest[0].kind == "snapshot" and rest[0].file == newest
    assert {s.file for s in rest if s.kind == "segment"} <= {p.name for _, p in segments[1:]}
    # the segments' records it shipped are the log's from the snapshot's end offset on
    end = int(newest[:20])
    assert [r for r in decoded(rest) if r[0] >= end] == [r for r in log_records(log.parent) if r[0] >= end]


def test_given_the_controllers_only_what_is_proven_committed_is_shipped(tmp_path):
    """With controllers to ask (none answers here), the tail ships only what the log itself
    proves committed: the offsets before its newest epoch with metadata (its leader wrote
    metadata only once they were committed), then a snapshot's; the rest waits, and the
    tail stands on the first batch that waits."""
    from kraft_audit.core.codec.logdir import LogDirWriter

    w = LogDirWriter(tmp_path, "c")
    for offset in range(15):  # epoch 1's offsets 0..9, then epoch 2's 10..14
        w.append([("NO_OP_RECORD", 0, {})], 1_000 + offset, leader_epoch=1 if offset < 10 else 2)
    w.close()
    tail = LogTail(tmp_path, controllers=["127.0.0.1:1"])
    assert [o for o, _ in decoded(drain(tail))] == list(range(10))
    assert tail.commit.end == 10 and "no active controller answered" in tail.commit.quorum_error
    assert tail.next_offset == 10 and tail.position == 72 * 10  # on offset 10's batch
    LogDirWriter(tmp_path, "c").write_snapshot(
        [("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 25})],
        end_offset=13, epoch=2, timestamp_ms=2_000)
    assert [o for o, _ in decoded(s for s in drain(tail) if s.kind != COMPARISON)] == [10, 11, 12]
    # without the controllers, every whole batch as it is written
    assert [o for o, _ in decoded(drain(LogTail(tmp_path)))] == list(range(15))
