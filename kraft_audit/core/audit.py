"""`Auditor`: replay + rules + conditions + gauges over a stream of events.

One Auditor judges one cluster (or, in the Spark shell, one bucket of its
partitions: cluster-scoped events reach every bucket, partition events only
their own, and only the auditor with `emit_cluster_findings` reports
cluster-scoped findings and broker rows). `process(events)` expects events in
log order and whole atomic batches; it never raises on bad input: what cannot
be used becomes a `Quarantined` row and, where a rule covers it, an `input.*`
finding. Every event is counted once as applied, duplicate or quarantined.
"""

from __future__ import annotations

import gc
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from kraft_audit.core.events import (KIND_LOG_DIRS, KIND_RECORD, KIND_REGISTRATION, MetadataEvent,
                                Quarantined)
from kraft_audit.core.rows import BrokerRow, ClusterGauges, ConditionChange, PartitionRow, Violation
from kraft_audit.core.replay.conditions import LEADERLESS, UNDER_MIN_ISR, condition_mask
from kraft_audit.core.replay.partition import RECOVERED, RECOVERING, Partition
from kraft_audit.core.replay.settings import MV_4_0_IV1, CoreSettings
from kraft_audit.core.replay.state import (MIN_ISR, TOPIC_RESOURCE, UNCLEAN_ELECTION,
                                      UNKNOWN_BEFORE_HISTORY, ClusterState, ReplayError)
from kraft_audit.core.rules.catalog import Catalog, RuleSpec
from kraft_audit.core.rules.check import BatchInfo, BrokerChange, Check, Registered, RegistrationMatch
from kraft_audit.core.rules.elections import elected_leader, is_unclean_election
from kraft_audit.core.rules.registry import (ALL_SHAPES, ON_BATCH_END, ON_INPUT, ON_LOG_DIRS,
                                        ON_PARTITION, ON_PARTITION_BATCH_END, ON_REGISTRATION,
                                        ON_REGISTRATION_TIMEOUT, PARTITION_RECORDS, SCOPE_CLUSTER,
                                        SETS_LEADER, Finding, change_shape)
from kraft_audit.core.watch import Watch

_PARTITION_TYPES = frozenset(PARTITION_RECORDS)
_FENCING_TYPES = frozenset({"FENCE_BROKER_RECORD", "UNREGISTER_BROKER_RECORD"})
_BROKER_TYPES = frozenset({"REGISTER_BROKER_RECORD", "UNREGISTER_BROKER_RECORD", "FENCE_BROKER_RECORD",
                           "UNFENCE_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD"})
_MALFORMED = (KeyError, TypeError, ValueError, AttributeError, IndexError)


@dataclass
class AuditOutput:
    violations: list[Violation] = field(default_factory=list)
    conditions: list[ConditionChange] = field(default_factory=list)
    partitions: list[PartitionRow] = field(default_factory=list)
    brokers: list[BrokerRow] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    applied: int = 0  # events of this call used by replay
    duplicates: int = 0  # events of this call skipped: offset already applied


