"""The controller-mutant harness's own parts that need no Kafka: the Java mutation operators,
the log normalisation that decides equivalence, the score table. The harness itself runs
real clusters (make test-controller-mutants)."""

from __future__ import annotations

import re

from kraft_audit.testing.java_mutants import OPERATORS, code_lines, mutants
from kraft_audit.testing.realkafka.controller_mutants import (TARGETS, VERSION, Normaliser, Result,
                                                              apply_reviews, choose, first_difference,
                                                              noise, report, reviewed, score)

JAVA = '''package org.apache.kafka.controller;

import java.util.List;

public class Sample {
    private static final Logger log = LoggerFactory.getLogger(Sample.class);

    /* a block comment: if (a == b) records.add(x);
       still the comment */
    public List<Integer> elect(List<Integer> isr, int minIsr, boolean clean) {
        // if (isr.size() < minIsr) nothing here is code
        if (isr.size() < minIsr) {
            throw new InvalidReplicationFactorException("isr " + isr + " == too small");
        }
        log.info("electing from {}", isr);
        records.add(new ApiMessageAndVersion(record, (short) 0));
        int next = isr.size() + 1;
        return isr.stream().filter(r -> r != -1).map(r -> pick(r, minIsr)).toList();
    }

    @Override
    public String toString() {
        return "Sample(" + (a == b) + ")";
    }
}
'''


def by_operator(ms):
    out = {}
    for m in ms:
        out.setdefault(m.operator, []).append(m)
    return out


def test_every_operator_makes_its_edit_on_code_only():
    ms = mutants("org/apache/kafka/controller/Sample.java", JAVA)
    ops = by_operator(ms)
    assert set(ops) == set(OPERATORS)
    lines = {m.line for m in ms}
    text = JAVA.split("\n")
    # nothing in comments, strings, logging, imports, signatures or toString
    for number in lines:
        line = text[number - 1]
        assert not line.strip().startswith(("//", "/*", "import", "log.", "@")), line
        assert "toString" not in line and "Sample(" not in line
    edits = {(m.operator, m.mutated.strip()) for m in ms}
    assert ("negated-condition", "if (!(isr.size() < minIsr)) {") in edits
    assert ("short-circuited-check", "if (false) {") in edits
    assert ("off-by-one", "if (isr.size() <= minIsr) {") in edits
    assert ("off-by-one", "int next = isr.size();") in edits
    assert ("removed-call", ";") in edits
    assert ("swapped-arguments",
            "return isr.stream().filter(r -> r != -1).map(r -> pick(minIsr, r)).toList();") in edits
    assert ("dropped-filter", "return isr.stream().map(r -> pick(r, minIsr)).toList();") in edits
    assert ("changed-constant", "records.add(new ApiMessageAndVersion(record, (short) 1));") in edits
    assert ("negated-condition",
            "return isr.stream().filter(r -> r == -1).map(r -> pick(r, minIsr)).toList();") in edits
    # the string's "==" is not an operator
    assert not any('"isr " + isr + " != too small"' in m.mutated for m in ms)


def test_a_mutant_applies_to_its_own_source_only():
    ms = mutants("X.java", JAVA)
    m = ms[0]
    mutated = m.apply(JAVA)
    assert mutated != JAVA and mutated.split("\n")[m.line - 1] == m.mutated
    assert len({x.mutant_id for x in ms}) == len(ms)
    try:
        m.apply(JAVA.replace(m.original, m.original + " "))
    except ValueError:
        pass
    else:
        raise AssertionError("a mutant applied to a different line")


def test_code_lines_know_the_enclosing_method():
    methods = {line.strip(): method for _n, line, _c, method in code_lines(JAVA)}
    assert methods["int next = isr.size() + 1;"] == "elect"


def _steps(*steps):
    return [[(o, k) for o, k in step] for step in steps]


def test_normaliser_maps_ids_by_first_appearance_and_drops_noise():
    a, b = Normaliser(), Normaliser()
    rec = {"brokerId": 1, "brokerEpoch": 57, "incarnationId": "x1y2z3x1y2z3x1y2z3x1y2", "logDirs": [],
           "topicId": "AbCdEfGhIjKlMnOpQrStUv", "issueTimestamp": 5, "replicas": [1, 2]}
    other = dict(rec, brokerEpoch=99, topicId="ZZZZZZZZZZZZZZZZZZZZZZ", issueTimestamp=7)
    assert a.value(rec) == b.value(other)
    assert a.value(rec) != a.value(dict(rec, replicas=[2, 1]))
    a.directories({"brokerId": 3, "logDirs": ["Dddddddddddddddddddddd"]})
    assert a.value({"directories": ["Dddddddddddddddddddddd"]}) == {"directories": ["<dir of 3>"]}


