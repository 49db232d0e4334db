"""The streaming job's configuration: defaults ← YAML file ← environment ← flags.

`conf/default.yaml` documents every key with its default (a test keeps it equal
to `DEFAULTS`). Everything is validated before Spark starts, with errors that
name the key: an unknown key (with the nearest known one), a wrong type, an
input path that does not exist, no input at all.

Environment: every scalar key is `KRAFT_AUDIT_` + its dotted path in upper
case with dots as underscores (`metrics.port` → `KRAFT_AUDIT_METRICS_PORT`).
List-of-sources keys take a comma-separated list of `PATH` or
`CLUSTER_ID=PATH` (`KRAFT_AUDIT_SOURCES_LOG_DIRS=/data/kraft/__cluster_metadata-0`).
"""

from __future__ import annotations

import copy
import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml
from kraft_audit.errors import ConfigError  # noqa: F401 (exported here too)

ENV_PREFIX = "KRAFT_AUDIT_"

@dataclass(frozen=True)
class Key:
    """One configuration key: its default and the types (and values) it accepts.
    conf/default.yaml documents the same keys (a test keeps the two equal)."""

    default: Any
    types: tuple[type, ...]
    choices: tuple[str, ...] = ()


_PATH_LIST = (list,)  # a list of sources: each entry a path or {path, cluster_id}
_KAFKA_LIST = (list,)  # (a distinct object: not a list of paths)
_KAFKA_KEYS = {"bootstrap_servers", "topic", "starting_offsets", "max_offsets_per_trigger", "options"}

# Every key, declared once: DEFAULTS, the type checks, the environment names and
# the source lists are derived from it.
KEYS: dict[str, Key] = {
    "sources.log_dirs": Key([], _PATH_LIST),
    "sources.dump_logs": Key([], _PATH_LIST),
    "sources.registrations": Key([], _PATH_LIST),
    "sources.log_dir_inventories": Key([], _PATH_LIST),
    # the shipper's topics: [{bootstrap_servers, topic, starting_offsets, max_offsets_per_trigger,
    # options}], read with Spark's Kafka source
    "sources.kafka": Key([], _KAFKA_LIST),
    "sources.starting_position": Key("earliest", (str,), ("earliest", "snapshot")),
    "sources.max_records_per_trigger": Key(200000, (int, type(None))),
    "sources.max_bytes_per_trigger": Key(None, (int, type(None))),
    "checkpoint": Key("kraft-audit-run/checkpoint", (str,)),
    "tables": Key("kraft-audit-run/tables", (str,)),
    "trigger.interval": Key("5 seconds", (str,)),
    "trigger.available_now": Key(False, (bool,)),
    "audit.buckets": Key(8, (int,)),
    "audit.rules_dir": Key(None, (str, type(None))),
    "audit.settings": Key({}, (dict,)),
    "audit.min_insync_replicas": Key(None, (int, type(None))),
    "audit.server_properties": Key(None, (str, type(None))),
    "audit.timeout_seconds": Key(60, (int, float)),
    "metrics.enabled": Key(True, (bool,)),
    "metrics.host": Key("127.0.0.1", (str,)),
    "metrics.port": Key(9464, (int,)),
    "metrics.max_topics": Key(100, (int,)),
    "sink.backend": Key("deltalake", (str,), ("deltalake", "delta-spark")),
    "sink.app_id": Key("kraft-audit", (str,)),
    "spark.master": Key("local[2]", (str, type(None))),
    "spark.shuffle_partitions": Key(2, (int,)),
    "spark.conf": Key({}, (dict,)),
}

SOURCE_LISTS = tuple(k for k, key in KEYS.items() if key.types is _PATH_LIST)


