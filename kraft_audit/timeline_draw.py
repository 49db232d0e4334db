"""Draw a `Timeline` (kraft_audit.timeline) as a PNG or SVG picture, or as one
self-contained HTML page (the picture inline, plus the states, violations and
broker events as tables) that an operator can attach to a ticket.

Layout, top to bottom: the violations (rule ids at the offset that broke them),
the leader recovery state, the condition intervals that occurred (under min
ISR, leaderless, ...), then one row per replica showing its role over offsets
(leader / ISR / ELR / out of ISR, a thin stripe for LastKnownElr, hatching
while its broker is fenced) with its broker's events marked. Offsets run along
the bottom axis, record times (ISO-8601 UTC, with the date) along the top one.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display: files only

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from kraft_audit.cli.views import iso_utc, leader_text  # noqa: E402
from kraft_audit.core.rows import PartitionRow  # noqa: E402
from kraft_audit.timeline import (CONTROLLED_SHUTDOWN, FENCED, REGISTERED, UNFENCED,  # noqa: E402
                                  UNREGISTERED, Timeline)

FORMATS = ("png", "svg", "html")

ROLE_COLORS = {"leader": "#1f4e9c", "ISR": "#5aae61", "ELR": "#f4a340", "out of ISR": "#d0d0d0"}
LAST_KNOWN_ELR_COLOR = "#8e44ad"
RECOVERY_COLORS = {0: "#dff0d8", 1: "#d9534f"}
CONDITION_COLORS = {"under_min_isr": "#f2d16b", "leaderless": "#7f0000",
                    "manual_election_required": "#8b0000", "elr_in_use": "#f9cf98",
                    "recovering": "#d9534f", "reassignment_stalled": "#6c8ebf",
                    "election_overdue": "#c0392b", "leader_imbalanced": "#9b8ec4",
                    "unclean_election_overdue": "#e67e22", "directory_unassigned": "#95a5a6"}
# conditions drawn as their own rows; RECOVERING already has the recovery row
CONDITION_ROWS = {"under_min_isr": "under min ISR", "leaderless": "leaderless",
                  "manual_election_required": "manual election required",
                  "elr_in_use": "ELR in use", "reassignment_stalled": "reassignment stalled",
                  "election_overdue": "election overdue", "leader_imbalanced": "leader imbalanced",
                  "unclean_election_overdue": "unclean election overdue",
                  "directory_unassigned": "directory unassigned"}
BROKER_MARKERS = {  # kind -> (marker, color, legend text)
    REGISTERED: ("o", "black", "registered"),
    UNFENCED: ("^", "#2e7d32", "unfenced"),
    FENCED: ("v", "#c62828", "fenced"),
    CONTROLLED_SHUTDOWN: ("s", "#1565c0", "controlled shutdown"),
    UNREGISTERED: ("X", "black", "unregistered"),
}
MAX_VIOLATION_LABELS = 12


def render(timeline: Timeline, path: str | Path, fmt: str | None = None) -> Path:
    """Write the timeline to `path` as png, svg or html (default: from the suffix)."""
    path = Path(path)
    fmt = (fmt or path.suffix.lstrip(".") or "png").lower()
    if fmt not in FORMATS:
        raise ValueError(f"cannot write {fmt!r}: the formats are {', '.join(FORMATS)}")
    fig = figure(timeline)
    try:
        if fmt == "html":
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png", dpi=110)
            path.write_text(html_page(timeline, buffer.getvalue()), encoding="utf-8")
        else:
            fig.savefig(path, format=fmt, dpi=110)
    finally:
        plt.close(fig)
    return path


def figure(timeline: Timeline):
    states = timeline.states
    replicas = sorted(timeline.replicas)
    conditions = [c for c in CONDITION_ROWS if any(i.condition == c for i in timeline.conditions)]
    first, last = timeline.first_offset, timeline.end_offset
    span = max(last - first, 1)
    pad = span * 0.02
    ends = [s.offset for s in states[1:]] + [last + pad]  # each state holds until the next

    # rows from the top: violations, recovery, conditions, replicas (y grows upwards)
    labels = ["violations", "recovery state", *(CONDITION_ROWS[c] for c in conditions),
              *(f"broker {b}" for b in replicas)]
    y = {label: len(labels) - 1 - i for i, label in enumerate(labels)}
    fig, ax = plt.subplots(figsize=(12, 1.9 + 0.52 * len(labels)))
    height = 0.62
    drawn: set[str] = set()  # what the legend needs to explain

    recovery_spans = _runs((s.leader_recovery_state if not s.deleted else None, s.offset, e)
                           for s, e in zip(states, ends))
    for value, start, end in recovery_spans:
        if value is not None:
            drawn.add(f"recovery {value}")
            ax.broken_barh([(start, end - start)], (y["recovery state"] - height / 2, height),
                           facecolors=RECOVERY_COLORS.get(value, "#7f7f7f"))
    for broker in replicas:
        row = y[f"broker {broker}"]
        roles = ((_role(s, broker), s.offset, e) for s, e in zip(states, ends))
        for role, start, end in _runs(roles):
            if role is not None:
                drawn.add(role)
                ax.broken_barh([(start, end - start)], (row - height / 2, height),
                               facecolors=ROLE_COLORS[role])
        for known, start, end in _runs((broker in s.last_known_elr, s.offset, e)
                                       for s, e in zip(states, ends)):
            if known:
                drawn.add("LastKnownElr")
                ax.broken_barh([(start, end - start)], (row - height / 2, height * 0.22),
                               facecolors=LAST_KNOWN_ELR_COLOR)
    # a state held from before the window is labelled where the window starts
    starts = [max(s.offset, first) for s in states]
    _recovery_labels(ax, states, starts, ends, y["recovery state"], span)
    _leader_epochs(ax, states, starts, ends, y, span)

    for name in conditions:
        row = y[CONDITION_ROWS[name]]
        for interval in timeline.conditions:
            if interval.condition == name:
                end = interval.end_offset if interval.end_offset is not None else last + pad
                ax.broken_barh([(interval.start_offset, end - interval.start_offset)],
                               (row - height / 2, height), facecolors=CONDITION_COLORS[name])

    for broker in replicas:  # fenced periods, hatched over the role while it is a replica
        row = y[f"broker {broker}"]
        is_replica = [(start, end) for role, start, end in
                      _runs((_role(s, broker), s.offset, e) for s, e in zip(states, ends))
                      if role is not None]
        for fenced_start, fenced_end in _fenced_intervals(timeline, broker, last + pad):
            for start, end in is_replica:
                start, end = max(start, fenced_start), min(end, fenced_end)
                if start < end:
                    drawn.add("fenced")
                    ax.broken_barh([(start, end - start)], (row - height / 2, height),
                                   facecolors="none", edgecolors="#555555", hatch="///",
                                   linewidth=0)
    for event in timeline.broker_events:
        if event.offset < first - pad:
            continue  # before the partition existed: off the picture
        marker, color, _ = BROKER_MARKERS[event.kind]
        unclean_restart = event.kind == REGISTERED and event.last_shutdown == "unclean"
        drawn.add("registered unclean" if unclean_restart else event.kind)
        face = color if event.kind != REGISTERED or unclean_restart else "white"
        ax.scatter([event.offset], [y[f"broker {event.broker_id}"] + height / 2 + 0.08],
                   marker=marker, s=42, c=face, edgecolors=color, zorder=5, clip_on=False)

    # every state as a tick under the replicas: merged bars hide records that changed no role
    ax.scatter([s.offset for s in states], [-0.5] * len(states), marker="|", s=60, c="#333333",
               linewidths=1, zorder=5)
    if timeline.violations:
        drawn.add("violation")
    _violations(ax, timeline, y, span)

    ax.set_xlim(first - pad, last + pad)
    ax.set_ylim(-0.7, len(labels) - 0.3)
    ax.set_yticks(list(y.values()), list(y.keys()))
    ax.set_xlabel("metadata log offset")
    ax.grid(axis="x", color="#eeeeee")
    ax.set_axisbelow(True)
    for side in ("right",):
        ax.spines[side].set_visible(False)
    _time_axis(ax, timeline, first - pad, last + pad)

    ax.set_title(_title(timeline), loc="left", fontsize=11, pad=36)
    ax.legend(handles=_legend(drawn), loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
              frameon=False)
    fig.tight_layout()
    return fig


def _runs(spans):
    """Merge consecutive (value, start, end) spans of equal value: one bar per run."""
    runs: list[list] = []
    for value, start, end in spans:
        if runs and runs[-1][0] == value:
            runs[-1][2] = end
        else:
            runs.append([value, start, end])
    return runs


def _role(state: PartitionRow, broker: int) -> str | None:
    if state.deleted:
        return None
    if broker == state.leader:
        return "leader"
    if broker in state.isr:
        return "ISR"
    if broker in state.elr:
        return "ELR"
    if broker in state.replicas or broker in state.adding_replicas:
        return "out of ISR"
    return None  # not a replica at this point


def _leader_epochs(ax, states, starts, ends, y, span) -> None:
    """Write the leader epoch on the leader's bar where it changes and there is room."""
    previous = None
    for state, start, end in zip(states, starts, ends):
        key = (state.leader, state.leader_epoch)
        if state.leader >= 0 and key != previous and (end - start) > span * 0.04:
            ax.text(start + span * 0.004, y[f"broker {state.leader}"],
                    f"epoch {state.leader_epoch}", va="center", ha="left", fontsize=7,
                    color="white", clip_on=True)
        previous = key


