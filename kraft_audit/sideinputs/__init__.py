"""Side inputs of the audit, read the same way by `kraft-audit check` and by the
streaming job: broker registration requests (`registrations`) and log-dir
inventories (`inventories`), plus the file following both rely on (`tail`).

Every line or document becomes a `MetadataEvent`, a `Quarantined` row with its
reason, or (for request log lines of other APIs) nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from kraft_audit.core.events import MetadataEvent, Quarantined
from kraft_audit.sideinputs.inventories import is_kafka_log_dir, parse_inventory, scan_log_dir
from kraft_audit.sideinputs.registrations import UNKNOWN_CLUSTER, parse_registration_line
from kraft_audit.sideinputs.tail import Span, plan_all, read_lines

__all__ = ["parse_inventory", "parse_registration_line", "read_inventories", "read_registrations",
           "registration_span_items", "inventory_files"]


def registration_span_items(span: Span, cluster_id: str | None) -> list[MetadataEvent | Quarantined]:
    """The registrations in one planned span of a followed file."""
    lines = read_lines(span)
    if lines is None:
        return [Quarantined(cluster_id or UNKNOWN_CLUSTER, span.followed, span.start,
                            f"{span.followed}: bytes {span.start}..{span.end} were rotated away "
                            "and deleted before they were read")]
    items = []
    for source, position, line in lines:
        item = parse_registration_line(line, cluster_id, source, position)
        if item is not None:
            items.append(item)
    return items


def read_registrations(path: str | os.PathLike, cluster_id: str | None
                       ) -> Iterator[MetadataEvent | Quarantined]:
    """Every registration in a file (and its rotations) or a directory of them, as
    it is now (single-process use: `kraft-audit check`)."""
    spans, _, notes = plan_all(path, None, final=True)
    for span in spans:
        yield from registration_span_items(span, cluster_id)
    for note in notes:
        yield Quarantined(cluster_id or UNKNOWN_CLUSTER, str(path), 0, note)


def inventory_files(path: str | os.PathLike) -> list[Path]:
    """The inventories under `path`: kafka-log-dirs outputs (one per file) and
    brokers' log dirs (a directory holding meta.properties), by name."""
    p = Path(path)
    if not p.is_dir() or is_kafka_log_dir(p):
        return [p]
    return sorted(q for q in p.iterdir() if not q.name.startswith(".")
                  and (q.is_file() or is_kafka_log_dir(q)))


def read_inventories(path: str | os.PathLike, cluster_id: str | None
                     ) -> Iterator[MetadataEvent | Quarantined]:
    """Every inventory under `path`. A kafka-log-dirs output's time is its file's
    mtime; a log dir is read now, and its time is now."""
    for f in inventory_files(path):
        if f.is_dir():
            yield from scan_log_dir(f, cluster_id)
            continue
        try:
            text = f.read_text(errors="replace")
            mtime_ms = int(f.stat().st_mtime * 1000)
        except OSError as exc:
            yield Quarantined(cluster_id or UNKNOWN_CLUSTER, f.name, 0,
                              f"cannot read {f.name}: {exc.strerror}")
            continue
        yield from parse_inventory(text, cluster_id, f.name, mtime_ms)
