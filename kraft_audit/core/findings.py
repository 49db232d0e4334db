"""`FindingSink`: what rules return becomes Violation rows; unusable input becomes
Quarantined rows and, where a rule covers it, an `input.*` finding; a broker's
row follows its records and its registration verdict.

A finding an unclean shutdown would explain is held on the broker's
RegisterBrokerRecord until its registration request gives the verdict
(registrations.py releases it when the shutdown was clean).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, NamedTuple

from kraft_audit.core.events import (
    KIND_RECORD,
    MetadataEvent,
    Quarantined,
    event_from_plain,
    event_to_plain,
)
from kraft_audit.core.replay.partition import FIELDS as PARTITION_FIELDS
from kraft_audit.core.replay.partition import Partition
from kraft_audit.core.replay.state import UNKNOWN_BEFORE_HISTORY, ClusterState, ReplayError
from kraft_audit.core.rows import BrokerRow, ConditionChange, PartitionRow, RetractionRow, Violation
from kraft_audit.core.rules.catalog import Catalog, RuleSpec
from kraft_audit.core.rules.check import BatchInfo, Check, Registered, Site
from kraft_audit.core.rules.registry import ON_INPUT, PARTITION_RECORDS, SCOPE_CLUSTER, Finding

PARTITION_TYPES = frozenset(PARTITION_RECORDS)


@dataclass
class AuditOutput:
    violations: list[Violation] = field(default_factory=list)
    conditions: list[ConditionChange] = field(default_factory=list)
    partitions: list[PartitionRow] = field(default_factory=list)
    brokers: list[BrokerRow] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    retractions: list[RetractionRow] = field(default_factory=list)
    applied: int = 0  # events of this call used by replay
    duplicates: int = 0  # events of this call skipped: offset already applied
    retracted: int = 0  # records withdrawn: of a version of the log the quorum replaced

    def extend(self, more: AuditOutput) -> None:
        """Add a later call's output to this one."""
        for name in ("violations", "conditions", "partitions", "brokers", "quarantined", "retractions"):
            getattr(self, name).extend(getattr(more, name))
        self.applied += more.applied
        self.duplicates += more.duplicates
        self.retracted += more.retracted


class HeldFinding(NamedTuple):
    """A finding kept until a broker's registration verdict."""

    rule_id: str
    finding: Finding
    site: Site


def bound_rules(catalog: Catalog, trigger: str, record_type: str | None = None) -> list:
    """(spec, function, parameters) of the enabled rules of a trigger, ready to call."""
    return [(s, s.impl.fn, s.parameters) for s in catalog.enabled(trigger, record_type)]