def _recovery_labels(ax, states, starts, ends, row, span) -> None:
    """Name what started each RECOVERING run: an unclean election (a new leader epoch
    entering RECOVERING, the definition `query unclean-elections` uses) or not."""
    for i, state in enumerate(states):
        previous = states[i - 1] if i else None
        if state.deleted and _fits("topic deleted", ends[i] - starts[i], span):
            ax.text(starts[i] + span * 0.004, row, "topic deleted", va="center", ha="left",
                    fontsize=7, color="#555555", clip_on=True)
            continue
        if state.leader_recovery_state != 1 or (previous and previous.leader_recovery_state == 1):
            continue
        last = i
        while last + 1 < len(states) and states[last + 1].leader_recovery_state == 1:
            last += 1
        width = ends[last] - starts[i]
        unclean = previous is not None and state.leader_epoch != previous.leader_epoch
        choices = ([f"RECOVERING: unclean election of {state.leader}",
                    f"unclean election of {state.leader}", f"unclean → {state.leader}"]
                   if unclean else []) + ["RECOVERING"]
        text = next((t for t in choices if _fits(t, width, span)), None)
        if text is not None:  # else the colour and the legend say it
            ax.text(starts[i] + span * 0.004, row, text, va="center", ha="left", fontsize=7,
                    color="white", fontweight="bold", clip_on=True)