def _nested(flat: Mapping[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for dotted, value in flat.items():
        _set(tree, dotted, copy.deepcopy(value))
    return tree


_INTERVAL_RE = re.compile(r"^\s*\d+(\.\d+)?\s*(ms|milliseconds?|s|seconds?|m|minutes?)\s*$")


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and dotted in KEYS and KEYS[dotted].types == (dict,):
            out[dotted] = value  # a free-form map is one leaf
        elif isinstance(value, dict):
            out.update(_flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def _set(tree: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = tree
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value


DEFAULTS: dict[str, Any] = _nested({k: key.default for k, key in KEYS.items()})


def _get(tree: Mapping[str, Any], dotted: str) -> Any:
    node: Any = tree
    for p in dotted.split("."):
        node = node[p]
    return node


def _unknown(key: str, origin: str) -> ConfigError:
    near = difflib.get_close_matches(key, list(KEYS), n=1)
    hint = f" (did you mean `{near[0]}`?)" if near else ""
    return ConfigError(f"{origin}: unknown key `{key}`{hint}")


def _parse_scalar(dotted: str, text: str) -> Any:
    """A flag or environment string as the key's type."""
    types = KEYS[dotted].types
    if dotted in SOURCE_LISTS:
        return [parse_source_item(s) for s in text.split(",") if s.strip()]
    if KEYS[dotted].types is _KAFKA_LIST:  # HOST:PORT[,...]/TOPIC entries, ";"-separated
        return [s.strip() for s in text.split(";") if s.strip()]
    if text.strip().lower() in ("null", "none", "") and type(None) in types:
        return None
    if bool in types:
        if text.strip().lower() in ("1", "true", "yes", "on"):
            return True
        if text.strip().lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"`{dotted}` must be true or false, got {text!r}")
    if int in types:
        try:
            return int(text)
        except ValueError:
            if float in types:
                try:
                    return float(text)
                except ValueError:
                    pass
            raise ConfigError(f"`{dotted}` must be a number, got {text!r}") from None
    if dict in types:
        loaded = yaml.safe_load(text)
        if not isinstance(loaded, dict):
            raise ConfigError(f"`{dotted}` must be a mapping, got {text!r}")
        return loaded
    return text


def parse_source_item(text: str) -> dict[str, Any]:
    text = text.strip()
    if "=" in text:
        cluster, _, path = text.partition("=")
        return {"path": path.strip(), "cluster_id": cluster.strip() or None}
    return {"path": text, "cluster_id": None}


def load_config(path: str | os.PathLike | None = None, overrides: Mapping[str, Any] | None = None,
                environ: Mapping[str, str] | None = None, check_paths: bool = True) -> dict[str, Any]:
    """The validated configuration (a plain nested dict, paths absolute).

    `overrides` maps dotted keys to values (already typed, or strings that
    are parsed as the key's type); they win over the environment, which wins
    over the file, which wins over DEFAULTS.
    """
    cfg = _nested({k: key.default for k, key in KEYS.items()})
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file {p} does not exist")
        try:
            loaded = yaml.safe_load(p.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{p}: not valid YAML: {exc}") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"{p}: the top level must be a mapping of keys")
        for dotted, value in _flatten(loaded).items():
            if dotted not in KEYS:
                raise _unknown(dotted, str(p))
            _set(cfg, dotted, value)
    env = os.environ if environ is None else environ
    for name, text in env.items():
        if not name.startswith(ENV_PREFIX):
            continue
        dotted = _env_key(name)
        if dotted is None:
            raise _unknown(name, "environment")
        _set(cfg, dotted, _parse_scalar(dotted, text))
    for dotted, value in (overrides or {}).items():
        if dotted not in KEYS:
            raise _unknown(dotted, "command line")
        _set(cfg, dotted, _parse_scalar(dotted, value) if isinstance(value, str) else value)
    return validate(cfg, check_paths=check_paths)


def _env_key(name: str) -> str | None:
    for dotted in KEYS:
        if ENV_PREFIX + dotted.replace(".", "_").upper() == name:
            return dotted
    return None


def env_names() -> dict[str, str]:
    """Environment variable → dotted key, for --help and the docs."""
    return {ENV_PREFIX + d.replace(".", "_").upper(): d for d in KEYS}


def validate(cfg: dict[str, Any], check_paths: bool = True) -> dict[str, Any]:
    for dotted, key in KEYS.items():
        types, value = key.types, _get(cfg, dotted)
        if isinstance(value, bool) and bool not in types:
            raise ConfigError(f"`{dotted}` must be {_type_names(types)}, got {value!r}")
        if not isinstance(value, types):
            raise ConfigError(f"`{dotted}` must be {_type_names(types)}, got {value!r}")
        if key.choices and value not in key.choices:
            raise ConfigError(f"`{dotted}` must be one of {', '.join(key.choices)}, got {value!r}")
    for dotted in SOURCE_LISTS:
        entries = []
        for i, item in enumerate(_get(cfg, dotted)):
            if isinstance(item, str):
                item = {"path": item}
            if not isinstance(item, dict) or not isinstance(item.get("path"), str):
                raise ConfigError(f"`{dotted}[{i}]` must be a path or {{path, cluster_id}}, got {item!r}")
            extra = set(item) - {"path", "cluster_id"}
            if extra:
                raise ConfigError(f"`{dotted}[{i}]`: unknown key `{sorted(extra)[0]}` "
                                  "(an entry has `path` and optional `cluster_id`)")
            cluster = item.get("cluster_id")
            if cluster is not None and not isinstance(cluster, str):
                raise ConfigError(f"`{dotted}[{i}].cluster_id` must be a string, got {cluster!r}")
            resolved = str(Path(item["path"]).expanduser().resolve())
            if check_paths and not Path(resolved).exists():
                raise ConfigError(f"`{dotted}[{i}]`: path {item['path']} does not exist")
            entries.append({"path": resolved, "cluster_id": cluster})
        _set(cfg, dotted, entries)
    if not _INTERVAL_RE.match(cfg["trigger"]["interval"]):
        raise ConfigError(f"`trigger.interval` must look like '5 seconds' or '500 ms', "
                          f"got {cfg['trigger']['interval']!r}")
    if cfg["audit"]["buckets"] < 1:
        raise ConfigError(f"`audit.buckets` must be at least 1, got {cfg['audit']['buckets']}")
    if not 0 <= cfg["metrics"]["port"] <= 65535:
        raise ConfigError(f"`metrics.port` must be 0..65535, got {cfg['metrics']['port']}")
    if cfg["metrics"]["max_topics"] < 0:
        raise ConfigError(f"`metrics.max_topics` must be 0 or more, got {cfg['metrics']['max_topics']}")
    for dotted in ("sources.max_records_per_trigger", "sources.max_bytes_per_trigger"):
        v = _get(cfg, dotted)
        if v is not None and v < 1:
            raise ConfigError(f"`{dotted}` must be positive or null, got {v}")
    rules_dir = cfg["audit"]["rules_dir"]
    if rules_dir is not None:
        cfg["audit"]["rules_dir"] = str(Path(rules_dir).expanduser().resolve())
        if check_paths and not Path(cfg["audit"]["rules_dir"]).is_dir():
            raise ConfigError(f"`audit.rules_dir`: directory {rules_dir} does not exist")
    cfg["sources"]["kafka"] = [_kafka_entry(i, item) for i, item in enumerate(cfg["sources"]["kafka"])]
    if not any(_get(cfg, d) for d in SOURCE_LISTS) and not cfg["sources"]["kafka"]:
        raise ConfigError("no input: set `sources.log_dirs` (or kafka, dump_logs, registrations, "
                          "log_dir_inventories), e.g. --log-dir PATH")
    _resolve_min_isr(cfg["audit"], check_paths)
    _check_audit(cfg["audit"], load_rules=check_paths)  # (the rule catalog is a path too)
    cfg["checkpoint"] = str(Path(cfg["checkpoint"]).expanduser().resolve())
    cfg["tables"] = str(Path(cfg["tables"]).expanduser().resolve())
    return cfg


def _kafka_entry(i: int, item: Any) -> dict:
    """One `sources.kafka` entry: {bootstrap_servers, topic, ...}, or "HOST:PORT[,...]/TOPIC"."""
    if isinstance(item, str):
        servers, sep, topic = item.rpartition("/")
        item = {"bootstrap_servers": servers, "topic": topic} if sep else {}
    if not isinstance(item, dict) or not all(isinstance(item.get(k), str) and item[k]
                                             for k in ("bootstrap_servers", "topic")):
        raise ConfigError(f"`sources.kafka[{i}]` must be {{bootstrap_servers, topic}} or "
                          f"'HOST:PORT/TOPIC', got {item!r}")
    extra = set(item) - _KAFKA_KEYS
    if extra:
        raise ConfigError(f"`sources.kafka[{i}]`: unknown key `{sorted(extra)[0]}` "
                          f"(known: {', '.join(sorted(_KAFKA_KEYS))})")
    if item.get("starting_offsets", "earliest") not in ("earliest", "latest"):
        raise ConfigError(f"`sources.kafka[{i}].starting_offsets` must be earliest or latest")
    return dict(item)


def _resolve_min_isr(audit: dict[str, Any], read_files: bool) -> None:
    """`audit.min_insync_replicas`, else the one `audit.server_properties` sets, becomes
    the core's `min_insync_replicas_default` (unless audit.settings names it itself)."""
    from kraft_audit.sideinputs.server_properties import PropertiesError, min_isr_from_properties

    value, path = audit["min_insync_replicas"], audit["server_properties"]
    if value is not None and value < 1:
        raise ConfigError(f"`audit.min_insync_replicas` must be at least 1, got {value}")
    if value is None and path is not None and read_files:
        try:
            value = min_isr_from_properties(Path(path).expanduser())
        except PropertiesError as exc:
            raise ConfigError(f"`audit.server_properties`: {exc}") from None
    if value is not None:
        audit["settings"] = {"min_insync_replicas_default": value, **audit["settings"]}


def _check_audit(audit: dict[str, Any], load_rules: bool) -> None:
    """The core's own checks of its settings and rule catalog, run now rather
    than in the first micro-batch on an executor."""
    from kraft_audit.core.replay.settings import CoreSettings
    from kraft_audit.core.rules.catalog import load_catalog

    try:
        CoreSettings.of(audit["settings"])
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"`audit.settings`: {exc}") from None
    if not load_rules:
        return
    try:
        load_catalog(audit["rules_dir"])
    except ValueError as exc:
        raise ConfigError(f"`audit.rules_dir`: {exc}") from None


def _type_names(types: tuple[type, ...]) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "true/false",
             list: "a list", dict: "a mapping", type(None): "null"}
    return " or ".join(names[t] for t in types)