def test_first_difference_ignores_what_two_correct_runs_differ_in():
    base = _steps([(0, "TOPIC a"), (1, "PARTITION p0"), (2, "PRODUCER_IDS broker 1")], [(3, "CONFIG x")])
    again = _steps([(0, "TOPIC a"), (1, "PRODUCER_IDS broker 2"), (2, "PARTITION p0")], [(3, "CONFIG x")])
    ignored = noise(base, again)
    assert ignored[0] == {"PRODUCER_IDS broker 1", "PRODUCER_IDS broker 2"} and ignored[1] == set()
    assert first_difference(base, again, ignored) is None  # order within a step and noise
    mutant = _steps([(0, "TOPIC a"), (1, "PARTITION p0 leader 2")], [(2, "CONFIG x")])
    assert first_difference(base, mutant, ignored) == "step 0, offset 1: written PARTITION p0 leader 2"
    missing = _steps([(0, "TOPIC a")], [(1, "CONFIG x")])
    assert first_difference(base, missing, ignored) == "step 0: not written PARTITION p0"
    short = _steps([(0, "TOPIC a")])
    assert "reached 0 of 1 steps" in first_difference(base, short, ignored)


def test_sample_spreads_over_operators_and_report_scores():
    ms = mutants("org/apache/kafka/controller/PartitionChangeBuilder.java", JAVA)
    chosen = choose(ms, 7, seed=3)
    assert len(chosen) == 7 and {m.operator for m in chosen} == set(OPERATORS)
    assert choose(ms, None, 1) == ms
    results = [Result(m.mutant_id, "PartitionChangeBuilder", m.operator, m.line, m.method, m.original,
                      m.mutated, verdict, "why")
               for m, verdict in zip(chosen, ["caught", "caught", "caught", "survived", "equivalent",
                                              "stillborn", "caught"])]
    assert score(results) == 80.0
    text = report(results, ms, chosen)
    assert "| **all** | 4 | 5 | 80% | 1 | 0 | 1 | 7 | 7 | " in text
    assert "| PartitionChangeBuilder | 4 | 5 | 80% |" in text
    assert "Survivors" in text and results[3].mutant_id in text


def test_reviewed_survivors_count_as_equivalent_and_only_survivors():
    reviews = reviewed(VERSION)
    assert reviews and all(re.fullmatch(r"[A-Za-z]+:\d+:[a-z-]+:[0-9a-f]{8}", k) for k in reviews)
    assert all(k.split(":")[0] in TARGETS and k.split(":")[2] in OPERATORS for k in reviews)
    ms = mutants("org/apache/kafka/controller/PartitionChangeBuilder.java", JAVA)[:3]
    results = [Result(m.mutant_id, "PartitionChangeBuilder", m.operator, m.line, m.method, m.original,
                      m.mutated, verdict, "why") for m, verdict in zip(ms, ["survived", "caught", "survived"])]
    after = apply_reviews(results, {ms[0].mutant_id: "another request", ms[1].mutant_id: "no"})
    assert [(r.verdict, r.why) for r in after] == [
        ("equivalent", "read: another request"), ("caught", "why"), ("survived", "why")]
    assert score(after) == 50.0 and score(results) == 100 / 3


def test_the_tail_of_a_statement_begun_above_is_not_removed():
    java = JAVA.replace("        int next = isr.size() + 1;\n",
                        "        records.add(new PartitionChangeRecord().\n            setIsr(isr));\n")
    removed = [m.original.strip() for m in mutants("X.java", java) if m.operator == "removed-call"]
    assert "records.add(new ApiMessageAndVersion(record, (short) 0));" in removed
    assert "setIsr(isr));" not in removed


def test_a_refused_request_is_told_from_a_log_that_wrote_something_else():
    from kraft_audit.testing.realkafka.controller_mutants import wrote_extra

    base = _steps([(0, "TOPIC a"), (1, "NOISE 1")], [(2, "CONFIG x")], [(3, "ACL y")])
    ignored = [{"NOISE 1", "NOISE 2"}, set(), set()]
    assert not wrote_extra(base, _steps([(0, "TOPIC a"), (1, "NOISE 2")]), ignored)  # stopped in step 0
    assert not wrote_extra(base, _steps([(0, "TOPIC a")], [(1, "ACL y")]), ignored)  # a later step's record
    assert wrote_extra(base, _steps([(0, "TOPIC a")], [(1, "CONFIG z")]), ignored)
    # a record one step early, as first_difference allows
    assert not wrote_extra(base, _steps([(0, "TOPIC a"), (1, "CONFIG x")], []), ignored)


