"""The streaming job's configuration: defaults ← YAML file ← environment ← flags.

`load_config` returns one validated, typed, immutable `Config` (frozen
dataclasses: `config.sources.log_dirs`, `config.trigger.interval`,
`config.audit.buckets`, `config.metrics.port`, `config.sink.backend` ...) that
the job, the operator and the CLI read by attribute.

Every key is declared once, below, as a field of those dataclasses: its
default (as written in YAML), its one-line doc, its type (from the
annotation) and its choices (a `Literal`). `KEYS`, `DEFAULTS`, the type
checks, the environment names, the CLI's choices and the sink backends are
derived from them; `conf/default.yaml` documents the same keys (a test keeps
the two equal). Everything is validated before Spark starts, with errors that
name the key: an unknown key (with the nearest known one), a wrong type, an
input path that does not exist, no input at all.

"Settings" means the core's knobs (`CoreSettings`): the key `audit.settings`
holds them (the core settings), nothing else here is called settings.

Environment: every key is `KRAFT_AUDIT_` + its dotted path in upper case with
dots as underscores (`metrics.port` → `KRAFT_AUDIT_METRICS_PORT`); any other
`KRAFT_AUDIT_*` variable is refused as an unknown key. List-of-sources keys
take a comma-separated list of `PATH` or `CLUSTER_ID=PATH`
(`KRAFT_AUDIT_SOURCES_LOG_DIRS=/data/kraft/__cluster_metadata-0`).
"""

from __future__ import annotations

import copy
import difflib
import os
import re
import types
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from collections.abc import Iterator, Mapping
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import yaml
from kraft_audit.errors import ConfigError  # noqa: F401 (exported here too)

ENV_PREFIX = "KRAFT_AUDIT_"


class FrozenMap(Mapping[str, Any]):
    """A read-only mapping: the free-form keys (`audit.settings`, `spark.conf`, a
    topic's `options`). `dict(m)` gives a plain copy."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any] | None = None):
        self._data = dict(data or {})

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data))

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __reduce__(self):
        return FrozenMap, (self._data,)


def setting(default: Any, doc: str) -> Any:
    """A key's declaration: its default as written in YAML and a one-line doc (the
    type and the choices come from the field's annotation)."""
    meta = {"default": default, "doc": doc}
    if isinstance(default, list):
        return field(default=tuple(default), metadata=meta)
    if isinstance(default, dict):
        frozen = FrozenMap(default)
        return field(default_factory=lambda: frozen, metadata=meta)
    return field(default=default, metadata=meta)


# ------------------------------------------------------------------ the declaration

@dataclass(frozen=True)
class LogSource:
    """One file input (a log dir, dump-log, registrations or inventory path), absolute.
    cluster_id None: from meta.properties (log dirs) or the only log dir's cluster."""

    path: str
    cluster_id: str | None = None


@dataclass(frozen=True)
class KafkaSource:
    """One `sources.kafka` entry: a topic `kraft-audit ship` produces to."""

    bootstrap_servers: str
    topic: str
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    max_offsets_per_trigger: int | None = None  # None: kafka_input's default
    options: FrozenMap = field(default_factory=FrozenMap)  # e.g. kafka.security.protocol


@dataclass(frozen=True)
class SourcesConfig:
    log_dirs: tuple[LogSource, ...] = setting(
        [], "KRaft metadata log dirs: [CLUSTER_ID=]PATH of __cluster_metadata-0 or the dir above it")
    kafka: tuple[KafkaSource, ...] = setting(
        [], "topics `kraft-audit ship` produces to: HOST:PORT[,...]/TOPIC or {bootstrap_servers, topic, ...}")
    dump_logs: tuple[LogSource, ...] = setting(
        [], "kafka-dump-log --cluster-metadata-decoder outputs: files or directories of them")
    registrations: tuple[LogSource, ...] = setting(
        [], "broker registration requests, tailed: request-logger files or JSON lines")
    log_dir_inventories: tuple[LogSource, ...] = setting(
        [], "kafka-log-dirs --describe outputs, one file per run (a file or a directory)")
    starting_position: Literal["earliest", "snapshot"] = setting(
        "earliest", "where a log dir is read from: its oldest segment, or its newest snapshot")
    max_records_per_trigger: int | None = setting(
        200000, "records per micro-batch and log dir at most (null: no bound)")
    max_bytes_per_trigger: int | None = setting(
        None, "bytes per micro-batch and log dir at most (null: no bound)")
    bootstrap_controllers: tuple[str, ...] = setting(
        [], "controller listeners HOST:PORT of the log dirs' cluster: a log dir is read only as far as "
        "the quorum committed it (DescribeQuorum's high watermark); empty: every record as the copy holds it")


