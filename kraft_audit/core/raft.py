"""The metadata log as the quorum commits it: `RaftGate`, in front of the event loop.

Kafka's metadata log is a Raft log (KIP-595). A controller's tail can hold records no
majority acknowledged; when another controller wins a later epoch it truncates that tail
and writes other records at the same offsets. Brokers only apply what was committed, so
the auditor audits what was committed too: the gate passes an event on only once the
commit point has passed its batch, in log order, with no hole before it.

What the gate knows of the log (`LogShape`): each Raft epoch's first offset (the batches'
partitionLeaderEpoch) and which offsets some copy of the log has shown. It learns that from
the records themselves and from LOG_RUNS items (every batch a reader read, as runs of one
epoch: a Spark bucket sees only its own partitions' records). Where two copies disagree at
an offset the higher epoch wins, as in Raft: a leader of a later epoch truncated the other
tail, which the quorum discarded; what the gate held of it is retracted, never audited.

Where the commit point comes from (`commit_to`), each proof an offset below which every
entry of this version of the log is committed:
- a claim (COMMIT item: entry (offset, epoch) is committed): the quorum's high watermark as
  Kafka's DescribeQuorum reports it, turned into an entry of the reader's own log (readers
  make claims only about entries of a log that has reached the leader's epoch: that log is
  a prefix of the leader's, kraft_audit/quorum.py); it holds where this log has that entry;
- a snapshot `<end>-<epoch>.checkpoint`: a controller snapshots committed state only;
- the log itself: a controller writes metadata in an epoch only once it has read every
  committed record before that epoch's first offset (KafkaRaftClient fires handleClaim
  once the listener reached the epoch's start), so a metadata record of epoch E proves the
  offsets before E's LeaderChange committed;
- a quorum of one voter (the voter set of the newest LeaderChange or KRaftVoters record, or
  a reader's claim item): its log is the committed log;
- no Raft evidence at all (no epoch, no voter set, no claim: kafka-dump-log text, a model's
  log): the input is taken as committed, and said so (`proof`).

Gaps: offsets some copy skipped or no copy has are a hole; nothing after it is released
until it fills (another copy, a reader re-reading) or `hole_patience` records wait behind
it, when the audit goes on without it and says so (`GateReport.gaps`). Unproven records
beyond `max_held` are released unproven, said so too (`unproven_to`).

Plain data only in the stored form (`stored`), as everything the auditor keeps.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import numpy as np

from kraft_audit.core.codec.batches import NOOP_BATCH_SIZE, NoOpRun
from kraft_audit.core.codec.logdir import SNAPSHOT_RE, reader_gap
from kraft_audit.core.events import (
    KIND_BATCH_HEADER,
    KIND_COMMIT,
    KIND_CONTROL,
    KIND_LOG_RUNS,
    KIND_NOOPS,
    KIND_RECORD,
    MetadataEvent,
    Quarantined,
    event_from_plain,
    event_to_plain,
    is_snapshot_source,
    noop_offsets,
    packed_noops,
)

# kinds of item that stand for log offsets (the rest: side inputs, comparisons, markers)
_LOG_KINDS = frozenset({KIND_RECORD, KIND_CONTROL, KIND_BATCH_HEADER, KIND_NOOPS})
UNKNOWN_EPOCH = -1
_NO_LIMIT = 2**63


@dataclass
class Retracted:
    """What the gate withdrew: a log item of a version of the log the quorum replaced."""

    item: Any  # MetadataEvent or NoOpRun
    replaced_at: int  # the first offset where the winning version differs
    replaced_by_epoch: int  # its epoch there
    held: bool  # it had been held (shown provisional), not dropped on arrival


@dataclass
class GateReport:
    """What one `admit` call found, beside the events it released."""

    retracted: list[Retracted] = field(default_factory=list)
    divergences: list[tuple[int, int, int]] = field(default_factory=list)  # (offset, old, new epoch)
    # entries already released (audited) that a later epoch rewrote: (offset, old, new epoch, proven)
    rewrites: list[tuple[int, int, int, bool]] = field(default_factory=list)
    # (first, last, copy, how): a copy that skipped offsets ("copy"), a hole no copy filled that
    # the audit went past ("skipped"), one filled ("filled"), one the reader that skipped it
    # reported in its quarantine row ("reported": logdir.reader_gap)
    gaps: list[tuple[int, int, str, str]] = field(default_factory=list)
    duplicates: int = 0  # log items the gate already held


class LogShape:
    """The merged log's epochs (each epoch's first offset, and whether a metadata record of
    it was seen) and the offsets some copy showed, from its known start on."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.epochs: list[int] = []
        self.data: list[bool] = []  # a metadata (non-control) record of the entry's epoch seen
        self.covered: list[list[int]] = []  # disjoint [first, last], ascending
        self.end = -1  # next offset after the newest covered one (-1: nothing yet)

    def epoch_at(self, offset: int) -> int | None:
        i = bisect_right(self.starts, offset) - 1
        return self.epochs[i] if i >= 0 else None

    @property
    def last_epoch(self) -> int | None:
        return self.epochs[-1] if self.epochs else None

    def truncate(self, at: int) -> None:
        """Forget everything from offset `at` on (a later epoch rewrote it)."""
        while self.starts and self.starts[-1] >= at:
            self.starts.pop(), self.epochs.pop(), self.data.pop()
        kept = []
        for first, last in self.covered:
            if first < at:
                kept.append([first, min(last, at - 1)])
        self.covered = kept
        self.end = kept[-1][1] + 1 if kept else (at if self.starts else -1)

    def cover(self, first: int, last: int, epoch: int, data: bool) -> None:
        """Offsets first..last are of `epoch` (its entry added where the epoch changes)."""
        if not self.starts or (epoch != UNKNOWN_EPOCH and epoch != self.epochs[-1]
                               and first >= self.end):
            self.starts.append(first), self.epochs.append(epoch), self.data.append(data)
        elif data:
            i = bisect_right(self.starts, first) - 1
            if i >= 0 and self.epochs[i] == epoch:
                self.data[i] = True
        merged: list[list[int]] = []
        for r in sorted([*self.covered, [first, last]]):
            if merged and r[0] <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], r[1])
            else:
                merged.append(list(r))
        self.covered = merged
        self.end = max(self.end, last + 1)

    def extend(self, last: int, data: bool) -> None:
        """The next offsets, end..last, in the newest epoch (the common case, kept cheap)."""
        self.covered[-1][1] = last
        self.end = last + 1
        if data:
            self.data[-1] = True

    def first_hole(self, after: int) -> tuple[int, int] | None:
        """The first uncovered range at or after `after`, below `end`: (first, last)."""
        at = after
        for first, last in self.covered:
            if last < at:
                continue
            if first > at:
                return at, first - 1
            at = last + 1
        return None if at >= self.end else (at, self.end - 1)

    def proven_by_data(self) -> int:
        """The log's own proof: the first offset of the newest epoch a metadata record of
        which was seen (everything before it is committed)."""
        for start, epoch, data in zip(reversed(self.starts), reversed(self.epochs), reversed(self.data)):
            if data and epoch != UNKNOWN_EPOCH:
                return start
        return -1

    def compact(self, below: int) -> None:
        """Drop what lies wholly below `below` but the epoch entry it is in."""
        i = bisect_right(self.starts, below) - 1
        if i > 0:
            del self.starts[:i], self.epochs[:i], self.data[:i]
        self.covered = [r for r in self.covered if r[1] >= below - 1]

    def stored(self) -> tuple:
        return (self.starts, self.epochs, self.data, self.covered, self.end)

    @classmethod
    def restored(cls, stored: tuple) -> LogShape:
        shape = cls()
        shape.starts, shape.epochs, shape.data, shape.covered, shape.end = (list(x) if isinstance(x, list)
                                                                            else x for x in stored)
        shape.covered = [list(r) for r in shape.covered]
        return shape


