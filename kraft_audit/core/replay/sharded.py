"""`ShardedDict`: a dict keyed by partition, stored as pickled shards.

Why: a Spark bucket holds up to hundreds of thousands of partitions, and a
micro-batch touches a few of them. Pickling or unpickling the whole table on
every micro-batch made its cost grow with the cluster. Here entries are
grouped into SHARDS shards by a stable hash of the partition; only the shards
a caller wrote are pickled (and zlib-compressed) again (`blobs()`), and a table restored from blobs
unpickles a shard only when one of its keys is first read or written.

Only the mapping methods the core uses are offered; the ones that visit every
key (iteration, len) load every shard first.
"""

from __future__ import annotations

import pickle
import zlib
from operator import attrgetter
from typing import Any, Callable, Iterator

from kraft_audit.core.replay.partition import FIELDS, Partition

SHARDS = 2048  # per auditor: ~64 partitions a shard for a 1M-partition cluster in 8 buckets
_MISSING = object()
_TOPIC_HASH: dict[str, int] = {}


def shard_of(topic_id: str, partition: int) -> int:
    """Stable across processes (unlike hash() of a str, which is salted per process)."""
    h = _TOPIC_HASH.get(topic_id)
    if h is None:
        h = _TOPIC_HASH[topic_id] = zlib.crc32(str(topic_id).encode())
    return (h + partition * 0x9E3779B1) % SHARDS


def partition_key(key) -> tuple:
    return key


def first_item(key) -> tuple:
    """For keys like ((topic_id, partition), name): shard by the partition."""
    return key[0]


def _pair(key, value):
    return key, value


class ShardedDict:
    """`part(key)` gives the (topic_id, partition) a key belongs to; `pack(key, value)`
    and `unpack(packed) -> (key, value)` choose how an entry is pickled (plain tuples
    pickle smaller than objects that name their class)."""

    __slots__ = ("_data", "_blobs", "_unloaded", "_members", "_dirty", "_part", "_pack", "_unpack")

    def __init__(self, blobs: dict[int, bytes] | None = None,
                 part: Callable[[Any], tuple] = partition_key,
                 pack: Callable[[Any, Any], Any] = _pair, unpack: Callable[[Any], tuple] | None = None):
        self._data: dict = {}
        self._blobs: dict[int, bytes] = dict(blobs or {})  # the stored form of every shard
        self._unloaded: set[int] = set(self._blobs)
        self._members: dict[int, set] = {}  # shard -> its keys, for loaded shards
        self._dirty: set[int] = set()
        self._part = part
        self._pack = pack
        self._unpack = unpack

    # ------------------------------------------------------------ storage

    def _shard(self, key) -> int:
        topic_id, partition = self._part(key)
        return shard_of(topic_id, partition)

    def _load(self, shard: int) -> None:
        self._unloaded.discard(shard)
        items = pickle.loads(zlib.decompress(self._blobs[shard]))
        if self._unpack is not None:
            items = [self._unpack(packed) for packed in items]
        self._data.update(items)
        self._members.setdefault(shard, set()).update(k for k, _ in items)

    def load_all(self) -> None:
        for shard in list(self._unloaded):
            self._load(shard)

    def blobs(self) -> dict[int, bytes]:
        """Every shard's bytes, pickling again only the shards written since the last call."""
        for shard in self._dirty:
            keys = self._members.get(shard)
            if keys:
                data, pack = self._data, self._pack
                # compressed: the whole table crosses the JVM and the state store every
                # micro-batch, and a shard's broker lists and epochs repeat
                self._blobs[shard] = zlib.compress(pickle.dumps(
                    [pack(k, data[k]) for k in keys], protocol=pickle.HIGHEST_PROTOCOL), 1)
            else:
                self._blobs.pop(shard, None)
                self._members.pop(shard, None)
        self._dirty.clear()
        return self._blobs

    @property
    def loaded_shards(self) -> int:
        return len(self._members)

    # ------------------------------------------------------------ mapping

    def get(self, key, default=None):
        value = self._data.get(key, _MISSING)
        if value is _MISSING:
            if self._unloaded:
                shard = self._shard(key)
                if shard in self._unloaded:
                    self._load(shard)
                    return self._data.get(key, default)
            return default
        return value

    def __getitem__(self, key):
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def __setitem__(self, key, value) -> None:
        data = self._data
        shard = shard_of(*self._part(key))  # _shard(key) without its call: every change writes
        if key not in data:
            if shard in self._unloaded:
                self._load(shard)
            if key not in data:
                self._members.setdefault(shard, set()).add(key)
        data[key] = value
        self._dirty.add(shard)

    def pop(self, key, default=_MISSING):
        shard = self._shard(key)
        if shard in self._unloaded:
            self._load(shard)
        if key in self._data:
            self._members[shard].discard(key)
            self._dirty.add(shard)
            return self._data.pop(key)
        if default is _MISSING:
            raise KeyError(key)
        return default

    def __len__(self) -> int:
        self.load_all()
        return len(self._data)

    def __iter__(self) -> Iterator:
        self.load_all()
        return iter(self._data)

    def values(self):
        self.load_all()
        return self._data.values()

    def items(self):
        self.load_all()
        return self._data.items()

    def __bool__(self) -> bool:
        return bool(self._data) or bool(self._unloaded)

    def __eq__(self, other) -> bool:
        if isinstance(other, ShardedDict):
            other = dict(other.items())
        return dict(self.items()) == other

    __hash__ = None  # type: ignore[assignment]


def partition_table(blobs: dict[int, bytes] | None = None) -> ShardedDict:
    """(topic_id, partition) -> Partition, each stored as the tuple of its fields."""
    return ShardedDict(blobs, pack=_pack_partition, unpack=_unpack_partition)


# a Partition's fields as one tuple in one C call: a save packs every partition of each
# shard it writes (about 60 a shard at a million partitions)
_FIELDS_OF = attrgetter(*FIELDS)


# at module level, not closures: a compiled closure keeps a reference cycle
def _pack_partition(_key, p) -> tuple:
    return _FIELDS_OF(p)


def _unpack_partition(fields) -> tuple:
    return (fields[0], fields[1]), Partition(*fields)