@dataclass(frozen=True)
class TriggerConfig:
    interval: str = setting("5 seconds", "micro-batch interval, e.g. '5 seconds' or '500 ms'")
    available_now: bool = setting(False, "audit what exists now in bounded micro-batches, then stop")


@dataclass(frozen=True)
class AuditConfig:
    buckets: int = setting(8, "state groups per cluster (fixed for the life of a checkpoint)")
    rules_dir: str | None = setting(None, "rule catalog directory (null: the catalog shipped with the package)")
    settings: FrozenMap = setting(  # noqa: RUF009 (FrozenMap is immutable)
        {}, "core settings (CoreSettings, docs/rules.md), e.g. {last_known_elr: set}")
    min_insync_replicas: int | None = setting(
        None, "the cluster's min.insync.replicas when the log does not set it (null: unknown, 1 assumed)")
    server_properties: str | None = setting(
        None, "the controller's server.properties, to read its static configs from (min.insync.replicas, "
        "unclean.leader.election.enable, auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds, "
        "delegation.token.expiry.check.interval.ms, unclean.leader.election.interval.ms, whether "
        "delegation.token.secret.key is set)")
    timeout_seconds: float = setting(60, "idle seconds after which pending registration matches are settled")


@dataclass(frozen=True)
class MetricsConfig:
    enabled: bool = setting(True, "serve /metrics")
    host: str = setting("127.0.0.1", "address /metrics listens on")
    port: int = setting(9464, "port of /metrics (0: any free port)")
    max_topics: int = setting(100, "per-topic series per cluster at most (the rest under topic=\"_other\")")


@dataclass(frozen=True)
class SinkConfig:
    backend: Literal["deltalake", "delta-spark"] = setting(
        "deltalake", "Delta writer: delta-rs from the driver, or Spark's Delta connector")
    app_id: str = setting("kraft-audit", "Delta transaction app id (keep it stable across restarts)")
    compact_every: int = setting(
        50, "micro-batches between compactions of partition_state (0: only at the end of a run)")
    compact_tail_rows: int = setting(
        500000, "compact partition_state sooner once partition_history gained this many rows")


@dataclass(frozen=True)
class SparkConfig:
    master: str | None = setting("local[2]", "Spark master (null: the one spark-submit sets)")
    shuffle_partitions: int = setting(2, "spark.sql.shuffle.partitions")
    conf: FrozenMap = setting({}, "more Spark configuration, {key: value}")  # noqa: RUF009


