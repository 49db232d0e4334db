"""The controller's static configs the auditor needs, from a server.properties: the log
holds them only when someone sets them dynamically (before ELR, never min.insync.replicas;
never the leader rebalancing or delegation token ones, which have no dynamic form)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

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


def _at_least_one(value: str) -> int:
    number = int(value)  # ValueError: not an integer
    if number < 1:
        raise ValueError("must be at least 1")
    return number


def _boolean(value: str) -> bool:
    # Kafka's ConfigDef reads a BOOLEAN as true/false in any case, and rejects anything else
    if value.lower() not in ("true", "false"):
        raise ValueError("must be true or false")
    return value.lower() == "true"


# Kafka's key -> (the CoreSettings field it sets, how Kafka parses and bounds it)
STATIC_SETTINGS: dict[str, tuple[str, Callable[[str], Any]]] = {
    MIN_ISR: ("min_insync_replicas_default", _at_least_one),
    "unclean.leader.election.enable": ("unclean_leader_election_default", _boolean),
    "auto.leader.rebalance.enable": ("auto_leader_rebalance_enable", _boolean),
    "leader.imbalance.check.interval.seconds": ("leader_imbalance_check_interval_seconds", _at_least_one),
    "delegation.token.expiry.check.interval.ms": ("delegation_token_expiry_check_interval_ms",
                                                  _at_least_one),
    "unclean.leader.election.interval.ms": ("unclean_leader_election_interval_ms", _at_least_one),
    # tokens are enabled (and swept) when the key is set and not empty; the key itself is not kept
    "delegation.token.secret.key": ("delegation_token_expiry_sweep", bool),
}


def settings_from_properties(path: str | Path) -> dict[str, Any]:
    """The core settings (CoreSettings field -> value) that the file's static configs set;
    a key the file does not set is left out (Kafka's default applies, or the log's value)."""
    try:
        props = read_properties(path)
    except OSError as exc:
        raise PropertiesError(f"cannot read {path}: {exc.strerror or exc}") from None
    settings = {}
    for key, (field, parse) in STATIC_SETTINGS.items():
        if key in props:
            try:
                settings[field] = parse(props[key])
            except ValueError as exc:
                why = "is not an integer" if "invalid literal" in str(exc) else str(exc)
                raise PropertiesError(f"{path}: {key}={props[key]!r} {why}") from None
    return settings

