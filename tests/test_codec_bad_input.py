"""Bad bytes never raise: each becomes a positioned Quarantined row (or an
UNKNOWN_RECORD event) and reading resumes where it safely can."""

from __future__ import annotations

import bisect
import random
import struct
from collections import defaultdict

import pytest
from conftest import REAL_FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraft_audit.core.codec.batches import (
    CRC_MISMATCH,
    GARBAGE,
    PADDING,
    TORN,
    Batch,
    BatchProblem,
    batch_events,
    encode_batch,
    iter_batches,
)
from kraft_audit.core.codec.logdir import list_segments, read_file_events, read_segment
from kraft_audit.core.codec.records import encode_value
from kraft_audit.core.events import MetadataEvent, Quarantined

TOPIC_ID = "T6iQO94WQSKp6lhnnRhdRA"
SEGMENT = list_segments(REAL_FIXTURES / "subpxl__streamprocessing")[0][1]  # small: read whole


def decode_all(buf: bytes) -> list:
    return decode_window(buf, 0)


def decode_window(buf: bytes, start: int) -> list:
    out = []
    for item in iter_batches(buf, start=start):
        out.extend(batch_events(item, "c", "s") if isinstance(item, Batch) else [item])
    return out


def small_log(batches: int = 6) -> tuple[bytes, list[int]]:
    """A log of small batches, and the start position of each."""
    parts, starts, pos = [], [], 0
    for i in range(batches):
        values = [
            encode_value(
                "PARTITION_CHANGE_RECORD",
                2,
                {"partitionId": i * 3 + j, "topicId": TOPIC_ID, "isr": [1, 2]},
            )
            for j in range(3)
        ]
        part = encode_batch(i * 3, values, 1000 + i, 1)
        parts.append(part)
        starts.append(pos)
        pos += len(part)
    return b"".join(parts), starts


def events_by_position(items) -> dict[int, list]:
    grouped = defaultdict(list)
    for item in items:
        if isinstance(item, MetadataEvent):
            grouped[item.position].append((item.offset, item.type, item.data))
    return grouped


def fixture_segment(fixture) -> bytes:
    return list_segments(fixture)[0][1].read_bytes()


def boundary_before(starts: list[int], position: int, batches_back: int) -> int:
    """The start of the batch ``batches_back`` batches before ``position``."""
    index = max(0, bisect.bisect_right(starts, position) - 1 - batches_back)
    return starts[index]


def test_cut_at_many_points_keeps_whole_batches_and_reports_the_torn_tail(real_fixture):
    buf = fixture_segment(real_fixture)
    batches = list(iter_batches(buf))
    starts = [b.position for b in batches]
    boundaries = {b.position + b.size for b in batches}
    for cut in random.Random(1).sample(range(1, len(buf)), 60):
        # Read only the last batches before the cut: whole files are read in the fixture tests.
        start = boundary_before(starts, cut, 3)
        items = list(iter_batches(buf[:cut], start=start))
        whole = [b for b in items if isinstance(b, Batch)]
        assert [(b.position, b.size) for b in whole] == [
            (b.position, b.size)
            for b in batches
            if start <= b.position and b.position + b.size <= cut
        ]
        problems = [p for p in items if isinstance(p, BatchProblem)]
        if cut in boundaries:
            assert not problems
            continue
        (problem,) = problems
        assert problem.position + problem.size == cut
        if problem.kind == PADDING:  # the cut left only the zero high bytes of a base offset
            assert not any(buf[problem.position : cut])
        else:
            assert problem.kind == TORN and "torn tail" in problem.reason
            assert f"position {problem.position}" in problem.reason


def test_live_segment_cut_mid_batch_waits_then_resumes(tmp_path):
    buf = SEGMENT.read_bytes()
    path = tmp_path / SEGMENT.name
    cut = len(buf) // 2 + 7
    path.write_bytes(buf[:cut])
    first = read_segment(path, "c")
    assert first.waiting and first.torn_tail is not None and not first.quarantined
    assert first.next_position < cut
    path.write_bytes(buf)  # the writer finished the batch
    rest = read_segment(path, "c", first.next_position)
    assert not rest.waiting and rest.next_position == len(buf)
    full = [e for e in read_file_events(SEGMENT, "c") if isinstance(e, MetadataEvent)]
    assert first.events + rest.events == full
    assert rest.next_offset == full[-1].offset + 1