class FindingSink:
    """Runs rules on the shared `Check` and writes what they find into `out`, the
    current call's AuditOutput (the event loop gives each call a new one)."""

    def __init__(self, state: ClusterState, catalog: Catalog, check: Check, emit_cluster_findings: bool):
        self.state = state
        self.catalog = catalog
        self.check = check
        self.emit_cluster_findings = emit_cluster_findings
        self.cluster_id = ""
        self.out = AuditOutput()
        self.closing: BatchInfo | None = None  # the batch whose end rules are running
        self.quarantined = 0  # quarantined events since the auditor started
        self._rules_input = bound_rules(catalog, ON_INPUT)

    def run(self, rules: list, site: Site) -> None:
        """Call each rule with the prepared Check and report what it finds. A rule that
        fails (a bug, or input it cannot read) is reported and the audit goes on."""
        c = self.check
        for spec, fn, params in rules:
            c.params = params
            try:
                result = fn(c)
                if result:
                    self.emit(spec, result, site)
            except Exception as exc:  # noqa: BLE001 - one rule must not stop the audit
                if site.event is not None:
                    self.quarantine(site.event, f"rule {spec.rule_id} failed: {exc!r}", count=False)

    def emit(self, spec: RuleSpec, result, site: Site) -> None:
        findings: Iterable[Finding]
        if isinstance(result, str):
            findings = (Finding(result),)
        elif isinstance(result, Finding):
            findings = (result,)
        else:
            findings = result
        offset, timestamp_ms, key, event, before, after, broker_id = site
        for f in findings:
            if f.unless_unclean and self._hold(spec, f, site):
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
            if event is not None and event.kind == KIND_RECORD and f.offset is None:
                # the record judged (a finding placed at its own offset is not about it)
                evidence["record"] = {"type": event.type, "offset": event.offset, "data": event.data}
            if f.evidence:
                evidence.update(f.evidence)
            self.out.violations.append(Violation(
                f"{self.cluster_id}/{spec.rule_id}/{offset}/{topic_id}/{partition}/{broker}",
                spec.rule_id, spec.kip, spec.severity, self.cluster_id,
                self.state.topic_name(topic_id) if topic_id else None, topic_id, partition, broker,
                offset, timestamp_ms, f.message, json.dumps(evidence, default=list, sort_keys=True)))

    def _hold(self, spec: RuleSpec, finding: Finding, site: Site) -> bool:
        """Keep a finding until the registration verdict of a broker that would explain it."""
        batch = self.closing
        assert batch is not None  # findings are held only while a batch closes
        registered = [batch.registered[b] for b in finding.unless_unclean if b in batch.registered]
        if not registered:
            return False
        registered[0].held.append(HeldFinding(spec.rule_id, finding._replace(unless_unclean=()),
                                              site._replace(broker_id=None)))
        return True

    def release(self, record: Registered) -> None:
        """The broker shut down cleanly: what only an unclean shutdown explained is a finding."""
        for rule_id, finding, site in record.held:
            self.emit(self.catalog.get(rule_id), finding, site)
        record.held = []

    def input_problem(self, event: MetadataEvent, problem: ReplayError, quarantine: bool) -> None:
        cluster_scoped = problem.key is None
        start = self.state.history_from
        if start is not None and problem.code in UNKNOWN_BEFORE_HISTORY:
            # not a broken log: what it names was created before the part we have
            if quarantine:
                self.quarantine(event, f"created before this log's first record (no snapshot "
                                f"holds it): {problem}", emit=self.reports(event))
            return
        if quarantine:
            self.quarantine(event, str(problem), emit=self.emit_cluster_findings or not cluster_scoped)
        c = self.check
        c.event, c.problem = event, problem
        for spec, fn, _params in self._rules_input:
            message = fn(c)
            if message:
                self.emit(spec, Finding(message, cluster_scoped=cluster_scoped),
                          Site(event.offset, event.timestamp_ms, problem.key, event, None, None,
                               problem.broker_id))

    def malformed(self, event: MetadataEvent, exc: Exception) -> None:
        self.quarantine(event, f"{event.type} cannot be applied: {exc!r} in {event.data!r}"[:500],
                        emit=self.reports(event))

    def reports(self, event: MetadataEvent) -> bool:
        """Whether this auditor reports a problem with `event`: a partition record
        reaches one bucket only; a shared record reaches every bucket, and bucket 0
        (emit_cluster_findings) speaks for it."""
        return self.emit_cluster_findings or event.type in PARTITION_TYPES

    def broker_row(self, broker_id: int, event: MetadataEvent | None) -> None:
        """The broker as it is now (bucket 0 only): after a broker record, and when a
        registration verdict (event None) sets its last shutdown."""
        broker = self.state.brokers.get(broker_id)
        if broker is None or not self.emit_cluster_findings:
            return
        self.out.brokers.append(BrokerRow(
            self.cluster_id, broker_id, broker.epoch, broker.incarnation_id, broker.registered,
            broker.fenced, broker.in_controlled_shutdown, broker.last_shutdown,
            broker.offset if event is None else event.offset,
            broker.timestamp_ms if event is None else event.timestamp_ms, broker.last_shutdown_source))

    def quarantine(self, event: MetadataEvent, reason: str, emit: bool = True, count: bool = True) -> None:
        row = Quarantined(event.cluster_id, event.source, event.position, reason,
                          event.raw or b"", event.offset)
        self.quarantine_row(row, count=count, emit=emit)

    def quarantine_row(self, row: Quarantined, count: bool, emit: bool = True) -> None:
        if count:
            self.quarantined += 1
        if emit:
            self.out.quarantined.append(row)


# ------------------------------------------------------------ stored form of held findings
# Plain tuples, so that a stored state does not name classes.

def _partition_fields(p: Partition | None) -> tuple | None:
    return None if p is None else tuple([getattr(p, n) for n in PARTITION_FIELDS])


def held_to_plain(held: HeldFinding) -> tuple:
    rule_id, finding, (offset, timestamp_ms, key, event, before, after, broker_id) = held
    plain = None if event is None else event_to_plain(event)
    return (rule_id, tuple(finding), (offset, timestamp_ms, key, plain, _partition_fields(before),
                                      _partition_fields(after), broker_id))


def held_from_plain(plain: tuple) -> HeldFinding:
    rule_id, finding, (offset, timestamp_ms, key, event, before, after, broker_id) = plain
    return HeldFinding(rule_id, Finding(*finding), Site(
        offset, timestamp_ms, key, None if event is None else event_from_plain(event),
        None if before is None else Partition(*before), None if after is None else Partition(*after),
        broker_id))
