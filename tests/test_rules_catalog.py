"""Loading rules/*.yaml: clear errors at load, user rules in the safe expression language."""

from __future__ import annotations

import textwrap

import pytest

from kraft_audit.core.audit import Auditor
from kraft_audit.core.rules import CatalogError, load_catalog
from kraft_audit.core.rules.expr import ExpressionError, compile_expression
from kraft_audit.core.rules.registry import IMPLEMENTATIONS

TID = "IIIIIIIIIIIIIIIIIIIIII"

RULE = """
- id: {id}
  title: A rule
  kip: {kip}
  severity: {severity}
  kind: invariant
  description: Something.
{extra}"""


def write_rules(tmp_path, name="site.yaml", id="kip966.leader-in-isr", kip="KIP-966",
                severity="error", extra=""):
    (tmp_path / name).write_text(RULE.format(id=id, kip=kip, severity=severity,
                                             extra=textwrap.indent(extra, "  ")))
    return tmp_path


def test_shipped_catalog_binds_every_implementation():
    catalog = load_catalog()
    assert {s.rule_id for s in catalog.rules} >= set(IMPLEMENTATIONS)
    assert all(s.description and s.title for s in catalog.rules)


def test_rules_state_invariants_not_fingerprints_of_a_release():
    """A rule says what any correct controller keeps: its text names no Kafka release, no
    development branch and no JIRA issue (an auditor tuned to known bugs catches nothing new)."""
    import re

    release = re.compile(r"KAFKA-\d+|\bKafka \d|\btrunk\b|\b[34]\.\d+\.\d+\b", re.I)
    named = {s.rule_id: m.group(0) for s in load_catalog().rules
             for text in (s.title, s.description, s.example or "")
             if (m := release.search(text or ""))}
    assert named == {}


def test_a_rule_that_recomputes_kafkas_code_names_the_promise_beside_it():
    """A recomputation of Kafka's code accepts Kafka's bugs: such a rule (its title says it
    judges by what Kafka computes, picks or requires) names the rules that state the promise
    on their own, and those state one (they recompute nothing themselves)."""
    import re

    catalog = load_catalog()
    recomputing = {s.rule_id for s in catalog.rules
                   if re.search(r"Kafka's|Kafka (writes|computes|requires|has)|what Kafka", s.title)}
    assert recomputing and recomputing <= {s.rule_id for s in catalog.rules if s.promise}
    for spec in catalog.rules:
        for rule_id in spec.promise:
            assert not catalog.get(rule_id).promise, (spec.rule_id, rule_id)


@pytest.mark.parametrize("kwargs,message", [
    ({"id": "kip966.no-such-rule"}, "site.yaml: rule 'kip966.no-such-rule': no implementation"),
    ({"severity": "fatal"}, "severity must be one of"),
    ({"id": "kip550.stray-replica", "extra": "parameters:\n  min_size: 1\n"},
     "rule 'kip550.stray-replica': unknown parameter 'min_size'"),
    ({"id": "kip550.stray-replica", "extra": "parameters:\n  min_size_bytes: lots\n"},
     "parameter 'min_size_bytes' must be int"),
    ({"id": "user.x", "kip": "user", "extra": "expression: len(after.isr) <\n"},
     "rule 'user.x': bad expression 'len(after.isr) <': syntax error"),
    ({"id": "user.x", "kip": "user", "extra": "expression: after.__class__\n"},
     "after has no field '__class__'"),
    ({"id": "user.x", "kip": "user", "extra": "expression: open('/etc/passwd')\n"},
     "only these functions may be called"),
    ({"id": "user.x", "kip": "user", "extra": "expression: (lambda: 1)()\n"}, "not allowed"),
    ({"extra": "colour: red\n"}, "unknown keys ['colour']"),
    ({"extra": "promise: kip966.leader-in-isr\n"}, "promise must be a list of rule ids"),
    ({"extra": "promise: [kip966.no-such-promise]\n"}, "its promise names unknown rules ['kip966.no-such-promise']"),
])
def test_bad_catalog_fails_at_load_naming_file_and_rule(tmp_path, kwargs, message):
    write_rules(tmp_path, **kwargs)
    with pytest.raises(CatalogError) as info:
        load_catalog(tmp_path)
    assert message in str(info.value)
    assert str(info.value).startswith("site.yaml: ")


def test_duplicate_ids_are_rejected(tmp_path):
    write_rules(tmp_path, "a.yaml")
    write_rules(tmp_path, "b.yaml")
    with pytest.raises(CatalogError, match="already defined in a.yaml"):
        load_catalog(tmp_path)


