"""Mutation testing of Kafka's real controller: bugs nobody has written yet, made on purpose.

Each mutant is one small edit (kraft_audit/testing/java_mutants.py) of one controller class
that writes metadata records, from Kafka's own sources jar. The class is compiled with javac
against the released jars and put first on the controller's classpath; a real cluster runs
the workout (the every-record-type story with every placement explicit, so that two correct
runs write the same records); the auditor judges the controller's log as `check` does.

How a mutant is judged, in this order:
- not reached: the workout never runs its line (JaCoCo line coverage of the unmutated
  controller's baseline run), so no log can show it: not run, not scored;
- stillborn: javac refuses it, or the controller does not start: no log to audit, not scored;
- caught: a finding or an overdue condition the baseline does not have;
- equivalent: its log, normalised (no NoOps, times, random ids mapped to the order they
  appear in, broker epochs, ports and secrets dropped, lists of structs sorted, a directory
  named by its broker and, of a placement's directory reports, only the last, the
  producer-id blocks left out (how many is the clients' doing), the records of each workout
  step taken as a multiset, a record one step early or late no difference), equals the
  unmutated baseline's outside what two unmutated runs already differ in: not scored;
- refused: the controller refused a request of the workout (the tool failed) and wrote
  nothing the baseline does not hold: the log is one a correct controller writes when the
  request is not made, so no audit of the log can tell; the client saw it. Not scored;
- survived: otherwise, kept with its first differing record (and its normalised log), for
  people to read. What a correct controller could also have written but the baseline did
  not (another request, another legal choice) the harness cannot decide: a survivor read
  and found so is listed, with the reason, in deploy/controller-mutants/reviewed-VERSION.yaml
  and counts as equivalent.

    python -m kraft_audit.testing.realkafka.controller_mutants [--sample N] [--seed S]
        [--classes A,B] [--mutants ID,Class:line] [--out DIR] [--min-score PCT]

Results go to DIR/results.jsonl, one line a mutant, kept between runs (a run goes on where
the last one stopped; --mutants judges the mutants it names again, as after a rule change)
and the score table to DIR/report.md.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
from bisect import bisect_right
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import yaml

from kraft_audit.core.codec.schemas import ZERO_UUID
from kraft_audit.testing.java_mutants import OPERATORS, Mutant, mutants
from kraft_audit.testing.realkafka.cluster import kafka_jars
from kraft_audit.testing.realkafka.story import StoryRun, story_cluster

# The newest release whose kafka-metadata sources jar Maven Central serves here (4.3.2's and
# 4.4.0's are not): the controller mutated is this release's (make controller-mutants-deps).
VERSION = "4.3.1"
CACHE = Path(".cache/controller-mutants")
# survivors read by hand whose log a correct controller also writes (see the docstring)
REVIEWED = Path(__file__).resolve().parents[3] / "deploy" / "controller-mutants"
PACKAGE = "org/apache/kafka/controller"
# the controller classes that decide what metadata records say
TARGETS = ("PartitionChangeBuilder", "ReplicationControlManager", "ClusterControlManager",
           "PartitionReassignmentReplicas", "FeatureControlManager", "ConfigurationControlManager",
           "AclControlManager", "ScramControlManager", "DelegationTokenControlManager",
           "ClientQuotaControlManager", "ProducerIdControlManager")


@dataclass
class Tools:
    """What the runs need beside Kafka's jars (resolved by `make controller-mutants-deps`)."""

    sources: Path  # the unpacked kafka-metadata sources jar
    metadata_jar: Path  # the released kafka-metadata jar (JaCoCo reads its classes)
    jacoco_agent: Path
    jacoco_cli: Path

    @classmethod
    def find(cls, version: str = VERSION, cache: Path = CACHE) -> Tools:
        folder = cache / version
        jars = {p.name: p for p in folder.glob("*.jar")}

        def one(pattern: str) -> Path:
            hits = [p for name, p in jars.items() if re.fullmatch(pattern, name)]
            if len(hits) != 1:
                raise FileNotFoundError(f"{folder}: no {pattern} (run make controller-mutants-deps)")
            return hits[0]

        sources = folder / "sources"
        if not sources.exists():
            with zipfile.ZipFile(one(rf"kafka-metadata-{re.escape(version)}-sources\.jar")) as z:
                z.extractall(sources)
        return cls(sources, kafka_jars(version) / f"kafka-metadata-{version}.jar",
                   one(r"org\.jacoco\.agent-.*-runtime\.jar"), one(r"org\.jacoco\.cli-.*-nodeps\.jar"))