@dataclass(frozen=True)
class Config:
    """The validated configuration of one run (what `load_config` returns)."""

    sources: SourcesConfig = field(default_factory=SourcesConfig)
    checkpoint: str = setting("kraft-audit-run/checkpoint", "Spark checkpoint (offsets and auditor state)")
    tables: str = setting("kraft-audit-run/tables", "root of the Delta tables")
    trigger: TriggerConfig = field(default_factory=TriggerConfig)
    audit: AuditConfig = field(default_factory=AuditConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    sink: SinkConfig = field(default_factory=SinkConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)

    def as_dict(self) -> dict[str, Any]:
        """The same configuration as plain nested dicts and lists (YAML's shape)."""
        return _plain(self)

    def with_values(self, values: Mapping[str, Any], check_paths: bool = True) -> Config:
        """A copy with some keys changed (dotted keys, as `load_config`'s overrides), validated.
        (A min ISR already resolved into `audit.settings` stays there.)"""
        tree = self.as_dict()
        _apply_overrides(tree, values, "with_values")
        return validate(tree, check_paths=check_paths)


# ------------------------------------------------------------------ derived from it

@dataclass(frozen=True)
class Key:
    """One configuration key, derived from its field: its default (as in YAML), the
    types (and values) it accepts, its doc, and for a list the class of an entry."""

    default: Any
    types: tuple[type, ...]
    choices: tuple[str, ...] = ()
    doc: str = ""
    item: type | None = None

    @property
    def is_source_list(self) -> bool:
        return self.item is LogSource


def _describe(hint: Any) -> tuple[tuple[type, ...], tuple[str, ...], type | None]:
    """(accepted YAML types, choices, entry class) of an annotation."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        parts = [_describe(a) for a in args]
        return (tuple(t for p in parts for t in p[0]), tuple(c for p in parts for c in p[1]),
                next((p[2] for p in parts if p[2] is not None), None))
    if origin is Literal:
        return (str,), args, None
    if origin is tuple:
        return (list,), (), args[0]
    if hint is FrozenMap:
        return (dict,), (), None
    if hint is float:
        return (int, float), (), None
    return (hint,), (), None


def _is_section(hint: Any) -> bool:
    return isinstance(hint, type) and is_dataclass(hint) and hint not in (LogSource, KafkaSource)


def _declared(cls: type, prefix: str = "") -> dict[str, Key]:
    keys: dict[str, Key] = {}
    hints = get_type_hints(cls)
    for f in fields(cls):
        hint, dotted = hints[f.name], prefix + f.name
        if _is_section(hint):
            keys.update(_declared(hint, dotted + "."))
        else:
            accepted, choices, item = _describe(hint)
            keys[dotted] = Key(f.metadata["default"], accepted, choices, f.metadata["doc"], item)
    return keys


# Every key: dotted name -> Key, in declaration order.
KEYS: dict[str, Key] = _declared(Config)

_KAFKA_KEYS = {f.name for f in fields(KafkaSource)}
_KAFKA_STARTING = get_args(get_type_hints(KafkaSource)["starting_offsets"])
SOURCE_LISTS = tuple(k for k, key in KEYS.items() if key.is_source_list)


def _plain(value: Any) -> Any:
    if is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _build(cls: type, tree: Mapping[str, Any], prefix: str = "") -> Any:
    """The frozen dataclasses from a validated tree."""
    hints = get_type_hints(cls)
    values = {}
    for f in fields(cls):
        dotted, value = prefix + f.name, tree[f.name]
        if dotted not in KEYS:
            values[f.name] = _build(hints[f.name], value, dotted + ".")
        elif KEYS[dotted].item is LogSource:
            values[f.name] = tuple(LogSource(e["path"], e["cluster_id"]) for e in value)
        elif KEYS[dotted].item is KafkaSource:
            values[f.name] = tuple(KafkaSource(**{**e, "options": FrozenMap(e.get("options"))})
                                   for e in value)
        elif isinstance(value, dict):
            values[f.name] = FrozenMap(value)
        else:
            values[f.name] = value
    return cls(**values)


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
    key = KEYS[dotted]
    accepted = key.types
    if key.item is LogSource:
        return [parse_source_item(s) for s in text.split(",") if s.strip()]
    if key.item is KafkaSource:  # HOST:PORT[,...]/TOPIC entries, ";"-separated
        return [s.strip() for s in text.split(";") if s.strip()]
    if key.item is str:
        return [s.strip() for s in text.split(",") if s.strip()]
    if text.strip().lower() in ("null", "none", "") and type(None) in accepted:
        return None
    if bool in accepted:
        if text.strip().lower() in ("1", "true", "yes", "on"):
            return True
        if text.strip().lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"`{dotted}` must be true or false, got {text!r}")
    if int in accepted:
        try:
            return int(text)
        except ValueError:
            if float in accepted:
                try:
                    return float(text)
                except ValueError:
                    pass
            raise ConfigError(f"`{dotted}` must be a number, got {text!r}") from None
    if dict in accepted:
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
                environ: Mapping[str, str] | None = None, check_paths: bool = True) -> Config:
    """The validated configuration (a frozen `Config`, paths absolute).

    `overrides` maps dotted keys to values (already typed, or strings that
    are parsed as the key's type); they win over the environment, which wins
    over the file, which wins over the declared defaults. `environ`: the
    environment to read (default os.environ; only `KRAFT_AUDIT_*` names are read).
    """
    cfg = copy.deepcopy(DEFAULTS)
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
    _apply_overrides(cfg, overrides or {}, "command line")
    return validate(cfg, check_paths=check_paths)


def _apply_overrides(cfg: dict[str, Any], overrides: Mapping[str, Any], origin: str) -> None:
    for dotted, value in overrides.items():
        if dotted not in KEYS:
            raise _unknown(dotted, origin)
        _set(cfg, dotted, _parse_scalar(dotted, value) if isinstance(value, str) else value)


def _env_key(name: str) -> str | None:
    return env_names().get(name)


def env_names() -> dict[str, str]:
    """Environment variable → dotted key, for --help and the docs."""
    return {ENV_PREFIX + d.replace(".", "_").upper(): d for d in KEYS}


def is_host_port(address) -> bool:
    """Whether `address` is HOST:PORT (a controller listener)."""
    host, sep, port = address.rpartition(":") if isinstance(address, str) else ("", "", "")
    return bool(host and sep and port.isdigit())


def validate(tree: Mapping[str, Any], check_paths: bool = True) -> Config:
    """The frozen `Config` of a nested dict of every key (YAML's shape), checked:
    types, choices, ranges, paths (unless not `check_paths`), the core settings and
    the rule catalog. Relative paths become absolute."""
    cfg = copy.deepcopy(dict(tree))
    for dotted, key in KEYS.items():
        accepted, value = key.types, _get(cfg, dotted)
        if isinstance(value, bool) and bool not in accepted:
            raise ConfigError(f"`{dotted}` must be {_type_names(accepted)}, got {value!r}")
        if not isinstance(value, accepted):
            raise ConfigError(f"`{dotted}` must be {_type_names(accepted)}, got {value!r}")
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
    for i, address in enumerate(cfg["sources"]["bootstrap_controllers"]):
        if not is_host_port(address):
            raise ConfigError(f"`sources.bootstrap_controllers[{i}]` must be HOST:PORT, got {address!r}")
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
    _resolve_static_settings(cfg["audit"], check_paths)
    _check_audit(cfg["audit"], load_rules=check_paths)  # (the rule catalog is a path too)
    cfg["checkpoint"] = str(Path(cfg["checkpoint"]).expanduser().resolve())
    cfg["tables"] = str(Path(cfg["tables"]).expanduser().resolve())
    return _build(Config, cfg)


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
    starting = item.get("starting_offsets")
    if starting is not None and starting not in _KAFKA_STARTING:
        raise ConfigError(f"`sources.kafka[{i}].starting_offsets` must be {' or '.join(_KAFKA_STARTING)}")
    bound = item.get("max_offsets_per_trigger")
    if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 1):
        raise ConfigError(f"`sources.kafka[{i}].max_offsets_per_trigger` must be a positive integer "
                          f"or null, got {bound!r}")
    options = item.get("options")
    if options is not None and not isinstance(options, dict):
        raise ConfigError(f"`sources.kafka[{i}].options` must be a mapping, got {options!r}")
    return {**item, "starting_offsets": starting or "earliest"}


def _resolve_static_settings(audit: dict[str, Any], read_files: bool) -> None:
    """The static configs `audit.server_properties` sets, then `audit.min_insync_replicas`,
    become core settings; what audit.settings names itself wins over both."""
    from kraft_audit.sideinputs.server_properties import PropertiesError, settings_from_properties

    value, path = audit["min_insync_replicas"], audit["server_properties"]
    if value is not None and value < 1:
        raise ConfigError(f"`audit.min_insync_replicas` must be at least 1, got {value}")
    from_file = {}
    if path is not None and read_files:
        try:
            from_file = settings_from_properties(Path(path).expanduser())
        except PropertiesError as exc:
            raise ConfigError(f"`audit.server_properties`: {exc}") from None
    if value is not None:
        from_file["min_insync_replicas_default"] = value
    audit["settings"] = {**from_file, **audit["settings"]}


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
