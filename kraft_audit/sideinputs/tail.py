"""Following line files as they grow and rotate (no Spark; the streaming source
and the CLI both use it).

A followed path is a file (`.../kafka-request.log`) or a directory whose files
are each followed. A file is followed by name across rotation: log4j renames
the full file to `<name>.<N>` (same inode) and starts a new `<name>`. The
position of a followed name is

    {"ino": <inode of the file being read>, "pos": <byte position of the next line>,
     "head": <crc32 of its first bytes>}

so the lines left in a file that was just rotated are read from the rotated
file before the new one is started. In the live file only complete lines are
taken: a half-written last line is waited for. Inodes are reused once a file
is deleted, so a file is recognised by inode *and* its first bytes; one
truncated in place (copytruncate) or replaced is read again from 0.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

_BACK_CHUNK = 64 * 1024
_HEAD_BYTES = 256


@dataclass(frozen=True)
class Span:
    """Bytes [start, end) of one file, found by inode (its name may change)."""

    path: str  # the file's name when planned
    ino: int
    start: int
    end: int
    followed: str  # the followed name (source of the lines)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class _File:
    path: Path
    ino: int
    size: int
    mtime_ns: int
    live: bool  # the followed name itself (still being written)


def followed_names(path: str | os.PathLike) -> list[Path]:
    """The file names to follow: the file itself, or the files of a directory that
    are not rotations (`<other>.<suffix>`) of another file there."""
    p = Path(path)
    if not p.is_dir():
        return [p]
    names = sorted(e.name for e in os.scandir(p) if e.is_file() and not e.name.startswith("."))
    return [p / n for n in names if not any(n != m and n.startswith(m + ".") for m in names)]


def _versions(name: Path) -> list[_File]:
    """The followed file and its rotations, oldest first, the live file last."""
    found = []
    try:
        entries = list(os.scandir(name.parent))
    except FileNotFoundError:
        return []
    for e in entries:
        if e.name != name.name and not e.name.startswith(name.name + "."):
            continue
        try:
            st = e.stat()
        except FileNotFoundError:  # rotated away while listing
            continue
        found.append(_File(Path(e.path), st.st_ino, st.st_size, st.st_mtime_ns, e.name == name.name))
    return sorted(found, key=lambda f: (f.live, f.mtime_ns, f.path.name))


def _complete_end(path: Path, start: int, size: int) -> int:
    """End of the last complete line in [start, size): a half-written line waits."""
    with open(path, "rb") as f:
        pos = size
        while pos > start:
            lo = max(start, pos - _BACK_CHUNK)
            f.seek(lo)
            chunk = f.read(pos - lo)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                return lo + nl + 1
            pos = lo
    return start


def _head(path: Path, upto: int) -> int | None:
    try:
        with open(path, "rb") as f:
            return zlib.crc32(f.read(min(upto, _HEAD_BYTES)))
    except FileNotFoundError:  # rotated away since it was listed
        return None


def _position(f: _File, pos: int) -> dict:
    return {"ino": f.ino, "pos": pos, "head": _head(f.path, pos)}


def plan(name: Path, position: dict | None, *, final: bool = False) -> tuple[list[Span], dict | None,
                                                                               str | None]:
    """What to read of one followed name from `position` (None: from its oldest
    rotation). Returns (spans, new position, note): the note says when lines were
    lost (their file rotated away and deleted before it was read). `final` takes
    a last line without its newline too (a finished file, read once)."""
    files = _versions(name)
    if not files:
        return [], position, None
    note = None
    start_index, start_pos = 0, 0
    if position and position.get("ino") is not None:
        at = next((i for i, f in enumerate(files) if f.ino == position["ino"]), None)
        if at is None:
            note = (f"{name.name}: the file holding bytes from {position['pos']} was rotated away "
                    "before it was read; lines were lost")
        else:
            start_index, start_pos = at, int(position["pos"])
            f = files[at]
            if f.size < start_pos or _head(f.path, start_pos) != position.get("head"):
                start_pos = 0  # truncated or replaced under the same inode: another file now
                note = (f"{f.path.name} was truncated or replaced: read again from its start; "
                        "lines written before may have been lost")
    spans, new_position = [], position
    for i in range(start_index, len(files)):
        f = files[i]
        begin = start_pos if i == start_index else 0
        end = f.size if (final or not f.live) else _complete_end(f.path, begin, f.size)
        if end > begin:
            spans.append(Span(str(f.path), f.ino, begin, end, name.name))
        new_position = _position(f, end)
    return spans, new_position, note


def plan_all(path: str | os.PathLike, positions: dict | None, *, final: bool = False
             ) -> tuple[list[Span], dict, list[str]]:
    """`plan` for every followed name under `path`; positions keyed by file name."""
    positions = dict(positions or {})
    spans, notes = [], []
    for name in followed_names(path):
        s, pos, note = plan(name, positions.get(name.name), final=final)
        spans.extend(s)
        if pos is not None:
            positions[name.name] = pos
        if note:
            notes.append(note)
    return spans, positions, notes


def _locate(span: Span) -> Path | None:
    """The file holding the span's inode now (it may have been rotated since planning)."""
    p = Path(span.path)
    try:
        if p.stat().st_ino == span.ino:
            return p
    except FileNotFoundError:
        pass
    for f in _versions(p.parent / span.followed):
        if f.ino == span.ino:
            return f.path
    return None


def read_lines(span: Span) -> Iterator[tuple[str, int, str]] | None:
    """(file name, byte position, line) of each line in the span; None when its
    file no longer exists."""
    path = _locate(span)
    if path is None:
        return None
    with open(path, "rb") as f:
        f.seek(span.start)
        data = f.read(span.end - span.start)
    return _split(path.name, span.start, data)


def _split(source: str, start: int, data: bytes) -> Iterator[tuple[str, int, str]]:
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        stop = len(data) if nl < 0 else nl
        yield source, start + pos, data[pos:stop].decode("utf-8", errors="replace")
        pos = stop + 1
