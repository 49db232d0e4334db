"""docs/rules.md, rendered from the rule catalog so the two never disagree.

    python -m kraft_audit.core.rules.docs > docs/rules.md
"""

from __future__ import annotations

from kraft_audit.core.rules.catalog import Catalog, load_catalog
from kraft_audit.core.rules.registry import (ON_BATCH_END, ON_INPUT, ON_LOG_DIRS, ON_PARTITION,
                                        ON_PARTITION_BATCH_END, ON_REGISTRATION,
                                        ON_REGISTRATION_TIMEOUT, ON_RECORD, ON_SNAPSHOT,
                                        SCOPE_CLUSTER)

WHEN = {
    ON_PARTITION: "each partition record, as it is applied",
    ON_PARTITION_BATCH_END: "each partition change, at the end of its atomic batch",
    ON_BATCH_END: "the end of each atomic batch",
    ON_REGISTRATION: "a registration request matched with its RegisterBrokerRecord",
    ON_REGISTRATION_TIMEOUT: "a registration request left unmatched",
    ON_LOG_DIRS: "each broker log-dir inventory",
    ON_INPUT: "a record replay cannot use",
    ON_RECORD: "each cluster record of its types, before it is applied",
    ON_SNAPSHOT: "each snapshot whose end the log holds, against the log replayed to it",
}

INTRO = """# Rules

Every rule the auditor runs, rendered from `rules/*.yaml` (`python -m
kraft_audit.core.rules.docs > docs/rules.md`). A rule is one function in
`kraft_audit/core/rules/` bound to one YAML entry by its id; the YAML sets title,
KIP, severity, kind (invariant: a property of every state; transition: a
property of a change; condition: a situation worth reporting), whether it is
enabled, and its parameters. Rules follow Kafka's controller code where it
departs from the KIP text (facts: `PartitionChangeBuilder`,
`ReplicationControlManager`); the settings that choose between versions are
in `kraft_audit/core/replay/settings.py`.

A finding becomes a row of the `violations` table with the rule id, KIP,
severity, topic/partition/broker, the offset of the record that broke it
(batch-end rules: the last offset of the atomic batch; side inputs: -1) and
evidence (the partition before and after, the record).

To add a rule: write a function of a `Check` in `kraft_audit/core/rules/<kip>.py`
decorated with `@rule("<id>", on=..., records=...)`, add its YAML entry, and
a test where it fires and one where it stays quiet. Site rules need no code:
an entry with an `expression` over `before`, `after`, `event`, `record`,
`min_isr`, `elr_enabled` and its parameters (see `rules/user.yaml`).
"""


def render(catalog: Catalog) -> str:
    parts = [INTRO]
    for kip in sorted({s.kip for s in catalog.rules}):
        parts.append(f"\n## {kip}\n")
        for spec in (s for s in catalog.rules if s.kip == kip):
            facts = [f"severity **{spec.severity}**", spec.kind, f"runs on: {WHEN[spec.impl.on]}",
                     "cluster-scoped" if spec.impl.scope == SCOPE_CLUSTER else "per partition",
                     "enabled" if spec.enabled else "**disabled**"]
            parts.append(f"\n### `{spec.rule_id}` — {spec.title}\n\n{' · '.join(facts)} "
                         f"(`rules/{spec.source}`)\n\n{spec.description}\n")
            if spec.expression:
                parts.append(f"\nExpression: `{spec.expression}`\n")
            if spec.parameters:
                shown = ", ".join(f"`{k}` = {v!r}" for k, v in spec.parameters.items())
                parts.append(f"\nParameters: {shown}\n")
            if spec.example:
                parts.append(f"\nExample finding: _{spec.example}_\n")
    return "".join(parts)


if __name__ == "__main__":
    print(render(load_catalog()), end="")
