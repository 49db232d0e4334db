"""`EventLoop`: events in log order → replay, rules and output rows.

It places each event in the log (offsets, redeliveries skipped, a log going
backwards quarantined), groups records into their atomic batches and closes
each batch with its batch-end rules, dispatches records to the replay state
and the rules of their trigger, and writes the partition, condition and
broker rows. Findings and quarantine go through the `FindingSink`;
registration requests through the `RegistrationMatcher`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable

from kraft_audit.core.codec.batches import NoOpRun
from kraft_audit.core.codec.logdir import SNAPSHOT_RE
from kraft_audit.core.events import (
    KIND_BATCH_HEADER,
    KIND_LOG_DIRS,
    KIND_NOOPS,
    KIND_RECORD,
    KIND_REGISTRATION,
    KIND_SNAPSHOT_COMPARISON,
    MetadataEvent,
    Quarantined,
    SNAPSHOT_SUFFIX,
    noop_offsets,
)
from kraft_audit.core.findings import PARTITION_TYPES, AuditOutput, FindingSink, bound_rules
from kraft_audit.core.image import SnapshotComparison, comparison_from_plain
from kraft_audit.core.native import mypyc_attr
from kraft_audit.core.registrations import RegistrationMatcher
from kraft_audit.core.replay.conditions import (DELEGATION_TOKEN_EXPIRED, ELECTION_OVERDUE, LEADERLESS,
                                               TOKEN_KEY_PREFIX, UNCLEAN_ELECTION_OVERDUE,
                                               UNDER_MIN_ISR_NAME, condition_mask, overdue_candidate,
                                               token_key, unclean_candidate)
from kraft_audit.core.replay.partition import RECOVERED, RECOVERING, Partition
from kraft_audit.core.replay.settings import CoreSettings
from kraft_audit.core.replay.state import (
    MIN_ISR,
    SOURCE_INFERRED,
    TOPIC_RESOURCE,
    UNASSIGNED_DIRECTORY_ID,
    UNCLEAN_ELECTION,
    ClusterState,
    ReplayError,
)
from kraft_audit.core.rows import ConditionChange, PartitionRow
from kraft_audit.core.rules.catalog import Catalog
from kraft_audit.core.rules.check import BatchChange, BatchInfo, BrokerChange, Check, Registered, Site
from kraft_audit.core.rules.elections import elected_leader, is_unclean_election
from kraft_audit.core.rules.registry import (
    ALL_SHAPES,
    ON_BATCH_END,
    ON_LOG_DIRS,
    ON_PARTITION,
    ON_PARTITION_BATCH_END,
    ON_RECORD,
    ON_SNAPSHOT,
    PARTITION_RECORDS,
    SETS_LEADER,
    batch_shape,
    change_shape,
)
from kraft_audit.core.watch import Watch
from kraft_audit.errors import RecordDecodeError

_FENCING_TYPES = frozenset({"FENCE_BROKER_RECORD", "UNREGISTER_BROKER_RECORD"})
# A metadata transaction: one controller operation written across several atomic batches
_TRANSACTION_OPEN, _TRANSACTION_CLOSE = "BEGIN_TRANSACTION_RECORD", ("END_TRANSACTION_RECORD",
                                                                    "ABORT_TRANSACTION_RECORD")
_BROKER_TYPES = frozenset({"REGISTER_BROKER_RECORD", "UNREGISTER_BROKER_RECORD", "FENCE_BROKER_RECORD",
                           "UNFENCE_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD"})
# The Site and BatchChange of each partition change and the Site of each batch end are built
# with tuple.__new__: the NamedTuple constructor goes through a Python-level __new__, which
# cost 3-5% of the core's throughput here
_new = tuple.__new__
_OVERDUE = ELECTION_OVERDUE | UNCLEAN_ELECTION_OVERDUE  # the bits judged where an operation ends
_TOKEN_TYPES = frozenset({"DELEGATION_TOKEN_RECORD", "REMOVE_DELEGATION_TOKEN_RECORD"})
_NEVER = 2**63  # a time no record reaches: no token to expire
_MALFORMED = (KeyError, TypeError, ValueError, AttributeError, IndexError)


# subclassed in Python by the reference loop of tests/test_core_fast_paths.py
@mypyc_attr(allow_interpreted_subclasses=True)
class EventLoop:
    # a batch of one NoOpRecord skips the batch bookkeeping (process); the reference loop of
    # tests/test_core_fast_paths.py turns it off and must give the same outputs
    quiet_batches_skipped = True

    def __init__(self, catalog: Catalog, settings: CoreSettings, emit_cluster_findings: bool,
                 state: ClusterState | None = None, watch: Watch | None = None,
                 partition_rows: bool = True):
        self.settings = settings
        self.emit_cluster_findings = emit_cluster_findings
        # a PartitionRow per change, for the callers that write them (the job's tables, the
        # timeline); `check` reads none, and building them is a sixth of its core's work
        self.partition_rows = partition_rows
        self.state = state if state is not None else ClusterState(settings)
        self.watch = watch if watch is not None else Watch()  # conditions per partition, gauge counts
        self.cluster_id = ""
        self.last_offset = -1
        self.clock_ms = 0  # newest record time seen: the event-time clock for pending matches
        self.last_timestamp_ms = 0
        # counters since the auditor started (they survive the stored form)
        self.applied = 0
        self.duplicates = 0
        self.unclean_elections_total = 0
        self.elr_elections_total = 0
        self.unclean_recovery_finished_total = 0
        self.active_controller = -1  # leader of the newest LeaderChange control record
        # Raft epochs (the batches' partitionLeaderEpoch): the newest, the first seen (epochs
        # up to it began before the input and are taken as announced), and the leader each
        # LeaderChange control record announced for its epoch
        self.raft_epoch = -1
        self.raft_first_epoch = -1
        self.raft_leaders: dict[int, int] = {}
        # each new Raft epoch's (newest record time before it, its LeaderChange's time), in log
        # order: a new active controller starts its periodic tasks' timers again, and the one
        # before it was last seen alive at its newest record (the liveness bounds read both).
        # For the single-process audit's bounds only; not part of the stored form.
        self.controller_changes_ms: list[tuple[int, int]] = []
        self._epoch_opened_after_ms = 0  # the newest record time when the newest epoch's first batch opened
        self.raft_headers_to = -1  # last offset of the newest batch judged from its header alone
        self._call_from = -1  # the last offset applied before the current call
        self.log_start_known = False  # where the input starts was judged (partial or whole)
        # end offset of the newest snapshot judged from a shipped comparison (a shipper that
        # restarts compares its snapshots again: those are duplicates)
        self.snapshots_compared_to = -1
        # (snapshot file, offset, time) where the records of the snapshot being read belong
        self.snapshot_place: tuple[str, int, int] | None = None
        self.topology_blob: bytes | None = None  # stored form of the state but its partitions; None = changed
        # election_overdue is judged where an operation ends: the partitions it left leaderless,
        # and every leaderless one when it changed a broker; a transaction open (state.
        # transaction_open, which the rules read too) defers the judgement
        self.overdue_pending: set[tuple[str, int]] = set()
        self.overdue_all = False
        self._batch: BatchInfo | None = None
        self._batch_event: MetadataEvent | None = None
        self._batch_quiet = False  # the open batch applied NoOpRecords only: no rule has anything to judge
        self._batch_end_judges = False  # a change of the open batch has batch-end rules of its shape
        self._leaders_moved: set[int] = set()  # brokers whose leaderships moved in this batch
        self.catalog = catalog
        self._check = check = Check(self.state, settings)
        self.findings = FindingSink(self.state, catalog, check, emit_cluster_findings)
        self.registrations = RegistrationMatcher(self.state, settings, catalog, check, self.findings)
        self._out = self.findings.out
        self._run = self.findings.run
        self._rules_partition = {t: bound_rules(catalog, ON_PARTITION, t) for t in PARTITION_RECORDS}
        self._rules_partition_batch_end = {t: bound_rules(catalog, ON_PARTITION_BATCH_END, t)
                                           for t in PARTITION_RECORDS}
        self._rules_by_shape: dict[tuple[str, int], tuple[list, list]] = {}
        self._rules_batch_end = bound_rules(catalog, ON_BATCH_END)
        self._rules_batch_end_by_shape: dict[int, list] = {}
        self._rules_log_dirs = bound_rules(catalog, ON_LOG_DIRS)
        self._rules_record: dict[str, list] = {}  # record type -> its ON_RECORD rules
        # the earliest deadline of a token not yet expired in the log's time: each record's
        # time is compared with it (delegation_token_expired)
        self.token_due = self._next_token_due()

    def new_output(self) -> AuditOutput:
        out = self._out = self.findings.out = AuditOutput()
        return out

    def process(self, events: Iterable[MetadataEvent | Quarantined | NoOpRun]) -> AuditOutput:
        out = self.new_output()
        self._call_from = self.last_offset  # packed NoOps at or below it are duplicates
        self._events(events, out, False, None)
        self._close_batch()  # input comes in whole batches; one not closed by its end ended here
        self.registrations.expire(self.clock_ms)
        return out

    def _events(self, events: Iterable[MetadataEvent | Quarantined | NoOpRun], out: AuditOutput,
                progressed: bool, last_applied: MetadataEvent | None) -> tuple:
        """`progressed`: a record of this call was applied; `last_applied`: the last one, as
        read. Returns both as they are after `events`."""
        findings = self.findings
        for event in events:
            if isinstance(event, Quarantined):
                findings.quarantine_row(event, count=True)
                continue
            if isinstance(event, NoOpRun):
                last = self._quiet_run(event, out)
                if last is not None:
                    progressed, last_applied = True, last
                else:  # where a NoOp is judged (a new Raft epoch, the log's start) or skipped
                    progressed, last_applied = self._events(event.events(), out, progressed, last_applied)
                continue
            if event.cluster_id != self.cluster_id:
                self.cluster_id = findings.cluster_id = event.cluster_id
            if event.kind == KIND_NOOPS:
                self._packed_noops(event, out)
                continue
            offset, batch_end = event.offset, event.batch_last_offset  # as read: they order the log
            if offset < 0:
                if event.kind == KIND_RECORD:
                    findings.quarantine(event, f"{event.type} without a log offset cannot be placed "
                                        "in the log", emit=findings.reports(event))
                    continue
                if event.kind == KIND_BATCH_HEADER:  # no record: nothing applied or counted
                    self._batch_header(event)
                    continue
            if offset >= 0:
                if offset <= self.last_offset:
                    # A batch delivered twice in one call (the shipper restarted before Kafka
                    # acknowledged it) comes right after its original, the input being in
                    # offset order: the same record, field for field, is a duplicate.
                    if progressed and event != last_applied:
                        findings.input_problem(event, ReplayError(
                            "offset-regression", f"offset {offset} after offset {self.last_offset} "
                            "was applied: the log went backwards", _partition_key(event)),
                            quarantine=True)
                    else:  # redelivery after a restart
                        self.duplicates += 1
                        out.duplicates += 1
                    continue
                batch = self._batch
                if batch is not None and offset > batch.last_offset:
                    self._close_batch()
                    batch = None
                if batch is None and not (
                        # A batch of one NoOpRecord in the current Raft epoch (most of a real
                        # log): no batch to open, judge or close; placed and counted below.
                        event.type == "NO_OP_RECORD" and offset == batch_end == event.batch_base_offset
                        and event.kind == KIND_RECORD and self._quiet_noop(event.leader_epoch, event.source)):
                    self._batch = BatchInfo(event.batch_base_offset, event.batch_last_offset)
                    self._batch_quiet = True
                    epoch = event.leader_epoch  # judged where it changes: once per epoch
                    if epoch != self.raft_epoch and epoch >= 0 and not event.source.endswith(SNAPSHOT_SUFFIX):
                        self._raft_batch(event)
                last_applied = event
                if event.source.endswith(SNAPSHOT_SUFFIX):
                    event = self._placed(event)
                self._batch_event = event
                if self.last_offset < 0 and not self.log_start_known:
                    self.note_log_start(offset, event.source)
                self.last_offset = offset
                progressed = True
                if event.timestamp_ms > self.clock_ms:
                    self.clock_ms = event.timestamp_ms
                self.last_timestamp_ms = event.timestamp_ms
            if event.type == "NO_OP_RECORD" and event.kind == KIND_RECORD:
                # Most of a real log: it replays nothing and changes no state; counted applied.
                self.applied += 1
                out.applied += 1
            else:
                self._batch_quiet = False
                self._handle(event)
            # a token's deadline is judged at the records every Spark bucket sees (all but the
            # partitions'), so that bucket 0, which alone holds the tokens, opens where one auditor does
            if event.timestamp_ms > self.token_due and offset >= 0 and event.type not in PARTITION_TYPES:
                self._tokens_expired(event.offset, event.timestamp_ms)
            if offset >= 0 and offset >= batch_end:
                self._close_batch()
        return progressed, last_applied

    def _packed_noops(self, event: MetadataEvent, out: AuditOutput) -> None:
        """NoOpRecords a reader sent as their offsets (KIND_NOOPS): counted, applied or
        duplicates (at or below the last offset applied before this call: their place in the
        call is after records between them); the log starts at the first when nothing came
        before."""
        offsets = noop_offsets(event.raw)
        if not len(offsets):
            return
        if self.last_offset < 0 and not self.log_start_known:
            self.note_log_start(int(offsets.min()), event.source)
        copies = int((offsets <= self._call_from).sum())
        self.applied += len(offsets) - copies
        out.applied += len(offsets) - copies
        self.duplicates += copies
        out.duplicates += copies

    def _quiet_noop(self, epoch: int, source: str) -> bool:
        """Whether the quiet path may take a batch of one NoOpRecord of this Raft epoch read
        from this file: the log has begun, the epoch is the one already judged, no rule waits
        on batches, and it is not a snapshot's (placed where the snapshot ends)."""
        return (epoch == self.raft_epoch and self.last_offset >= 0 and self.quiet_batches_skipped
                and not source.endswith(SNAPSHOT_SUFFIX))

    def _quiet_run(self, run: NoOpRun, out: AuditOutput) -> MetadataEvent | None:
        """A run of NoOp batches placed and counted at once, as the quiet path above takes each
        when it takes the first (the others follow it in its epoch): its last event. None,
        nothing done, when the first would not take it."""
        if not (self._quiet_noop(run.leader_epoch, run.source) and self.last_offset < run.first_offset
                and run.max_timestamp_ms <= self.token_due):  # else: the record that passes a deadline
            return None
        batch = self._batch
        if batch is not None and run.first_offset <= batch.last_offset:
            return None
        if run.cluster_id != self.cluster_id:
            self.cluster_id = self.findings.cluster_id = run.cluster_id
        if batch is not None:
            self._close_batch()
        self._batch_event = last = run.event(run.count - 1)
        self.last_offset = last.offset
        if run.max_timestamp_ms > self.clock_ms:
            self.clock_ms = run.max_timestamp_ms
        self.last_timestamp_ms = last.timestamp_ms
        self.applied += run.count
        out.applied += run.count
        return last

    def _placed(self, event: MetadataEvent) -> MetadataEvent:
        """A snapshot's record where it belongs in the log, for everything the audit writes.

        A snapshot `<endOffset>-<epoch>.checkpoint` holds the state after offset endOffset - 1,
        but its records carry their positions in the file (0, 1, 2, ...): those still order the
        input (duplicates, batches), while its rows and findings are placed at endOffset - 1, at
        the time of that record (the header's lastContainedLogTimestamp)."""
        match = SNAPSHOT_RE.match(event.source)
        if match is None:  # bootstrap.checkpoint: no place in the log
            return event
        place = self.snapshot_place
        if place is None or place[0] != event.source:
            ms = event.timestamp_ms
            if event.type == "SNAPSHOT_HEADER":  # 0 or absent in old writers: the batch time
                ms = event.data.get("lastContainedLogTimestamp") or ms
            place = self.snapshot_place = (event.source, int(match.group(1)) - 1, ms)
        _, at, ms = place
        return replace(event, offset=at, batch_base_offset=at, batch_last_offset=at, timestamp_ms=ms)

    def note_log_start(self, offset: int, source: str) -> None:
        if offset > 0 and not source.endswith(SNAPSHOT_SUFFIX):
            self.state.history_from = offset
        self.log_start_known = True

    def expire(self, now_ms: int) -> AuditOutput:
        out = self.new_output()
        self.registrations.expire(now_ms)
        return out

    # ------------------------------------------------------------ dispatch

    def _shaped(self, record_type: str, shape: int) -> tuple[list, list]:
        """The partition and partition-batch-end rules that can fire on a change of this shape."""
        key = (record_type, shape)
        rules = self._rules_by_shape.get(key)
        if rules is None:
            rules = self._rules_by_shape[key] = (
                _can_fire(self._rules_partition[record_type], shape),
                _can_fire(self._rules_partition_batch_end[record_type], shape))
        return rules

    def _batch_end_rules(self, shape: int) -> list:
        """The batch-end rules that can fire on a batch of this shape (batch_shape)."""
        rules = self._rules_batch_end_by_shape.get(shape)
        if rules is None:
            rules = self._rules_batch_end_by_shape[shape] = _can_fire(self._rules_batch_end, shape)
        return rules

    def _handle(self, event: MetadataEvent) -> None:
        kind = event.kind
        if event.type != "PARTITION_CHANGE_RECORD":  # only those leave topics, brokers, configs alone
            self.topology_blob = None
        if kind == KIND_RECORD:
            if event.type == "PARTITION_CHANGE_RECORD":
                self._partition_change(event)
            elif event.type in PARTITION_TYPES:
                self._partition_event(event)
            else:
                self._cluster_record(event)
        elif kind == KIND_REGISTRATION:
            self._registration_request(event)
        elif kind == KIND_LOG_DIRS:
            self._log_dirs(event)
        elif kind == KIND_SNAPSHOT_COMPARISON:
            self._shipped_comparison(event)
        else:  # Raft control records: a leader change names the active controller
            self._judge_record(event, None)
            self.state.apply(event)  # a KRaftVersion sets the level the Raft rules read
            if event.type == "LEADER_CHANGE" and isinstance(event.data.get("leaderId"), int):
                self.active_controller = leader = event.data["leaderId"]
                epoch = event.leader_epoch
                if epoch >= 0 and not event.source.endswith(SNAPSHOT_SUFFIX):
                    if epoch not in self.raft_leaders:
                        self.controller_changes_ms.append((self._epoch_opened_after_ms, event.timestamp_ms))
                    known = self.raft_leaders.setdefault(epoch, leader)
                    if known != leader:
                        assert self._batch is not None  # a control record opened its batch
                        self._batch.raft_problems.append(
                            f"LeaderChange names {leader} leader of Raft epoch {epoch}, which "
                            f"already had leader {known}")
            self._count_applied()

    def _raft_batch(self, event: MetadataEvent) -> None:
        """Judge the Raft epoch of a batch that opens in another epoch than the one before
        (NoOp batches included)."""
        assert self._batch is not None  # called where a batch opens
        epoch, problems = event.leader_epoch, self._batch.raft_problems
        if self.raft_first_epoch < 0:
            self.raft_first_epoch = epoch
        if epoch < self.raft_epoch:
            problems.append(f"batch written in Raft epoch {epoch} after a batch of epoch "
                            f"{self.raft_epoch}: the log went back to an older leader")
        elif (epoch > self.raft_first_epoch and epoch not in self.raft_leaders
              and event.type != "LEADER_CHANGE"):  # a leader's first batch announces it
            problems.append(f"batch written in Raft epoch {epoch}, whose leader no LeaderChange "
                            "announced")
        if epoch > self.raft_epoch:
            self.raft_epoch = epoch
            self._epoch_opened_after_ms = self.last_timestamp_ms
        if problems:
            self._batch_quiet = False

    def _batch_header(self, event: MetadataEvent) -> None:
        """A batch known by its header alone (KIND_BATCH_HEADER: the Spark shell's bucket 0
        gets one where the batch's records went to other buckets or were packed, placed
        before whatever records of it do come). It opens the batch and its epoch is judged
        as a first record's is; the batch's end reports what the epoch breaks. A header of a
        batch already passed (a copy, a replayed micro-batch) or of the newest epoch (nothing
        to judge) changes nothing. Control batches never come as headers: their records
        reach every bucket, and a LeaderChange announces its epoch."""
        base, last, epoch = event.batch_base_offset, event.batch_last_offset, event.leader_epoch
        if epoch < 0 or epoch == self.raft_epoch or last <= max(self.last_offset, self.raft_headers_to):
            return
        batch = self._batch
        if batch is not None:
            if base <= batch.last_offset:
                return  # inside the open batch: not a log in order
            self._close_batch()
        self.raft_headers_to = last
        self._batch = batch = BatchInfo(base, last)
        batch.timestamp_ms = event.timestamp_ms  # its last record's, as check stamps a batch end
        self._batch_event = event
        self._batch_quiet = True
        self._raft_batch(event)

    def judge_snapshot(self, comparison: SnapshotComparison) -> None:
        """The snapshot rules on a comparison, into the current output: findings placed
        where the snapshot ends (offset endOffset - 1, its last record's time)."""
        c = self._check
        c.event, c.before, c.after, c.snapshot = None, None, None, comparison
        self.findings.run(bound_rules(self.catalog, ON_SNAPSHOT),
                          Site(comparison.end_offset - 1, comparison.timestamp_ms))
        c.snapshot = None

    def _shipped_comparison(self, event: MetadataEvent) -> None:
        try:
            comparison = comparison_from_plain(event.data)
        except RecordDecodeError as problem:
            self.findings.quarantine(event, f"{event.source}: {problem}", emit=True)
            return
        if comparison.end_offset <= self.snapshots_compared_to:
            self.duplicates += 1
            self._out.duplicates += 1
            return
        self.snapshots_compared_to = comparison.end_offset
        self.judge_snapshot(comparison)
        self._count_applied()

    def _count_applied(self) -> None:
        self.applied += 1
        self._out.applied += 1

    def _replay(self, event: MetadataEvent, apply, argument):
        """`apply(argument)` to the state and count the event applied; None when
        the event cannot be applied (it is then judged as bad input)."""
        try:
            result = apply(argument)
        except ReplayError as problem:
            self.findings.input_problem(event, problem, quarantine=True)
            return None
        except _MALFORMED as exc:
            self.findings.malformed(event, exc)
            return None
        self.applied += 1  # _count_applied, inlined: every record passes here
        self._out.applied += 1
        return result

    # ------------------------------------------------------------ partitions

    def _partition_change(self, event: MetadataEvent) -> None:
        changed = self._replay(event, self.state.change_partition, event.data)
        if changed is not None:
            before, after = changed
            self._partition_changed(event, before, after, self.state.elr_enabled)

    def _partition_event(self, event: MetadataEvent) -> None:
        state = self.state
        change = self._replay(event, state.apply, event)
        if change is None:
            return
        if change.problem is not None:
            self.findings.input_problem(event, change.problem, quarantine=False)
        elr_enabled = state.elr_enabled
        for before, after in change.partitions:
            self._partition_changed(event, before, after, elr_enabled)

    def _partition_changed(self, event: MetadataEvent, before: Partition | None,
                           after: Partition | None, elr_enabled: bool) -> None:
        current = after if after is not None else before
        assert current is not None  # a change has a partition before or after it
        key = (current.topic_id, current.partition)
        self.watch.partition_moved(before, after)
        if after is None:  # topic deleted
            assert before is not None
            self._conditions(event, key, 0)
            if self.partition_rows:
                self._out.partitions.append(self._partition_row(after=before, event=event, deleted=True))
            return
        state = self.state
        min_isr = state.effective_min_isr(after)  # conditions and rows: the state after
        if after.unknown:
            # created before a partial log: no rule judges a state it cannot see whole, but
            # its conditions and row are what is known of it (is it offline?)
            if before is None:  # first seen: its topic's partition ids changed
                self.topology_blob = None
            self._conditions(event, key, condition_mask(after, min_isr, state))
            if self.partition_rows:
                self._out.partitions.append(self._partition_row(after, event, min_isr=min_isr))
            return
        # only partition 0's replica count moves a topic's min ISR: any other's is min_isr
        min_isr_before = state.effective_min_isr_before(before, after) if key[1] == 0 else min_isr
        etype = event.type
        if etype == "PARTITION_CHANGE_RECORD":
            shape = change_shape(before, after, event.data, elr_enabled)
            judged_min_isr = min_isr_before  # Kafka's builder computes it before the change
        else:  # PartitionRecord, ClearElr: no builder ran; judged by the state they set
            shape, judged_min_isr = ALL_SHAPES, min_isr
        c = self._check
        c.event, c.before, c.after = event, before, after
        c.elr_enabled, c.min_isr = elr_enabled, judged_min_isr
        site = _new(Site, (event.offset, event.timestamp_ms, key, event, before, after, None))
        rules, end_rules = self._rules_by_shape.get((etype, shape)) or self._shaped(etype, shape)
        self._run(rules, site)
        if before is not None:
            # kept even when no batch-end rule can fire on its shape: the registration
            # matcher reads every change of a batch that registers a broker
            if self._rules_partition_batch_end[etype] and self._batch is not None:
                self._batch.changes.append(_new(BatchChange, (site, elr_enabled, judged_min_isr, shape)))
                if end_rules:
                    self._batch_end_judges = True
            if before.leader != after.leader and before.leader >= 0:
                self._leaders_moved.add(before.leader)
            if shape & SETS_LEADER or before.leader_recovery_state != after.leader_recovery_state:
                self._count_transitions(event, before, after)
            if min_isr_before != min_isr:  # partition 0's replica count moved the topic's
                self._recheck_conditions(event, [key[0]])
        self._conditions(event, key, condition_mask(after, min_isr, state))
        if self.partition_rows:
            self._out.partitions.append(self._partition_row(after, event, min_isr=min_isr))

    def _count_transitions(self, event, before: Partition, after: Partition) -> None:
        # one definition of an unclean election for every view (rules/elections.py)
        unclean = is_unclean_election(before.leader_recovery_state, after.leader_recovery_state)
        self.unclean_elections_total += unclean
        if event.type != "PARTITION_CHANGE_RECORD":
            return
        if before.leader_recovery_state == RECOVERING and after.leader_recovery_state == RECOVERED:
            self.unclean_recovery_finished_total += 1
        data = event.data
        if not unclean and elected_leader(before, data) is not None and data["leader"] in before.elr:
            self.elr_elections_total += 1

    def _conditions(self, event: MetadataEvent, key: tuple[str, int], mask: int) -> None:
        old = self.watch.masks.get(key, 0)
        if mask & LEADERLESS:  # the overdue elections are judged where the operation ends
            mask |= old & _OVERDUE
            self.overdue_pending.add(key)
        if mask != old:  # else no interval opens or closes (most changes)
            self._conditions_at(key, mask, event.offset, event.timestamp_ms)

    def _conditions_at(self, key: tuple[str, int], mask: int, offset: int, ms: int) -> None:
        opened: tuple
        for name, start, end in self.watch.update(key, mask, offset, ms):
            if end is None and name == UNDER_MIN_ISR_NAME:  # the min ISR's source, kept while open
                opened = self.watch.open[(key, name)] = (*start, self.state.min_isr_source(key[0]))
            else:
                opened = start
            row = self.condition_row(key, name, opened)
            if end is not None:
                row.end_offset, row.end_ms = end
            self._out.conditions.append(row)

    def _recheck_conditions(self, event: MetadataEvent, topic_ids: Iterable[str]) -> None:
        """Config changes move conditions without any partition record: min.insync.replicas
        (under_min_isr) and unclean.leader.election.enable (manual_election_required)."""
        state = self.state
        for topic_id in list(topic_ids):
            for p in state.topic_partitions.get(topic_id, ()):
                part = state.partitions[(topic_id, p)]
                self._conditions(event, (topic_id, p),
                                 condition_mask(part, state.effective_min_isr(part), state))

    def _recheck_broker(self, event: MetadataEvent, broker_id, before) -> None:
        """A broker record moved whether the broker may lead and report its directories
        (fenced, controlled shutdown, registered, its directories): leader_imbalanced moves with
        it on the partitions it is the preferred replica of, directory_unassigned on those with
        a replica of it in UNASSIGNED, found through the partitions-by-broker index."""
        if type(broker_id) is not int:
            return
        state = self.state
        after = state.brokers.get(broker_id)
        could = after is not None and after.acceptable_leader
        if could == (before is not None and before.acceptable_leader) and (
                not could or (before is not None and after is not None
                              and before.log_dirs == after.log_dirs)):
            return  # it can lead, or not, from the same directories as before: nothing moved
        preferred = self.settings.auto_leader_rebalance_enable
        for key in list(state.partitions_of(broker_id)):
            part = state.partitions.get(key)
            if part is None or part.unknown or not part.replicas:
                continue
            if (preferred and part.replicas[0] == broker_id) or (
                    UNASSIGNED_DIRECTORY_ID in part.directories):
                self._conditions(event, key,
                                 condition_mask(part, state.effective_min_isr(part), state))

    def condition_row(self, key, name: str, start: tuple) -> ConditionChange:
        """`start`: (offset, ms) where the interval opened, and for under_min_isr the min
        ISR's source then (absent from intervals stored before it was kept)."""
        topic_id, partition = key
        if partition == -1 and topic_id.startswith(TOKEN_KEY_PREFIX):  # a token's (token_key)
            return ConditionChange(f"{self.cluster_id}/{name}/{topic_id}/{start[0]}", name, self.cluster_id,
                                   None, "", -1, start[0], start[1],
                                   resource=topic_id[len(TOKEN_KEY_PREFIX):])
        return ConditionChange(f"{self.cluster_id}/{name}/{topic_id}/{partition}/{start[0]}", name,
                               self.cluster_id, self.state.topic_label(topic_id), topic_id, partition,
                               start[0], start[1], min_isr_source=start[2] if len(start) > 2 else None)

    def _partition_row(self, after: Partition, event: MetadataEvent, min_isr: int | None = None,
                       deleted: bool = False) -> PartitionRow:
        return PartitionRow(
            self.cluster_id, self.state.topic_label(after.topic_id), after.topic_id, after.partition,
            list(after.replicas), list(after.isr), list(after.elr), list(after.last_known_elr),
            list(after.adding_replicas), list(after.removing_replicas), after.leader,
            after.leader_epoch, after.partition_epoch, after.leader_recovery_state,
            min_isr if min_isr is not None else self.state.effective_min_isr(after), deleted,
            event.offset, event.timestamp_ms, event.type, self.state.min_isr_source(after.topic_id),
            list(after.unknown))

    # ------------------------------------------------------------ cluster records

    def _judge_record(self, event: MetadataEvent, broker_id) -> None:
        rules = self._rules_record.get(event.type)
        if rules is None:
            rules = self._rules_record[event.type] = bound_rules(self.catalog, ON_RECORD, event.type)
        if rules:  # judged against the image the record is about to change
            c = self._check
            c.event, c.before, c.after = event, None, None
            self._run(rules, _new(Site, (event.offset, event.timestamp_ms, None, event, None, None,
                                         broker_id if type(broker_id) is int else None)))

    def _cluster_record(self, event: MetadataEvent) -> None:
        state = self.state
        broker_id = _broker_of(event)
        self._judge_record(event, broker_id)
        batch = self._batch
        if event.type == "FEATURE_LEVEL_RECORD":
            assert batch is not None  # a record is applied inside its batch
            if batch.features_before is None:  # the batch end judges what it finalized
                batch.features_before = dict(state.features)
        change = self._replay(event, state.apply, event)
        if change is None:
            return
        etype = event.type
        if etype in _BROKER_TYPES:
            assert batch is not None and broker_id is not None  # the replay checked the id
            self.overdue_all = True  # a broker's liveness moved: every leaderless partition
            data = event.data
            fences = etype in _FENCING_TYPES or data.get("fenced", 0) == 1
            if etype == "REGISTER_BROKER_RECORD":
                self._broker_registered(event, change.broker_before)
            elif fences:
                batch.fenced.add(broker_id)
                # Kafka's handleBrokerFenced writes the leader moves, then the fence, in one batch
                if broker_id in state.brokers:
                    state.brokers[broker_id].led_when_fenced = broker_id in self._leaders_moved
            before = change.broker_before
            self._recheck_broker(event, broker_id, before)
            batch.broker_changes.append(BrokerChange(
                event.offset, broker_id, before is not None and before.acceptable_leader,
                fences or etype == "REGISTER_BROKER_RECORD"))
            self.findings.broker_row(broker_id, event)
        elif etype == "CONFIG_RECORD" and event.data.get("name") in (MIN_ISR, UNCLEAN_ELECTION):
            data = event.data
            if data.get("resourceType") == TOPIC_RESOURCE:
                topic_id = state.topic_ids.get(data.get("resourceName") or "")
                topics = [topic_id] if topic_id else []
            else:  # cluster default or a broker's value: every topic may resolve to it
                topics = list(state.topic_partitions)
            if data["name"] == MIN_ISR and state.elr_enabled:
                assert batch is not None
                batch.elr_before_min_isr_change.update(
                    (t, p) for t in topics for p in state.topic_partitions.get(t, ())
                    if state.partitions[(t, p)].elr or state.partitions[(t, p)].last_known_elr)
            self._recheck_conditions(event, topics)
        elif etype == _TRANSACTION_OPEN or etype in _TRANSACTION_CLOSE:
            state.transaction_open = etype == _TRANSACTION_OPEN
        elif etype in _TOKEN_TYPES:
            self._token_changed(event)
        elif change.partitions:  # ClearElr and RemoveTopic arrive as cluster-scoped records
            elr_enabled = state.elr_enabled
            for before, after in change.partitions:
                self._partition_changed(event, before, after, elr_enabled)

    # ------------------------------------------------------------ delegation tokens

    def _next_token_due(self) -> int:
        """The earliest deadline of a token whose delegation_token_expired is not open; _NEVER
        when there is none or the controller does not sweep expired tokens."""
        if not self.settings.delegation_token_expiry_sweep:
            return _NEVER
        masks = self.watch.masks
        return min((d for t, d in self.state.token_deadlines.items() if token_key(t) not in masks),
                   default=_NEVER)

    def _tokens_expired(self, offset: int, ms: int) -> None:
        """The log's time passed the deadline of tokens the image holds: each one's interval
        opens at this record."""
        masks = self.watch.masks
        for token_id, deadline in sorted(self.state.token_deadlines.items()):
            key = token_key(token_id)
            if deadline < ms and key not in masks:
                self._conditions_at(key, DELEGATION_TOKEN_EXPIRED, offset, ms)
        self.token_due = self._next_token_due()

    def _token_changed(self, event: MetadataEvent) -> None:
        """A token created, renewed or removed: its interval closes when it is gone or no longer
        expired at the record's time (a renewal); the next deadline moves."""
        token_id = event.data.get("tokenId")
        if isinstance(token_id, str):
            key = token_key(token_id)
            deadline = self.state.token_deadlines.get(token_id)
            if key in self.watch.masks and (deadline is None or deadline >= event.timestamp_ms):
                self._conditions_at(key, 0, event.offset, event.timestamp_ms)
        self.token_due = self._next_token_due()

    def _broker_registered(self, event: MetadataEvent, before) -> None:
        data = event.data
        broker_id, incarnation = data["brokerId"], data.get("incarnationId")
        new_incarnation = before is None or before.incarnation_id != incarnation
        stored_epoch = before.epoch if before is not None and before.registered else -2
        if before is not None and new_incarnation:
            # Until the registration request says otherwise, inferred from the log: a restart
            # after a controlled shutdown was clean. Without one it was unclean only if the
            # broker led partitions when fenced: Kafka shuts a broker that leads nothing down at
            # once, fencing it without ever marking it in controlled shutdown
            # (BrokerHeartbeatManager.calculateNextBrokerState: SHUTDOWN_NOW), so for such a
            # broker a clean stop and a crash write the same records: unknown.
            broker = self.state.brokers[broker_id]
            broker.last_shutdown = ("clean" if before.in_controlled_shutdown
                                    else "unclean" if before.led_when_fenced else "unknown")
            broker.last_shutdown_source = SOURCE_INFERRED
        assert self._batch is not None
        self._batch.registered[broker_id] = Registered(
            broker_id, incarnation, event.offset, event.timestamp_ms, stored_epoch, new_incarnation,
            self.state.elr_enabled, self.state.metadata_version)

    # ------------------------------------------------------------ atomic batches

    def _close_batch(self) -> None:
        batch, event = self._batch, self._batch_event
        if batch is None:
            return
        assert event is not None  # set with the batch
        self._batch = self._batch_event = None
        self._leaders_moved.clear()
        judges, self._batch_end_judges = self._batch_end_judges, False
        if self._batch_quiet:  # NoOps only: the state is what the previous batch end judged
            return
        self.findings.closing = batch
        if not batch.timestamp_ms:  # else a header stamped it: its records may not all be here
            batch.timestamp_ms = event.timestamp_ms
        c = self._check
        c.batch = batch
        # a batch of changes no batch-end rule can judge (most of a busy log) skips the walk
        for site, elr_enabled, min_isr, shape in batch.changes if judges else ():
            rules = self._shaped(site.event.type, shape)[1]  # type: ignore[union-attr]  # a change's Site has its event
            if rules:
                c.event, c.before, c.after = site.event, site.before, site.after
                c.elr_enabled, c.min_isr = elr_enabled, min_isr
                self._run(rules, site)
        if batch.registered:
            self.registrations.settle(batch)
        c.event, c.before, c.after = event, None, None
        rules = self._batch_end_rules(batch_shape(batch))
        if rules:
            self._run(rules, _new(Site, (event.batch_last_offset, batch.timestamp_ms, None, event, None,
                                         None, None)))
        self.findings.closing = None
        if not self.state.transaction_open:
            self._judge_overdue_elections(event.batch_last_offset, batch.timestamp_ms)

    def _judge_overdue_elections(self, offset: int, ms: int) -> None:
        """Open or close election_overdue and unclean_election_overdue where an operation
        ended (conditions.py says why)."""
        keys, watch, state = self.overdue_pending, self.watch, self.state
        if self.overdue_all and watch.with_condition["leaderless"]:
            keys.update(k for k, m in watch.masks.items() if m & LEADERLESS)
        for key in keys:
            part = state.partitions.get(key)
            if part is None:
                continue
            old = watch.masks.get(key, 0)
            overdue = (ELECTION_OVERDUE if overdue_candidate(part, state) is not None
                       else UNCLEAN_ELECTION_OVERDUE if unclean_candidate(part, state) is not None
                       else 0)
            if old & _OVERDUE != overdue:
                self._conditions_at(key, old & ~_OVERDUE | overdue, offset, ms)
        keys.clear()
        self.overdue_all = False

    # ------------------------------------------------------------ side inputs

    def _registration_request(self, event: MetadataEvent) -> None:
        data = event.data
        broker_id, incarnation = data.get("brokerId"), data.get("incarnationId")
        if not (isinstance(broker_id, int) and isinstance(incarnation, str) and incarnation
                and isinstance(data.get("previousBrokerEpoch", -1), int)
                and isinstance(data.get("requestVersion", 3), int)):
            self.findings.quarantine(event, "registration event needs an integer brokerId, an "
                                            "incarnationId and an integer previousBrokerEpoch")
            return
        if self.registrations.request(event, broker_id, incarnation):
            self._count_applied()
        else:  # the same request delivered again
            self.duplicates += 1
            self._out.duplicates += 1

    def _log_dirs(self, event: MetadataEvent) -> None:
        data = event.data
        if not isinstance(data.get("brokerId"), int) or not isinstance(data.get("logDirs"), list):
            self.findings.quarantine(event, "log-dir inventory without brokerId and logDirs")
            return
        self._count_applied()
        c = self._check
        c.event, c.before, c.after = event, None, None
        self._run(self._rules_log_dirs, Site(event.offset, event.timestamp_ms, None, event,
                                             broker_id=data["brokerId"]))

    # ------------------------------------------------------------ stored form (plain data)

    def stored(self) -> dict:
        return {"cluster_id": self.cluster_id, "last_offset": self.last_offset, "clock_ms": self.clock_ms,
                "last_timestamp_ms": self.last_timestamp_ms, "applied": self.applied,
                "duplicates": self.duplicates, "unclean_elections_total": self.unclean_elections_total,
                "elr_elections_total": self.elr_elections_total,
                "unclean_recovery_finished_total": self.unclean_recovery_finished_total,
                "active_controller": self.active_controller, "log_start_known": self.log_start_known,
                "raft_epoch": self.raft_epoch, "raft_first_epoch": self.raft_first_epoch,
                "raft_leaders": sorted(self.raft_leaders.items()), "raft_headers_to": self.raft_headers_to,
                "snapshot_place": self.snapshot_place, "in_transaction": self.state.transaction_open,
                "overdue_pending": sorted(self.overdue_pending), "overdue_all": self.overdue_all,
                "snapshots_compared_to": self.snapshots_compared_to}

    def restore_stored(self, stored: dict) -> None:
        self.cluster_id = self.findings.cluster_id = stored["cluster_id"]
        self.last_offset = stored["last_offset"]
        self.clock_ms = stored["clock_ms"]
        self.last_timestamp_ms = stored["last_timestamp_ms"]
        self.applied = stored["applied"]
        self.duplicates = stored["duplicates"]
        self.unclean_elections_total = stored["unclean_elections_total"]
        self.elr_elections_total = stored["elr_elections_total"]
        self.unclean_recovery_finished_total = stored["unclean_recovery_finished_total"]
        self.active_controller = stored["active_controller"]
        # absent when stored before the Raft epochs were kept: judged from here on
        self.raft_epoch = stored.get("raft_epoch", -1)
        self.raft_first_epoch = stored.get("raft_first_epoch", -1)
        self.raft_leaders = dict(stored.get("raft_leaders", ()))
        self.raft_headers_to = stored.get("raft_headers_to", -1)
        self.log_start_known = stored["log_start_known"]
        self.snapshot_place = stored["snapshot_place"]
        self.state.transaction_open = stored.get("in_transaction", False)  # absent before format 3 kept it
        self.overdue_pending = {tuple(k) for k in stored.get("overdue_pending", ())}
        self.overdue_all = stored.get("overdue_all", False)
        self.snapshots_compared_to = stored.get("snapshots_compared_to", -1)  # absent before it was kept


def _broker_of(event: MetadataEvent) -> Any:
    """brokerId, else id, as the record holds it (not every record's id is a broker's)."""
    data = event.data
    broker_id = data.get("brokerId")
    return data.get("id") if broker_id is None else broker_id


def _can_fire(rules: list, shape: int) -> list:
    """The bound rules whose `when` (none, or at least one of its bits) the shape meets."""
    return [r for r in rules if not r[0].impl.when or r[0].impl.when & shape]


def _partition_key(event: MetadataEvent) -> tuple | None:
    if event.type in PARTITION_TYPES:
        key = (event.data.get("topicId"), event.data.get("partitionId"))
        if isinstance(key[0], str) and type(key[1]) is int:  # a malformed record names none
            return key
    return None