# ------------------------------------------------------------------ the workout

class WorkoutRun(StoryRun):
    """The story with every replica placed by hand (the striped placer picks at random, and
    a run that places differently would differ from the baseline for no fault), noting the
    log's end after each step."""

    def __init__(self, cluster):
        super().__init__(cluster)
        self.boundaries: list[int] = []

    def topics(self) -> None:
        t = self.tools
        t.create_topic("orders", assignment=[[1, 2, 3], [2, 3, 1]],
                       configs={"min.insync.replicas": "2", "retention.ms": "3600000"})
        t.create_topic("moving", assignment=[[1, 2]])
        t.create_topic("doomed", assignment=[[1, 2], [2, 3]])
        t.create_topic("elr", assignment=[[1, 2, 3]], configs={"min.insync.replicas": "3"})
        t.admin("org.apache.kafka.tools.TopicCommand", "--alter", "--topic", "orders", "--partitions", "4",
                "--replica-assignment", "1:2:3,2:3:1,3:1:2,1:3:2")

    def after_step(self) -> None:
        self.wait_in_sync()
        self.boundaries.append(log_end(self.cluster.metadata_log_dir))


def log_end(log_dir: Path) -> int:
    """The offset after the last batch on disk."""
    from kraft_audit.core.codec.batches import Batch, iter_batches
    from kraft_audit.core.codec.logdir import list_segments

    end = 0
    for _base, segment in list_segments(log_dir):
        for item in iter_batches(segment.read_bytes()):
            if isinstance(item, Batch):
                end = max(end, item.base_offset + item.last_offset_delta + 1)
    return end


@dataclass
class Run:
    log_dir: Path
    boundaries: list[int]
    failure: str | None  # why the workout stopped early (None: it ran to the end)
    started: bool
    seconds: float


def run_workout(version: str, workdir: Path, classpath: list[Path] = (), jvm_opts: list[str] = ()) -> Run:
    """The workout on a fresh cluster; the controller stopped cleanly at the end (its log and
    coverage written), the brokers killed."""
    began = time.monotonic()
    cluster = story_cluster(version, workdir)
    cluster.controller_classpath = list(classpath)
    cluster.controller_jvm_opts = list(jvm_opts)
    workout = WorkoutRun(cluster)
    failure, started = None, False
    try:
        cluster.start()
        started = True
        workout.run()
    except Exception as e:  # a mutant's cluster that stops making progress: the log says how far
        failure = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
    finally:
        try:
            cluster.controller.stop()
        finally:
            cluster.close()
    return Run(cluster.metadata_log_dir, workout.boundaries, failure, started, time.monotonic() - began)


# ------------------------------------------------------------------ comparing logs

# fields two correct runs differ in for no fault: times, epochs that are offsets, ports, secrets
_NOISE_KEYS = re.compile(r"(?i).*timestamp.*|.*Ms|.*brokerEpoch|incarnationId|endPoints|salt|storedKey|"
                         r"serverKey|saltedPassword")