def _fits(text: str, width: float, span: float) -> bool:
    """Roughly: bold 7-point text on the 12-inch figure takes 0.8 % of the span per character
    (with a margin for the text's offset from the bar's start)."""
    return (len(text) + 2) * span * 0.009 < width


def _fenced_intervals(timeline: Timeline, broker: int, end: float) -> list[tuple[float, float]]:
    intervals, since = [], None
    for event in timeline.broker_events:
        if event.broker_id != broker:
            continue
        fenced = event.kind in (FENCED, REGISTERED, UNREGISTERED)
        if event.kind == UNFENCED and since is not None:
            intervals.append((since, event.offset))
            since = None
        elif fenced and since is None:
            since = event.offset
    if since is not None:
        intervals.append((since, end))
    return intervals


def _violations(ax, timeline: Timeline, y, span) -> None:
    row = y["violations"]
    first = timeline.first_offset
    by_offset: dict[int, list[str]] = {}
    for v in timeline.violations:
        label = v.rule_id if v.broker_id is None else f"{v.rule_id} (broker {v.broker_id})"
        if label not in by_offset.setdefault(v.offset, []):
            by_offset[v.offset].append(label)
    for n, (offset, rule_ids) in enumerate(sorted(by_offset.items())):
        ax.axvline(offset, color="#c62828", linestyle="--", linewidth=1, zorder=4)
        ax.scatter([offset], [row], marker="D", s=40, c="#c62828", zorder=6)
        if n < MAX_VIOLATION_LABELS:
            more = f"\n+{len(rule_ids) - 3} more" if len(rule_ids) > 3 else ""
            text = "\n".join(rule_ids[:3]) + more
            right_side = offset > first + span * 0.6  # label leftwards, away from the legend
            ax.text(offset + span * (-0.006 if right_side else 0.006), row, text, va="center",
                    ha="right" if right_side else "left", fontsize=7,
                    color="#c62828", bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    if not by_offset:
        ax.text(0.005, row, "none", transform=ax.get_yaxis_transform(), va="center", ha="left",
                fontsize=8, color="#555555")
    if len(by_offset) > MAX_VIOLATION_LABELS:
        ax.text(1.0, row, f"{len(by_offset) - MAX_VIOLATION_LABELS} more offsets with violations",
                transform=ax.get_yaxis_transform(), ha="right", va="center", fontsize=7)


def _time_axis(ax, timeline: Timeline, low: float, high: float) -> None:
    """Record times on a top axis, interpolated between the offsets whose times are known;
    each tick gives the date as well, as an incident may span midnight or be days old."""
    known = timeline.known_times()
    offsets = np.array([k[0] for k in known], dtype=float)
    # record times may step back (another controller's clock): keep them non-decreasing
    times = np.maximum.accumulate(np.array([k[1] for k in known], dtype=float))
    ticks = [t for t in ax.get_xticks() if low <= t <= high]
    top = ax.twiny()
    top.set_xlim(low, high)
    top.set_xticks(ticks, [_date_and_clock(np.interp(t, offsets, times)) for t in ticks],
                   fontsize=8)
    top.set_xlabel("record time (ISO-8601, UTC)", fontsize=8)
    top.spines["right"].set_visible(False)


def _date_and_clock(ms: float) -> str:
    """An ISO-8601 UTC time on two lines (date, then time), to fit under a tick."""
    return iso_utc(ms).replace("T", "\n")


def _title(timeline: Timeline) -> str:
    """Topic-partition and cluster, then when and where: the ISO times and offsets of the
    first and last records shown."""
    return (f"{timeline.topic}-{timeline.partition}  ·  cluster {timeline.cluster_id or '-'}\n"
            f"{iso_utc(timeline.first_timestamp_ms)} – {iso_utc(timeline.end_timestamp_ms)}  ·  "
            f"offsets {timeline.first_offset}–{timeline.end_offset}  ·  "
            f"{len(timeline.states)} states, {len(timeline.violations)} violations")


def _legend(drawn: set[str]) -> list:
    """Entries for what the picture holds, so the legend explains this incident only."""
    handles = [Patch(facecolor=c, label=role) for role, c in ROLE_COLORS.items() if role in drawn]
    if "LastKnownElr" in drawn:
        handles.append(Patch(facecolor=LAST_KNOWN_ELR_COLOR, label="LastKnownElr"))
    if "fenced" in drawn:
        handles.append(Patch(facecolor="none", edgecolor="#555555", hatch="///",
                             label="broker fenced"))
    for state, name in ((0, "RECOVERED"), (1, "RECOVERING")):
        if f"recovery {state}" in drawn:
            handles.append(Patch(facecolor=RECOVERY_COLORS[state], label=name))
    for kind, (marker, color, text) in BROKER_MARKERS.items():
        if kind in drawn:
            face = "white" if kind == REGISTERED else color
            handles.append(Line2D([], [], linestyle="none", marker=marker, markerfacecolor=face,
                                  markeredgecolor=color, label=text))
    if "registered unclean" in drawn:
        handles.append(Line2D([], [], linestyle="none", marker="o", markerfacecolor="black",
                              markeredgecolor="black", label="registered after\nunclean shutdown"))
    if "violation" in drawn:
        handles.append(Line2D([], [], color="#c62828", linestyle="--", marker="D",
                              label="violation"))
    handles.append(Line2D([], [], linestyle="none", marker="|", color="#333333",
                          label="partition record"))
    return handles


def html_page(timeline: Timeline, png: bytes) -> str:
    """One HTML file with nothing to fetch: the picture inline and the data as tables."""
    esc = html.escape

    def table(header: list[str], rows: list[list]) -> str:
        head = "".join(f"<th>{esc(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{esc(str(c))}</td>" for c in row) + "</tr>"
                       for row in rows)
        return f"<table><tr>{head}</tr>{body}</table>"

    def ids(values) -> str:
        return ",".join(map(str, values))

    def when(ms: int) -> str:
        return iso_utc(ms, millis=True)

    states = table(
        ["offset", "time (UTC)", "record", "leader", "replicas", "ISR", "ELR", "LastKnownElr",
         "recovery", "leader epoch", "partition epoch"],
        [[s.offset, when(s.timestamp_ms), s.record_type, leader_text(s.leader), ids(s.replicas),
          ids(s.isr),
          ids(s.elr), ids(s.last_known_elr),
          "RECOVERING" if s.leader_recovery_state else "RECOVERED",
          s.leader_epoch, s.partition_epoch] for s in timeline.states])
    violations = table(
        ["offset", "time (UTC)", "severity", "rule", "broker", "message"],
        [[v.offset, when(v.timestamp_ms), v.severity, v.rule_id,
          "" if v.broker_id is None else v.broker_id, v.message] for v in timeline.violations])
    brokers = table(
        ["offset", "time (UTC)", "broker", "event"],
        [[e.offset, when(e.timestamp_ms), e.broker_id,
          e.kind + (f" (after {e.last_shutdown} shutdown, {e.last_shutdown_source})" if e.last_shutdown else "")]
         for e in timeline.shown_broker_events()])
    title = esc(f"kraft-audit timeline: {timeline.topic}-{timeline.partition}")
    picture = base64.b64encode(png).decode("ascii")
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
body{{font-family:sans-serif;margin:1.5em}} img{{max-width:100%}}
table{{border-collapse:collapse;font-size:13px;margin-bottom:1.5em}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left}} th{{background:#f3f3f3}}
</style>
</head><body>
<h1>{title}</h1>
<p>cluster {esc(timeline.cluster_id or "-")}; shown: offsets {timeline.first_offset}–{timeline.end_offset},
{iso_utc(timeline.first_timestamp_ms)} – {iso_utc(timeline.end_timestamp_ms)}</p>
<img alt="timeline of {esc(timeline.topic)}-{timeline.partition}"
 src="data:image/png;base64,{picture}">
<h2>Violations ({len(timeline.violations)})</h2>
{violations}
<h2>States ({len(timeline.states)})</h2>
{states}
<h2>Broker events of its replicas ({len(timeline.shown_broker_events())})</h2>
{brokers}
</body></html>
"""