class Auditor:
    # class defaults: states stored before these were kept restore with them
    active_controller: int = -1
    log_start_known: bool = False

    def __init__(self, catalog: Catalog, settings: CoreSettings | Mapping[str, Any] | None = None,
                 emit_cluster_findings: bool = True):
        self.settings = CoreSettings.of(settings)
        self.emit_cluster_findings = emit_cluster_findings
        self.state = ClusterState(self.settings)
        self.cluster_id = ""
        self.last_offset = -1
        self.clock_ms = 0  # newest record time seen: the event-time clock for pending matches
        self.last_timestamp_ms = 0
        # counters since the auditor started (they survive to_bytes/from_bytes)
        self.applied = 0
        self.duplicates = 0
        self.quarantined = 0
        self.unclean_elections_total = 0
        self.elr_elections_total = 0
        self.unclean_recovery_finished_total = 0
        self.active_controller = -1  # leader of the newest LeaderChange control record
        self.log_start_known = False  # where the input starts was judged (partial or whole)
        self._watch = Watch()  # conditions per partition and the gauges counted from them
        self._topology_blob: bytes | None = None  # stored form of the state but its partitions; None = changed
        self._pending_requests: dict[tuple[int, str], tuple[dict, int]] = {}
        self._pending_records: dict[tuple[int, str], Registered] = {}
        self._matched: set[tuple[int, str]] = set()  # one per broker restart: small
        self._batch: BatchInfo | None = None
        self._batch_event: MetadataEvent | None = None
        self._batch_closing: BatchInfo | None = None  # the batch whose end rules are running
        self._bind(catalog)

    # ------------------------------------------------------------ public API

    def process(self, events: Iterable[MetadataEvent | Quarantined]) -> AuditOutput:
        # The audit allocates many small acyclic objects (states, rows): pausing the cyclic
        # collector while it runs more than doubles throughput; nothing here forms cycles.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._process(events)
        finally:
            if collecting:
                gc.enable()

    def _process(self, events: Iterable[MetadataEvent | Quarantined]) -> AuditOutput:
        out = self._out = AuditOutput()
        progressed = False
        for event in events:
            if isinstance(event, Quarantined):
                self._quarantine_row(event, count=True)
                continue
            self.cluster_id = event.cluster_id
            offset = event.offset
            if offset < 0 and event.kind == KIND_RECORD:
                self._quarantine(event, f"{event.type} without a log offset cannot be placed in the log",
                                 emit=self._reports(event))
                continue
            if offset >= 0:
                if offset <= self.last_offset:
                    if progressed:
                        self._input_problem(event, ReplayError(
                            "offset-regression", f"offset {offset} after offset {self.last_offset} "
                            "was applied: the log went backwards", self._partition_key(event)),
                            quarantine=True)
                    else:  # redelivery after a restart
                        self.duplicates += 1
                        out.duplicates += 1
                    continue
                batch = self._batch
                if batch is not None and offset > batch.last_offset:
                    self._close_batch()
                    batch = None
                if batch is None:
                    self._batch = BatchInfo(event.batch_base_offset, event.batch_last_offset)
                self._batch_event = event
                if self.last_offset < 0 and not self.log_start_known:
                    self.note_log_start(offset, event.source)
                self.last_offset = offset
                progressed = True
                if event.timestamp_ms > self.clock_ms:
                    self.clock_ms = event.timestamp_ms
                self.last_timestamp_ms = event.timestamp_ms
            self._handle(event)
            if offset >= 0 and offset >= event.batch_last_offset:
                self._close_batch()
        self._close_batch()  # input comes in whole batches; one not closed by its end ended here
        self._expire_pending(self.clock_ms)
        return out

    def note_log_start(self, offset: int, source: str) -> None:
        """Where the input starts, before its first record is applied (the Spark shell says
        it when records it drops before the core, NoOps, came first): after offset 0 and
        not from a snapshot, the log is partial and what came before is unknown."""
        if offset > 0 and not source.endswith(".checkpoint"):
            self.state.history_from = offset
        self.log_start_known = True

    def expire(self, now_ms: int) -> AuditOutput:
        """Settle pending registration matches as if event time had reached now_ms."""
        self._out = AuditOutput()
        self._expire_pending(now_ms)
        return self._out

    def gauges(self, cluster_id: str | None = None) -> ClusterGauges:
        g = ClusterGauges(cluster_id if cluster_id is not None else self.cluster_id)
        watch, state = self._watch, self.state
        watch.fill(g)
        g.unclean_recovery_finished_total = self.unclean_recovery_finished_total
        g.unclean_elections_total = self.unclean_elections_total
        g.elr_elections_total = self.elr_elections_total
        g.last_offset = self.last_offset
        g.last_timestamp_ms = self.last_timestamp_ms
        g.topics_leaderless = self._by_topic_name(watch.per_topic(LEADERLESS))
        g.topics_under_min_isr = self._by_topic_name(watch.per_topic(UNDER_MIN_ISR))
        registered = [b for b in state.brokers.values() if b.registered]
        g.fenced_broker_ids = sorted(b.broker_id for b in registered if b.fenced)
        g.brokers_fenced = len(g.fenced_broker_ids)
        g.brokers_active = len(registered) - g.brokers_fenced
        g.brokers_in_controlled_shutdown = sum(1 for b in registered if b.in_controlled_shutdown)
        g.active_controller = self.active_controller
        g.metadata_version = state.metadata_version or 0
        g.features = dict(sorted(state.features.items()))
        g.min_insync_replicas, g.min_isr_source = state.cluster_min_isr()
        g.history_from_offset = -1 if state.history_from is None else state.history_from
        return g

    def _by_topic_name(self, counts: dict[str, int]) -> dict[str, int]:
        return {self.state.topic_name(tid) or tid: n for tid, n in sorted(counts.items())}

    def open_conditions(self) -> list[ConditionChange]:
        """Every condition interval still open, oldest first."""
        rows = [self._condition_row(key, name, start) for (key, name), start in self._watch.open.items()]
        return sorted(rows, key=lambda r: (r.start_offset, r.interval_id))

    def to_bytes(self) -> bytes:
        """The whole auditor as one blob (the streaming job stores its parts: see snapshot.py)."""
        from kraft_audit.core import snapshot

        return snapshot.to_bytes(snapshot.take(self))

    @classmethod
    def from_bytes(cls, data: bytes, catalog: Catalog,
                   settings: CoreSettings | Mapping[str, Any] | None = None) -> Auditor:
        from kraft_audit.core import snapshot

        return snapshot.restore(snapshot.from_bytes(data), catalog, settings)

    # ------------------------------------------------------------ dispatch

    def _bind(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._check = Check(self.state, self.settings)
        self._out = AuditOutput()

        def bound(trigger, record_type=None):
            return [(s, s.impl.fn, s.parameters) for s in catalog.enabled(trigger, record_type)]

        self._rules_partition = {t: bound(ON_PARTITION, t) for t in PARTITION_RECORDS}
        self._rules_partition_batch_end = {t: bound(ON_PARTITION_BATCH_END, t) for t in PARTITION_RECORDS}
        self._rules_by_shape: dict[tuple[str, str, int], list] = {}
        self._rules_batch_end = bound(ON_BATCH_END)
        self._rules_registration = bound(ON_REGISTRATION)
        self._rules_registration_timeout = bound(ON_REGISTRATION_TIMEOUT)
        self._rules_log_dirs = bound(ON_LOG_DIRS)
        self._rules_input = bound(ON_INPUT)

    def _shaped(self, trigger: str, record_type: str, shape: int) -> list:
        """The rules of a trigger that can fire on a PartitionChangeRecord of this shape."""
        key = (trigger, record_type, shape)
        rules = self._rules_by_shape.get(key)
        if rules is None:
            table = self._rules_partition if trigger == ON_PARTITION else self._rules_partition_batch_end
            rules = [r for r in table[record_type] if not r[0].impl.when or r[0].impl.when & shape]
            self._rules_by_shape[key] = rules
        return rules

    def _handle(self, event: MetadataEvent) -> None:
        kind = event.kind
        if event.type != "PARTITION_CHANGE_RECORD":  # only those leave topics, brokers, configs alone
            self._topology_blob = None
        if kind == KIND_RECORD:
            if event.type == "PARTITION_CHANGE_RECORD":
                self._partition_change(event)
            elif event.type in _PARTITION_TYPES:
                self._partition_event(event)
            else:
                self._cluster_record(event)
        elif kind == KIND_REGISTRATION:
            self._registration_request(event)
        elif kind == KIND_LOG_DIRS:
            self._log_dirs(event)
        else:  # Raft control records: nothing to replay; a leader change names the active controller
            if event.type == "LEADER_CHANGE" and isinstance(event.data.get("leaderId"), int):
                self.active_controller = event.data["leaderId"]
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
            self._input_problem(event, problem, quarantine=True)
            return None
        except _MALFORMED as exc:
            self._malformed(event, exc)
            return None
        self._count_applied()
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
            self._input_problem(event, change.problem, quarantine=False)
        elr_enabled = state.elr_enabled
        for before, after in change.partitions:
            self._partition_changed(event, before, after, elr_enabled)

    def _partition_changed(self, event: MetadataEvent, before: Partition | None,
                           after: Partition | None, elr_enabled: bool) -> None:
        current = after if after is not None else before
        key = (current.topic_id, current.partition)
        self._watch.partition_moved(before, after)
        if after is None:  # topic deleted
            self._conditions(event, key, 0)
            self._out.partitions.append(self._partition_row(after=before, event=event, deleted=True))
            return
        state = self.state
        min_isr = state.effective_min_isr(after)  # conditions and rows: the state after
        min_isr_before = state.effective_min_isr_before(before, after)
        etype = event.type
        if etype == "PARTITION_CHANGE_RECORD":
            shape = change_shape(before, after, event.data)
            judged_min_isr = min_isr_before  # Kafka's builder computes it before the change
        else:  # PartitionRecord, ClearElr: no builder ran; judged by the state they set
            shape, judged_min_isr = ALL_SHAPES, min_isr
        c = self._check
        c.event, c.before, c.after = event, before, after
        c.elr_enabled, c.min_isr = elr_enabled, judged_min_isr
        self._run(self._shaped(ON_PARTITION, etype, shape), event.offset, event.timestamp_ms, key,
                  event, before, after)
        if before is not None:
            if self._rules_partition_batch_end[etype] and self._batch is not None:
                self._batch.changes.append(
                    (event, before, after, elr_enabled, judged_min_isr, shape))
            if shape & SETS_LEADER or before.leader_recovery_state != after.leader_recovery_state:
                self._count_transitions(event, before, after)
            if min_isr_before != min_isr:  # partition 0's replica count moved the topic's
                self._recheck_conditions(event, [key[0]])
        self._conditions(event, key, condition_mask(after, min_isr, state))
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
        for name, start, end in self._watch.update(key, mask, event.offset, event.timestamp_ms):
            row = self._condition_row(key, name, start)
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

    def _condition_row(self, key, name: str, start: tuple[int, int]) -> ConditionChange:
        topic_id, partition = key
        return ConditionChange(f"{self.cluster_id}/{name}/{topic_id}/{partition}/{start[0]}", name,
                               self.cluster_id, self.state.topic_name(topic_id), topic_id, partition,
                               start[0], start[1])

    def _partition_row(self, after: Partition, event: MetadataEvent, min_isr: int | None = None,
                       deleted: bool = False) -> PartitionRow:
        return PartitionRow(
            self.cluster_id, self.state.topic_name(after.topic_id), after.topic_id, after.partition,
            list(after.replicas), list(after.isr), list(after.elr), list(after.last_known_elr),
            list(after.adding_replicas), list(after.removing_replicas), after.leader,
            after.leader_epoch, after.partition_epoch, after.leader_recovery_state,
            min_isr if min_isr is not None else self.state.effective_min_isr(after), deleted,
            event.offset, event.timestamp_ms, event.type)

    # ------------------------------------------------------------ cluster records

    def _cluster_record(self, event: MetadataEvent) -> None:
        state = self.state
        broker_id = _broker_of(event)
        change = self._replay(event, state.apply, event)
        if change is None:
            return
        batch = self._batch
        etype = event.type
        if etype in _BROKER_TYPES:
            data = event.data
            fences = etype in _FENCING_TYPES or data.get("fenced", 0) == 1
            if etype == "REGISTER_BROKER_RECORD":
                self._broker_registered(event, change.broker_before)
            elif fences:
                batch.fenced.add(broker_id)
            before = change.broker_before
            batch.broker_changes.append(BrokerChange(
                event.offset, broker_id, before is not None and before.acceptable_leader,
                fences or etype == "REGISTER_BROKER_RECORD"))
            self._broker_row(broker_id, event)
        elif etype == "CONFIG_RECORD" and event.data.get("name") in (MIN_ISR, UNCLEAN_ELECTION):
            data = event.data
            if data.get("resourceType") == TOPIC_RESOURCE:
                topic_id = state.topic_ids.get(data.get("resourceName") or "")
                topics = [topic_id] if topic_id else []
            else:  # cluster default or a broker's value: every topic may resolve to it
                topics = list(state.topic_partitions)
            if data["name"] == MIN_ISR and state.elr_enabled:
                batch.elr_before_min_isr_change.update(
                    (t, p) for t in topics for p in state.topic_partitions.get(t, ())
                    if state.partitions[(t, p)].elr or state.partitions[(t, p)].last_known_elr)
            self._recheck_conditions(event, topics)
        elif change.partitions:  # ClearElr and RemoveTopic arrive as cluster-scoped records
            elr_enabled = state.elr_enabled
            for before, after in change.partitions:
                self._partition_changed(event, before, after, elr_enabled)

    def _broker_registered(self, event: MetadataEvent, before) -> None:
        data = event.data
        broker_id, incarnation = data["brokerId"], data.get("incarnationId")
        new_incarnation = before is None or before.incarnation_id != incarnation
        stored_epoch = before.epoch if before is not None and before.registered else -2
        if before is not None and new_incarnation:
            # Until the registration request says otherwise: a restart after a controlled
            # shutdown was clean, one after a crash (fenced by heartbeat timeout) unclean.
            self.state.brokers[broker_id].last_shutdown = (
                "clean" if before.in_controlled_shutdown else "unclean")
        self._batch.registered[broker_id] = Registered(
            broker_id, incarnation, event.offset, event.timestamp_ms, stored_epoch, new_incarnation,
            self.state.elr_enabled, self.state.metadata_version)

    def _broker_row(self, broker_id: int, event: MetadataEvent) -> None:
        broker = self.state.brokers.get(broker_id)
        if broker is None or not self.emit_cluster_findings:
            return
        self._out.brokers.append(BrokerRow(
            self.cluster_id, broker_id, broker.epoch, broker.incarnation_id, broker.registered,
            broker.fenced, broker.in_controlled_shutdown, broker.last_shutdown,
            broker.offset if event is None else event.offset,
            broker.timestamp_ms if event is None else event.timestamp_ms))

    # ------------------------------------------------------------ atomic batches

    def _close_batch(self) -> None:
        batch, event = self._batch, self._batch_event
        if batch is None:
            return
        self._batch = self._batch_event = None
        self._batch_closing = batch
        batch.timestamp_ms = event.timestamp_ms
        c = self._check
        c.batch = batch
        for change in batch.changes:
            ev, before, after, elr_enabled, min_isr, shape = change
            c.event, c.before, c.after, c.elr_enabled, c.min_isr = ev, before, after, elr_enabled, min_isr
            key = (after.topic_id, after.partition)
            self._run(self._shaped(ON_PARTITION_BATCH_END, ev.type, shape), ev.offset, ev.timestamp_ms,
                      key, ev, before, after)
        if batch.registered:
            self._settle_registrations(batch)
        c.event, c.before, c.after = event, None, None
        self._run(self._rules_batch_end, batch.last_offset, batch.timestamp_ms, None, event, None, None)
        self._batch_closing = None

    def _settle_registrations(self, batch: BatchInfo) -> None:
        registered = batch.registered
        for key, part in self.state.partitions.items():
            for broker_id in part.isr + part.elr:
                if broker_id in registered:
                    registered[broker_id].still_in.append(key)
        for change in batch.changes:
            before, after = change[1], change[2]
            for broker_id in before.elr:
                if broker_id in registered and broker_id not in after.elr and broker_id not in after.isr:
                    registered[broker_id].removed_from_elr.append(
                        ((after.topic_id, after.partition), change[0].offset))
        for reg in registered.values():
            match_key = (reg.broker_id, reg.incarnation_id)
            pending = self._pending_requests.pop(match_key, None)
            if pending is None:
                self._pending_records[match_key] = reg
            else:
                self._match(reg, *pending)

    # ------------------------------------------------------------ registration requests

    def _registration_request(self, event: MetadataEvent) -> None:
        data = event.data
        broker_id, incarnation = data.get("brokerId"), data.get("incarnationId")
        if not (isinstance(broker_id, int) and isinstance(incarnation, str) and incarnation
                and isinstance(data.get("previousBrokerEpoch", -1), int)
                and isinstance(data.get("requestVersion", 3), int)):
            self._quarantine(event, "registration event needs an integer brokerId, an incarnationId "
                                    "and an integer previousBrokerEpoch")
            return
        request_ms = data.get("timestampMs") or event.timestamp_ms
        match_key = (broker_id, incarnation)
        if match_key in self._matched or match_key in self._pending_requests:
            self.duplicates += 1  # the same request delivered again
            self._out.duplicates += 1
            return
        self._count_applied()
        record = self._pending_records.pop(match_key, None)
        if record is not None:
            self._match(record, data, request_ms)
            return
        if broker_id not in self.state.brokers and data.get("previousBrokerEpoch", -1) >= 0:
            self._input_problem(event, ReplayError(
                "unknown-broker", f"registration request of broker {broker_id} claims previous "
                f"epoch {data['previousBrokerEpoch']} but the log never registered it",
                broker_id=broker_id), quarantine=False)
        self._pending_requests[match_key] = (data, request_ms)

    def _match(self, record: Registered, request: dict, request_ms: int) -> None:
        self._matched.add((record.broker_id, record.incarnation_id))
        unclean = self._unclean(record, request)
        broker = self.state.brokers.get(record.broker_id)
        if broker is not None and broker.incarnation_id == record.incarnation_id and record.new_incarnation:
            broker.last_shutdown = "unclean" if unclean else "clean"
            self._broker_row(record.broker_id, None)
        if not unclean and record.new_incarnation:
            self._release(record)
        c = self._check
        c.match = RegistrationMatch(record.broker_id, record.incarnation_id, request, request_ms,
                                    record, unclean)
        self._run(self._rules_registration, record.offset, record.timestamp_ms, None, None, None, None,
                  broker_id=record.broker_id)

    def _unclean(self, record: Registered, request: dict) -> bool:
        if self.settings.clean_shutdown_detection == "incarnation":  # the early reading
            return record.new_incarnation and (record.metadata_version or 0) >= MV_4_0_IV1
        # trunk (KAFKA-18635): clean only if the broker proves it saw its last epoch
        version = request.get("requestVersion", 3)
        return not (version >= 3 and request.get("previousBrokerEpoch", -1) == record.stored_epoch)

    def _expire_pending(self, now_ms: int) -> None:
        limit = now_ms - self.settings.registration_match_timeout_ms
        for match_key, (request, request_ms) in list(self._pending_requests.items()):
            if request_ms < limit:
                del self._pending_requests[match_key]
                c = self._check
                c.match = RegistrationMatch(match_key[0], match_key[1], request, request_ms, None, None)
                self._run(self._rules_registration_timeout, -1, request_ms, None, None, None, None,
                          broker_id=match_key[0])
        for match_key, record in list(self._pending_records.items()):
            if record.timestamp_ms < limit:  # no registration input for it: nothing to verify
                del self._pending_records[match_key]

    # ------------------------------------------------------------ log dirs

    def _log_dirs(self, event: MetadataEvent) -> None:
        data = event.data
        if not isinstance(data.get("brokerId"), int) or not isinstance(data.get("logDirs"), list):
            self._quarantine(event, "log-dir inventory without brokerId and logDirs")
            return
        self._count_applied()
        c = self._check
        c.event, c.before, c.after = event, None, None
        self._run(self._rules_log_dirs, event.offset, event.timestamp_ms, None, event, None, None,
                  broker_id=data["brokerId"])

    # ------------------------------------------------------------ findings and quarantine

    def _run(self, rules: list, offset: int, timestamp_ms: int, key, event, before, after,
             broker_id: int | None = None) -> None:
        """Call each rule with the prepared Check and report what it finds. A rule that
        fails (a bug, or input it cannot read) is reported and the audit goes on."""
        c = self._check
        for spec, fn, params in rules:
            c.params = params
            try:
                result = fn(c)
            except Exception as exc:  # noqa: BLE001 - one rule must not stop the audit
                if event is not None:
                    self._quarantine(event, f"rule {spec.rule_id} failed: {exc!r}", count=False)
                continue
            if result:
                self._emit(spec, result, offset, timestamp_ms, key, event, before, after, broker_id)

    def _emit(self, spec: RuleSpec, result, offset: int, timestamp_ms: int, key, event,
              before: Partition | None, after: Partition | None, broker_id: int | None = None) -> None:
        if isinstance(result, str):
            findings = (Finding(result),)
        elif isinstance(result, Finding):
            findings = (result,)
        else:
            findings = result
        for f in findings:
            if f.unless_unclean and self._hold(spec, f, offset, timestamp_ms, key, event, before, after):
                continue
            cluster = f.cluster_scoped if f.cluster_scoped is not None else spec.impl.scope == SCOPE_CLUSTER
            if cluster and not self.emit_cluster_findings:
                continue
            fkey = f.key or key
            if f.offset is not None:
                offset = f.offset
            topic_id, partition = fkey if fkey else (None, None)
            broker = f.broker_id if f.broker_id is not None else broker_id
            evidence: dict[str, Any] = {}
            if f.key is None and (before is not None or after is not None):
                evidence["before"] = before.as_dict() if before is not None else None
                evidence["after"] = after.as_dict() if after is not None else None
            elif fkey is not None and fkey in self.state.partitions:
                evidence["partition"] = self.state.partitions[fkey].as_dict()
            if event is not None and event.kind == KIND_RECORD:
                evidence["record"] = {"type": event.type, "offset": event.offset, "data": event.data}
            if f.evidence:
                evidence.update(f.evidence)
            self._out.violations.append(Violation(
                f"{self.cluster_id}/{spec.rule_id}/{offset}/{topic_id}/{partition}/{broker}",
                spec.rule_id, spec.kip, spec.severity, self.cluster_id,
                self.state.topic_name(topic_id) if topic_id else None, topic_id, partition, broker,
                offset, timestamp_ms, f.message, json.dumps(evidence, default=list, sort_keys=True)))

    def _hold(self, spec, finding, offset, timestamp_ms, key, event, before, after) -> bool:
        """Keep a finding until the registration verdict of a broker that would explain it."""
        batch = self._batch_closing
        registered = [batch.registered[b] for b in finding.unless_unclean if b in batch.registered]
        if not registered:
            return False
        held = (spec.rule_id, finding._replace(unless_unclean=()), offset, timestamp_ms, key, event,
                before, after)
        registered[0].held.append(held)
        return True

    def _release(self, record: Registered) -> None:
        """The broker shut down cleanly: what only an unclean shutdown explained is a finding."""
        for rule_id, finding, offset, timestamp_ms, key, event, before, after in record.held:
            self._emit(self.catalog.get(rule_id), finding, offset, timestamp_ms, key, event, before, after)
        record.held = []

    def _input_problem(self, event: MetadataEvent, problem: ReplayError, quarantine: bool) -> None:
        cluster_scoped = problem.key is None
        start = self.state.history_from
        if start is not None and problem.code in UNKNOWN_BEFORE_HISTORY:
            # not a broken log: what it names was created before the part we have
            if quarantine:
                self._quarantine(event, f"created before this log's first record (no snapshot "
                                 f"holds it): {problem}", emit=self._reports(event))
            return
        if quarantine:
            self._quarantine(event, str(problem), emit=self.emit_cluster_findings or not cluster_scoped)
        c = self._check
        c.event, c.problem = event, problem
        for spec, fn, _params in self._rules_input:
            message = fn(c)
            if message:
                self._emit(spec, Finding(message, cluster_scoped=cluster_scoped), event.offset,
                           event.timestamp_ms, problem.key, event, None, None,
                           broker_id=problem.broker_id)

    def _malformed(self, event: MetadataEvent, exc: Exception) -> None:
        self._quarantine(event, f"{event.type} cannot be applied: {exc!r} in {event.data!r}"[:500],
                         emit=self._reports(event))

    def _reports(self, event: MetadataEvent) -> bool:
        """Whether this auditor reports a problem with `event`: a partition record
        reaches one bucket only; a shared record reaches every bucket, and bucket 0
        (emit_cluster_findings) speaks for it."""
        return self.emit_cluster_findings or event.type in _PARTITION_TYPES

    @staticmethod
    def _partition_key(event: MetadataEvent) -> tuple | None:
        if event.type in _PARTITION_TYPES:
            return (event.data.get("topicId"), event.data.get("partitionId"))
        return None

    def _quarantine(self, event: MetadataEvent, reason: str, emit: bool = True, count: bool = True) -> None:
        row = Quarantined(event.cluster_id, event.source, event.position, reason,
                          event.raw or b"", event.offset)
        self._quarantine_row(row, count=count, emit=emit)

    def _quarantine_row(self, row: Quarantined, count: bool, emit: bool = True) -> None:
        if count:
            self.quarantined += 1
        if emit:
            self._out.quarantined.append(row)


def _broker_of(event: MetadataEvent) -> int | None:
    data = event.data
    broker_id = data.get("brokerId")
    return data.get("id") if broker_id is None else broker_id