def test_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(CatalogError, match="does not exist"):
        load_catalog(tmp_path / "nope")


@pytest.mark.parametrize("expression,env,value", [
    ("len(before.isr) - len(after.isr) >= 2", {"before": (1, 2, 3), "after": (1,)}, True),
    ("set(after.isr) <= set(before.isr) and after.leader in after.isr",
     {"before": (1, 2), "after": (2,)}, True),
    ("record['leader'] == -1 or min_isr > 2", {"record": {"leader": 3}, "min_isr": 3}, True),
    ("max(after.isr) if after.isr else -1", {"after": ()}, -1),
    ("not elr_enabled", {"elr_enabled": True}, False),
])
def test_expressions(expression, env, value):
    class P:
        def __init__(self, isr):
            self.isr, self.leader = isr, isr[-1] if isr else -1

    full = {"before": None, "after": None, "event": None, "record": {}, "min_isr": 1,
            "elr_enabled": False}
    full.update({k: P(v) if k in ("before", "after") else v for k, v in env.items()})
    assert compile_expression(expression)(full) == value


@pytest.mark.parametrize("expression", ["__import__('os')", "event.data.__class__", "x.y",
                                        "after.isr[1:]", "[i for i in after.isr]", "len(x=1)"])
def test_unsafe_expressions_are_rejected(expression):
    with pytest.raises(ExpressionError):
        compile_expression(expression)


def test_user_rule_fires_and_stays_quiet(tmp_path, kraft_log):
    write_rules(tmp_path, id="user.isr-shrank", kip="user", severity="warning",
                extra="parameters:\n  by: 2\nexpression: len(before.isr) - len(after.isr) >= by\n")
    catalog = load_catalog(tmp_path)
    log = kraft_log
    log.batch(log.topic("t", TID), log.partition(TID, 0, [1, 2, 3, 4]))
    log.batch(log.change(TID, 0, isr=[1, 2, 3]))
    (bad,) = log.batch(log.change(TID, 0, isr=[1]))
    out = Auditor(catalog).process(log.events)
    assert [(v.rule_id, v.offset, v.kip, v.severity) for v in out.violations] == [
        ("user.isr-shrank", bad.offset, "user", "warning")]


def test_disabled_rules_do_not_run(tmp_path, kraft_log):
    write_rules(tmp_path, extra="enabled: false\n")
    log = kraft_log
    log.batch(log.topic("t", TID), log.partition(TID, 0, [1, 2], [2], leader=1))
    assert Auditor(load_catalog(tmp_path)).process(log.events).violations == []
    write_rules(tmp_path)
    assert len(Auditor(load_catalog(tmp_path)).process(log.events).violations) == 1


def test_docs_rules_md_is_rendered_from_the_catalog():
    from pathlib import Path

    from kraft_audit.core.rules.docs import render

    docs = Path(__file__).resolve().parents[1] / "docs" / "rules.md"
    assert docs.read_text() == render(load_catalog()), "run: python -m kraft_audit.core.rules.docs > docs/rules.md"


def test_crosswalk_names_only_rules_and_conditions_that_exist():
    from kraft_audit.core.replay.conditions import CONDITIONS
    from kraft_audit.core.rules.crosswalk import (NOT_OBSERVABLE, OBSERVABLE, PARTLY, PROPERTIES,
                                                  UNCHECKED)

    rule_ids = {s.rule_id for s in load_catalog().rules}
    conditions = {name for name, _ in CONDITIONS}
    for prop in PROPERTIES:
        assert prop.observable in (OBSERVABLE, PARTLY, NOT_OBSERVABLE, UNCHECKED), prop.name
        for checker in prop.checked_by:
            if checker.startswith("condition:"):
                assert checker.removeprefix("condition:") in conditions, (prop.name, checker)
            else:
                assert checker in rule_ids, (prop.name, checker)
        # what the log can show is checked by something, or said to be a gap
        assert bool(prop.checked_by) == (prop.observable in (OBSERVABLE, PARTLY)), prop.name


def test_the_record_type_table_lists_every_type_the_codec_knows():
    from kraft_audit.core.codec.schemas import CONTROL_RECORDS, METADATA_RECORDS
    from kraft_audit.core.rules.coverage import USE, rules_by_record_type

    known = {s.type_name for s in METADATA_RECORDS + CONTROL_RECORDS}
    assert set(USE) == known
    readers = rules_by_record_type(load_catalog())
    assert set(readers) == known, "a rule declares a record type the codec does not know"
    assert "kip966.fenced-out-of-isr" in readers["FENCE_BROKER_RECORD"]
    assert "kraft.epochs-monotonic" in readers["PARTITION_RECORD"]
