"""docs/rules.md, rendered from the rule catalog so the two never disagree.

    python -m kraft_audit.core.rules.docs > docs/rules.md
"""

from __future__ import annotations

from kraft_audit.core.rules.catalog import Catalog, load_catalog
from kraft_audit.core.rules.coverage import CONDITIONS_MOVED, USE, rules_by_record_type
from kraft_audit.core.rules.crosswalk import PROPERTIES
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


# The mutant classes of kraft_audit/testing/mutate.py, and why no correct controller writes
# a mutant of each
MUTATION_CLASSES = {
    "wrong-value":
        "a field holds a value the state before and the record's cause rule out: a leader "
        'that is not a replica, an ISR member not in the replicas, a replica named twice, a '
        'new partition whose epochs do not start at 0, a broker record whose epoch is not its'
        " registration's, a re-registration whose epoch went back, a producer-id block handed"
        ' out twice or to a broker never registered; an ACL binding with a filter\'s ANY code '
        '(the controller validates a new ACL), SCRAM iterations below the mechanism\'s minimum, '
        'a negative quota, a token that expires after its maximum life or is issued after it '
        'expires, metadata.version 0, a controller\'s supported range with min above max, a '
        'config of a topic that does not exist, a removal of an ACL, token or topic that does '
        'not exist, metadata.version lowered below what a finalized feature level needs',
    "missing-record":
        'a record the log needs is gone: what it created (a topic, a partition, a broker, an '
        'ACL, a SCRAM credential, a quota, a token) is used or removed later, so a later record '
        'refers to something never created; the bootstrap metadata.version every KRaft log '
        'starts with; the metadata.version upgrade a feature level finalized later needs; a '
        'leader move of a broker entering controlled shutdown',
    "extra-record":
        'a record a controller never writes: a change record that changes nothing (Kafka '
        'skips a no-op change), a partition created again with older epochs, a second live '
        'topic with an existing name, an ACL id created twice, a removal of what was already '
        'removed (ACL, credential, quota, token, topic), a transaction begun inside another or '
        'ended when none is open, a feature level finalized after an upgrade that leaves '
        'metadata.version below what it needs',
    "reordered-record":
        'a record moved before the record it depends on: a partition changed before it is '
        'created, a partition created before its topic, an ACL, credential, quota or token '
        'removed before it is created, a later producer-id block handed out first, a feature '
        'level finalized before the metadata.version upgrade it needs',
    "wrong-type":
        'a record written as another type with the same fields: a change record written as a '
        'creation (its unset fields become defaults, the epochs go back), a topic creation '
        'written as a removal of a topic never created, an ACL or a first SCRAM credential '
        'written as its removal',
    "overflow":
        "a number beyond its field's range: a negative partition, broker or controller id, an "
        'epoch wrapped to -2^31 or -2^63, a next producer id wrapped negative, an enum code no '
        'type has (ACL resource type, SCRAM mechanism, config resource type), SCRAM iterations '
        'or a token\'s maximum life wrapped negative, a quota beyond a long, a feature level -1',
    "unparseable-string":
        'a string no consumer can use: an illegal topic name, a typed config value that does '
        'not parse, a topic id that names no topic, an ACL principal or token owner without '
        'its "type:name" form, an empty SCRAM user or feature name, an unknown quota key or '
        'entity type',
    "snapshot-differs":
        "a snapshot whose image is not the log's at its end offset: a partition's leader "
        'epoch or ISR changed, a topic renamed, a config value changed, a partition left out, '
        'an ACL, SCRAM credential, quota, token, feature level, producer-id block or broker '
        'epoch changed',
    "missing-liveness":
        'an election the controller promises is gone, and the log goes on past its bound: a '
        'preferred-leader election (the change that only moves the leader to the first '
        'replica) left out where the log then runs two leader.imbalance.check.interval.seconds '
        "with nothing about the partition or that replica's broker (the controller elected it, "
        'so it could lead; it still can, and a controller that rebalances leaders elects it '
        'within one interval); the clean election of a leaderless partition (the change that '
        'only sets its leader, to an ISR member) left out of the operation that made the '
        'replica electable (a controller elects in that operation, never leaves it leaderless '
        'past its end); the unclean election of a leaderless partition of a topic that allows '
        'it (the change that sets its leader to a replica out of the ISR and ELR, RECOVERING) '
        "left out of the unfence of that replica's broker (an unfence elects over every "
        'leaderless partition, uncleanly where the topic allows it and no clean candidate can '
        'lead: it never leaves one leaderless past its end while a replica could lead); the '
        'removal of an expired delegation token (its expiration or max timestamp before the '
        "removal's time) left out where the log then runs two bounds with nothing about the "
        'token (a controller with tokens enabled removes every expired token in its sweep, '
        'every delegation.token.expiry.check.interval.ms, and never renews one)',
}

