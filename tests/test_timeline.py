"""`kraft-audit timeline`: one partition's states, violations and broker events, drawn.

The data is checked against an independent replay (ClusterState alone, as `describe`
does it), the simulator's own final state and ground truth, and the raw broker
records; the pictures are rendered for real and opened again as images.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from PIL import Image

from conftest import REAL_FIXTURES

from kraft_audit.core.audit import Auditor
from kraft_audit.cli.describe import replay
from kraft_audit.cli.timeline import log_timeline
from kraft_audit.cli.dump import read_path
from kraft_audit.cli.main import EXIT_USAGE, main
from kraft_audit.core.events import MetadataEvent
from kraft_audit.core.rules import load_catalog
from kraft_audit.sim import load_scenario, simulate
from kraft_audit.spark.sinks import DeltaSinks
from kraft_audit.tables import core_to_arrow
from kraft_audit.timeline import (CONTROLLED_SHUTDOWN, FENCED, REGISTERED, UNFENCED, TimelineError,
                                  partition_timeline, timeline_from_tables)
from kraft_audit.timeline_draw import (LAST_KNOWN_ELR_COLOR, RECOVERY_COLORS, ROLE_COLORS, figure,
                                       render)

INCIDENT = Path(__file__).parent / "fixtures" / "timeline-incident.yaml"
INCIDENT_FAULT = "isr-grows-while-recovering"


@pytest.fixture(scope="module")
def incident(tmp_path_factory) -> Path:
    """The sample of docs/timeline.md: ELR in use, an unclean election, a controller bug."""
    out = tmp_path_factory.mktemp("timeline-incident")
    simulate(load_scenario(str(INCIDENT)), out, seed=0, faults=[(INCIDENT_FAULT, 0)])
    return out


@pytest.fixture(scope="module")
def shutdowns(simulated_log) -> Path:
    """Crashes, a controlled shutdown, restarts, and a wrong ELR on one partition."""
    return simulated_log("unclean-shutdown-elr", seed=1, faults=[("wrong-elr", 2)])


def timeline_of(path: Path, topic: str, partition: int):
    return partition_timeline(read_path(path, None, "earliest"), topic, partition)


def colors_of(png: Path) -> set[tuple[int, int, int]]:
    """The colours of the plot, left of the legend (which sits in the right fifth)."""
    image = Image.open(png).convert("RGB")
    plot = image.crop((0, 0, int(image.width * 0.8), image.height))
    return {rgb for _, rgb in plot.getcolors(maxcolors=1 << 20)}


def rgb(hex_color: str) -> tuple[int, int, int]:
    return tuple(int(hex_color[i:i + 2], 16) for i in (1, 3, 5))


# ------------------------------------------------------------------ the data


def test_every_state_is_the_partition_as_replayed_to_its_offset(incident):
    timeline = timeline_of(incident, "payments", 0)
    assert [s.offset for s in timeline.states] == sorted({s.offset for s in timeline.states})
    for state in timeline.states:
        replayed = replay(incident, None, state.offset)
        part = replayed.partitions[(replayed.topic_ids["payments"], 0)]
        assert (state.leader, state.isr, state.elr, state.last_known_elr, state.replicas,
                state.leader_recovery_state, state.leader_epoch, state.partition_epoch) == (
            part.leader, list(part.isr), list(part.elr), list(part.last_known_elr),
            list(part.replicas), part.leader_recovery_state, part.leader_epoch,
            part.partition_epoch), f"offset {state.offset}"
    # and the last one is what the simulator says it wrote
    final = next(p for p in json.loads((incident / "final-state.json").read_text())
                 if p["topic"] == "payments" and p["partition"] == 0)
    last = timeline.states[-1]
    assert (last.leader, last.isr, last.elr, last.leader_epoch) == (
        final["leader"], final["isr"], final["elr"], final["leader_epoch"])


def test_the_incident_uses_the_elr_then_elects_uncleanly(incident):
    """What the sample picture is there to show; if the simulator stopped producing it,
    docs/timeline-example.png would no longer match its scenario."""
    states = timeline_of(incident, "payments", 0).states
    assert any(s.elr for s in states) and any(s.last_known_elr for s in states)
    unclean = [after for before, after in zip(states, states[1:])
               if after.leader_recovery_state == 1 and before.leader_recovery_state == 0
               and after.leader_epoch > before.leader_epoch
               and after.leader not in (*before.isr, *before.elr)]
    assert len(unclean) == 1
    assert not unclean[0].elr and unclean[0].isr == [unclean[0].leader]


def test_violations_are_the_audits_on_this_partition(shutdowns, incident):
    fault = json.loads((shutdowns / "faults.json").read_text())[0]
    everything = Auditor(load_catalog()).process(read_path(shutdowns, None, "earliest")).violations
    assert everything, "the injected fault must be found"
    timeline = timeline_of(shutdowns, fault["topic"], fault["partition"])
    expected = [v for v in everything
                if v.topic == fault["topic"] and v.partition == fault["partition"]]
    assert timeline.violations == expected
    found = {(v.rule_id, v.offset) for v in timeline.violations}
    assert (fault["rule_id"], fault["offset"]) in found
    other = next(s for s in json.loads((shutdowns / "final-state.json").read_text())
                 if (s["topic"], s["partition"]) != (fault["topic"], fault["partition"]))
    assert all(v.partition == other["partition"] and v.topic == other["topic"]
               for v in timeline_of(shutdowns, other["topic"], other["partition"]).violations)

    incident_fault = json.loads((incident / "faults.json").read_text())[0]
    found = {(v.rule_id, v.offset) for v in timeline_of(incident, "payments", 0).violations}
    assert (incident_fault["rule_id"], incident_fault["offset"]) in found


def test_broker_events_are_the_broker_records_of_its_replicas(shutdowns):
    timeline = timeline_of(shutdowns, "orders", 0)
    replicas = set(timeline.replicas)
    expected = set()
    for event in read_path(shutdowns, None, "earliest"):
        if not isinstance(event, MetadataEvent) or event.data.get("brokerId") not in replicas:
            continue
        data, at = event.data, (event.data.get("brokerId"), event.offset)
        if event.type == "REGISTER_BROKER_RECORD":
            expected.add((*at, REGISTERED))
        elif event.type == "BROKER_REGISTRATION_CHANGE_RECORD":
            if data.get("fenced") == 1:
                expected.add((*at, FENCED))
            elif data.get("fenced") == -1:
                expected.add((*at, UNFENCED))
            if data.get("inControlledShutdown") == 1:
                expected.add((*at, CONTROLLED_SHUTDOWN))
    got = {(e.broker_id, e.offset, e.kind) for e in timeline.broker_events}
    assert got == expected
    assert CONTROLLED_SHUTDOWN in {kind for _, _, kind in got}
    restarts = [e for e in timeline.broker_events if e.kind == REGISTERED and e.last_shutdown]
    assert restarts and {e.last_shutdown for e in restarts} <= {"clean", "unclean"}


def test_no_such_partition_or_nothing_decoded_is_an_error(incident, tmp_path):
    with pytest.raises(TimelineError,
                       match=r"topic 'nope' does not exist; the log's topics: payments"):
        timeline_of(incident, "nope", 0)
    with pytest.raises(TimelineError, match=r"'paymnts' does not exist; did you mean payments\?"):
        timeline_of(incident, "paymnts", 0)
    with pytest.raises(TimelineError, match=r"no partition 3 \(its partitions: 0\)"):
        timeline_of(incident, "payments", 3)
    garbage = tmp_path / "garbage.log"
    garbage.write_bytes(os.urandom(4096))
    with pytest.raises(TimelineError, match="no record could be decoded"):
        timeline_of(garbage, "payments", 0)


def test_a_topic_deleted_and_created_again_keeps_one_timeline(tmp_path):
    scenario = tmp_path / "recreate.yaml"
    scenario.write_text("""name: recreate
