"""The rule catalog: rules/*.yaml bound to the functions in kraft_audit/core/rules/.

Each YAML file holds a list of rules (or ``{rules: [...]}``). A rule has id,
title, kip, severity, kind, enabled, parameters and description. Built-in ids
bind to a function registered with `@rule`; a rule with an ``expression`` is a
user rule judged by the safe expression language (kraft_audit.core.rules.expr).
Anything wrong — unknown id, unknown or mistyped parameter, bad expression,
duplicate id — raises `CatalogError` naming the file and the rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from kraft_audit.errors import CatalogError  # noqa: F401 (exported here too)
from kraft_audit.core.rules import registry
from kraft_audit.core.rules.expr import ExpressionError, compile_expression
from kraft_audit.core.rules.registry import (IMPLEMENTATIONS, ON_PARTITION, SCOPE_PARTITION, Finding,
                                        RuleImpl)

SEVERITIES = ("critical", "error", "warning", "info")
KINDS = ("invariant", "transition", "condition")
REQUIRED = ("id", "title", "kip", "severity", "kind", "description")
ALLOWED = set(REQUIRED) | {"enabled", "parameters", "expression", "records", "message", "example", "promise"}
USER_RECORDS = ("PARTITION_CHANGE_RECORD",)  # default for user rules: before is never None


@dataclass(frozen=True)
class RuleSpec:
    rule_id: str
    title: str
    kip: str
    severity: str
    kind: str
    enabled: bool
    description: str
    source: str  # file the rule was read from
    impl: RuleImpl
    parameters: dict[str, Any] = field(default_factory=dict)  # defaults merged with YAML values
    expression: str | None = None
    example: str | None = None  # a finding as the rule reports it, for the docs
    # a rule that recomputes what Kafka's code writes names the rules that state the promise
    # behind it, for any correct controller (a bug in Kafka's computation would be the
    # recomputation's expected value); empty: the rule states a promise itself
    promise: tuple[str, ...] = ()


@dataclass
class Catalog:
    rules: list[RuleSpec]
    directory: str

    def get(self, rule_id: str) -> RuleSpec:
        for spec in self.rules:
            if spec.rule_id == rule_id:
                return spec
        raise KeyError(rule_id)

    def enabled(self, trigger: str, record_type: str | None = None) -> list[RuleSpec]:
        return [s for s in self.rules if s.enabled and s.impl.on == trigger
                and (record_type is None or not s.impl.records or record_type in s.impl.records)]


def default_rules_dir():
    """The catalog shipped with the package (a link to rules/ at the top of the
    project). A resource, not a path: under spark-submit the package may be
    imported from the zip given to --py-files."""
    from importlib.resources import files

    return files("kraft_audit").joinpath("data", "rules")


def read_rule_files(rules_dir: str | Path | None = None) -> dict[str, str]:
    """The catalog's YAML files by name. The Spark driver reads them once and
    ships the text, so executors need no copy of the rules directory."""
    directory = Path(rules_dir) if rules_dir is not None else default_rules_dir()
    if not directory.is_dir():
        raise CatalogError(f"rules directory {directory} does not exist")
    files = sorted((f for f in directory.iterdir() if f.name.endswith((".yaml", ".yml"))),
                   key=lambda f: (not f.name.endswith(".yaml"), f.name))
    if not files:
        raise CatalogError(f"no *.yaml rule files in {directory}")
    return {f.name: f.read_text() for f in files}


def load_catalog(rules_dir: str | Path | None = None) -> Catalog:
    directory = Path(rules_dir) if rules_dir is not None else default_rules_dir()
    return catalog_from_files(read_rule_files(rules_dir), str(directory))


def catalog_from_files(files: dict[str, str], directory: str = "<shipped>") -> Catalog:
    """Build the catalog from {file name: YAML text}; errors name the file and rule."""
    _load_implementations()
    specs: list[RuleSpec] = []
    seen: dict[str, str] = {}
    for name, text in files.items():
        for entry in _entries(name, text):
            spec = _spec(name, entry)
            if spec.rule_id in seen:
                raise CatalogError(f"{name}: rule {spec.rule_id!r} is already defined in "
                                   f"{seen[spec.rule_id]}")
            seen[spec.rule_id] = name
            specs.append(spec)
    for spec in specs:
        unknown = [r for r in spec.promise if r not in seen]
        if unknown:
            raise CatalogError(f"{spec.source}: rule {spec.rule_id!r}: its promise names unknown rules {unknown}")
    return Catalog(specs, directory)


def _load_implementations() -> None:
    # Importing the modules registers their rules.
    from kraft_audit.core.rules import (cluster_records, directories, input_problems, kip550,  # noqa: F401
                                        kip704, kip966, kraft, records, snapshots)


# libyaml's safe loader where PyYAML was built with it: the same documents, a tenth of the
# pure-Python parser's time (most of loading the catalog, which every `check` does)
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _entries(name: str, text: str) -> list[dict]:
    try:
        doc = yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise CatalogError(f"{name}: not valid YAML: {exc}") from None
    if isinstance(doc, dict):
        doc = doc.get("rules")
    if not isinstance(doc, list) or not all(isinstance(e, dict) for e in doc):
        raise CatalogError(f"{name}: expected a list of rules (or 'rules:' holding one)")
    return doc


def _spec(file: str, entry: dict) -> RuleSpec:
    rule_id = entry.get("id")

    def fail(reason: str) -> CatalogError:
        return CatalogError(f"{file}: rule {rule_id!r}: {reason}")

    missing = [k for k in REQUIRED if not entry.get(k)]
    if missing:
        raise fail(f"missing {', '.join(missing)}")
    unknown = sorted(set(entry) - ALLOWED)
    if unknown:
        raise fail(f"unknown keys {unknown} (allowed: {sorted(ALLOWED)})")
    if entry["severity"] not in SEVERITIES:
        raise fail(f"severity must be one of {SEVERITIES}, not {entry['severity']!r}")
    if entry["kind"] not in KINDS:
        raise fail(f"kind must be one of {KINDS}, not {entry['kind']!r}")
    enabled = entry.get("enabled", True)
    if not isinstance(enabled, bool):
        raise fail("enabled must be true or false")
    promise = entry.get("promise") or []
    if not isinstance(promise, list) or not all(isinstance(r, str) for r in promise):
        raise fail("promise must be a list of rule ids")
    given = entry.get("parameters") or {}
    if not isinstance(given, dict):
        raise fail("parameters must be a mapping")

    expression = entry.get("expression")
    if expression is not None:
        impl = _user_impl(rule_id, expression, entry, given, fail)
        parameters = dict(given)
    else:
        impl = IMPLEMENTATIONS.get(rule_id)
        if impl is None:
            raise fail(f"no implementation with this id (known: {', '.join(sorted(IMPLEMENTATIONS))});"
                       " a custom rule needs an 'expression'")
        parameters = _parameters(impl, given, fail)
    return RuleSpec(rule_id, entry["title"], str(entry["kip"]), entry["severity"], entry["kind"],
                    enabled, entry["description"].strip(), file, impl, parameters, expression,
                    entry.get("example"), tuple(promise))


def _parameters(impl: RuleImpl, given: dict, fail) -> dict[str, Any]:
    merged = dict(impl.params)
    for name, value in given.items():
        if name not in impl.params:
            raise fail(f"unknown parameter {name!r} (known: {sorted(impl.params) or 'none'})")
        default = impl.params[name]
        expected = type(default)
        ok = isinstance(value, expected) and not (expected is int and isinstance(value, bool))
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if not ok:
            raise fail(f"parameter {name!r} must be {expected.__name__}, not {value!r}")
        merged[name] = value
    return merged


def _user_impl(rule_id: str, expression: str, entry: dict, given: dict, fail) -> RuleImpl:
    if rule_id in IMPLEMENTATIONS:
        raise fail("a user rule cannot reuse a built-in id")
    try:
        condition = compile_expression(expression, given)
    except ExpressionError as exc:
        raise fail(f"bad expression {expression!r}: {exc}") from None
    records = tuple(entry.get("records") or USER_RECORDS)
    bad = [r for r in records if r not in registry.PARTITION_RECORDS]
    if bad:
        raise fail(f"records {bad} are not partition records {registry.PARTITION_RECORDS}")
    message = entry.get("message") or f"{entry['title']} ({expression.strip()})"
    return RuleImpl(rule_id, _user_rule(condition, dict(given), message), ON_PARTITION, records,
                    dict(given), SCOPE_PARTITION)


def _user_rule(condition: Callable, parameters: dict, message: str):
    def judge(c) -> Finding | None:
        if c.before is None or c.after is None:
            return None
        env = {"before": c.before, "after": c.after, "event": c.event, "record": c.event.data,
               "min_isr": c.min_isr, "elr_enabled": c.elr_enabled, **parameters}
        try:
            hit = condition(env)
        except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError, AttributeError) as exc:
            return Finding(f"expression failed on this record: {exc}")
        return Finding(message) if hit else None

    return judge