# records whose number is the clients' doing: brokers ask for a producer-id block when a
# producer they serve first needs one, and which broker a client asks is its own random pick.
# Left out of the comparison; the audit still judges every block (increasing, to registered
# brokers), and a log of such blocks is one a correct controller writes for some requests.
_CLIENT_PACED = {"PRODUCER_IDS_RECORD"}
_UUID = re.compile(r"^[A-Za-z0-9_-]{22}$|^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class Normaliser:
    """Records with what differs between correct runs taken out: random ids become the order
    they first appear in (a directory: its broker's), noise fields are dropped."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def directories(self, data: dict) -> None:
        broker = data.get("brokerId")
        for d in data.get("logDirs") or ():
            self.names.setdefault(str(d), f"<dir of {broker}>")

    def value(self, v):
        if isinstance(v, dict):
            return {k: self.value(x) for k, x in sorted(v.items()) if not _NOISE_KEYS.fullmatch(k)}
        if isinstance(v, list):
            items = [self.value(x) for x in v]
            # a list of structs is a set (features, listeners: in a hash map's order); ids keep theirs
            return sorted(items, key=json.dumps) if items and isinstance(items[0], dict) else items
        if isinstance(v, str) and _UUID.match(v) and v != ZERO_UUID:
            return self.names.setdefault(v, f"<id {len(self.names)}>")
        return v


def normalised_steps(log_dir: Path, boundaries: list[int]) -> list[list[tuple[int, str]]]:
    """Each workout step's records as (offset, normalised key), in log order (the last list:
    after the last boundary)."""
    from kraft_audit.core.codec.logdir import read_log_dir
    from kraft_audit.core.events import KIND_RECORD, MetadataEvent, is_snapshot_source

    norm = Normaliser()
    keyed: list[tuple[int, str]] = []
    # a partition's directory reports: for each placement of its replicas (its creation, a
    # reassignment), only where they ended up, at the placement's offset (the brokers report
    # in an order and at a time of their own, so the lists between are a race)
    reported: dict[tuple, tuple[int, str]] = {}
    placed: dict[tuple, int] = {}
    for event in read_log_dir(log_dir):
        if not isinstance(event, MetadataEvent) or event.kind != KIND_RECORD or is_snapshot_source(event.source):
            continue
        if event.type == "NO_OP_RECORD" or event.type in _CLIENT_PACED:
            continue
        if "logDirs" in event.data:
            norm.directories(event.data)
        data = norm.value(event.data)
        if event.type == "PARTITION_CHANGE_RECORD":
            # null is "unchanged", as a field the record's version lacks: one change, whichever
            # version wrote it (a directory report just before or after ELR was enabled)
            data = {k: v for k, v in data.items() if v is not None}
        key = event.type + " " + json.dumps(data, sort_keys=True)
        partition = (data.get("topicId"), data.get("partitionId"))
        if event.type in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD") and event.data.get("replicas") is not None:
            placed[partition] = event.offset
        if event.type == "PARTITION_CHANGE_RECORD" and _directories_only(event.data):
            at = placed.get(partition, event.offset)
            reported[(partition, at)] = (at, key)
        else:
            keyed.append((event.offset, key))
    steps: list[list[tuple[int, str]]] = [[] for _ in range(len(boundaries) + 1)]
    for offset, key in sorted(keyed + list(reported.values())):
        steps[bisect_right(boundaries, offset)].append((offset, key))
    return steps


def _directories_only(data: dict) -> bool:
    """A PartitionChangeRecord that only records the directories brokers reported."""
    return bool(data.get("directories")) and data.get("leader", -2) == -2 and \
        data.get("leaderRecoveryState", -1) == -1 and not any(
            data.get(k) is not None for k in ("isr", "replicas", "addingReplicas", "removingReplicas",
                                              "eligibleLeaderReplicas", "lastKnownElr"))


def noise(a: list[list[tuple[int, str]]], b: list[list[tuple[int, str]]]) -> list[set[str]]:
    """Per step, the keys two unmutated runs disagree on."""
    out = []
    for x, y in zip(a, b):
        cx, cy = Counter(k for _o, k in x), Counter(k for _o, k in y)
        out.append({k for k in cx.keys() | cy.keys() if cx[k] != cy[k]})
    return out


def _near(steps: list[list[tuple[int, str]]], i: int, to: int | None = None) -> Counter:
    """The records of steps i-1 to i+1 (to step `to`, when given): where a record of step i
    may fall in another run."""
    to = i + 1 if to is None else to
    return Counter(k for j in range(max(0, i - 1), min(len(steps), to + 1)) for _o, k in steps[j])


def first_difference(base: list[list[tuple[int, str]]], other: list[list[tuple[int, str]]],
                     ignored: list[set[str]]) -> str | None:
    """The first record the other run wrote that the baseline did not (or the first it did
    not write), outside the noise; None when the logs agree. A record may fall one step
    early or late (a broker's own request racing the end of a step is no fault)."""
    if len(base) != len(other):
        return f"the workout reached {len(other) - 1} of {len(base) - 1} steps"
    for step, (b, o, skip) in enumerate(zip(base, other, ignored)):
        cb, co = Counter(k for _o, k in b if k not in skip), Counter(k for _o, k in o if k not in skip)
        if cb == co:
            continue
        extra, missing = co - _near(base, step), cb - _near(other, step)
        for offset, key in o:
            if extra.get(key):
                return f"step {step}, offset {offset}: written {key[:400]}"
        for _offset, key in b:
            if missing.get(key):
                return f"step {step}: not written {key[:400]}"
    return None


# ------------------------------------------------------------------ auditing

@dataclass
class Judgement:
    findings: list[str]  # "rule@offset" of each finding
    overdue: list[str]  # "condition@start offset" of each overdue condition


def judge(log_dir: Path) -> Judgement:
    from kraft_audit.testing.mutate import audit

    audited = audit(log_dir)
    return Judgement(sorted({f"{v.rule_id}@{v.offset}" for v in audited.violations}),
                     sorted({f"{c.condition}@{c.start_offset}" for c in audited.overdue()}))


# ------------------------------------------------------------------ coverage

def covered_lines(tools: Tools, exec_file: Path, workdir: Path) -> dict[str, set[int]]:
    """Source file (in its package) -> the lines the baseline ran (JaCoCo's XML report)."""
    xml = workdir / "coverage.xml"
    subprocess.run(["java", "-jar", str(tools.jacoco_cli), "report", str(exec_file), "--classfiles",
                    str(tools.metadata_jar), "--sourcefiles", str(tools.sources), "--xml", str(xml)],
                   check=True, capture_output=True)
    out: dict[str, set[int]] = {}
    for package in ET.parse(xml).getroot().iter("package"):
        for source in package.iter("sourcefile"):
            lines = {int(line.get("nr")) for line in source.iter("line") if int(line.get("ci", 0)) > 0}
            out[f"{package.get('name')}/{source.get('name')}"] = lines
    return out


# ------------------------------------------------------------------ one mutant

@dataclass
class Result:
    mutant_id: str
    target: str  # the controller class
    operator: str
    line: int
    method: str
    original: str
    mutated: str
    verdict: str  # stillborn, equivalent, refused, caught, survived
    why: str = ""
    seconds: float = 0.0
    findings: list[str] = field(default_factory=list)
    steps: list | None = None  # a survivor's normalised records by step, for people to read


def compile_mutant(tools: Tools, version: str, mutant: Mutant, workdir: Path) -> tuple[Path | None, str]:
    src = workdir / "src" / mutant.file
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(mutant.apply((tools.sources / mutant.file).read_text()))
    classes = workdir / "classes"
    classes.mkdir(exist_ok=True)
    done = subprocess.run(["javac", "-nowarn", "-proc:none", "-encoding", "UTF-8", "-d", str(classes),
                           "-cp", f"{kafka_jars(version)}/*", str(src)], capture_output=True, text=True)
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if "error:" in line]
        return None, (errors[0].split("error:", 1)[1].strip() if errors else done.stderr.strip()[:200])
    return classes, ""


