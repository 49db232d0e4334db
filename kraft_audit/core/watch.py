"""`Watch`: the watched conditions of every partition, and the gauges counted from them.

The counts move with each change, so reading the gauges never visits every
partition (a bucket of a 1M-partition cluster read its gauges every
micro-batch). The per-partition parts live in sharded tables so that a
micro-batch writes back only the shards it changed.
"""

from __future__ import annotations

from kraft_audit.core.replay.conditions import CONDITIONS, under_replicated
from kraft_audit.core.replay.partition import Partition
from kraft_audit.core.replay.sharded import ShardedDict, first_item

# condition name -> ClusterGauges field: the same name but for recovering (a gauge named
# before the condition)
GAUGE_OF = {name: name for name, _ in CONDITIONS} | {"recovering": "unclean_recovery"}


def _electable_known(p: Partition) -> bool:
    """Whether a partition's ISR and ELR are known (not so for one a partial log shows only in
    change records that did not set them): the electable-leaders gauge counts only those."""
    return not p.unknown or ("isr" not in p.unknown and "elr" not in p.unknown)


class Watch:
    def __init__(self, masks: ShardedDict | None = None, open_: ShardedDict | None = None,
                 counts: tuple | None = None):
        self.masks = masks if masks is not None else ShardedDict()  # partition -> condition bits (never 0)
        # (partition, condition) -> (offset, ms) the interval opened at
        self.open = open_ if open_ is not None else ShardedDict(part=first_item)
        with_condition, partitions, electable, *rest = counts or ({name: 0 for name, _ in CONDITIONS}, 0, {})
        # a condition added since the state was stored starts at 0
        self.with_condition: dict[str, int] = {name: 0 for name, _ in CONDITIONS} | with_condition
        self.partitions: int = partitions
        self.electable: dict[int, int] = dict(electable)  # |ISR| + |ELR| -> partitions
        # under-replicated partitions (absent from states stored before it was counted: from then on)
        self.under_replicated: int = rest[0] if rest else 0

    def counts(self) -> tuple:
        return self.with_condition, self.partitions, self.electable, self.under_replicated

    def partition_moved(self, before: Partition | None, after: Partition | None) -> None:
        electable = self.electable
        # a wholly known partition (`not p.unknown`) is counted without the two helpers'
        # calls: this runs on every change
        if before is not None:
            self.partitions -= 1
            known = not before.unknown
            if known or _electable_known(before):
                n = len(before.isr) + len(before.elr)
                left = electable[n] - 1
                if left:
                    electable[n] = left
                else:
                    del electable[n]
            if (len(before.isr) < len(before.replicas) - len(before.adding_replicas) if known
                    else under_replicated(before)):
                self.under_replicated -= 1
        if after is not None:
            self.partitions += 1
            known = not after.unknown
            if known or _electable_known(after):
                n = len(after.isr) + len(after.elr)
                electable[n] = electable.get(n, 0) + 1
            if (len(after.isr) < len(after.replicas) - len(after.adding_replicas) if known
                    else under_replicated(after)):
                self.under_replicated += 1

    def update(self, key: tuple[str, int], mask: int, offset: int, ms: int
               ) -> list[tuple[str, tuple, tuple[int, int] | None]]:
        """Set a partition's condition bits; the intervals that opened or closed as
        (condition, start, end), end None for an interval that opened (a start stored
        may hold more than (offset, ms): see EventLoop._conditions_at)."""
        masks = self.masks
        old = masks.get(key, 0)
        if mask == old:
            return []
        if mask:
            masks[key] = mask
        else:
            masks.pop(key, None)
        moved: list[tuple[str, tuple, tuple[int, int] | None]] = []
        start: tuple
        for name, bit in CONDITIONS:
            if not (old ^ mask) & bit:
                continue
            if mask & bit:
                start = (offset, ms)
                self.open[(key, name)] = start
                self.with_condition[name] += 1
                moved.append((name, start, None))
            else:
                start = self.open.pop((key, name), (offset, ms))
                self.with_condition[name] -= 1
                moved.append((name, start, (offset, ms)))
        return moved

    def fill(self, gauges) -> None:
        gauges.partitions = self.partitions
        gauges.under_replicated = max(self.under_replicated, 0)
        for name, field_name in GAUGE_OF.items():
            setattr(gauges, field_name, self.with_condition[name])
        gauges.electable_leaders = {str(n): c for n, c in sorted(self.electable.items())}

    def per_topic(self, condition_bit: int) -> dict[str, int]:
        """Partitions in a condition by topic id. Visits only partitions with a condition,
        and only when the condition has any."""
        counts: dict[str, int] = {}
        name = next(n for n, bit in CONDITIONS if bit == condition_bit)
        if self.with_condition[name]:
            for (topic_id, _partition), mask in self.masks.items():
                if mask & condition_bit:
                    counts[topic_id] = counts.get(topic_id, 0) + 1
        return counts
