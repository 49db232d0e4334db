"""An `Auditor`'s stored form, in parts that change at different rates.

- meta: counters, the event-time clock, pending registration matches and the
  gauge counts: small, written every time;
- topology: topics, brokers, configs, features and each topic's partition
  ids: written again only after a record other than a PartitionChangeRecord
  (the event loop drops its cached bytes then);
- shards: the partition table and the open conditions, per shard
  (replay/sharded.py): only the shards a call wrote are pickled again, and a
  restored auditor unpickles a shard when it first needs it.

So saving after a micro-batch that changed k partitions costs O(k) pickling,
not O(partitions held). Nothing here imports Spark.

Every part is plain data (ints, strs, tuples, lists, dicts, bytes), each field
written by name by the part that owns it: renaming or moving a class never
breaks a stored state, and a new attribute is stored only when written here.
The meta part starts with MAGIC and the format number, read before anything
is unpickled: a state of another format is refused, never half-read.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass

from kraft_audit.errors import StoredFormatError  # noqa: F401 (exported here too)

FORMAT = 4  # 3: partitions without `unknown`; 2: pickled objects (before every stored field was named)
MAGIC = b"kraft-audit state "
_P = pickle.HIGHEST_PROTOCOL


@dataclass
class Snapshot:
    meta: bytes
    topology: bytes
    shards: dict[str, dict[int, bytes]]  # table -> shard -> bytes


def pack_meta(meta: dict) -> bytes:
    return MAGIC + FORMAT.to_bytes(2, "big") + pickle.dumps(meta, protocol=_P)


def unpack_meta(blob: bytes) -> dict:
    """The meta part, after checking its format (raises StoredFormatError)."""
    blob = bytes(blob)
    head = len(MAGIC)
    version = int.from_bytes(blob[head:head + 2], "big") if blob.startswith(MAGIC) else None
    if version != FORMAT:
        found = "an older format" if version is None else f"format {version}"
        raise StoredFormatError(
            f"the auditor state was stored in {found}; this kraft-audit reads format {FORMAT} only: "
            "start with a new checkpoint location (the audit re-reads the log from its start)")
    return pickle.loads(blob[head + 2:])


def pack_topology(topology: dict) -> bytes:
    return pickle.dumps(topology, protocol=_P)


def unpack_topology(blob: bytes) -> dict:
    return pickle.loads(blob)


def to_bytes(snap: Snapshot) -> bytes:
    return pickle.dumps((snap.meta, snap.topology, snap.shards), protocol=_P)


def from_bytes(data: bytes) -> Snapshot:
    """The parts of `to_bytes` (plain bytes and dicts: safe to unpickle before the format check)."""
    try:
        meta, topology, shards = pickle.loads(data)
    except Exception as exc:  # any other layout is not this format
        raise StoredFormatError(f"not an auditor state of format {FORMAT} ({exc!r}): start with a new "
                                "checkpoint location") from exc
    return Snapshot(meta, topology, shards)