def divergence_offset(ours: list, our_end: int, theirs: list, their_end: int) -> int:
    """Where two copies of the log part: the offset up to which both hold the same entries.

    Each copy is its epochs' first offsets, [[epoch, first offset], ...] ascending, and the
    offset after its last entry. Raft's log matching (KIP-595's diverging-epoch check, what a
    follower does on a fetch): entries of one epoch come from its leader alone, so two copies
    agree up to the end of the newest epoch both hold, as the shorter of them has it. With no
    epoch in common where both have entries, nothing of ours can be vouched for: our oldest
    known offset, or `our_end` when their entries begin after ours end (what retention
    deleted cannot be compared, and is the readers' `deleted_unread` / `gone`)."""
    if not ours:
        return our_end
    starts = {e: i for i, (e, _) in enumerate(theirs)}
    for j in range(len(ours) - 1, -1, -1):
        i = starts.get(ours[j][0])
        if i is not None:
            our_epoch_end = ours[j + 1][1] if j + 1 < len(ours) else our_end
            their_epoch_end = theirs[i + 1][1] if i + 1 < len(theirs) else their_end
            return min(our_epoch_end, their_epoch_end)
    if not theirs or theirs[0][1] >= our_end:
        return our_end
    return ours[0][1]


def item_range(item) -> tuple[int, int, int, int] | None:
    """(first, last offset of its batch, Raft epoch, its own offset) of a log item; None for
    anything else (a side input, a comparison, a marker, a snapshot's record). A NoOp run:
    its offsets, the first its own; packed NoOps (not consecutive: other records lie between
    them, placed before them) their lowest and highest, the highest their own; a batch
    header its batch, its base its own."""
    if item.__class__ is NoOpRun:
        return item.first_offset, item.last_offset, item.leader_epoch, item.first_offset
    if item.__class__ is not MetadataEvent or item.kind not in _LOG_KINDS or is_snapshot_source(item.source):
        return None
    first = item.batch_base_offset
    if first < 0:
        return None
    kind = item.kind
    own = item.offset if kind == KIND_RECORD or kind == KIND_CONTROL else \
        item.batch_last_offset if kind == KIND_NOOPS else first
    return first, item.batch_last_offset, item.leader_epoch, own