MUTATIONS = """
## Measured: mutation testing over real logs

`make test-mutations` (`python -m kraft_audit.testing.mutate`, `pytest -m mutations`; about
3 minutes on 2 cores, its own target, run by `.ci/run` after `make test`) takes
the real logs in `tests/fixtures/kraft-real/`, `tests/fixtures/kraft-story/` (a real
cluster's log holding every record type a cluster writes, on two 4.x lines and a 3.x line) and
`tests/fixtures/kraft-liveness/` (a real controller's periodic preferred elections with a 3 s
leader.imbalance.check.interval.seconds, its own unclean election at an unfence, and its
sweep of an expired delegation token with an 8 s delegation.token.expiry.check.interval.ms,
on a 4.x and a 3.x line), writes
mutants of them with one controller
mistake each (records changed at the record level, every batch re-framed with valid offsets
and CRCs) and audits each as `kraft-audit check` does, with the settings of its cluster where
a log keeps them beside it (its controller's `server.properties`, as `--server-properties`
reads it, here the check intervals; Kafka's defaults otherwise). A mutant counts as flagged when a
finding falls in the atomic batch of the first record that makes the log impossible (for a
snapshot: at its end offset - 1); a liveness mutant (`missing-liveness`) when its condition
is open on its partition (or token) at the end of that batch and stays open longer than the
controller's bound in the log's time, closed later or still open at the log's end (what
`kraft-audit check` counts as "open longer than the controller's bound": `past_bound` in
`kraft_audit/core/replay/conditions.py`; a condition judged where an operation ends has no
bound to wait: open at all). Each unmutated log must give no finding and no interval open
past its bound. The classes, and
why no correct controller writes a mutant of them:

{class_rows}

Every mutant names the record type it mutates, and the run prints the score per record type
and class too. Score per class on the eight real logs (4 mutants per kind of mistake, record
type and log, seed 7),
before the rules written for the whole image and for every record type (`NEW_RULES` in
tests/test_mutations.py: `kraft.snapshot-equals-log`, `kraft.snapshot-framing`, the field,
uniqueness and removal rules of each record type, the log-directory, metadata.version,
feature-dependency, kraft.version and voter rules, and the promises written beside the
recomputing rules: ELR and LastKnownElr entered from the ISR, replica placement; `--without` each)
and with them:

| class | mutants | flagged before | flagged now | score now |
|---|---|---|---|---|
{score_rows}

Three classes score below 100% (13 misses; the run's table per record type and class
shows where). Among them is one mistake no rule can see: a delegation token's
creation left out (or its removal moved before it) where a renewal of the token follows.
The renewal then reads as the token's creation, and nothing in a DelegationTokenRecord
tells the two apart but how old the token is when the record is written (a renewal keeps
the issue time of the creation); the age a renewal needs is bounded by no setting in the
log, and a 3.x controller migrating from ZooKeeper writes tokens issued long before, so no
invariant any correct controller keeps separates them. The snapshot-differs misses fall on
SnapshotHeader and SnapshotFooter records among others (the per-type table).

`missing-liveness` is scored by conditions, not rules: `--without` cannot turn them off, so
its "before" column counts them too (before issue 21 no liveness condition judged it: 0%).
Its mutants come from the kraft-liveness logs (preferred elections, `leader_imbalanced`;
the unclean election at an unfence, `unclean_election_overdue`; the sweep of an expired
delegation token, `delegation_token_expired`) and from the kraft-real and
kraft-liveness logs (a broker's unfence electing the partitions it left
leaderless, `election_overdue`: any interval of it is a promise broken, since the
controller elects a clean candidate in the operation that makes it electable, and the
condition is judged where that operation ends).
Why no correct controller leaves out a preferred election: a controller that rebalances leaders
(auto.leader.rebalance.enable, Kafka's default) runs its balance task every
leader.imbalance.check.interval.seconds while any partition is led by another than its first
replica, rescheduling it after each run (QuorumController), and each run elects the first
replica of every such partition where that replica is in the ISR and an acceptable leader
(ReplicationControlManager, PartitionChangeBuilder's preferred election). The mutant drops a
change that only moves the leader to the first replica; that replica could lead when the
controller elected it, and stays able to, since the generator drops only an election after
which the log runs two check intervals with no record about the partition or that replica's
broker. The imbalance then lasts more than twice the bound where one interval (plus the
event queue's latency) is promised: on the real logs every interval closes 1.0 to 2.3 s
after it opens, with a 3 s interval. Measured with the log's own settings only: with
Kafka's default bound (300 s) the same mutants are not flagged
(tests/test_leader_imbalanced.py).
Why no correct controller leaves out the unclean election of an unfence: the unfence of a
broker runs an election over every leaderless partition in its own batch
(ReplicationControlManager.handleBrokerUnfenced), with PartitionChangeBuilder's unclean
election where the topic allows it (unclean.leader.election.enable, topic or cluster
default), which elects the first acceptable replica (the unfenced broker is acceptable)
when no ISR member, nor ELR member with the ISR empty, can lead (seen on a 3.x and a 4.x
line). The kraft-liveness logs hold one, made by the controller itself (a topic that allows
it, its last ISR member shut down, a replica out of the ISR unfenced: leader out of the ISR
and ELR, RECOVERING). The mutant drops that change from the unfence's batch, so the unfence
ends with the partition leaderless while its broker could lead it uncleanly:
`unclean_election_overdue` opens at that batch's end (the mutant's offset is the batch's
first record, the unfence), and the mutant is flagged there. The records after it were
written for a led partition (the new leader's ISR expansion carrying RECOVERED) and the
rules flag them too, later; no finding of the mutated batch is needed, the condition is
the witness. Not scored: `reassignment_stalled` has no mutant of this kind, since a
controller completes a reassignment in the record that brings its last adding replica into
the ISR, and leaving that record out leaves out the ISR change that would open it.
Why no correct controller leaves out the sweep of an expired delegation token: a controller
with delegation tokens enabled (delegation.token.secret.key set) sweeps every
delegation.token.expiry.check.interval.ms (3.7-3.9 schedule the next sweep as one starts,
4.x run it as a periodic task rescheduled after each run; QuorumController), and each sweep
writes a RemoveDelegationTokenRecord for every token whose max or expiration timestamp is
before its clock (DelegationTokenControlManager.sweepExpiredDelegationTokens); it never
renews an expired token (a renewal of one is answered DELEGATION_TOKEN_EXPIRED). The mutant
drops a removal of a token already past its deadline at the removal's time (the sweep's, or
an expire request's that removes at once), where the log then runs two bounds with no
record about the token, so the token stays expired in the image longer than any sweep
allows: `delegation_token_expired` opens at the first record past
its deadline that is not a partition's (a NoOp at the latest) and stays open to the log's
end, past its bound (the check interval rounded up to seconds and 5 s for the controller's
event queue, 13 s on these logs, where the real sweep's interval lasts 6.0 s).
"""

