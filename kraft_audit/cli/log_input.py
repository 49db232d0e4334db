"""Reading the PATH argument of `dump`, `describe` and `check`, and telling
the user when nothing in it could be used."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from kraft_audit.cli.main import UsageError
from kraft_audit.core.codec.batches import HEADER_SIZE, MAGIC, NoOpRun
from kraft_audit.core.codec.dumpread import DumpChunk
from kraft_audit.core.codec.dumplog import parse_dump_log
from kraft_audit.core.codec.logdir import (
    RECORD_RUNS,
    list_segments,
    list_snapshots,
    read_file_events,
    read_log_dir,
    read_meta_properties,
)
from kraft_audit.core.events import MetadataEvent, Quarantined, is_snapshot_source


class Tally:
    """Counts what a reader yields, so a command can refuse an input with no
    usable record instead of printing an empty answer."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.records = 0
        self.quarantined = 0
        self.first_reason: str | None = None
        self.first_offset: int | None = None
        self.first_source: str | None = None
        self.last_offset: int | None = None

    def count(self, items: Iterable[MetadataEvent | Quarantined | NoOpRun | DumpChunk]
              ) -> Iterator[MetadataEvent | Quarantined | NoOpRun | DumpChunk]:
        for item in items:
            if isinstance(item, Quarantined):
                self.quarantined += 1
                if self.first_reason is None:
                    self.first_reason = f"{item.source} position {item.position}: {item.reason}"
            elif type(item) in RECORD_RUNS:  # records at consecutive offsets
                self.records += item.count
                if self.first_offset is None:
                    self.first_offset, self.first_source = item.first_offset, item.source
                self.last_offset = item.last_offset
            else:
                self.records += 1
                if self.first_offset is None:
                    self.first_offset, self.first_source = item.offset, item.source
                self.last_offset = item.offset
            yield item

    def partial_note(self) -> str | None:
        """A line saying the input starts mid-history (after offset 0, not at a snapshot)."""
        if self.first_offset and self.first_offset > 0 and not is_snapshot_source(self.first_source):
            return (f"# partial log: it starts at offset {self.first_offset} without a snapshot; "
                    "what was created before it is unknown")
        return None

    def require_records(self) -> None:
        """UsageError unless at least one record was read."""
        if self.records:
            return
        if self.quarantined:
            from kraft_audit.core.codec.logdir import not_a_metadata_log

            if Path(self.path).is_dir() and (reason := not_a_metadata_log(self.path)):
                raise UsageError(reason)
            raise UsageError(f"no usable record in {self.path}: {self.quarantined} unreadable "
                             f"part(s) quarantined (first: {self.first_reason})")
        raise UsageError(f"{self.path} holds no metadata record")


def read_path(
    path: Path, cluster_id: str | None, start: str, noop_runs: bool = False,
    dump_chunks: bool = False,
) -> Iterator[MetadataEvent | Quarantined | NoOpRun | DumpChunk]:
    """Events of whatever PATH is; UsageError when it cannot be read at all.
    `noop_runs`: a segment's runs of NoOp batches as `NoOpRun`s (codec.batches.iter_events).
    `dump_chunks`: batches `dump` writes from their bytes as `DumpChunk`s
    (codec.dumpread.iter_dump)."""
    if not path.exists():
        raise UsageError(f"{path} does not exist")
    if path.is_dir():
        if not list_segments(path) and not list_snapshots(path):
            raise UsageError(
                f"{path} holds no metadata log segments (*.log) or snapshots (*.checkpoint)"
            )
        return read_log_dir(path, cluster_id, start, noop_runs, dump_chunks)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    if cluster_id is None:
        cluster_id = read_meta_properties(path.parent).get("cluster.id", "")
    if _looks_binary(data):
        return read_file_events(path, cluster_id, data, noop_runs, dump_chunks)
    return parse_dump_log(
        data.decode("utf-8", errors="replace").splitlines(), cluster_id, path.name
    )


def is_binary(path: Path) -> bool:
    """PATH holds segments or snapshots (what read_path decodes from bytes), not text."""
    if path.is_dir():
        return True
    with path.open("rb") as file:
        return _looks_binary(file.read(4096))


def _looks_binary(data: bytes) -> bool:
    """A segment or snapshot (even a damaged one), not kafka-dump-log text,
    whatever the file is called: text never holds NUL bytes, and a batch's
    base offset starts with several."""
    return (len(data) >= HEADER_SIZE and data[16] == MAGIC) or b"\0" in data[:4096]