@dataclass
class Baseline:
    steps: list[list[tuple[int, str]]]
    noise: list[set[str]]
    judgement: Judgement
    covered: dict[str, set[int]]
    seconds: float


def judge_mutant(tools: Tools, version: str, mutant: Mutant, baseline: Baseline, workdir: Path) -> Result:
    target = mutant.file.rsplit("/", 1)[-1].removesuffix(".java")
    result = Result(mutant.mutant_id, target, mutant.operator, mutant.line, mutant.method,
                    mutant.original.strip(), mutant.mutated.strip(), "")
    classes, error = compile_mutant(tools, version, mutant, workdir)
    if classes is None:
        result.verdict, result.why = "stillborn", f"javac: {error}"
        return result
    run = run_workout(version, workdir / "cluster", classpath=[classes])
    result.seconds = round(run.seconds, 1)
    if not run.started:
        result.verdict, result.why = "stillborn", f"the controller did not start: {run.failure}"
        return result
    # a run that stopped early has fewer boundaries: the rest of its records fall in the step
    # it did not finish
    steps = normalised_steps(run.log_dir, run.boundaries)
    difference = first_difference(baseline.steps, steps, baseline.noise)
    judgement = judge(run.log_dir)
    new = sorted(set(judgement.findings) - set(baseline.judgement.findings)) + \
        sorted(set(judgement.overdue) - set(baseline.judgement.overdue))
    result.findings = new
    stopped = f" (the workout stopped: {run.failure})" if run.failure else ""
    if new:
        result.verdict, result.why = "caught", f"{new[0]}; first difference: {difference}{stopped}"
    elif difference is None and run.failure is None:
        result.verdict, result.why = "equivalent", "its log equals the baseline's"
    elif run.failure and run.failure.startswith("ToolError") and not wrote_extra(baseline.steps, steps, baseline.noise):
        # the controller refused a request a correct one grants: the client saw the error, and
        # the log (the baseline's records, fewer of them) is one a correct controller writes
        # when nobody asks
        result.verdict, result.why = "refused", f"{run.failure}"
    else:
        result.verdict, result.why = "survived", f"{difference or 'no record differs'}{stopped}"
    result.steps = steps if result.verdict == "survived" else None
    return result