def test_crc_mismatch_skips_only_that_batch():
    buf, starts = small_log()
    damaged = bytearray(buf)
    damaged[starts[2] + 70] ^= 0x01  # inside batch 2's records
    items = decode_all(bytes(damaged))
    (problem,) = [p for p in items if isinstance(p, BatchProblem)]
    assert problem.kind == CRC_MISMATCH and problem.position == starts[2]
    assert f"CRC mismatch in batch at position {starts[2]}" in problem.reason
    offsets = [e.offset for e in items if isinstance(e, MetadataEvent)]
    assert offsets == [o for o in range(18) if o // 3 != 2]


@pytest.mark.parametrize(
    "header_byte,complaint",
    [(16, "bad magic"), (8, "impossible batch length"), (0, "negative base offset")],
)
def test_bad_header_resynchronises_on_the_next_batch(header_byte, complaint):
    buf, starts = small_log()
    damaged = bytearray(buf)
    damaged[starts[3] + header_byte] ^= 0x80
    items = decode_all(bytes(damaged))
    (problem,) = [p for p in items if isinstance(p, BatchProblem)]
    assert problem.kind == GARBAGE and complaint in problem.reason
    assert f"resumed at position {starts[4]}" in problem.reason
    assert [e.offset for e in items if isinstance(e, MetadataEvent)] == [
        o for o in range(18) if o // 3 != 3
    ]


def test_corrupt_length_does_not_swallow_following_batches():
    buf, starts = small_log()
    damaged = bytearray(buf)
    (length,) = struct.unpack_from(">i", damaged, starts[1] + 8)
    struct.pack_into(">i", damaged, starts[1] + 8, length + 200)  # sane, but wrong
    items = decode_all(bytes(damaged))
    assert [e.offset for e in items if isinstance(e, MetadataEvent)] == [
        o for o in range(18) if o // 3 != 1
    ]


def test_garbage_between_batches_is_skipped():
    buf, starts = small_log()
    noise = bytes(random.Random(2).randrange(256) for _ in range(333))
    items = decode_all(buf[: starts[2]] + noise + buf[starts[2] :])
    (problem,) = [p for p in items if isinstance(p, BatchProblem)]
    assert problem.position == starts[2] and problem.size == 333
    assert len([e for e in items if isinstance(e, MetadataEvent)]) == 18


def test_garbage_at_start_and_nothing_valid():
    items = decode_all(bytes(range(256)) * 3)
    (problem,) = items
    assert problem.kind in (GARBAGE, TORN) and problem.position == 0


def test_zero_padding_at_the_end_is_reported_and_a_live_reader_waits(tmp_path):
    buf, _ = small_log()
    items = decode_all(buf + bytes(4096))
    assert items[-1].kind == PADDING and f"position {len(buf)}" in items[-1].reason
    assert len([e for e in items if isinstance(e, MetadataEvent)]) == 18
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(buf + bytes(100))
    result = read_segment(path, "c")
    assert result.waiting and result.next_position == len(buf) and len(result.events) == 18


def test_file_level_reader_quarantines_with_source_and_position(tmp_path):
    buf, starts = small_log()
    path = tmp_path / "00000000000000000000.log"
    damaged = bytearray(buf)
    damaged[starts[1] + 70] ^= 0x04
    path.write_bytes(bytes(damaged[:-10]))
    quarantined = [q for q in read_file_events(path, "c") if isinstance(q, Quarantined)]
    assert [q.position for q in quarantined] == [starts[1], starts[-1]]
    assert all(q.source == path.name and q.reason.startswith(path.name) for q in quarantined)


def test_sampled_bit_flips_never_raise_and_spare_other_batches(real_fixture):
    buf = fixture_segment(real_fixture)
    batches = list(iter_batches(buf))
    starts = [b.position for b in batches]
    rng = random.Random(3)
    for _ in range(60):
        flip = rng.randrange(len(buf))
        hit = bisect.bisect_right(starts, flip) - 1
        # A window of whole batches around the flipped one.
        window_start = starts[max(0, hit - 3)]
        window_end = (
            batches[min(len(batches) - 1, hit + 3)].position
            + batches[min(len(batches) - 1, hit + 3)].size
        )
        damaged = bytearray(buf[:window_end])
        damaged[flip] ^= 1 << rng.randrange(8)
        got = events_by_position(decode_window(bytes(damaged), window_start))
        full = events_by_position(decode_window(buf[:window_end], window_start))
        for position, events in full.items():
            if position != starts[hit]:
                assert got.get(position) == events, (flip, position)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_property_random_bytes_never_raise(raw):
    for item in decode_all(raw):
        assert isinstance(item, (MetadataEvent, Quarantined, BatchProblem))


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=1, max_size=200), st.integers(0, 5))
def test_property_valid_batches_survive_inserted_noise(noise, where):
    buf, starts = small_log()
    at = starts[where]
    items = decode_all(buf[:at] + noise + buf[at:])
    events = [e for e in items if isinstance(e, MetadataEvent)]
    # Noise can at worst hide nothing: every real batch is still found.
    assert {e.offset for e in events} >= set(range(18))