# Measured by `python -m kraft_audit.testing.mutate` (and its `--without` run for "before");
# the mutations test fails when the measured table departs from these rows.
SCORES = (('wrong-value', 690, 160, 690), ('missing-record', 152, 90, 149), ('extra-record', 189, 94, 189), ('reordered-record', 108, 70, 104), ('wrong-type', 97, 66, 97), ('overflow', 321, 80, 321), ('unparseable-string', 210, 40, 210), ('snapshot-differs', 211, 30, 205), ('missing-liveness', 30, 30, 30))


def mutation_section() -> str:
    rows = "\n".join(f"| {c} | {n} | {before} ({100 * before / n:.0f}%) | {now} | {100 * now / n:.0f}% |"
                     for c, n, before, now in SCORES)
    classes = "\n".join(f"| {c} | {why} |" for c, why in MUTATION_CLASSES.items())
    return MUTATIONS.replace("{class_rows}", "| class | why no correct controller writes it |\n|---|---|\n"
                             + classes).replace("{score_rows}", rows)


IMAGE = """
## The image between changes

Kafka's controller keeps these invariants of its image (ReplicationControlManager,
PartitionChangeBuilder, the KIPs above) after every atomic batch, and at the end of a
metadata transaction spanning several. Each is judged where it can break, at the cost of
the change: an invariant of a partition's own fields can only break by a record about that
partition, so it is judged on that record; one that also reads a broker or a config can
break by a broker or config record, so it is judged there over the partitions that record
touches indirectly: a broker's through the state's index of partitions by replica broker
(built once from the table, also after a restart, then kept by every write; an ISR, ELR or
leader outside the replicas is `kip966.subset-of-replicas`'s finding), a config's through
its topic's partitions.

| invariant | reads | rules | grace, and why |
|---|---|---|---|
| the leader, ISR and ELR are replicas; the leader is in the ISR | the partition | `kip966.subset-of-replicas`, `kip966.leader-in-isr` | none: every record Kafka writes keeps them |
| the ISR and ELR are disjoint; ELR only below min ISR | the partition, min ISR | `kip966.elr-isr-disjoint`, `kip966.elr-only-below-min-isr`, `kip966.elr-cleared-on-min-isr-change` | a min ISR change is judged by the ClearElrRecord Kafka writes with it |
| a RECOVERING partition's ISR is at most its leader | the partition | `kip704.recovering-isr-is-leader` | the last leader may stay when it went away |
| epochs: the partition epoch bumps with every change, the leader epoch exactly when Leader is set, a snapshot re-states the epochs the log built | the partition | replay (`PartitionRegistration.merge`), `kraft.partition-epoch-bump`, `kraft.leader-epoch-bump`, `kraft.leader-bump-has-cause`, `kraft.change-sets-new-values`, `kraft.epochs-monotonic`, `kraft.snapshot-equals-log` | an ISR shrink may bump the leader epoch below MV 4.0-IV0 (a 3.x controller migrating from ZooKeeper does) |
| a fenced or unregistered broker is in no ISR | brokers | `kip966.fenced-out-of-isr` (batch end, the fenced brokers' partitions) | without ELR the last ISR member stays: Kafka never empties the ISR then |
| a fenced, unregistered or shutting-down broker leads nothing | brokers | `kraft.leader-leaves-unavailable-broker` (batch end, that broker's partitions) | a re-registration: Kafka moves leaders then only after an unclean shutdown, judged by the KIP-966 rules; a controlled shutdown whose operation may go on past the batch (10,000 records or more from its registration change) |
| every finalized feature level has the levels it depends on | features | `kraft.feature-dependencies` (batch end, the finalized levels) | the bootstrap (the operation that first sets metadata.version), snapshots, a batch inside an open metadata transaction |
| no partition is leaderless while an ISR or ELR member could lead | brokers, log dirs | `election_overdue` condition (operation end) | inside a metadata transaction: judged at its end |
| no partition of a topic that allows unclean elections is leaderless while a replica could lead | the partition, brokers, log dirs, configs | `unclean_election_overdue` condition (operation end) | inside a metadata transaction: judged at its end; a config change that allows it: opened at the change, Kafka's timer elects within one unclean.leader.election.interval.ms (5 min by default; from the controller's server.properties or the setting unclean_leader_election_interval_ms): `check` counts an interval past that and 5 s (a new active controller starts the timer again); a line without the timer waits for the next unfence |
| a partition whose preferred replica (its first) could lead is led by it within leader.imbalance.check.interval.seconds, when the controller rebalances leaders | the partition, brokers, log dirs | `leader_imbalanced` condition (each record; a broker record through the partitions it is the preferred replica of) | one check interval (the controller's leader.imbalance.check.interval.seconds from its server.properties, or the setting leader_imbalance_check_interval_seconds; Kafka's default 300 s); a new active controller runs its first rebalance one interval after it takes over: the deadline moves to one interval and 5 s after its LeaderChange record, unless the controller before it wrote a record past the deadline (`check`); the alert waits two |
| a delegation token past its expiration (or max) timestamp is removed within delegation.token.expiry.check.interval.ms, when the controller has tokens enabled | tokens | `delegation_token_expired` condition (each record that is not a partition's, past a token's deadline; closed by its removal or a renewal past the record's time) | one check interval rounded up to seconds and 5 s for the event queue (the controller's delegation.token.expiry.check.interval.ms from its server.properties, or the setting delegation_token_expiry_check_interval_ms; Kafka's default 1 h); a new active controller runs its first sweep one interval after it takes over: the deadline moves to one bound and 5 s after its LeaderChange record, unless the controller before it wrote a record past the deadline (`check`); the alert waits two |
| a replica placed in UNASSIGNED on a broker that can report its directory (registered, unfenced, not in controlled shutdown, its directories registered) is given a directory within a bounded time: the broker reports where it made it, and the controller writes what it reports | the partition, brokers | `directory_unassigned` condition (each record; a broker record through its partitions with a replica in UNASSIGNED) | the setting directory_assignment_bound_seconds (30 s): the broker reports half a second after it makes the replica and retries with a backoff from 100 ms; a broker that cannot reach the controller is fenced within its session timeout (9 s by default), which closes the interval; on real clusters an interval lasts under a second (`check`) |
| one Raft leader per epoch, epochs never go back | the batches | `kraft.election-safety` | epochs up to the first one the input shows count as announced |
| while the ELR is on, min ISR is one cluster-wide value (the cluster level set, no broker level) | configs, features | `kip966.min-isr-one-value-with-elr` (each config record, and the record that turns the ELR on) | a bootstrap transaction writes the cluster value after its features: not judged inside one |
"""