def wrote_extra(base: list[list[tuple[int, str]]], other: list[list[tuple[int, str]]],
                ignored: list[set[str]]) -> bool:
    """Whether the other run wrote a record, outside the noise, that the baseline did not
    write in that step or one step early or late, as first_difference allows (the step it did
    not finish: in that step or any after it)."""
    last = len(other) - 1
    for i, step in enumerate(other):
        have = _near(base, i, to=len(base) - 1 if i == last else None)
        steps = range(i, len(base)) if i == last else (i,)
        skip = set().union(*(ignored[j] for j in steps if j < len(ignored)))
        if Counter(k for _o, k in step if k not in skip) - have:
            return True
    return False


def make_baseline(tools: Tools, version: str, workdir: Path) -> Baseline:
    """Two unmutated runs: the first under JaCoCo (which lines the workout runs), both for what
    correct runs differ in. Neither may have a finding (the auditor's own false positives
    would score as catches)."""
    exec_file = workdir / "jacoco.exec"
    agent = f"-javaagent:{tools.jacoco_agent}=destfile={exec_file},includes=org.apache.kafka.controller.*"
    first = run_workout(version, workdir / "base-1", jvm_opts=[agent])
    second = run_workout(version, workdir / "base-2")
    for run in (first, second):
        if run.failure:
            raise RuntimeError(f"the unmutated workout failed: {run.failure}")
    a, b = (normalised_steps(r.log_dir, r.boundaries) for r in (first, second))
    judgement = judge(first.log_dir)
    if judgement.findings or judgement.overdue or judge(second.log_dir).findings:
        raise RuntimeError(f"the unmutated controller's log has findings: {judgement}")
    return Baseline(a, noise(a, b), judgement, covered_lines(tools, exec_file, workdir),
                    round((first.seconds + second.seconds) / 2, 1))


# ------------------------------------------------------------------ the whole run

def all_mutants(tools: Tools, targets=TARGETS) -> list[Mutant]:
    found = []
    for name in targets:
        path = f"{PACKAGE}/{name}.java"
        found.extend(mutants(path, (tools.sources / path).read_text()))
    return found


def choose(candidates: list[Mutant], sample: int | None, seed: int) -> list[Mutant]:
    """A sample spread over the operators in turn (each operator's mutants shuffled), or all."""
    if sample is None or sample >= len(candidates):
        return candidates
    rng = random.Random(seed)
    by_operator: dict[str, list[Mutant]] = defaultdict(list)
    for m in candidates:
        by_operator[m.operator].append(m)
    for ms in by_operator.values():
        rng.shuffle(ms)
    chosen: list[Mutant] = []
    while len(chosen) < sample:
        for op in OPERATORS:
            if by_operator.get(op) and len(chosen) < sample:
                chosen.append(by_operator[op].pop())
    return chosen


