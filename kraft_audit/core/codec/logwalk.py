"""A metadata log dir walked by its batch headers (61 bytes a batch), as Raft sees it.

No Spark here: the `kraft-log` streaming source plans its reads with these walks
(kraft_audit/spark/source.py), and the shipper bounds what it ships by the same commit
point (kraft_audit/ship/tail.py).

- `scan_batches`: one segment's batches from a byte position, their offsets and Raft
  epochs (partitionLeaderEpoch), within a budget, stopping where a batch is still being
  written or where it would reach an offset not yet known committed;
- `CopyEpochs`: a copy's epochs and end, walked incrementally, walked again after a
  truncation (kraft_audit/quorum.py's `CommitPoint` proves how far it is committed).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kraft_audit.core.codec import logdir
from kraft_audit.core.codec.batches import (ATTR_CONTROL, HEADER, HEADER_SIZE, LOG_OVERHEAD, MAGIC, MAX_BATCH_BYTES,
                                            find_next_batch)


def list_segments(d: Path) -> list[tuple[int, str]]:
    """(base offset, file name) of every segment, oldest first."""
    try:
        return [(base, p.name) for base, p in logdir.list_segments(d)]
    except FileNotFoundError:
        return []


def list_snapshots(d: Path) -> list[tuple[int, str]]:
    """(end offset, file name) of every complete snapshot, oldest first."""
    try:
        return [(end, p.name) for end, _epoch, p in logdir.list_snapshots(d)]
    except FileNotFoundError:
        return []


class Budget:
    def __init__(self, max_records: int | None, max_bytes: int | None):
        self.max_records = max_records
        self.max_bytes = max_bytes
        self.records = 0
        self.bytes = 0
        self.refused = False  # the bound, not the end of the data, stopped the walk

    def allows(self, records: int, size: int) -> bool:
        if self.records == 0 and self.bytes == 0:
            return True  # always make progress, even past the bound
        if (self.max_records is not None and self.records + records > self.max_records) or \
                (self.max_bytes is not None and self.bytes + size > self.max_bytes):
            self.refused = True
            return False
        return True

    def take(self, records: int, size: int) -> None:
        self.records += records
        self.bytes += size


class _Window:
    """File bytes around the scan position, read a large window at a time:
    planning reads only headers, but must not load a 1 GiB segment at once."""

    SIZE = 32 << 20

    def __init__(self, f, size: int):
        self.f, self.size, self.start, self.buf = f, size, 0, b""

    def at(self, pos: int, need: int) -> int:
        """Index in `buf` of file position `pos`, with `need` bytes after it."""
        if not (self.start <= pos and pos + need <= self.start + len(self.buf)):
            self.f.seek(pos)
            self.buf = self.f.read(min(max(need, self.SIZE), self.size - pos))
            self.start = pos
        return pos - self.start


@dataclass
class Scan:
    """What a header walk over one segment found."""

    end: int  # position after the last batch taken
    next_offset: int
    chunks: list[tuple[int, int]]  # byte ranges of about split_bytes each
    eof: bool  # the walk reached the end of the file (or of its bound)
    last_timestamp_ms: int | None = None
    # (position, next offset expected, the batch's base offset): batches that skip offsets
    gaps: list[tuple[int, int, int]] = field(default_factory=list)
    last: list[int] | None = None  # [position, base offset, Raft epoch] of the last batch taken
    # the batches taken as runs of one Raft epoch: [epoch, first offset, a metadata batch in it]
    epochs: list[list] = field(default_factory=list)


def scan_batches(path: Path, position: int, *, active: bool, budget: Budget,
                 stop_at: int | None, min_offset: int, next_offset: int,
                 split_bytes: int, stop_offset: int | None = None) -> Scan:
    """Walk batch headers from `position` (a batch boundary).

    Stops at an incomplete batch in the active segment (it is being
    written), at `stop_at`, before a batch that reaches `stop_offset` (not yet
    known committed), or when the budget is spent. Batches whose last
    offset is below `min_offset` are skipped. Bad bytes are stepped over
    where the codec finds the next whole, CRC-valid batch; they stay inside
    the planned ranges so the reader quarantines them.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return Scan(position, next_offset, [], False)
    bounded = stop_at is not None
    if bounded:
        size = min(size, stop_at)
    scan = Scan(position, next_offset, [], False)
    if size <= position:
        scan.eof = True
        return scan
    waits_at_tail = active and not bounded
    chunk_start = pos = position
    with open(path, "rb") as f:
        win = _Window(f, size)
        try:
            while pos < size:
                avail = size - pos
                if avail < HEADER_SIZE:
                    if waits_at_tail:
                        break  # header still being written
                    nxt = size  # torn tail of a rolled segment: the reader quarantines it
                else:
                    rel = win.at(pos, HEADER_SIZE)
                    header = HEADER.unpack_from(win.buf, rel)
                    base, length, magic = header[0], header[1], header[3]
                    sane = magic == MAGIC and HEADER_SIZE - LOG_OVERHEAD <= length <= MAX_BATCH_BYTES \
                        and base >= 0
                    if sane and pos + LOG_OVERHEAD + length <= size:
                        last_delta, max_ts = header[6], header[8]
                        total = LOG_OVERHEAD + length
                        last = base + last_delta
                        if last < min_offset:
                            pos += total
                            chunk_start = pos
                            continue
                        if stop_offset is not None and last >= stop_offset:
                            break
                        if not budget.allows(last_delta + 1, total):
                            break
                        budget.take(last_delta + 1, total)
                        if base > scan.next_offset:  # a Raft log has no holes: these are lost
                            scan.gaps.append((pos, scan.next_offset, base))
                        scan.last_timestamp_ms = max_ts
                        scan.last = [pos, base, header[2]]
                        add_run(scan.epochs, header[2], base, not header[5] & ATTR_CONTROL)
                        pos += total
                        scan.next_offset = max(scan.next_offset, last + 1)
                        if pos - chunk_start >= split_bytes:
                            scan.chunks.append((chunk_start, pos))
                            chunk_start = pos
                        continue
                    rel = win.at(pos, min(avail, _Window.SIZE))
                    found = find_next_batch(win.buf, rel, len(win.buf))
                    if found is not None:
                        nxt = found + win.start
                    elif win.start + len(win.buf) < size:
                        nxt = win.start + len(win.buf)  # over 32 MiB of garbage: step a window on
                    elif waits_at_tail and (sane or _zeros(win.buf, rel)):
                        break  # a batch being appended, or zero padding: its writer goes on
                    else:  # garbage no writer can complete: quarantined as `check` does
                        nxt = size
                if not budget.allows(0, nxt - pos):
                    break
                budget.take(0, nxt - pos)
                pos = nxt
        finally:
            win.buf = b""
    if pos > chunk_start:
        scan.chunks.append((chunk_start, pos))
    scan.end = pos
    scan.eof = pos >= size
    return scan