def render(catalog: Catalog) -> str:
    parts = [INTRO]
    for kip in sorted({s.kip for s in catalog.rules}):
        parts.append(f"\n## {kip}\n")
        for spec in (s for s in catalog.rules if s.kip == kip):
            facts = [f"severity **{spec.severity}**", spec.kind, f"runs on: {WHEN[spec.impl.on]}",
                     "cluster-scoped" if spec.impl.scope == SCOPE_CLUSTER else "per partition",
                     "enabled" if spec.enabled else "**disabled**"]
            basis = ("Recomputes what Kafka's code writes; the promise any correct controller keeps, "
                     "stated beside it: " + ", ".join(f"`{r}`" for r in spec.promise) if spec.promise
                     else "States a promise any correct controller keeps, whatever its code.")
            parts.append(f"\n### `{spec.rule_id}` — {spec.title}\n\n{' · '.join(facts)} "
                         f"(`rules/{spec.source}`)\n\n{spec.description}\n\n_{basis}_\n")
            if spec.expression:
                parts.append(f"\nExpression: `{spec.expression}`\n")
            if spec.parameters:
                shown = ", ".join(f"`{k}` = {v!r}" for k, v in spec.parameters.items())
                parts.append(f"\nParameters: {shown}\n")
            if spec.example:
                parts.append(f"\nExample finding: _{spec.example}_\n")
    parts.append(IMAGE)
    parts.append(render_coverage(catalog))
    parts.append(render_crosswalk())
    parts.append(mutation_section())
    return "".join(parts)


