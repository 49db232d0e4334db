"""Logs cut from other logs, as operators meet them: a later segment alone (a log that
starts mid-history), a log booted from a snapshot (its older segments deleted), and a log
whose rest the controller has not written yet (a live segment the job tails)."""

from __future__ import annotations

import shutil
from pathlib import Path

from kraft_audit.core.codec.logdir import METADATA_DIR, read_log_dir
from kraft_audit.core.events import MetadataEvent

REAL_OFFLINE = Path(__file__).parent / "fixtures" / "kraft-real" / "Niloufar1171__LDI-POC"
SUBPXL = Path(__file__).parent / "fixtures" / "kraft-real" / "subpxl__streamprocessing"
RENO = Path(__file__).parent / "fixtures" / "kraft-real" / "renoagilsaputra__kafka"
RENO_SNAPSHOT = "00000000000000007111-0000000001.checkpoint"
RENO_SNAPSHOT_END = 7111  # the state after offset 7110


def first_batch_at(log: Path, offset: int) -> MetadataEvent:
    """The first record of the first batch starting at or after `offset`."""
    return next(e for e in read_log_dir(log)
                if isinstance(e, MetadataEvent) and e.offset >= offset and e.offset == e.batch_base_offset)


def later_segment(into: Path, whole: Path = REAL_OFFLINE, from_offset: int = 2000,
                  until_offset: int | None = None) -> tuple[Path, int]:
    """A single later segment of a real log: its bytes from the first batch at or after
    `from_offset` (up to the batch holding `until_offset`, excluded, when given), named by
    that batch's base offset. (its __cluster_metadata-0 dir, offset)"""
    [segment] = (whole / METADATA_DIR).glob("*.log")
    cut = first_batch_at(whole, from_offset)
    end = None if until_offset is None else next(
        e.position for e in read_log_dir(whole) if isinstance(e, MetadataEvent) and e.offset >= until_offset)
    log = into / METADATA_DIR
    log.mkdir(parents=True)
    (log / f"{cut.offset:020d}.log").write_bytes(segment.read_bytes()[cut.position:end])
    return log, cut.offset


def booted_from_snapshot(out: Path) -> Path:
    """Reno's log dir as Kafka leaves it once old segments are deleted: the snapshot, then
    a segment holding the real batches from its end offset on (bytes cut from the fixture)."""
    source = RENO / METADATA_DIR
    [segment] = source.glob("*.log")
    first_kept = first_batch_at(RENO, RENO_SNAPSHOT_END)
    assert first_kept.offset == RENO_SNAPSHOT_END
    logs = out / METADATA_DIR
    logs.mkdir(parents=True)
    shutil.copy(RENO / "meta.properties", out)
    shutil.copy(source / RENO_SNAPSHOT, logs)
    (logs / f"{RENO_SNAPSHOT_END:020d}.log").write_bytes(segment.read_bytes()[first_kept.position:])
    return out


def live_half(staged: Path, live: Path, from_offset: int) -> tuple[Path, bytes, int]:
    """`live`: the log dir `staged` as the controller had written it before the batch that
    holds `from_offset` (the rest is for the test to append). (live segment, its bytes, cut)"""
    [segment] = (staged / METADATA_DIR).glob("*.log")
    data = segment.read_bytes()
    cut = next(e.position for e in read_log_dir(staged)  # (an event's position is its batch's)
               if isinstance(e, MetadataEvent) and e.offset >= from_offset)
    (live / METADATA_DIR).mkdir(parents=True)
    for name in ("meta.properties", "bootstrap.checkpoint"):
        shutil.copy(staged / name, live / name)
    live_segment = live / METADATA_DIR / segment.name
    live_segment.write_bytes(data[:cut])
    return live_segment, data, cut
