"""Input problems: records the replay could not use as Kafka would have."""

from __future__ import annotations

from kraft_audit.core.rules.registry import SCOPE_CLUSTER, rule


def _when(code: str):
    def judge(c):
        return str(c.problem) if c.problem.code == code else None

    return judge


rule("input.unknown-partition", on="input")(_when("unknown-partition"))
rule("input.unknown-topic", on="input")(_when("unknown-topic"))
rule("input.offset-regression", on="input", scope=SCOPE_CLUSTER)(_when("offset-regression"))
rule("input.unknown-broker", on="input", scope=SCOPE_CLUSTER)(_when("unknown-broker"))