def _top(item, rng: tuple[int, int, int, int]) -> int:
    """The offset below which the log is released once `item` is (a batch header holds no
    record: its batch's records may follow it; packed NoOps: their highest)."""
    if item.__class__ is NoOpRun:
        return rng[1] + 1
    kind = item.kind
    return rng[3] if kind == KIND_BATCH_HEADER else rng[3] + 1


def split(item, at: int) -> tuple[Any, Any]:
    """A NoOp run or a packed NoOps item cut before offset `at`: (below, from at on); a
    batch is never cut (its records share its range)."""
    if item.__class__ is NoOpRun:
        n = at - item.first_offset
        low = NoOpRun(item.cluster_id, item.source, item.buf, item.position, item.first_offset, n,
                      item.leader_epoch, item.max_timestamp_ms)
        high = NoOpRun(item.cluster_id, item.source, item.buf, item.position + n * NOOP_BATCH_SIZE,
                       at, item.count - n, item.leader_epoch, item.max_timestamp_ms)
        return low, high
    offsets = noop_offsets(item.raw)
    return (packed_noops(item, offsets[offsets < at]), packed_noops(item, offsets[offsets >= at]))


def _splittable(item) -> bool:
    return item.__class__ is NoOpRun or (item.__class__ is MetadataEvent and item.kind == KIND_NOOPS)


def record_count(item) -> int:
    """Records an item stands for."""
    if item.__class__ is NoOpRun:
        return item.count
    if item.__class__ is MetadataEvent and item.kind == KIND_NOOPS:
        return len(item.raw) // 8
    return 1


def _voters_of(event: MetadataEvent) -> tuple[int, ...] | None:
    voters = event.data.get("voters")
    if not isinstance(voters, list):
        return None
    ids = tuple(sorted(v.get("voterId") for v in voters if isinstance(v, dict)
                       and isinstance(v.get("voterId"), int)))
    return ids or None


