"""`RegistrationMatcher`: pairs each broker registration request (a side input)
with the RegisterBrokerRecord it led to, whichever comes first, and judges the
restart clean or unclean.

Either side waits, by (broker id, incarnation id), until the other arrives or
event time passes `registration_match_timeout_ms`. The verdict sets the
broker's last shutdown, releases the findings held on the record when the
shutdown was clean, and runs the registration rules.
"""

from __future__ import annotations

from kraft_audit.core.events import MetadataEvent
from kraft_audit.core.findings import FindingSink, bound_rules, held_from_plain, held_to_plain
from kraft_audit.core.replay.settings import MV_4_0_IV1, CoreSettings
from kraft_audit.core.replay.state import SOURCE_REQUEST_LOG, ClusterState, ReplayError
from kraft_audit.core.rules.catalog import Catalog
from kraft_audit.core.rules.check import BatchInfo, Check, Registered, RegistrationMatch, Site
from kraft_audit.core.rules.registry import ON_REGISTRATION, ON_REGISTRATION_TIMEOUT

MatchKey = tuple[int, str]  # (broker id, incarnation id)


class RegistrationMatcher:
    def __init__(self, state: ClusterState, settings: CoreSettings, catalog: Catalog, check: Check,
                 findings: FindingSink):
        self.state = state
        self.settings = settings
        self.check = check
        self.findings = findings
        self.pending_requests: dict[MatchKey, tuple[dict, int]] = {}  # -> (request, its time)
        self.pending_records: dict[MatchKey, Registered] = {}
        self.matched: set[MatchKey] = set()  # one per broker restart: small
        self._rules_registration = bound_rules(catalog, ON_REGISTRATION)
        self._rules_timeout = bound_rules(catalog, ON_REGISTRATION_TIMEOUT)

    def request(self, event: MetadataEvent, broker_id: int, incarnation: str) -> bool:
        """A well-formed registration request; False when it is one already seen."""
        data = event.data
        request_ms = data.get("timestampMs") or event.timestamp_ms
        key = (broker_id, incarnation)
        if key in self.matched or key in self.pending_requests:
            return False
        record = self.pending_records.pop(key, None)
        if record is not None:
            self.match(record, data, request_ms)
            return True
        if broker_id not in self.state.brokers and data.get("previousBrokerEpoch", -1) >= 0:
            self.findings.input_problem(event, ReplayError(
                "unknown-broker", f"registration request of broker {broker_id} claims previous "
                f"epoch {data['previousBrokerEpoch']} but the log never registered it",
                broker_id=broker_id), quarantine=False)
        self.pending_requests[key] = (data, request_ms)
        return True

    def settle(self, batch: BatchInfo) -> None:
        """At the end of a batch that registered brokers: note where each broker still
        is, then match each record with its request or keep it waiting."""
        registered = batch.registered
        for key, part in self.state.partitions.items():
            for broker_id in part.isr + part.elr:
                if broker_id in registered:
                    registered[broker_id].still_in.append(key)
        for change in batch.changes:
            _offset, _ms, key, event, before, after, _broker = change.site
            for broker_id in before.elr:
                if broker_id in registered and broker_id not in after.elr and broker_id not in after.isr:
                    registered[broker_id].removed_from_elr.append((key, event.offset))
        for reg in registered.values():
            key = (reg.broker_id, reg.incarnation_id)
            pending = self.pending_requests.pop(key, None)
            if pending is None:
                self.pending_records[key] = reg
            else:
                self.match(reg, *pending)

    def match(self, record: Registered, request: dict, request_ms: int) -> None:
        self.matched.add((record.broker_id, record.incarnation_id))
        unclean = self.unclean(record, request)
        broker = self.state.brokers.get(record.broker_id)
        if broker is not None and broker.incarnation_id == record.incarnation_id and record.new_incarnation:
            broker.last_shutdown = "unclean" if unclean else "clean"
            broker.last_shutdown_source = SOURCE_REQUEST_LOG
            self.findings.broker_row(record.broker_id, None)
        if not unclean and record.new_incarnation:
            self.findings.release(record)
        self.check.match = RegistrationMatch(record.broker_id, record.incarnation_id, request, request_ms,
                                             record, unclean)
        self.findings.run(self._rules_registration,
                          Site(record.offset, record.timestamp_ms, broker_id=record.broker_id))

    def unclean(self, record: Registered, request: dict) -> bool:
        if self.settings.clean_shutdown_detection == "incarnation":  # the early reading
            return record.new_incarnation and (record.metadata_version or 0) >= MV_4_0_IV1
        # trunk (KAFKA-18635): clean only if the broker proves it saw its last epoch
        version = request.get("requestVersion", 3)
        return not (version >= 3 and request.get("previousBrokerEpoch", -1) == record.stored_epoch)

    def expire(self, now_ms: int) -> None:
        """Settle what waited longer than the match timeout, in event time."""
        limit = now_ms - self.settings.registration_match_timeout_ms
        for key, (request, request_ms) in list(self.pending_requests.items()):
            if request_ms < limit:
                del self.pending_requests[key]
                self.check.match = RegistrationMatch(key[0], key[1], request, request_ms, None, None)
                self.findings.run(self._rules_timeout, Site(-1, request_ms, broker_id=key[0]))
        for key, record in list(self.pending_records.items()):
            if record.timestamp_ms < limit:  # no registration input for it: nothing to verify
                del self.pending_records[key]

    # ------------------------------------------------------------ stored form (plain data)

    def stored(self) -> dict:
        return {
            "pending_requests": [(b, inc, request, ms) for (b, inc), (request, ms)
                                 in self.pending_requests.items()],
            "pending_records": [_record_to_plain(r) for r in self.pending_records.values()],
            "matched": list(self.matched),
        }

    def restore_stored(self, stored: dict) -> None:
        self.pending_requests = {(b, inc): (request, ms)
                                 for b, inc, request, ms in stored["pending_requests"]}
        records = [_record_from_plain(r) for r in stored["pending_records"]]
        self.pending_records = {(r.broker_id, r.incarnation_id): r for r in records}
        self.matched = {tuple(m) for m in stored["matched"]}


def _record_to_plain(r: Registered) -> tuple:
    return (r.broker_id, r.incarnation_id, r.offset, r.timestamp_ms, r.stored_epoch, r.new_incarnation,
            r.elr_enabled, r.metadata_version, r.still_in, r.removed_from_elr,
            [held_to_plain(h) for h in r.held])


def _record_from_plain(plain: tuple) -> Registered:
    (broker_id, incarnation_id, offset, timestamp_ms, stored_epoch, new_incarnation, elr_enabled,
     metadata_version, still_in, removed_from_elr, held) = plain
    r = Registered(broker_id, incarnation_id, offset, timestamp_ms, stored_epoch, new_incarnation,
                   elr_enabled, metadata_version)
    r.still_in = list(still_in)
    r.removed_from_elr = list(removed_from_elr)
    r.held = [held_from_plain(h) for h in held]
    return r