def report(results: list[Result], every: list[Mutant], reachable: list[Mutant]) -> str:
    """The score per operator class and per controller class (with how many mutants it has
    and how many lie on lines the workout runs), then each survivor."""
    head = ["caught", "scored", "score", "equivalent", "refused", "stillborn", "run", "reachable", "mutants"]
    lines: list[str] = []

    def row(name: str, rs: list[Result], ms: list[Mutant], rms: list[Mutant]) -> str:
        n = Counter(r.verdict for r in rs)
        scored = n["caught"] + n["survived"]
        pct = "-" if score(rs) is None else f"{score(rs):.0f}%"
        cells = [n["caught"], scored, pct, n["equivalent"], n["refused"], n["stillborn"], len(rs), len(rms), len(ms)]
        return f"| {name} | " + " | ".join(map(str, cells)) + " |"

    for title, key, names in (("operator", "operator", OPERATORS), ("controller class", "target", TARGETS)):
        lines += [f"| {title} | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
        for name in names:
            def mine(m) -> bool:
                return (m.operator if key == "operator" else m.file.rsplit("/", 1)[-1][:-5]) == name
            ms = [m for m in every if mine(m)]
            if ms:
                lines.append(row(name, [r for r in results if getattr(r, key) == name], ms,
                                 [m for m in reachable if mine(m)]))
        lines += [row("**all**", results, every, reachable), ""]
    survivors = [r for r in results if r.verdict == "survived"]
    if survivors:
        lines += ["Survivors (no finding; the first record that differs from the baseline's):", ""]
        lines += [f"- `{r.mutant_id}` in {r.method}: `{r.original}` -> `{r.mutated}`: {r.why}"
                  for r in survivors]
    return "\n".join(lines) + "\n"


def reviewed(version: str) -> dict[str, str]:
    """The survivors found equivalent by reading them: mutant id -> why."""
    path = REVIEWED / f"reviewed-{version}.yaml"
    entries = yaml.safe_load(path.read_text()) if path.exists() else None
    return {str(k): " ".join(str(v).split()) for k, v in (entries or {}).items()}


def apply_reviews(results: list[Result], reviews: dict[str, str]) -> list[Result]:
    """Survivors the reviews explain become equivalent, with the review as the reason."""
    return [replace(r, verdict="equivalent", why=f"read: {reviews[r.mutant_id]}")
            if r.verdict == "survived" and r.mutant_id in reviews else r for r in results]


def score(results: list[Result]) -> float | None:
    n = Counter(r.verdict for r in results)
    scored = n["caught"] + n["survived"]
    return 100 * n["caught"] / scored if scored else None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m kraft_audit.testing.realkafka.controller_mutants")
    parser.add_argument("--sample", type=int, help="this many reachable mutants (default: all)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--classes", help="comma-separated controller classes (default: all targets)")
    parser.add_argument("--mutants", help="comma-separated mutant ids or their prefixes (Class:line): "
                        "these only, judged again even when results.jsonl has them (after a rule "
                        "change)")
    parser.add_argument("--out", type=Path, default=Path("controller-mutants-out"))
    parser.add_argument("--min-score", type=float, default=90.0,
                        help="exit 1 when fewer of the scored mutants are caught (percent)")
    parser.add_argument("--version", default=VERSION)
    args = parser.parse_args(argv)
    tools = Tools.find(args.version)
    targets = tuple(args.classes.split(",")) if args.classes else TARGETS
    unknown = set(targets) - set(TARGETS)
    if unknown:
        parser.error(f"not a target: {', '.join(sorted(unknown))} (targets: {', '.join(TARGETS)})")
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="kraft-mutants-"))
    try:
        print(f"baseline: the unmutated {args.version} controller, twice ...", flush=True)
        baseline = make_baseline(tools, args.version, work / "baseline")
        every = all_mutants(tools, targets)
        candidates = [m for m in every if m.line in baseline.covered.get(m.file, ())]
        total = len(every)
        if args.mutants:
            wanted = args.mutants.split(",")
            chosen = [m for m in candidates if any(m.mutant_id.startswith(w) for w in wanted)]
            if not chosen:
                parser.error(f"no reachable mutant matches {args.mutants}")
        else:
            chosen = choose(candidates, args.sample, args.seed)
        print(f"{total} mutants of {len(targets)} classes, {len(candidates)} on lines the workout runs; "
              f"{len(chosen)} to run (a workout takes about {baseline.seconds:.0f} s)", flush=True)
        (args.out / "baseline.json").write_text(json.dumps(
            {"steps": baseline.steps, "noise": [sorted(n) for n in baseline.noise]}, indent=1))
        results_file = args.out / "results.jsonl"
        done = {}
        if results_file.exists():
            for line in results_file.read_text().splitlines():
                r = Result(**json.loads(line))
                done[r.mutant_id] = r
        results = []
        reviews = reviewed(args.version)
        with results_file.open("a") as out:
            for i, mutant in enumerate(chosen, 1):
                result = None if args.mutants else done.get(mutant.mutant_id)
                if result is None:
                    shutil.rmtree(work / "mutant", ignore_errors=True)
                    result = judge_mutant(tools, args.version, mutant, baseline, work / "mutant")
                    out.write(json.dumps(asdict(result)) + "\n")
                    out.flush()
                (result,) = apply_reviews([result], reviews)
                print(f"[{i}/{len(chosen)}] {result.verdict:<10} {result.mutant_id} "
                      f"{result.original!r} -> {result.mutated!r}: {result.why[:200]}", flush=True)
                results.append(result)
        text = (f"Controller mutants of Kafka {args.version}: {len(results)} run of {len(candidates)} "
                f"reachable ({total} in all), seed {args.seed}\n\n" + report(results, every, candidates))
        (args.out / "report.md").write_text(text)
        print(text)
        achieved = score(results)
        if achieved is not None and achieved < args.min_score:
            print(f"score {achieved:.0f}% is below {args.min_score:.0f}%")
            return 1
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