COVERAGE_INTRO = """
## Record types and the rules that judge them

Every metadata record type (apiKeys 0-29) and Raft control record, with the rules that
read it (their sections above give the invariant and its reasoning), the conditions it can
open or close, and what replay takes from it. A type with no rule is listed as such: the
auditor counts it (it is applied, a duplicate or quarantined like any record) but judges
none of its fields. The `input.*` rules judge any record replay cannot use; a malformed
record of any type is quarantined with its reason, and every record a snapshot holds,
whatever its type, is compared with the log's image by `kraft.snapshot-equals-log`
(`kraft_audit/core/rules/coverage.py`).

| record type | rules | conditions | replay uses it for |
|---|---|---|---|
"""


def render_coverage(catalog: Catalog) -> str:
    rows = []
    for record_type, rule_ids in rules_by_record_type(catalog).items():
        rules = ", ".join(f"`{r}`" for r in rule_ids) or "**no rule**"
        rows.append(f"| `{record_type}` | {rules} | {CONDITIONS_MOVED.get(record_type, '–')} | "
                    f"{USE.get(record_type, '–')} |\n")
    return COVERAGE_INTRO + "".join(rows)


CROSSWALK_INTRO = """
## Cross-walk: the formal models and Kafka's controller tests

The properties of the TLA+ models of Kafka's replication (Vanlightly/kafka-tlaplus: the
KIP-966 model, the v3.5 model, the KIP-853/996 models of the Raft layer) and the
scenarios of Kafka's own controller tests, each with whether the metadata log can show it
broken and which rules or conditions check it (`kraft_audit/core/rules/crosswalk.py`).

| source | property | says | observable in the log | checked by | how |
|---|---|---|---|---|---|
"""


def render_crosswalk() -> str:
    rows = []
    for p in PROPERTIES:
        checked = ", ".join(f"`{c}`" for c in p.checked_by) or "–"
        rows.append(f"| {p.source} | {p.name} | {p.says} | {p.observable} | {checked} | {p.how} |\n")
    return CROSSWALK_INTRO + "".join(rows)


if __name__ == "__main__":
    print(render(load_catalog()), end="")
