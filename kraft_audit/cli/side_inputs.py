"""The side-input flags `check` and `run` share: the same names, repeatable,
each [CLUSTER_ID=]PATH naming a file or a directory."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable, Iterator

from kraft_audit.cli.main import UsageError
from kraft_audit.core.events import MetadataEvent, Quarantined


def add_side_input_arguments(parser: argparse.ArgumentParser) -> None:
    """The side-input flags of `check` and `run` (repeatable; [CLUSTER_ID=]PATH)."""
    parser.add_argument("--registrations", action="append", metavar="PATH",
                        help="broker registration requests: the controller's kafka.request.logger "
                             "file (TRACE) or JSON lines, a file or a dir (rotated files are read too)")
    parser.add_argument("--log-dir-inventory", action="append", metavar="PATH",
                        help="kafka-log-dirs --describe outputs, one per file (a file or a dir)")


def side_inputs(args, cluster_id: Callable[[], str | None]) -> Iterator[MetadataEvent | Quarantined]:
    """Registrations, then inventories. Paths are checked now; files are read, and
    `cluster_id()` (the default for inputs that name none) asked, when iterated."""
    entries = []
    if not (getattr(args, "registrations", None) or getattr(args, "log_dir_inventory", None)):
        return iter(())  # most `check`s: the readers and the job's configuration not imported
    from kraft_audit.config import parse_source_item
    from kraft_audit.sideinputs import read_inventories, read_registrations

    for kind, read in (("registrations", read_registrations),
                       ("log_dir_inventory", read_inventories)):
        for item in getattr(args, kind, None) or []:
            entry = parse_source_item(item)
            if not Path(entry["path"]).exists():
                raise UsageError(f"--{kind.replace('_', '-')}: {entry['path']} does not exist")
            entries.append((read, entry))
    return _read(entries, cluster_id)


def _read(entries, cluster_id) -> Iterator[MetadataEvent | Quarantined]:
    for read, entry in entries:
        yield from read(entry["path"], entry.get("cluster_id") or cluster_id() or None)