def add_run(runs: list[list], epoch: int, start: int, data: bool) -> None:
    """Batches from `start` on of Raft `epoch` (`data`: a metadata batch among them), added
    to runs of one epoch each, [epoch, first offset, data]."""
    if runs and runs[-1][0] == epoch:
        runs[-1][2] = runs[-1][2] or data
    else:
        runs.append([epoch, start, data])


def _zeros(buf: bytes, start: int) -> bool:
    return buf.count(0, start) == len(buf) - start


def batch_stands(path: Path, position: int, base: int, epoch: int, size_at_least: int) -> bool:
    """Whether the batch once at `position` of `path` is still there, with its base offset
    and Raft epoch, in a file at least `size_at_least` long (by log matching, then every
    entry before it is unchanged too)."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size < size_at_least:
                return False
            f.seek(position)
            raw = f.read(HEADER_SIZE)
    except FileNotFoundError:
        return False
    if len(raw) < HEADER_SIZE:
        return False
    header = HEADER.unpack(raw)
    return header[0] == base and header[2] == epoch and header[3] == MAGIC


class CopyEpochs:
    """A log dir's copy of the log as Raft sees it, from its batch headers: its epochs
    ([epoch, first offset, whether a metadata batch of it is there]) and its end. Each
    `refresh` walks only what was appended; when a segment's last batch walked is gone or
    changed, or a segment other than the oldest vanished (a truncation), it walks the log
    again from its start."""

    def __init__(self, d: Path):
        self.dir = d
        self._reset()

    def _reset(self) -> None:
        self.runs: list[list] = []
        self.end = -1  # offset after the copy's last entry (-1: none)
        self._at: dict[str, tuple[int, int, list | None]] = {}  # segment -> (position, next offset, last)

    def refresh(self) -> CopyEpochs:
        segments = list_segments(self.dir)
        names = {n for _, n in segments}
        oldest = segments[0][0] if segments else None
        if any((n not in names and oldest is not None and int(n[:20]) > oldest)
               or (n in names and last is not None and not batch_stands(self.dir / n, *last, pos))
               for n, (pos, _, last) in self._at.items()):
            self._reset()
        for i, (base, name) in enumerate(segments):
            pos, nxt, last = self._at.get(name, (0, base, None))
            scan = scan_batches(self.dir / name, pos, active=i == len(segments) - 1, budget=Budget(None, None),
                                stop_at=None, min_offset=0, next_offset=nxt, split_bytes=1 << 62)
            for run in scan.epochs:
                add_run(self.runs, *run)
            self._at[name] = (scan.end, scan.next_offset, scan.last or last)
            if scan.last:
                self.end = max(self.end, scan.next_offset)
        return self