class RaftGate:
    """Holds what is not known committed; releases the rest in log order (module doc)."""

    def __init__(self, hole_patience: int | None = None, max_held: int | None = None,
                 full_view: bool = True, assume_committed: bool = False):
        # the caller takes the log as committed (a user who says so, a view of a log dir)
        self.assume_committed = assume_committed
        # whether this gate sees every batch's records (a Spark bucket sees only its own
        # partitions': there a hole is only what the LOG_RUNS items leave out)
        self.full_view = full_view
        # records held behind a hole before the audit goes on without it (None: for ever)
        self.hole_patience = hole_patience
        self.max_held = max_held  # records held before the oldest are released unproven (None: no bound)
        self.shape = LogShape()
        self.released_to = -1  # every log offset below was released or passed (-1: nothing yet)
        self.committed_to = 0  # offsets below are proven committed
        self.proof = ""  # what proved committed_to
        self.unproven_to = -1  # offsets below were released without proof (max_held)
        self.voters: tuple[int, ...] | None = None
        self.claims: dict[str, tuple[int, int, str]] = {}  # copy -> newest claim (offset, epoch, proof)
        # copy -> (next offset it should show, its newest epoch): a copy that skips is a gap, one
        # whose epoch goes down after a higher one went back (its own log, judged by the rules)
        self.copies: dict[str, tuple[int, int]] = {}
        self.held: list = []  # items waiting for the commit point, in log order
        self._keys: list[tuple[int, int]] = []  # each held item's (batch first offset, own offset)
        self._below: list = []  # an item below what was released, passed on as it came
        self.held_records = 0
        self.hole: tuple[int, int] | None = None  # the hole the release waits at
        self.retracted_total = 0  # records withdrawn (this auditor's)
        self.retracted_offsets_total = 0  # offsets of replaced versions of the log
        self.divergences_total = 0
        self.gaps_total = 0  # holes seen: a copy that skipped, offsets no copy had
        self.limit = 0  # where releasing stopped last: the commit point, or a hole before it
        self.input_next = -1  # the offset the input's next batch should start at (follow_input; -1: none yet)

    @property
    def evidence(self) -> bool:
        """Whether the input says what can be committed: a voter set or a claim."""
        return self.voters is not None or bool(self.claims)

    @property
    def follows_end(self) -> bool:
        """Whether everything the log shows is committed as soon as it is read: a quorum of
        one voter, or no evidence to judge by."""
        return self.assume_committed or not self.evidence or (
            self.voters is not None and len(self.voters) == 1)

    # ------------------------------------------------------------ admitting

    def admit(self, items: Iterable, report: GateReport) -> Iterator:
        """Items in log order (LOG_RUNS and COMMIT items anywhere) → those released, in log
        order, as soon as they are (a generator: the event loop takes them as they come).
        Quarantined input passes at once. `report` gets what was found."""
        shape = self.shape
        for item in items:
            cls = item.__class__
            if cls is MetadataEvent:
                kind = item.kind
                if kind == KIND_LOG_RUNS:
                    self._runs(item, report)
                    continue
                if kind == KIND_COMMIT:
                    self._claim(item)
                    continue
                if kind == KIND_RECORD and not self.held and item.offset == self.released_to \
                        and self._open_end and item.leader_epoch == shape.epochs[-1]:
                    # the fast path: the next record, of the newest epoch, of a log whose end is
                    # committed as it is read (most input)
                    if item.batch_last_offset >= shape.end:
                        shape.extend(item.batch_last_offset, True)
                    self.released_to = item.offset + 1
                    yield item
                    continue
                if is_snapshot_source(item.source):
                    self._snapshot(item)
                elif kind == KIND_CONTROL and item.type in _VOTER_RECORDS:
                    voters = _voters_of(item)
                    if voters:
                        self.voters = voters
            elif cls is Quarantined:
                hole = reader_gap(item.reason)
                if hole is not None:  # a reader skipped offsets and said so: a hole seen
                    report.gaps.append((*hole, "", "reported"))
                    self.gaps_total += 1
                yield item
                continue
            rng = item_range(item)
            if rng is None:  # a side input, a comparison, a marker, a snapshot's record
                if self.held:  # after what is held before it
                    self.held.append(item)
                    self._keys.append(self._keys[-1])
                else:
                    yield item
                continue
            if self._log_item(item, rng, report):
                yield from self._release(report)
            elif self._below:
                yield self._below.pop()
        yield from self._release(report)

    @property
    def _open_end(self) -> bool:
        """Whether a record that continues the log is released at once (no hole, nothing
        held, and the log's end committed as it is read)."""
        return self.follows_end and self.hole is None and len(self.shape.covered) == 1

    def _runs(self, item: MetadataEvent, report: GateReport) -> None:
        copy = str(item.data.get("copy", ""))
        for first, last, epoch, data in sorted(tuple(r) for r in item.data.get("runs", ())):
            self._shape(first, last, epoch, bool(data), copy, report)

    def _shape(self, first: int, last: int, epoch: int, data: bool, copy: str | None,
               report: GateReport) -> bool:
        """Learn that `copy` holds offsets first..last in `epoch` (None: the records' own
        copy, the only one a single reader shows). False when that copy's version lost there:
        a later epoch holds those offsets."""
        shape = self.shape
        mine = self.copies.get(copy or "")
        if copy is not None:
            if mine is not None and first > mine[0]:
                report.gaps.append((mine[0], first - 1, copy, "copy"))
                self.gaps_total += 1
            # read again after a divergence, a copy goes back; its newest epoch is what it showed
            self.copies[copy] = (last + 1, epoch if mine is None or first < mine[0] else max(mine[1], epoch))
        if shape.end < 0 or epoch == UNKNOWN_EPOCH:
            shape.cover(first, last, epoch, data)
            return True
        if last < shape.starts[0]:
            return True  # before what the gate knows: a copy read again, judged a duplicate
        if first >= shape.end:
            newest = shape.epochs[-1]
            # lower than the newest epoch: a copy that never saw it lags (replaced), while one
            # that did went back in its own log, which the rules judge
            if newest != UNKNOWN_EPOCH and epoch < newest and copy is not None and (
                    mine is None or mine[1] < newest):
                return False
            shape.cover(first, last, epoch, data)
            return True
        known = shape.epoch_at(max(first, shape.starts[0]))
        if known is None or known == UNKNOWN_EPOCH or epoch == known:
            i = bisect_right(shape.starts, first)
            if known == epoch and i < len(shape.starts) and shape.starts[i] <= last:
                return False  # a later epoch begins inside its range: the rest was replaced
            shape.cover(first, last, epoch, data)
            return True
        if epoch < known:
            return False  # an older version: the quorum replaced it
        self._diverge(first, known, epoch, report)
        shape.cover(first, last, epoch, data)
        return True

    def _diverge(self, at: int, old: int, new: int, report: GateReport) -> None:
        """A later epoch holds offset `at`: the version the gate had from there on is gone."""
        report.divergences.append((at, old, new))
        self.divergences_total += 1
        self.retracted_offsets_total += max(0, self.shape.end - at)
        if at < self.released_to:
            report.rewrites.append((at, old, new, at < self.committed_to))
        self.shape.truncate(at)
        self.claims = {c: v for c, v in self.claims.items() if v[0] < at}
        kept = []
        for item in self.held:
            rng = item_range(item)
            if rng is None or rng[1] < at:
                kept.append(item)
                continue
            if rng[0] < at and _splittable(item):
                low, item = split(item, at)
                kept.append(low)
            self._retract(item, at, new, True, report)
        self.held = kept
        self._keys = _keys_of(kept)

    def _retract(self, item, at: int, epoch: int, held: bool, report: GateReport) -> None:
        n = record_count(item)
        if held:
            self.held_records -= n
        self.retracted_total += n
        report.retracted.append(Retracted(item, at, epoch, held))

    def _log_item(self, item, rng: tuple[int, int, int, int], report: GateReport) -> bool:
        """Hold, drop or retract one log item; True when it may be released now."""
        first, last, epoch, own = rng
        data = item.__class__ is NoOpRun or item.kind != KIND_CONTROL
        end = self.shape.end
        if not self.full_view and 0 <= end < first:
            first = end  # the records between went to other buckets: no hole of its own
        if not self._shape(first, last, epoch, data, None, report):
            winner = self.shape.epoch_at(first)
            self._retract(item, first, UNKNOWN_EPOCH if winner is None else winner, False, report)
            return False
        if own < self.released_to:
            self._below.append(item)  # the event loop tells a copy from a log going back
            return False
        if self._held_already(item, own, epoch):
            report.duplicates += record_count(item)  # a copy of what is held
            return False
        self._hold(item, (first, own))
        # a batch is released whole: at its last record (the call's end for the rest)
        whole = own == last or item.__class__ is NoOpRun or item.kind not in (KIND_RECORD, KIND_CONTROL)
        return whole and last < self._limit(report)

    def _hold(self, item, key: tuple[int, int]) -> None:
        """Keep a log item, in log order (a hole filled late comes before what waited)."""
        held, keys = self.held, self._keys
        if not keys or key >= keys[-1]:
            held.append(item)
            keys.append(key)
        else:
            at = bisect_right(keys, key)
            held.insert(at, item)
            keys.insert(at, key)
        self.held_records += record_count(item)

    def _held_already(self, item, own: int, epoch: int) -> bool:
        for other in reversed(self.held):
            rng = item_range(other)
            if rng is None:
                continue
            if rng[1] < own:
                return False
            if rng[3] == own and rng[2] == epoch and _same(item, other):
                return True
        return False

    def _claim(self, item: MetadataEvent) -> None:
        voters = item.data.get("voters")
        if isinstance(voters, list) and voters:
            self.voters = tuple(sorted(int(v) for v in voters))
        if item.offset >= 0:
            copy = str(item.data.get("copy", ""))
            old = self.claims.get(copy)
            if old is None or item.offset >= old[0]:
                self.claims[copy] = (item.offset, item.leader_epoch, str(item.data.get("proof") or "a claim"))

    def _snapshot(self, item: MetadataEvent) -> None:
        """A snapshot's record: the state as of the snapshot's end, committed by definition
        (a controller snapshots committed state only)."""
        match = SNAPSHOT_RE.match(item.source)
        if match is None:  # bootstrap.checkpoint: no place in the log
            return
        end, epoch = int(match.group(1)), int(match.group(2))
        if end > self.committed_to:
            self.committed_to, self.proof = end, f"snapshot {item.source}"
        shape = self.shape
        if shape.end < end:  # the snapshot stands for every offset before its end
            shape.cover(end - 1 if shape.end < 0 else shape.end, end - 1, epoch, False)

    # ------------------------------------------------------------ releasing

    def commit_to(self) -> tuple[int, str]:
        """The offset below which this version of the log is proven committed, and how."""
        best, proof = self.committed_to, self.proof
        shape = self.shape
        for offset, epoch, text in self.claims.values():
            if offset + 1 > best and offset < shape.end and epoch in (UNKNOWN_EPOCH, shape.epoch_at(offset)):
                best, proof = offset + 1, text
        by_data = shape.proven_by_data()
        if by_data > best:
            best, proof = by_data, "a metadata record of a later Raft epoch"
        if shape.end > best and self.follows_end:
            best, proof = shape.end, ("assumed committed (as asked)" if self.assume_committed
                                      else f"a quorum of one voter ({self.voters[0]})" if self.voters
                                      else "no voter set or claim in the input: taken as committed")
        return best, proof

    def _limit(self, report: GateReport) -> int:
        """Where releasing stops now: the commit point, or a hole before it."""
        self.committed_to, self.proof = self.commit_to()
        shape = self.shape
        limit = self.committed_to
        while True:
            hole = shape.first_hole(max(self.released_to, shape.starts[0] if shape.starts else 0))
            if hole is None or hole[0] >= limit:
                if self.hole is not None:
                    report.gaps.append((*self.hole, "", "filled"))
                    self.hole = None
                break
            if self.hole_patience is None or self.held_records < self.hole_patience:
                if self.hole is None or self.hole[0] != hole[0]:
                    if self.hole is not None:  # the one before filled: this one is further on
                        report.gaps.append((*self.hole, "", "filled"))
                    report.gaps.append((*hole, "", "open"))
                    self.gaps_total += 1
                self.hole, limit = hole, hole[0]
                break
            if self.hole_patience:  # not waited for at all: the reader that skipped says so
                if self.hole is None or self.hole[0] != hole[0]:
                    report.gaps.append((*hole, "", "open"))
                    self.gaps_total += 1
                report.gaps.append((*hole, "", "skipped"))  # the audit goes on without it
            shape.cover(hole[0], hole[1], UNKNOWN_EPOCH, False)
            self.hole = None
        if self.max_held is not None and self.held_records > self.max_held:
            excess = self.held_records - self.max_held
            for item in self.held:
                if (rng := item_range(item)) is not None:
                    excess -= record_count(item)
                    if excess <= 0:
                        limit = max(limit, rng[1] + 1)
                        self.unproven_to = max(self.unproven_to, rng[1] + 1)
                        break
        self.limit = limit
        return limit

    def _release(self, report: GateReport) -> Iterator:
        """Yield the held items the limit has passed, whole batches, in log order."""
        limit = self._limit(report)
        held, i, top = self.held, 0, self.released_to
        while i < len(held):
            item = held[i]
            rng = item_range(item)
            if rng is not None and rng[1] >= limit:
                if rng[0] >= limit or not _splittable(item):
                    break  # a batch waits whole
                item, held[i] = split(item, limit)  # a run of NoOps is cut: the rest waits
                high = item_range(held[i])
                assert high is not None
                self._keys[i] = (high[0], high[3])
                rng = item_range(item)
                i -= 1
            if rng is not None:
                self.held_records -= record_count(item)
                top = max(top, _top(item, rng))
            yield item
            i += 1
        del held[:i], self._keys[:i]
        self.released_to = top
        self.shape.compact(top)

    def follow_input(self, spans) -> list[tuple[int, int]]:
        """The holes (first, last offset) between what the input delivered: `spans` are
        (first, last offset) of its batches, of the holes readers reported and of its
        snapshots (from -1), in any order (pairs, or an array of two columns); one that
        starts past the offset after everything before it leaves a hole. For a gate that
        sees only some records (a Spark bucket: the batches come to it as a list,
        BATCH_EPOCHS); what came before was read already."""
        spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        if not len(spans):
            return []
        spans = spans[np.lexsort((spans[:, 1], spans[:, 0]))]
        firsts = spans[:, 0]
        # reached[i]: the offset after everything before span i (and after what came before)
        reached = np.maximum.accumulate(np.concatenate(([self.input_next], spans[:, 1] + 1)))
        before = reached[:-1]
        gap = (before >= 0) & (firsts > before)
        self.input_next = int(reached[-1])
        return list(zip(before[gap].tolist(), (firsts[gap] - 1).tolist()))

    # ------------------------------------------------------------ views

    def unproven(self) -> tuple[int, int, int] | None:
        """(first offset, last offset, records) of the held log items; None when none is held."""
        ranges = [r for r in map(item_range, self.held) if r is not None]
        if not ranges:
            return None
        return ranges[0][0], max(r[1] for r in ranges), self.held_records

    # ------------------------------------------------------------ stored form

    def stored(self) -> dict:
        return {"shape": self.shape.stored(), "released_to": self.released_to,
                "committed_to": self.committed_to, "proof": self.proof, "unproven_to": self.unproven_to,
                "voters": self.voters, "claims": dict(self.claims), "copies": dict(self.copies),
                "held": [_plain(i) for i in self.held], "hole": self.hole,
                "retracted_total": self.retracted_total, "divergences_total": self.divergences_total,
                "retracted_offsets_total": self.retracted_offsets_total, "gaps_total": self.gaps_total,
                "limit": self.limit, "input_next": self.input_next}

    def restore_stored(self, stored: dict) -> None:
        self.shape = LogShape.restored(stored["shape"])
        self.released_to = stored["released_to"]
        self.committed_to = stored["committed_to"]
        self.proof = stored["proof"]
        self.unproven_to = stored["unproven_to"]
        self.voters = tuple(stored["voters"]) if stored["voters"] else None
        self.claims = {c: tuple(v) for c, v in stored["claims"].items()}
        self.copies = {c: tuple(v) for c, v in stored["copies"].items()}
        self.held = [event_from_plain(p) for p in stored["held"]]
        self._keys = _keys_of(self.held)
        self.held_records = sum(record_count(i) for i in self.held if item_range(i) is not None)
        self.hole = tuple(stored["hole"]) if stored["hole"] else None
        self.retracted_total = stored["retracted_total"]
        self.divergences_total = stored["divergences_total"]
        self.retracted_offsets_total = stored["retracted_offsets_total"]
        self.gaps_total = stored["gaps_total"]
        self.limit = stored["limit"]
        self.input_next = stored.get("input_next", -1)  # stored before follow_input: none yet


_VOTER_RECORDS = ("LEADER_CHANGE", "KRAFT_VOTERS")


def _keys_of(items: list) -> list[tuple[int, int]]:
    keys: list[tuple[int, int]] = []
    for item in items:
        rng = item_range(item)
        keys.append((rng[0], rng[3]) if rng is not None else (keys[-1] if keys else (-1, -1)))
    return keys


def _same(a, b) -> bool:
    if a.__class__ is not b.__class__:
        return False
    if a.__class__ is NoOpRun:
        return a.count == b.count
    return a.kind == b.kind and a.type == b.type and a.offset == b.offset


def _plain(item) -> tuple:
    """A held item as plain data (a NoOp run as its packed offsets: no buffer is kept)."""
    if item.__class__ is NoOpRun:
        offsets = np.arange(item.first_offset, item.last_offset + 1, dtype="<i8")
        item = packed_noops(item.event(item.count - 1), offsets, timestamp_ms=item.max_timestamp_ms)
    return event_to_plain(item)
