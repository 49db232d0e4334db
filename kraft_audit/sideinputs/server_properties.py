"""The cluster's static min.insync.replicas from a controller's or broker's
server.properties: before ELR the log never says it (a cluster-level
ConfigRecord is written only when someone sets it dynamically)."""

from __future__ import annotations

import re
from pathlib import Path
from kraft_audit.errors import PropertiesError  # noqa: F401 (exported here too)

MIN_ISR = "min.insync.replicas"


def read_properties(path: str | Path) -> dict[str, str]:
    """A Java properties file's key = value pairs (`=`, `:` or whitespace separated;
    `#` and `!` comments). Continuation lines and escapes are not needed for Kafka's keys."""
    props: dict[str, str] = {}
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        match = _PAIR.match(line)
        props[match.group(1)] = match.group(2).strip()
    return props


# key, then whitespace and at most one = or : before the value
_PAIR = re.compile(r"([^\s=:]*)\s*[=:]?\s*(.*)")


def min_isr_from_properties(path: str | Path) -> int | None:
    """min.insync.replicas set in the file, None when it does not set it (Kafka's default 1
    applies then, and the auditor says it assumed it)."""
    try:
        value = read_properties(path).get(MIN_ISR)
    except OSError as exc:
        raise PropertiesError(f"cannot read {path}: {exc.strerror or exc}") from None
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise PropertiesError(f"{path}: {MIN_ISR}={value!r} is not an integer") from None
    if number < 1:
        raise PropertiesError(f"{path}: {MIN_ISR}={number} must be at least 1")
    return number
