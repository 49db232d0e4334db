"""directory_unassigned: a replica placed in UNASSIGNED on a broker that can report where it made
it (registered, unfenced, not in controlled shutdown, its directories registered) is given its
directory within a bound; the broker reports it and the controller writes it."""

from __future__ import annotations

from kraft_audit.core.audit import Auditor
from kraft_audit.core.replay.conditions import condition_bounds_seconds, past_bound
from kraft_audit.core.replay.settings import CoreSettings
from kraft_audit.core.rules import load_catalog

CATALOG = load_catalog()
TID = "UUUUUUUUUUUUUUUUUUUUUA"
UNASSIGNED = "AAAAAAAAAAAAAAAAAAAAAQ"
MIGRATING = "AAAAAAAAAAAAAAAAAAAAAA"
DIRS = {b: (f"d{b}aaxxxxxxxxxxxxxxxxxA", f"d{b}bbxxxxxxxxxxxxxxxxxA") for b in (1, 2, 3)}


def unassigned(out) -> list[tuple[int, int | None]]:
    return [(c.start_offset, c.end_offset) for c in out.conditions if c.condition == "directory_unassigned"]


def cluster(log, dirs=DIRS) -> None:
    """Brokers 1-3 up, two directories each (or the directories `dirs` gives)."""
    log.batch(log.feature("metadata.version", 21))
    for b in (1, 2, 3):
        kind, data = log.register(b, epoch=b * 10)
        log.batch((kind, {**data, "logDirs": list(dirs.get(b, ()))}))


def placed(log, directories) -> int:
    return log.batch(log.topic("t", TID),
                     log.partition(TID, 0, [1, 2, 3], directories=list(directories)))[-1].offset


def test_open_from_the_placement_until_the_broker_reports_its_directory(kraft_log):
    cluster(kraft_log)
    at = placed(kraft_log, [DIRS[1][0], UNASSIGNED, UNASSIGNED])
    kraft_log.batch(kraft_log.change(TID, 0, directories=[DIRS[1][0], DIRS[2][1], UNASSIGNED]))
    last = kraft_log.batch(kraft_log.change(TID, 0, directories=[DIRS[1][0], DIRS[2][1], DIRS[3][0]]))
    auditor = Auditor(CATALOG)
    out = auditor.process(kraft_log.events)
    # one interval for the partition: open while any replica waits (past the first
    # report, which leaves one), closed by the last report
    assert unassigned(out) == [(at, None), (at, last[0].offset)]
    assert auditor.gauges().directory_unassigned == 0
    assert out.violations == []


def test_a_broker_that_cannot_report_closes_it_and_its_return_opens_it(kraft_log):
    cluster(kraft_log)
    at = placed(kraft_log, [DIRS[1][0], DIRS[2][0], UNASSIGNED])
    fenced = kraft_log.batch(kraft_log.fence(3))[0].offset
    back = kraft_log.batch(kraft_log.unfence(3))[0].offset
    auditor = Auditor(CATALOG)
    out = auditor.process(kraft_log.events)
    assert unassigned(out) == [(at, None), (at, fenced), (back, None)]
    assert auditor.gauges().directory_unassigned == 1
    # kept by the stored form: the report after a restart closes the interval opened before it
    restored = Auditor.from_bytes(auditor.to_bytes(), CATALOG)
    start = len(kraft_log.events)
    report = kraft_log.batch(kraft_log.change(TID, 0, directories=[DIRS[1][0], DIRS[2][0], DIRS[3][1]]))
    assert unassigned(restored.process(kraft_log.events[start:])) == [(back, report[0].offset)]


def test_a_controlled_shutdown_closes_it(kraft_log):
    cluster(kraft_log)
    at = placed(kraft_log, [DIRS[1][0], DIRS[2][0], UNASSIGNED])
    shutdown = kraft_log.batch(kraft_log.controlled_shutdown(3))[0].offset
    assert unassigned(Auditor(CATALOG).process(kraft_log.events)) == [(at, None), (at, shutdown)]


def test_nothing_opens_for_a_broker_with_no_directories_registered_or_a_migrating_replica(kraft_log):
    cluster(kraft_log, dirs={1: DIRS[1], 2: DIRS[2]})  # broker 3 registered without directories
    placed(kraft_log, [MIGRATING, DIRS[2][0], UNASSIGNED])
    assert unassigned(Auditor(CATALOG).process(kraft_log.events)) == []


def test_a_registration_with_directories_opens_it_on_the_brokers_unassigned_replicas(kraft_log):
    cluster(kraft_log, dirs={1: DIRS[1], 2: DIRS[2]})
    placed(kraft_log, [DIRS[1][0], DIRS[2][0], UNASSIGNED])
    kind, data = kraft_log.register(3, epoch=31, incarnation="inc-3b")
    registered = kraft_log.batch((kind, {**data, "logDirs": list(DIRS[3])}))[0].offset
    assert unassigned(Auditor(CATALOG).process(kraft_log.events)) == [(registered, None)]


def test_past_its_bound_when_the_report_never_comes(kraft_log):
    """What `check` counts: the setting's bound (30 s by default), in the log's time."""
    cluster(kraft_log)
    placed(kraft_log, [DIRS[1][0], DIRS[2][0], UNASSIGNED])
    auditor = Auditor(CATALOG)
    out = auditor.process(kraft_log.events)
    (start,) = [c for c in out.conditions if c.condition == "directory_unassigned"]
    bounds = condition_bounds_seconds(CoreSettings())
    assert bounds["directory_unassigned"] == 30
    assert not past_bound("directory_unassigned", start.start_ms, start.start_ms + 30_000, bounds)
    assert past_bound("directory_unassigned", start.start_ms, start.start_ms + 30_001, bounds)
    tight = condition_bounds_seconds(CoreSettings.of({"directory_assignment_bound_seconds": 2}))
    assert past_bound("directory_unassigned", start.start_ms, start.start_ms + 2_001, tight)