cluster: {brokers: 3, metadata_version: 4.1-IV0, elr: true, min_insync_replicas: 2}
topics:
  - {name: gone, partitions: 2, replication_factor: 3}
steps:
  - delete_topic: gone
  - create_topic: {name: gone, partitions: 1, replication_factor: 2}
""")
    simulate(load_scenario(str(scenario)), tmp_path / "log", seed=1)
    timeline = timeline_of(tmp_path / "log", "gone", 0)
    deleted = [i for i, s in enumerate(timeline.states) if s.deleted]
    assert len(deleted) == 1 and 0 < deleted[0] < len(timeline.states) - 1
    before, after = timeline.states[deleted[0] - 1], timeline.states[-1]
    assert before.topic_id != after.topic_id
    assert (len(before.replicas), len(after.replicas)) == (3, 2)
    png = render(timeline, tmp_path / "recreated.png")
    assert Image.open(png).format == "PNG"


# ------------------------------------------------------------------ the pictures


def test_png_shows_roles_elr_and_recovery(incident, tmp_path):
    png = render(timeline_of(incident, "payments", 0), tmp_path / "incident.png")
    image = Image.open(png)
    assert image.format == "PNG"
    assert 1000 <= image.width <= 2000 and 400 <= image.height <= 1200
    colors = colors_of(png)
    for drawn in (ROLE_COLORS["leader"], ROLE_COLORS["ISR"], ROLE_COLORS["ELR"],
                  LAST_KNOWN_ELR_COLOR, RECOVERY_COLORS[1]):
        assert rgb(drawn) in colors, drawn
    assert png.stat().st_size < 300_000


def test_a_log_without_elr_draws_no_elr(tmp_path):
    """A real KRaft log (Kafka 3.x, no ELR): the same drawing, and no ELR or RECOVERING bars."""
    fixture = REAL_FIXTURES / "subpxl__streamprocessing"
    timeline = timeline_of(fixture, "__consumer_offsets", 0)
    final = replay(fixture, None, None)
    part = final.partitions[(final.topic_ids["__consumer_offsets"], 0)]
    last = timeline.states[-1]
    assert (last.leader, last.leader_epoch) == (part.leader, part.leader_epoch)
    png = render(timeline, tmp_path / "real.png")
    colors = colors_of(png)
    assert rgb(ROLE_COLORS["ISR"]) in colors
    assert rgb(ROLE_COLORS["ELR"]) not in colors and rgb(RECOVERY_COLORS[1]) not in colors


def test_html_is_one_self_contained_page(incident, tmp_path):
    timeline = timeline_of(incident, "payments", 0)
    page = render(timeline, tmp_path / "incident.html").read_text()
    assert "<script" not in page and not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    picture = re.search(r'src="data:image/png;base64,([^"]+)"', page).group(1)
    assert Image.open(io.BytesIO(base64.b64decode(picture))).format == "PNG"
    for violation in timeline.violations:
        assert violation.rule_id in page
    assert page.count("<tr>") == 3 + len(timeline.states) + len(timeline.violations) + len(
        timeline.broker_events)


# ------------------------------------------------------------------ the command


def test_command_writes_the_picture(incident, tmp_path, capsys):
    out = tmp_path / "t.svg"
    assert main(["timeline", str(incident), "--topic", "payments", "--partition", "0",
                 "--out", str(out)]) == 0
    assert out.read_text().lstrip().startswith("<?xml") and "<svg" in out.read_text()
    assert capsys.readouterr().out.startswith(f"{out}: payments-0, ")


@pytest.mark.parametrize("argv, message", [
    (["--topic", "nope", "--partition", "0"], "topic 'nope' does not exist"),
    (["--topic", "payments", "--partition", "9"], "has no partition 9"),
    (["--topic", "payments", "--partition", "0", "--out", "x.jpg"],
     "must end in .png, .svg, .html"),
])
def test_command_errors(incident, tmp_path, capsys, argv, message):
    if "--out" not in argv:
        argv = [*argv, "--out", str(tmp_path / "t.png")]
    code = main(["timeline", str(incident), *argv])
    assert code == EXIT_USAGE
    assert message in capsys.readouterr().err
    assert not (tmp_path / "t.png").exists()


def test_command_on_undecodable_or_missing_input(tmp_path, capsys):
    garbage = tmp_path / "garbage.log"
    garbage.write_bytes(os.urandom(4096))
    argv = ["--topic", "payments", "--partition", "0", "--out", str(tmp_path / "t.png")]
    assert main(["timeline", str(garbage), *argv]) == EXIT_USAGE
    assert "no usable record in" in capsys.readouterr().err
    assert main(["timeline", str(tmp_path / "missing"), *argv]) == EXIT_USAGE
    assert "does not exist" in capsys.readouterr().err


# ------------------------------------------------------------------ from the Delta tables


@pytest.fixture(scope="module")
def incident_tables(incident, tmp_path_factory, output_rows) -> Path:
    """The audit of the incident written as the job writes it: core rows to Arrow, then
    its own Delta sinks (delta-rs)."""
    root = tmp_path_factory.mktemp("incident-tables")
    auditor = Auditor(load_catalog())
    out = auditor.process(read_path(incident, None, "earliest"))
    progress = output_rows.progress(0, auditor.last_offset)
    progress["clusters"][0].update(cluster_id=auditor.cluster_id,
                                   last_timestamp_ms=auditor.last_timestamp_ms)
    tables = {"violations": out.violations, "partition_history": out.partitions,
              "conditions": out.conditions, "brokers": out.brokers}
    DeltaSinks(str(root), app_id="timeline").write_batch(0, {
        **{name: core_to_arrow(name, rows) for name, rows in tables.items()},
        "progress": [progress]})
    return root


def test_tables_give_the_logs_timeline_without_broker_events(incident, incident_tables):
    from_log = timeline_of(incident, "payments", 0)
    from_tables = timeline_from_tables(str(incident_tables), "payments", 0)
    assert from_tables.states == from_log.states
    assert sorted(from_tables.violations, key=lambda v: v.violation_id) == sorted(
        from_log.violations, key=lambda v: v.violation_id)
    assert from_tables.conditions == from_log.conditions
    assert (from_tables.last_offset, from_tables.last_timestamp_ms) == (
        from_log.last_offset, from_log.last_timestamp_ms)
    assert from_tables.broker_events == []  # the brokers table keeps only the latest row
    with pytest.raises(TimelineError, match="topic 'nope' does not exist"):
        timeline_from_tables(str(incident_tables), "nope", 0)


def test_command_from_tables(incident_tables, tmp_path, capsys):
    out = tmp_path / "t.png"
    argv = ["--topic", "payments", "--partition", "0", "--out", str(out)]
    assert main(["timeline", "--tables", str(incident_tables), *argv]) == 0
    assert Image.open(out).format == "PNG"
    capsys.readouterr()
    assert main(["timeline", "--tables", str(tmp_path), *argv]) == EXIT_USAGE
    assert "no Delta table 'partition_history'" in capsys.readouterr().err
    assert main(["timeline", str(tmp_path), "--tables", str(incident_tables), *argv]) == EXIT_USAGE
    assert "either PATH" in capsys.readouterr().err


# ------------------------------------------------------------------ dates and windows


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def drawn(timeline):
    """(title, top-axis tick labels, x limits) of the figure as drawn."""
    fig = figure(timeline)
    try:
        ax, top = fig.axes[0], fig.axes[1]
        return (ax.get_title(loc="left"), [t.get_text() for t in top.get_xticklabels()],
                ax.get_xlim())
    finally:
        plt.close(fig)


def test_title_and_time_axis_carry_iso_dates(incident):
    timeline = timeline_of(incident, "payments", 0)
    title, ticks, _ = drawn(timeline)
    first, last = timeline.states[0].timestamp_ms, timeline.last_timestamp_ms
    assert f"{iso(first)} – {iso(last)}" in title
    assert ticks and all(re.fullmatch(r"\d{4}-\d\d-\d\d\n\d\d:\d\d:\d\dZ", t) for t in ticks)
    assert ticks[0].startswith(iso(first)[:10])


def test_html_tables_read_iso_times_and_no_leader_as_none(incident, tmp_path):
    timeline = timeline_of(incident, "payments", 0)
    page = render(timeline, tmp_path / "incident.html").read_text()
    leaderless = next(s for s in timeline.states if s.leader == -1)
    stamp = datetime.fromtimestamp(leaderless.timestamp_ms / 1000, timezone.utc)
    row = re.search(rf"<tr><td>{leaderless.offset}</td>.*?</tr>", page).group(0)
    assert f"<td>{stamp:%Y-%m-%dT%H:%M:%S}.{stamp.microsecond // 1000:03d}Z</td>" in row
    assert "<td>none</td>" in row and "<td>-1</td>" not in row


def window_command(incident, tmp_path, capsys, *bounds):
    out = tmp_path / "w.png"
    code = main(["timeline", str(incident), "--topic", "payments", "--partition", "0",
                 "--out", str(out), *bounds])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_since_and_until_offsets_pick_the_window(incident, tmp_path, capsys):
    whole = timeline_of(incident, "payments", 0)
    # a window that starts inside a state and holds the violations
    since = whole.states[2].offset + 1
    until = max(v.offset for v in whole.violations) + 5
    args = timeline_args(incident, "--since", str(since), "--until", str(until))
    window = log_timeline(args)
    assert window.states[0] == whole.states[2]  # in force when the window starts
    assert window.states[1:] == [s for s in whole.states if since < s.offset <= until]
    assert window.violations == whole.violations
    assert (window.first_offset, window.end_offset) == (since, until)
    title, _, (low, high) = drawn(window)
    assert low < since < low + (until - since) * 0.05 and high - (until - since) * 0.05 < until < high
    times = {e.offset: e.timestamp_ms for e in read_path(incident, None, "earliest")
             if isinstance(e, MetadataEvent)}
    assert f"{iso(times[since])} – {iso(times[until])}" in title
    code, out, _ = window_command(incident, tmp_path, capsys, "--since", str(since),
                                  "--until", str(until))
    assert code == 0 and f"offsets {since}–{until} (" in out
    assert Image.open(tmp_path / "w.png").format == "PNG"


def test_since_and_until_times_are_the_records_at_or_within_them(incident, tmp_path, capsys):
    events = [e for e in read_path(incident, None, "earliest") if isinstance(e, MetadataEvent)]
    middle = events[len(events) // 2]
    since_ms, until_ms = middle.timestamp_ms - 20_000 + 1, middle.timestamp_ms + 20_000 - 1
    first = next(e.offset for e in events if e.timestamp_ms >= since_ms)
    last = max(e.offset for e in events if e.timestamp_ms <= until_ms)
    window = log_timeline(timeline_args(incident, "--since", iso_ms(since_ms),
                                        "--until", iso_ms(until_ms)))
    assert (window.first_offset, window.end_offset) == (first, last)
    code, out, _ = window_command(incident, tmp_path, capsys, "--since", iso_ms(since_ms),
                                  "--until", iso_ms(until_ms))
    assert code == 0 and f"offsets {first}–{last} (" in out


def test_a_window_without_records_is_a_usage_error(incident, tmp_path, capsys):
    for bounds, message in ((["--since", "100000"], "no record at or after --since offset 100000"),
                            (["--until", "2001-01-01"], "no record at or before --until"),
                            (["--since", "200", "--until", "100"], "the window is empty")):
        code, _, err = window_command(incident, tmp_path, capsys, *bounds)
        assert code == EXIT_USAGE and message in err
    with pytest.raises(SystemExit):
        main(["timeline", str(incident), "--topic", "payments", "--partition", "0",
              "--out", str(tmp_path / "w.png"), "--since", "last tuesday"])
    assert "is not an ISO-8601 time" in capsys.readouterr().err


def timeline_args(path, *bounds, topic="payments"):
    import argparse

    from kraft_audit.cli import timeline as timeline_cli

    parser = argparse.ArgumentParser()
    timeline_cli.add_arguments(parser)
    return parser.parse_args([str(path), "--topic", topic, "--partition", "0",
                              "--out", "unused.png", *bounds])


def iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds")


def test_a_log_that_starts_mid_history_is_said_partial(tmp_path, capsys):
    from kraft_audit.cli.main import main
    from log_cuts import later_segment

    later, start = later_segment(tmp_path)
    main(["timeline", str(later), "--cluster-id", "c", "--topic", "TestTopicPatient",
          "--partition", "0", "--out", str(tmp_path / "t.html")])
    assert f"# partial log: it starts at offset {start} without a snapshot" in capsys.readouterr().err


def test_a_log_booted_from_a_snapshot_draws_its_records_at_the_snapshots_offset(tmp_path):
    """A snapshot's records carry their positions in the file (0, 1, 2, ...): drawn there,
    a partition would seem to exist from offset 5. They belong where the snapshot ends."""
    from log_cuts import RENO, RENO_SNAPSHOT, RENO_SNAPSHOT_END, booted_from_snapshot

    booted = booted_from_snapshot(tmp_path / "booted")
    [header] = [e for e in read_path(booted / "__cluster_metadata-0" / RENO_SNAPSHOT, None, "earliest")
                if isinstance(e, MetadataEvent) and e.type == "SNAPSHOT_HEADER"]
    placed = (RENO_SNAPSHOT_END - 1, header.data["lastContainedLogTimestamp"])
    for topic in ("belajarkafka", "__consumer_offsets"):
        whole = log_timeline(timeline_args(RENO, topic=topic))
        from_snapshot = log_timeline(timeline_args(booted, topic=topic))
        first = from_snapshot.states[0]
        assert (first.offset, first.timestamp_ms) == placed
        # the state the snapshot holds is the whole log's at its end offset, and what follows
        # is the same records at the same offsets
        in_force = [s for s in whole.states if s.offset < RENO_SNAPSHOT_END][-1]
        assert (first.isr, first.leader, first.leader_epoch) == (
            in_force.isr, in_force.leader, in_force.leader_epoch)
        assert from_snapshot.states[1:] == [s for s in whole.states if s.offset >= RENO_SNAPSHOT_END]
        assert from_snapshot.end_offset == whole.end_offset
        assert all(e.offset >= placed[0] for e in from_snapshot.broker_events)
        assert all(v.offset >= placed[0] for v in from_snapshot.violations)
        # a window by offset finds the snapshot's state in force, not a file position
        window = log_timeline(timeline_args(booted, "--since", str(RENO_SNAPSHOT_END + 100),
                                            topic=topic))
        assert window.states[0] == first and window.first_offset == RENO_SNAPSHOT_END + 100
