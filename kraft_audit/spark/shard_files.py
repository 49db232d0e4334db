"""A bucket's state shards kept in files beside the checkpoint, not in its state row.

Why: applyInPandasWithState hands a group's whole state row to the Python worker
every call and, when the call changed it, takes it back into the state store. With
the partition table in the row, that was about 4.4 MB per bucket at a million
partitions, every micro-batch, however few partitions it touched: the part of a
micro-batch that grew with the cluster (docs/ARCHITECTURE.md, "State"). Here the
row keeps a small manifest (shard -> the file holding it) and each call writes one
new file holding only the shards it pickled again; a worker that already holds the
bucket's live auditor reads nothing.

Files are never rewritten (a new name per call: the row's new token), so a state row
of any committed version finds its files as they were. Exactly once, as Spark's own
state: a call's file is complete (written, then renamed) before the row naming it
goes to the state store; files a row no longer names are listed in that row as
garbage and deleted by the next call on that row, which Spark runs only once the
batch that wrote the row is committed (a batch run again starts from the row before
it, which names none of them). A file a failed attempt wrote and no committed row
names (an orphan) goes in a later call on a committed row whose newest named file is
newer than it by ORPHAN_MARGIN_S (`collect_garbage`).

When the files a row names hold more than twice the bytes of its live shards (or too
many files), the call writes every shard into its file instead (compaction): about
every 15 micro-batches at 1M partitions with random changes.

Plain data and files only: no Spark here. The directory must be reachable by every
Python worker under the same path (local runs, or a volume shared by driver and
executors as the checkpoint is).
"""

from __future__ import annotations

import os
import pickle
import re
import zlib
from pathlib import Path

DIR_NAME = "kraft-audit-shards"  # beside the checkpoint's own folders
MAX_FILES = 32  # a rebuild reads at most this many files per bucket
MAX_OVERHEAD = 2.0  # compaction when the named files hold more than this times the live bytes
# An orphan must be older than the row's newest file by this much: executors on other
# hosts writing to a shared volume may date files by clocks that differ a little.
ORPHAN_MARGIN_S = 600.0

Blobs = dict  # table -> shard -> bytes (core/snapshot.Snapshot.shards, and TOPOLOGY)
TOPOLOGY = "topology"  # the snapshot's topology part, kept as the one shard of this table


def bucket_dir(root: str, cluster_id: str, bucket: int) -> Path:
    # cluster ids are url-safe base64 in Kafka; anything else is kept readable and safe
    return Path(root) / re.sub(r"[^A-Za-z0-9_.-]", "_", cluster_id) / str(bucket)


def empty_manifest() -> dict:
    """files: name -> size in bytes; where: table -> shard -> file name; garbage: file
    names no longer named, to delete once this row is committed."""
    return {"files": {}, "where": {}, "garbage": []}


def pack(manifest: dict) -> bytes:
    return zlib.compress(pickle.dumps(manifest, protocol=pickle.HIGHEST_PROTOCOL), 1)


def unpack(blob: bytes) -> dict:
    return pickle.loads(zlib.decompress(bytes(blob)))


def load(folder: Path, manifest: dict) -> Blobs:
    """Every shard's bytes, read from the files the manifest names."""
    files = {name: pickle.loads((folder / name).read_bytes()) for name in manifest["files"]}
    return {table: {shard: files[name][table][shard] for shard, name in where.items()}
            for table, where in manifest["where"].items()}


def collect_garbage(folder: Path, manifest: dict) -> None:
    """Delete the files the row's writer dropped and the orphans (the row is committed:
    see the module doc). An orphan is a file the row does not name that is older than
    the newest file it names by ORPHAN_MARGIN_S: every file a later committed row can
    name is either named by this row or written by a call that started after this row was
    committed, so after all of its files (a failed attempt's file, a `.partial` left by
    a crash). A file written since, by this call's other attempts too, is newer: kept."""
    for name in manifest["garbage"]:
        _unlink(folder / name)
    named = manifest["files"]
    if not named:  # nothing to date the orphans by (a version 4 row, a bucket never saved)
        return
    written = _mtimes(folder)
    newest = max(written.get(name, 0.0) for name in named)
    for name, mtime in written.items():
        if name not in named and mtime < newest - ORPHAN_MARGIN_S:
            _unlink(folder / name)


def _mtimes(folder: Path) -> dict[str, float]:
    """name -> modification time of the folder's files (one another attempt deletes meanwhile
    is left out)."""
    written = {}
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    written[entry.name] = entry.stat().st_mtime
                except FileNotFoundError:
                    pass
    except FileNotFoundError:
        pass
    return written


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:  # deleted by an earlier attempt of this call
        pass


def written_since(blobs: Blobs, before: Blobs) -> Blobs:
    """The shards whose bytes are new objects since `before` (ShardedDict replaces the
    bytes of a shard it pickles again, and keeps the others' objects)."""
    return {table: {s: b for s, b in shards.items() if before.get(table, {}).get(s) is not b}
            for table, shards in blobs.items()}


def save(folder: Path, name: str, manifest: dict, blobs: Blobs, before: Blobs | None) -> dict | None:
    """The manifest after this call: its changed shards (all of them when `before` is None
    or on compaction) written into the new file `name`. None when no shard changed."""
    changed = written_since(blobs, before) if before is not None else blobs
    removed = any(s not in blobs.get(t, {}) for t, shards in manifest["where"].items() for s in shards)
    if not removed and not any(changed.values()):
        return None
    live = sum(len(b) for shards in blobs.values() for b in shards.values())
    kept = {t: {s: n for s, n in where.items() if s in blobs.get(t, {}) and s not in changed.get(t, {})}
            for t, where in manifest["where"].items()}
    named = {n for where in kept.values() for n in where.values()}
    new_size = sum(len(b) for shards in changed.values() for b in shards.values())
    if len(named) + 1 > MAX_FILES or \
            sum(manifest["files"][n] for n in named) + new_size > MAX_OVERHEAD * live + (1 << 20):
        changed, kept, named = blobs, {}, set()  # compaction: this file holds every shard
    data = pickle.dumps({t: dict(s) for t, s in changed.items()}, protocol=pickle.HIGHEST_PROTOCOL)
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / (name + ".partial")
    partial.write_bytes(data)
    os.replace(partial, folder / name)  # complete before any row names it
    where = {t: {**kept.get(t, {}), **{s: name for s in changed.get(t, {})}} for t in blobs}
    files = {n: manifest["files"][n] for n in named}
    files[name] = len(data)
    return {"files": files, "where": where, "garbage": sorted(set(manifest["files"]) - set(files))}
