"""`Auditor`: replay + rules + conditions + gauges over a stream of events.

One Auditor judges one cluster (or, in the Spark shell, one bucket of its
partitions: cluster-scoped events reach every bucket, partition events only
their own, and only the auditor with `emit_cluster_findings` reports
cluster-scoped findings and broker rows). `process(events)` expects events in
log order and whole atomic batches; it never raises on bad input: what cannot
be used becomes a `Quarantined` row and, where a rule covers it, an `input.*`
finding. Every event is counted once as applied, duplicate or quarantined.

Input passes the Raft gate first (raft.py): only what the quorum is known to have
committed reaches the event loop, in log order; what is not yet known committed is held
(`provisional()` audits it on a copy), and what a later Raft epoch replaced is withdrawn
(`AuditOutput.retractions`).

The work is done by its parts (raft.py, event_loop.py, findings.py, registrations.py,
watch.py); this class is what the CLI, the Spark operator and the benches use,
and it writes and reads the stored form (snapshot.py).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Iterable, Mapping

from kraft_audit.core import snapshot
from kraft_audit.core.collector import collector_paused
from kraft_audit.core.event_loop import EventLoop
from kraft_audit.core.codec.batches import NoOpRun
from kraft_audit.core.events import MetadataEvent, Quarantined
from kraft_audit.core.findings import AuditOutput
from kraft_audit.core.image import SnapshotComparison
from kraft_audit.core.raft import GateReport, RaftGate, item_range, record_count
from kraft_audit.core.replay.conditions import LEADERLESS, UNDER_MIN_ISR
from kraft_audit.core.replay.settings import CoreSettings
from kraft_audit.core.replay.sharded import ShardedDict, first_item
from kraft_audit.core.replay.state import ClusterState
from kraft_audit.core.rows import ClusterGauges, ConditionChange, RetractionRow
from kraft_audit.core.rules.catalog import Catalog
from kraft_audit.core.watch import Watch

__all__ = ["AuditOutput", "Auditor"]


class Auditor:
    def __init__(self, catalog: Catalog, settings: CoreSettings | Mapping[str, Any] | None = None,
                 emit_cluster_findings: bool = True, partition_rows: bool = True):
        """`partition_rows=False`: `process` leaves `AuditOutput.partitions` empty (for callers
        that read the findings, conditions and gauges only, like `check`)."""
        self._use(EventLoop(catalog, CoreSettings.of(settings), emit_cluster_findings,
                            partition_rows=partition_rows))

    def _use(self, loop: EventLoop) -> None:
        """Work through `loop`, behind a new gate of its settings."""
        self._loop = loop
        self._gate = _new_gate(loop.settings)
        # what the last provisional audit found: (kind, offset, epoch, what, topic_id, partition,
        # message), withdrawn (retractions) when a later epoch replaces the records behind it
        self._provisional: list[tuple] = []

    @classmethod
    def of_loop(cls, loop: EventLoop) -> Auditor:
        """An auditor around an event loop built elsewhere (a test's reference loop)."""
        auditor = cls.__new__(cls)
        auditor._use(loop)
        return auditor

    # ------------------------------------------------------------ public API

    def process(self, events: Iterable[MetadataEvent | Quarantined | NoOpRun]) -> AuditOutput:
        """Audit what the gate releases of `events` (in log order); the rest is held."""
        # many small acyclic objects (states, rows): without the collector's passes over
        # them, more than twice the throughput
        with collector_paused():
            report = GateReport()
            out = self._loop.process(self._gate.admit(events, report))
            self._reported(report, out)
            return out

    def provisional(self) -> AuditOutput:
        """What the records held as not yet known committed would add, audited on a copy of
        this auditor (which stays as it is); remembered, so that what a later Raft epoch
        replaces is withdrawn."""
        held = self._gate.held
        if not held:
            self._provisional = []
            return AuditOutput()
        copy = Auditor.from_snapshot(self.snapshot(), self.catalog, self.settings)
        with collector_paused():
            out = copy._loop.process(list(held))
        epoch_at = {}
        for item in held:
            rng = item_range(item)
            if rng is not None:
                epoch_at[rng[3]] = rng[2]
        self._provisional = [
            *(("violation", v.offset, epoch_at.get(v.offset, -1), v.rule_id, v.topic_id, v.partition,
               v.message) for v in out.violations),
            *(("condition", c.start_offset, epoch_at.get(c.start_offset, -1), c.condition, c.topic_id,
               c.partition, f"{c.condition} from offset {c.start_offset}") for c in out.conditions
              if c.end_offset is None)]
        return out

    @property
    def gate(self) -> RaftGate:
        return self._gate

    def _reported(self, report: GateReport, out: AuditOutput) -> None:
        """The gate's report as rows: withdrawn records and provisional findings, holes in
        the input (an interval, a quarantine row), entries rewritten after they were audited."""
        loop = self._loop
        findings, cluster = loop.findings, loop.cluster_id
        loop.duplicates += report.duplicates
        out.duplicates += report.duplicates
        for r in report.retracted:
            item = r.item
            out.retracted += record_count(item)
            if isinstance(item, MetadataEvent) and not findings.reports(item):
                continue  # a shared record's copy: bucket 0 writes its row
            out.retractions.append(_retraction_row(cluster, item, r))
        for at, _old, new in report.divergences:
            kept = []
            for kind, offset, epoch, what, topic_id, partition, message in self._provisional:
                if offset < at:
                    kept.append((kind, offset, epoch, what, topic_id, partition, message))
                    continue
                out.retractions.append(RetractionRow(
                    f"{cluster}/{kind}/{offset}/{epoch}/{what}/{topic_id}/{partition}", cluster, kind,
                    offset, epoch, at, new, what, topic_id, partition,
                    f"provisional {kind} withdrawn: {message}"))
            self._provisional = kept
        if not loop.emit_cluster_findings:
            return
        for first, last, copy, how in report.gaps:
            out.conditions.extend(self._gap_rows(first, last, copy, how))
        for at, old, new, proven in report.rewrites:
            findings.quarantine_row(Quarantined(
                cluster, "raft", -1,
                f"Raft epoch {new} rewrote the log from offset {at}, which the audit had taken as "
                + ("committed (" + self._gate.proof + "): a committed entry must never change"
                   if proven else "committed without proof (more held than max_unproven_records)")
                + f"; the audit keeps what epoch {old} wrote there", b"", at), count=False)

    def _gap_rows(self, first: int, last: int, copy: str, how: str) -> list[ConditionChange]:
        loop = self._loop
        cluster, ms = loop.cluster_id, loop.last_timestamp_ms
        if how == "copy":
            loop.findings.quarantine_row(Quarantined(
                cluster, f"copy {copy}", -1, f"copy {copy or '-'} of the log skipped offsets "
                f"{first}..{last}: the input lost them (retention, a recreated topic, a reader "
                "that skipped)", b"", first), count=False)
            return []
        row = ConditionChange(f"{cluster}/input_gap/log/{first}", "input_gap", cluster, None, "", -1,
                              first, ms, resource="log")
        if how == "open":
            loop.findings.quarantine_row(Quarantined(
                cluster, "log", -1, f"offsets {first}..{last} are missing from every copy of the "
                "input: the audit waits for them", b"", first), count=False)
            return [row]
        row.end_offset, row.end_ms = last + 1, ms  # skipped, or reported by the reader that skipped
        if how == "skipped":
            loop.findings.quarantine_row(Quarantined(
                cluster, "log", -1, f"offsets {first}..{last} never arrived: the audit went on "
                "without them (hole_patience_records)", b"", first), count=False)
        return [row]

    def judge_snapshot(self, comparison: SnapshotComparison, cluster_id: str | None = None) -> AuditOutput:
        """The snapshot rules on a snapshot compared with the log (image.verify_snapshots):
        findings placed where the snapshot ends (offset endOffset - 1, its last record's time)."""
        loop = self._loop
        out = loop.new_output()
        if cluster_id is not None and not loop.cluster_id:
            loop.cluster_id = loop.findings.cluster_id = cluster_id
        loop.judge_snapshot(comparison)
        return out

    def note_log_start(self, offset: int, source: str) -> None:
        """Where the input starts, before its first record is applied (the Spark shell says
        it when records it drops before the core, NoOps, came first): after offset 0 and
        not from a snapshot, the log is partial and what came before is unknown."""
        self._loop.note_log_start(offset, source)

    def expire(self, now_ms: int) -> AuditOutput:
        """Settle pending registration matches as if event time had reached now_ms."""
        return self._loop.expire(now_ms)

    def gauges(self, cluster_id: str | None = None) -> ClusterGauges:
        loop = self._loop
        g = ClusterGauges(cluster_id if cluster_id is not None else loop.cluster_id)
        watch, state = loop.watch, loop.state
        watch.fill(g)
        g.unclean_recovery_finished_total = loop.unclean_recovery_finished_total
        g.unclean_elections_total = loop.unclean_elections_total
        g.elr_elections_total = loop.elr_elections_total
        g.last_offset = loop.last_offset
        g.last_timestamp_ms = loop.last_timestamp_ms
        g.topics_leaderless = self._by_topic_name(watch.per_topic(LEADERLESS))
        g.topics_under_min_isr = self._by_topic_name(watch.per_topic(UNDER_MIN_ISR))
        registered = [b for b in state.brokers.values() if b.registered]
        g.fenced_broker_ids = sorted(b.broker_id for b in registered if b.fenced)
        g.brokers_fenced = len(g.fenced_broker_ids)
        g.brokers_active = len(registered) - g.brokers_fenced
        g.brokers_in_controlled_shutdown = sum(1 for b in registered if b.in_controlled_shutdown)
        g.active_controller = loop.active_controller
        g.metadata_version = state.metadata_version or 0
        g.features = dict(sorted(state.features.items()))
        g.min_insync_replicas, g.min_isr_source = state.cluster_min_isr()
        g.history_from_offset = -1 if state.history_from is None else state.history_from
        gate = self._gate
        g.committed_offset = gate.committed_to - 1
        g.commit_proof = gate.proof
        g.log_end_offset = gate.shape.end
        g.unproven_records = max(0, gate.shape.end - max(gate.limit, 0)) if gate.shape.end >= 0 else 0
        g.released_unproven_to = gate.unproven_to
        g.divergences_total = gate.divergences_total
        g.retracted_offsets_total = gate.retracted_offsets_total
        g.input_gap_records = gate.hole[1] - gate.hole[0] + 1 if gate.hole else 0
        g.input_gaps_total = gate.gaps_total
        g.provisional_violations = sum(1 for p in self._provisional if p[0] == "violation")
        return g

    def _by_topic_name(self, counts: dict[str, int]) -> dict[str, int]:
        return {self.state.topic_name(tid) or tid: n for tid, n in sorted(counts.items())}

    def open_conditions(self) -> list[ConditionChange]:
        """Every condition interval still open, oldest first."""
        loop = self._loop
        rows = [loop.condition_row(key, name, start) for (key, name), start in loop.watch.open.items()]
        return sorted(rows, key=lambda r: (r.start_offset, r.interval_id))

    # read-only views of the parts' figures
    state = property(lambda self: self._loop.state)
    settings = property(lambda self: self._loop.settings)
    catalog = property(lambda self: self._loop.catalog)
    emit_cluster_findings = property(lambda self: self._loop.emit_cluster_findings)
    cluster_id = property(lambda self: self._loop.cluster_id)
    last_offset = property(lambda self: self._loop.last_offset)
    clock_ms = property(lambda self: self._loop.clock_ms)
    last_timestamp_ms = property(lambda self: self._loop.last_timestamp_ms)
    log_start_known = property(lambda self: self._loop.log_start_known)
    applied = property(lambda self: self._loop.applied)
    duplicates = property(lambda self: self._loop.duplicates)
    quarantined = property(lambda self: self._loop.findings.quarantined)
    active_controller = property(lambda self: self._loop.active_controller)
    raft_epoch = property(lambda self: self._loop.raft_epoch)  # the newest Raft epoch judged
    controller_changes_ms = property(lambda self: self._loop.controller_changes_ms)
    unclean_elections_total = property(lambda self: self._loop.unclean_elections_total)
    elr_elections_total = property(lambda self: self._loop.elr_elections_total)
    unclean_recovery_finished_total = property(lambda self: self._loop.unclean_recovery_finished_total)
    registrations = property(lambda self: self._loop.registrations)

    # ------------------------------------------------------------ stored form

    def snapshot(self) -> snapshot.Snapshot:
        """The stored form in parts (snapshot.py): what the streaming job keeps per bucket."""
        loop = self._loop
        settings = loop.settings
        meta = {
            # the settings as the mapping CoreSettings.of reads (the job's audit.settings)
            "settings": {f.name: getattr(settings, f.name) for f in fields(CoreSettings)},
            "emit_cluster_findings": loop.emit_cluster_findings,
            "event_loop": loop.stored(),
            "quarantined": loop.findings.quarantined,
            "registrations": loop.registrations.stored(),
            "watch_counts": loop.watch.counts(),
            "raft": self._gate.stored(),
            "provisional": list(self._provisional),
        }
        if loop.topology_blob is None:
            loop.topology_blob = snapshot.pack_topology(loop.state.topology())
        watch = loop.watch
        return snapshot.Snapshot(snapshot.pack_meta(meta), loop.topology_blob,
                                 {"partitions": loop.state.partitions.blobs(), "masks": watch.masks.blobs(),
                                  "open": watch.open.blobs()})

    @classmethod
    def from_snapshot(cls, snap: snapshot.Snapshot, catalog: Catalog,
                      settings: CoreSettings | Mapping[str, Any] | None = None) -> Auditor:
        """An auditor rebuilt from its stored parts; `settings` replace the stored ones.
        Raises snapshot.StoredFormatError for a state of another format."""
        meta = snapshot.unpack_meta(snap.meta)  # first: refuses another format before reading more
        if settings is None:
            known = {f.name for f in fields(CoreSettings)}
            settings = {k: v for k, v in meta["settings"].items() if k in known}
        core_settings = CoreSettings.of(settings)
        state = ClusterState.restored(core_settings, snapshot.unpack_topology(snap.topology),
                                      snap.shards["partitions"])
        watch = Watch(ShardedDict(snap.shards["masks"]), ShardedDict(snap.shards["open"], part=first_item),
                      tuple(meta["watch_counts"]))
        loop = EventLoop(catalog, core_settings, meta["emit_cluster_findings"], state, watch)
        auditor = cls.of_loop(loop)
        loop.restore_stored(meta["event_loop"])
        loop.findings.quarantined = meta["quarantined"]
        loop.registrations.restore_stored(meta["registrations"])
        loop.topology_blob = snap.topology
        if "raft" in meta:
            auditor._gate.restore_stored(meta["raft"])
        else:  # stored before the gate: what was applied was released
            auditor._gate.released_to = loop.last_offset + 1
        auditor._provisional = [tuple(p) for p in meta.get("provisional", ())]
        return auditor

    def to_bytes(self) -> bytes:
        """The whole auditor as one blob (the streaming job stores its parts: see snapshot.py)."""
        return snapshot.to_bytes(self.snapshot())

    @classmethod
    def from_bytes(cls, data: bytes, catalog: Catalog,
                   settings: CoreSettings | Mapping[str, Any] | None = None) -> Auditor:
        return cls.from_snapshot(snapshot.from_bytes(data), catalog, settings)


def _new_gate(settings: CoreSettings) -> RaftGate:
    return RaftGate(settings.hole_patience_records, settings.max_unproven_records,
                    full_view=settings.sees_all_partitions, assume_committed=settings.assume_committed)


def _retraction_row(cluster: str, item, r) -> RetractionRow:
    rng = item_range(item)
    first, last, epoch, own = rng if rng is not None else (-1, -1, -1, -1)
    if isinstance(item, NoOpRun) or item.kind == "noops":
        what, offset, message = "NO_OP_RECORD", first, f"NoOpRecords at offsets {first}..{last}"
        topic_id = partition = None
    else:
        what, offset = item.type, own
        topic_id, partition = item.data.get("topicId"), item.data.get("partitionId")
        message = f"{item.type} at offset {own} (Raft epoch {epoch})"
    reason = "held as uncommitted" if r.held else "arrived after its log had lost"
    return RetractionRow(f"{cluster}/record/{offset}/{epoch}/{what}", cluster, "record", offset, epoch,
                         r.replaced_at, r.replaced_by_epoch, what,
                         topic_id if isinstance(topic_id, str) else None,
                         partition if type(partition) is int else None,
                         f"{message}, {reason}: Raft epoch {r.replaced_by_epoch} wrote offset "
                         f"{r.replaced_at} on", r.held)
