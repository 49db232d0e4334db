"""The delegation_token_expired condition: a token the image holds whose expiration (or max)
timestamp is before the log's time. A controller with delegation tokens enabled removes it in
its sweep, every delegation.token.expiry.check.interval.ms; the interval opens at the first
record past the token's deadline and closes at its removal, or at a renewal past the log's
time. Its interval names the token (`resource`), not a partition."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.batches import NoOpRun
from kraft_audit.core.events import MetadataEvent
from kraft_audit.core.replay.conditions import (CONTROLLER_START_GRACE_S, TASK_GRACE_S, condition_bounds_seconds,
                                               past_bound)
from kraft_audit.core.replay.settings import CoreSettings
from kraft_audit.core.rules import load_catalog
from kraft_audit.sideinputs.server_properties import settings_from_properties

CATALOG = load_catalog()
NAME = "delegation_token_expired"


def token(token_id: str, issued: int, expires: int, most: int | None = None) -> tuple[str, dict]:
    return ("DELEGATION_TOKEN_RECORD", {
        "tokenId": token_id, "owner": "User:alice", "requester": "User:alice", "renewers": [],
        "issueTimestamp": issued, "expirationTimestamp": expires,
        "maxTimestamp": expires if most is None else most})


def removed(token_id: str) -> tuple[str, dict]:
    return ("REMOVE_DELEGATION_TOKEN_RECORD", {"tokenId": token_id})


def noops(log, n: int, every_ms: int = 500) -> list[MetadataEvent]:
    out = []
    for _ in range(n):
        log.now_ms += every_ms - 100  # batch() adds 100
        out += log.batch(("NO_OP_RECORD", {}))
    return out


def expired(out) -> list[tuple[str, int, int | None]]:
    return [(c.resource, c.start_offset, c.end_offset) for c in out.conditions if c.condition == NAME]


def created(log, token_id: str = "tok-a", life_ms: int = 1000) -> tuple[int, int]:
    """A token expiring `life_ms` after its record; (its record's offset, its deadline)."""
    log.batch(log.feature("metadata.version", 21))
    deadline = log.now_ms + 100 + life_ms
    return log.batch(token(token_id, log.now_ms + 100, deadline))[0].offset, deadline


def test_opens_at_the_first_record_past_the_deadline_and_closes_at_the_sweeps_removal(kraft_log):
    _at, deadline = created(kraft_log)
    quiet = noops(kraft_log, 6)  # 3 s of NoOps: the deadline passes at the third
    first_past = next(e for e in quiet if e.timestamp_ms > deadline)
    swept = kraft_log.batch(removed("tok-a"))[0]
    auditor = Auditor(CATALOG)
    out = auditor.process(kraft_log.events)
    assert expired(out) == [("tok-a", first_past.offset, None), ("tok-a", first_past.offset, swept.offset)]
    row = out.conditions[-1]
    assert (row.topic_id, row.partition, row.topic) == ("", -1, None)
    assert row.interval_id == f"c1/{NAME}/token/tok-a/{first_past.offset}"
    assert row.start_ms == first_past.timestamp_ms and row.end_ms == swept.timestamp_ms
    assert auditor.gauges().delegation_token_expired == 0 and auditor.open_conditions() == []
    assert out.violations == []


def test_a_record_at_the_deadline_itself_is_not_past_it(kraft_log):
    """Kafka's sweep removes a token whose deadline is before its clock, not at it."""
    kraft_log.batch(kraft_log.feature("metadata.version", 21))
    kraft_log.batch(token("tok-a", kraft_log.now_ms, kraft_log.now_ms + 200))  # deadline = next batch
    kraft_log.batch(("NO_OP_RECORD", {}))
    assert expired(Auditor(CATALOG).process(kraft_log.events)) == []
    after = kraft_log.batch(("NO_OP_RECORD", {}))[0]
    assert expired(Auditor(CATALOG).process(kraft_log.events)) == [("tok-a", after.offset, None)]


def test_the_max_timestamp_counts_when_it_comes_first(kraft_log):
    kraft_log.batch(kraft_log.feature("metadata.version", 21))
    kraft_log.batch(token("tok-a", kraft_log.now_ms, kraft_log.now_ms + 60_000, most=kraft_log.now_ms + 300))
    quiet = noops(kraft_log, 2)
    assert expired(Auditor(CATALOG).process(kraft_log.events)) == [("tok-a", quiet[0].offset, None)]


def test_a_renewal_past_the_logs_time_closes_it_one_before_it_does_not(kraft_log):
    _at, deadline = created(kraft_log)
    quiet = noops(kraft_log, 4)
    opened = next(e for e in quiet if e.timestamp_ms > deadline).offset
    stale = kraft_log.batch(token("tok-a", deadline - 1100, deadline + 50))[0]  # still before the log's time
    renewed = kraft_log.batch(token("tok-a", deadline - 1100, kraft_log.now_ms + 100 + 60_000))[0]
    out = Auditor(CATALOG).process(kraft_log.events)
    assert stale.timestamp_ms > deadline + 50
    assert expired(out) == [("tok-a", opened, None), ("tok-a", opened, renewed.offset)]


def test_each_token_has_its_interval_and_the_gauge_counts_the_open_ones(kraft_log):
    kraft_log.batch(kraft_log.feature("metadata.version", 21))
    now = kraft_log.now_ms
    kraft_log.batch(token("tok-a", now, now + 500), token("tok-b", now, now + 500),
                    token("tok-c", now, now + 3_600_000))
    quiet = noops(kraft_log, 3)
    auditor = Auditor(CATALOG)
    out = auditor.process(kraft_log.events)
    assert sorted(expired(out)) == [("tok-a", quiet[0].offset, None), ("tok-b", quiet[0].offset, None)]
    assert len({c.interval_id for c in out.conditions}) == 2
    assert auditor.gauges().delegation_token_expired == 2
    # the stored form keeps them open: the removal of one closes it after a restart
    restored = Auditor.from_snapshot(auditor.snapshot(), CATALOG)
    assert restored.gauges().delegation_token_expired == 2
    gone = kraft_log.batch(removed("tok-b"))
    out2 = restored.process(gone)
    assert expired(out2) == [("tok-b", quiet[0].offset, gone[0].offset)]
    assert [c.resource for c in restored.open_conditions()] == ["tok-a"]
    assert restored.gauges().delegation_token_expired == 1


def test_a_run_of_noops_opens_it_at_the_noop_that_passes_the_deadline(tmp_path):
    """The quiet path places a run of NoOp batches at once (check reads them as NoOpRuns): a
    run holding the record that passes a deadline is taken record by record, so the interval
    opens where the time passed, as it does without runs."""
    from kraft_audit.core.codec.logdir import LogDirWriter, read_log_dir

    with LogDirWriter(tmp_path, "c") as writer:
        writer.append([("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 21})], 1000)
        writer.append([("DELEGATION_TOKEN_RECORD", 0, dict(token("tok-a", 1000, 3250)[1]))], 1000)
        for i in range(10):
            writer.append([("NO_OP_RECORD", 0, {})], 1500 + 500 * i)  # 3500 at offset 6
    with_runs = list(read_log_dir(tmp_path, "c", noop_runs=True))
    assert any(isinstance(e, NoOpRun) for e in with_runs)
    for events in (with_runs, list(read_log_dir(tmp_path, "c"))):
        out = Auditor(CATALOG).process(events)
        assert expired(out) == [("tok-a", 6, None)]


def test_nothing_opens_when_the_controller_does_not_sweep(kraft_log):
    created(kraft_log)
    noops(kraft_log, 6)
    auditor = Auditor(CATALOG, settings={"delegation_token_expiry_sweep": False})
    assert expired(auditor.process(kraft_log.events)) == []
    assert NAME not in condition_bounds_seconds(auditor.settings)


def test_the_bound_is_the_controllers_check_interval_and_a_grace(tmp_path):
    assert condition_bounds_seconds(CoreSettings())[NAME] == 3600 + TASK_GRACE_S  # Kafka's 1 h
    props = tmp_path / "server.properties"
    props.write_text("delegation.token.secret.key=s3cret\ndelegation.token.expiry.check.interval.ms=2500\n")
    settings = settings_from_properties(props)
    assert settings == {"delegation_token_expiry_sweep": True,
                        "delegation_token_expiry_check_interval_ms": 2500}
    bounds = condition_bounds_seconds(CoreSettings.of(settings))
    assert bounds[NAME] == 3 + TASK_GRACE_S
    assert not past_bound(NAME, 0, bounds[NAME] * 1000, bounds)
    assert past_bound(NAME, 0, bounds[NAME] * 1000 + 1, bounds)
    props.write_text("delegation.token.secret.key=\n")  # tokens disabled: no sweep
    assert settings_from_properties(props) == {"delegation_token_expiry_sweep": False}
    with pytest.raises(ValueError, match="delegation_token_expiry_check_interval_ms"):
        CoreSettings.of({"delegation_token_expiry_check_interval_ms": 0})


def test_a_new_active_controller_moves_the_deadline():
    """The sweep's timer starts again when a controller becomes active, which is a little
    after its LeaderChange record: the deadline moves to one bound (and that margin) after
    it, unless the controller before it was seen alive (wrote a record) past the deadline."""
    bounds, grace = {NAME: 10}, CONTROLLER_START_GRACE_S * 1000
    assert past_bound(NAME, 0, 12_000, bounds, ())
    assert not past_bound(NAME, 0, 12_000, bounds, [(4_000, 5_000)])
    assert not past_bound(NAME, 0, 15_000 + grace, bounds, [(4_000, 5_000)])
    assert past_bound(NAME, 0, 15_000 + grace + 1, bounds, [(4_000, 5_000)])
    # one after another
    assert not past_bound(NAME, 0, 34_000, bounds, [(4_000, 5_000), (18_000, 19_000)])
    # the old controller gone before the deadline, the new one elected after it
    assert not past_bound(NAME, 0, 25_000, bounds, [(9_000, 11_000)])
    # the old controller seen alive past the deadline: overdue whatever comes next
    assert past_bound(NAME, 0, 25_000, bounds, [(10_001, 11_000)])
    # a controller that came after the interval's end counts for nothing
    assert past_bound(NAME, 0, 12_000, bounds, [(11_000, 13_000)])


LIVENESS = Path(__file__).parent / "fixtures" / "kraft-liveness"


@pytest.mark.parametrize("version", sorted(p.name for p in LIVENESS.iterdir() if p.is_dir()))
def test_real_sweep_closes_the_interval_within_the_bound_and_the_log_left_without_it(version, tmp_path):
    """A real controller with tokens enabled and an 8 s check interval (its settings kept
    beside the log) removes a token of a 3 s max lifetime in its sweep: the interval opens at
    a NoOp past the token's deadline and closes at the sweep's removal within the bound. The
    log left without that removal (class missing-liveness) holds it open past the bound, seen
    only with the cluster's bound, not with Kafka's default (1 h)."""
    from kraft_audit.core.codec.logdir import read_log_dir
    from kraft_audit.core.events import MetadataEvent
    from kraft_audit.testing.mutate import SETTINGS_FILE, audit, flagged, generate, log_settings, write_log

    log = LIVENESS / version
    assert log_settings(log)["delegation_token_expiry_check_interval_ms"] == 8000
    events = [e for e in read_log_dir(log, "") if isinstance(e, MetadataEvent)]
    made = [e for e in events if e.type == "DELEGATION_TOKEN_RECORD"]
    removals = {e.data["tokenId"]: e for e in events if e.type == "REMOVE_DELEGATION_TOKEN_RECORD"}
    assert made and all(m.data["tokenId"] in removals for m in made)  # every token swept
    unmutated = audit(log)
    assert unmutated.violations == [] and unmutated.overdue() == []
    bound = unmutated.bounds[NAME]
    assert bound == 8 + TASK_GRACE_S
    intervals = [c for c in unmutated.intervals if c.condition == NAME]
    assert intervals  # the liveness script makes tokens until one is swept after a NoOp past its deadline
    for c in intervals:
        swept = removals[c.resource]
        assert (c.end_offset, c.end_ms) == (swept.offset, swept.timestamp_ms)
        deadline = next(m.data["expirationTimestamp"] for m in made if m.data["tokenId"] == c.resource)
        assert deadline < c.start_ms <= c.end_ms <= deadline + bound * 1000
    mutants = [m for m in generate(log) if m.liveness and m.liveness[0] == NAME]
    assert len(mutants) == len(made)
    for n, mutant in enumerate(mutants):
        target = write_log(log, mutant.frames, tmp_path / str(n))
        assert flagged(mutant, target, audit(target)), mutant.what
        (target / SETTINGS_FILE).unlink()  # Kafka's default bound (1 h): nothing overdue
        assert not flagged(mutant, target, audit(target)), mutant.what


def test_check_names_the_token_open_past_the_controllers_bound(tmp_path, capsys):
    """`kraft-audit check` on the real liveness log left without the sweep's removal, with
    the controller's server.properties: the token's interval open past the bound, by name."""
    import argparse
    import json

    from kraft_audit.cli import check
    from kraft_audit.testing.mutate import SETTINGS_FILE, generate, write_log

    def run(*argv) -> int:
        parser = argparse.ArgumentParser()
        check.add_arguments(parser)
        return check.run(parser.parse_args([str(a) for a in argv]))

    log = LIVENESS / "4.3.1"
    run(log, "--server-properties", log / SETTINGS_FILE, "--json")
    report = json.loads(capsys.readouterr().out)
    assert report["findings"] == [] and report["condition_bounds_seconds"][NAME] == 13
    assert [c for c in report["open_conditions"] if c["condition"] == NAME] == []
    mutant = next(m for m in generate(log) if m.liveness and m.liveness[0] == NAME)
    target = write_log(log, mutant.frames, tmp_path / "mutant")
    run(target, "--server-properties", target / SETTINGS_FILE, "--json")
    report = json.loads(capsys.readouterr().out)
    (opened,) = [c for c in report["open_conditions"] if c["condition"] == NAME]
    token_id = mutant.liveness[1].removeprefix("token/")
    assert (opened["resource"], opened["topic_id"], opened["partition"]) == (token_id, "", -1)
    assert opened["open_seconds"] > 13
    run(target, "--server-properties", target / SETTINGS_FILE)
    text = capsys.readouterr().out
    assert f"{NAME} x1; tokens {token_id} (1);" in text
    assert "1 open longer than the controller's bound (13 s;" in text
    assert f"token {token_id} since offset {opened['start_offset']}" in text