def test_a_list_of_structs_is_a_set_and_a_directory_is_named_by_its_broker():
    norm = Normaliser()
    a = {"features": [{"name": "b", "max": 1}, {"name": "a", "max": 2}], "replicas": [2, 1]}
    b = {"features": [{"name": "a", "max": 2}, {"name": "b", "max": 1}], "replicas": [2, 1]}
    assert norm.value(a) == norm.value(b) and norm.value(a)["replicas"] == [2, 1]
    norm.directories({"brokerId": 2, "logDirs": ["n6Y5w6d2S8O3FRQ5lZ5Ztw", "m6Y5w6d2S8O3FRQ5lZ5Ztw"]})
    assert norm.value({"directories": ["m6Y5w6d2S8O3FRQ5lZ5Ztw"]}) == \
        norm.value({"directories": ["n6Y5w6d2S8O3FRQ5lZ5Ztw"]}) == {"directories": ["<dir of 2>"]}


def test_a_directory_report_is_told_from_a_change_the_controller_decides():
    from kraft_audit.testing.realkafka.controller_mutants import _directories_only

    report = {"partitionId": 0, "topicId": "t", "leader": -2, "leaderRecoveryState": -1, "isr": None,
              "directories": ["d"]}
    assert _directories_only(report)
    assert not _directories_only({**report, "isr": [1]}) and not _directories_only({**report, "leader": 2})
    assert not _directories_only({**report, "directories": None})


def test_a_record_one_step_late_is_not_a_difference():
    base = _steps([(0, "TOPIC a"), (1, "REGISTRATION 1")], [(2, "CONFIG x")], [(3, "ACL y")])
    late = _steps([(0, "TOPIC a")], [(1, "REGISTRATION 1"), (2, "CONFIG x")], [(3, "ACL y")])
    assert first_difference(base, late, [set(), set(), set()]) is None
    two_late = _steps([(0, "TOPIC a")], [(2, "CONFIG x")], [(1, "REGISTRATION 1"), (3, "ACL y")])
    assert first_difference(base, two_late, [set(), set(), set()]) == "step 0: not written REGISTRATION 1"


def test_only_a_partitions_last_directory_report_counts_and_where_it_was_created(tmp_path):
    from kraft_audit.core.codec.logdir import LogDirWriter
    from kraft_audit.testing.realkafka.controller_mutants import normalised_steps

    topic, d1, d2 = "T2RkZXJzVG9waWNJZDAwMQ", "n6Y5w6d2S8O3FRQ5lZ5Ztw", "m6Y5w6d2S8O3FRQ5lZ5Ztw"
    unassigned = "AAAAAAAAAAAAAAAAAAAAAQ"

    def report(dirs, version=2):
        return ("PARTITION_CHANGE_RECORD", version, {"partitionId": 0, "topicId": topic, "leader": -2,
                                                      "directories": dirs})

    def steps(*reports):
        path = tmp_path / str(len(list(tmp_path.iterdir())))
        w = LogDirWriter(path, "c1")
        w.append([("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 21})] + [
            ("REGISTER_BROKER_RECORD", 3, {"brokerId": b, "brokerEpoch": b, "incarnationId": topic, "rack": None,
                                           "fenced": False, "endPoints": [], "features": [], "logDirs": [d]})
            for b, d in ((1, d1), (2, d2))], 1)
        (created, _) = w.append([("TOPIC_RECORD", 0, {"name": "t", "topicId": topic}), (
            "PARTITION_RECORD", 1, {"partitionId": 0, "topicId": topic, "replicas": [1, 2], "isr": [1, 2],
                                    "removingReplicas": [], "addingReplicas": [], "leader": 1, "leaderEpoch": 0,
                                    "partitionEpoch": 0, "directories": [unassigned, unassigned]})], 2)
        (boundary, _) = w.append([("CONFIG_RECORD", 0, {"resourceType": 4, "resourceName": "", "name": "x",
                                                         "value": "1"})], 3)
        for r in reports:
            w.append([r], 4)
        w.close()
        return normalised_steps(path, [boundary])
    # brokers 1 and 2 report in either order, after the step that created the partition
    one = steps(report([d1, unassigned]), report([d1, d2]))
    other = steps(report([unassigned, d2]), report([d1, d2]))
    assert one == other and len(one[0]) == 6 and len(one[1]) == 1
    assert steps(report([d1, unassigned])) != one  # broker 2's report never recorded
    # the same report at version 1, before ELR's fields (null at version 2: unchanged)
    assert steps(report([d1, unassigned]), report([d1, d2], version=1)) == one
