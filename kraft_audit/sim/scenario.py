"""Scenarios: a cluster, its topics and a list of steps, from YAML or Python.

    name: unclean-shutdown-elr
    cluster: {brokers: 4, metadata_version: 4.0-IV3, elr: true, min_insync_replicas: 2}
    topics:
      - {name: orders, partitions: 6, replication_factor: 3}
    steps:
      - crash: 2
      - heartbeat_timeout: 2
      - restart: 2

A step is a one-key mapping; a scalar value is the step's main argument
(`crash: 2` is `crash: {broker: 2}`). Errors name the file, the line and the
problem (`ScenarioError`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from kraft_audit.sim.versions import LATEST, parse_metadata_version
from kraft_audit.errors import ScenarioError  # noqa: F401 (exported here too)

BUILTIN_DIR = ("kraft_audit", "data/scenarios")  # package data

# step kind -> (main argument for the scalar form, {argument: (type, required)})
_BROKER = {"broker": (int, True)}
_PARTITION = {"topic": (str, True), "partition": (int, True)}
STEP_KINDS: dict[str, tuple[str | None, dict[str, tuple[type, bool]]]] = {
    "wait": ("ms", {"ms": (int, True)}),
    "create_topic": (
        None,
        {
            "name": (str, True),
            "partitions": (int, False),
            "replication_factor": (int, False),
            "configs": (dict, False),
            "assignment": (list, False),
        },
    ),
    "delete_topic": ("name", {"name": (str, True)}),
    "controlled_shutdown": ("broker", _BROKER),
    "crash": ("broker", _BROKER),
    "heartbeat_timeout": ("broker", _BROKER),
    "restart": ("broker", _BROKER),
    "register": ("broker", _BROKER),
    "unfence": ("broker", _BROKER),
    "catch_up": ("broker", {"broker": (int, False)}),
    "shrink_isr": (None, {**_PARTITION, "broker": (int, True)}),
    "expand_isr": (None, {**_PARTITION, "broker": (int, True)}),
    "finish_recovery": (None, {"topic": (str, False), "partition": (int, False)}),
    "set_config": (None, {"topic": (str, False), "name": (str, True), "value": (str, False)}),
    "set_min_isr": ("value", {"topic": (str, False), "value": (int, True)}),
    "update_feature": (None, {"name": (str, True), "level": (int, True)}),
    "reassign": (None, {**_PARTITION, "replicas": (list, True)}),
    "elect_preferred": ("topic", {"topic": (str, False)}),
    "unclean_elections": (None, {}),
    "leader_change": (None, {}),
    "log_dirs": (None, {}),
    "snapshot": (None, {}),
    "rolling_restart": (
        None,
        {"brokers": (list, False), "gap_ms": (int, False), "preferred": (bool, False)},
    ),
    "chaos": ("events", {"events": (int, True)}),
}


@dataclass
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)
    assignment: list[list[int]] | None = (
        None  # replicas per partition; None = placed by the controller
    )

    def replica_lists(self, partitions: int | None = None) -> list[list[int]] | None:
        """The manual assignment, repeated to `partitions` entries when scaled."""
        if self.assignment is None:
            return None
        n = partitions or self.partitions
        return [list(self.assignment[i % len(self.assignment)]) for i in range(n)]


@dataclass
class ClusterSpec:
    brokers: list[int] = field(default_factory=lambda: [1, 2, 3])
    metadata_version: int = 25
    elr_version: int = 0
    min_insync_replicas: int = 1
    controllers: int = 1
    use_last_known_leader: bool = True
    step_gap_ms: int = 1000
    snapshot_every: int = 0  # records between snapshots; 0 = none
    segment_bytes: int = 8 << 20


@dataclass
class Step:
    kind: str
    args: dict[str, Any]
    line: int = 0

    @property
    def weight(self) -> int:
        """How many fault-scheduling steps it counts for."""
        return int(self.args["events"]) if self.kind == "chaos" else 1


@dataclass
class Scenario:
    name: str
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    topics: list[TopicSpec] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    description: str = ""
    source: str = ""  # the file it came from, for error messages

    def step_count(self) -> int:
        return sum(s.weight for s in self.steps)

    def scaled(self, *, partitions: int | None = None, brokers: int | None = None) -> "Scenario":
        """`--partitions N` spreads N partitions over the topics; `--brokers N`: brokers 1..N."""
        cluster = self.cluster
        if brokers is not None:
            if brokers < 1:
                raise ScenarioError("--brokers must be at least 1")
            cluster = ClusterSpec(**{**cluster.__dict__, "brokers": list(range(1, brokers + 1))})
        topics = self.topics
        if partitions is not None:
            if partitions < len(topics) or partitions < 1:
                raise ScenarioError(
                    f"--partitions {partitions} is fewer than the scenario's {len(topics)} topics"
                )
            share, rest = divmod(partitions, len(topics))
            topics = [
                TopicSpec(
                    t.name,
                    share + (1 if i < rest else 0),
                    t.replication_factor,
                    dict(t.configs),
                    t.replica_lists(share + (1 if i < rest else 0)),
                )
                for i, t in enumerate(topics)
            ]
        for t in topics:
            if t.replication_factor > len(cluster.brokers):
                raise ScenarioError(
                    f"topic {t.name!r} needs {t.replication_factor} brokers, the cluster has "
                    f"{len(cluster.brokers)}"
                )
        return Scenario(self.name, cluster, topics, list(self.steps), self.description, self.source)


# ---------------------------------------------------------------- loading


def _builtin_dir():
    return resources.files(BUILTIN_DIR[0]).joinpath(BUILTIN_DIR[1])


def builtin_names() -> list[str]:
    return sorted(p.name[:-5] for p in _builtin_dir().iterdir() if p.name.endswith(".yaml"))


def load_scenario(name_or_path: str) -> Scenario:
    """A built-in scenario by name, or a YAML file."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise ScenarioError(f"scenario file {name_or_path} does not exist")
        return parse_scenario(path.read_text(encoding="utf-8"), str(path))
    if name_or_path not in builtin_names():
        raise ScenarioError(
            f"unknown scenario {name_or_path!r}: not a file, and the built-in scenarios are "
            f"{', '.join(builtin_names())}"
        )
    text = _builtin_dir().joinpath(f"{name_or_path}.yaml").read_text(encoding="utf-8")
    return parse_scenario(text, f"{name_or_path}.yaml")


def parse_scenario(text: str, source: str = "<scenario>") -> Scenario:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        raise ScenarioError(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    return _Parser(source).scenario(root)


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, node, problem: str):
        line = node.start_mark.line + 1 if node is not None else 1
        raise ScenarioError(f"{self.source}:{line}: {problem}")

    def value(self, node):
        """A plain Python value from a node (scalars resolved by YAML's safe rules)."""
        return yaml.safe_load(yaml.serialize(node)) if node is not None else None

    def mapping(self, node, what: str) -> dict[str, tuple[Any, Any]]:
        if not isinstance(node, yaml.MappingNode):
            self.fail(node, f"{what} must be a mapping")
        out = {}
        for key, val in node.value:
            k = self.value(key)
            if not isinstance(k, str):
                self.fail(key, f"{what}: keys must be names, got {k!r}")
            if k in out:
                self.fail(key, f"{what}: {k!r} appears twice")
            out[k] = (key, val)
        return out

    def typed(self, node, expected: type, what: str):
        v = self.value(node)
        if expected is int and (not isinstance(v, int) or isinstance(v, bool)):
            self.fail(node, f"{what} must be an integer, got {v!r}")
        if expected is str:
            if isinstance(v, (dict, list)) or v is None:
                self.fail(node, f"{what} must be a string, got {v!r}")
            v = str(v).lower() if isinstance(v, bool) else str(v)
        if expected is bool and not isinstance(v, bool):
            self.fail(node, f"{what} must be true or false, got {v!r}")
        if expected in (list, dict) and not isinstance(v, expected):
            self.fail(
                node, f"{what} must be a {'list' if expected is list else 'mapping'}, got {v!r}"
            )
        return v

    def scenario(self, root) -> Scenario:
        if root is None:
            raise ScenarioError(f"{self.source}:1: the scenario is empty")
        top = self.mapping(root, "the scenario")
        unknown = set(top) - {"name", "description", "cluster", "topics", "steps"}
        if unknown:
            k = sorted(unknown)[0]
            self.fail(
                top[k][0], f"unknown key {k!r} (expected name, description, cluster, topics, steps)"
            )
        name = self.typed(top["name"][1], str, "name") if "name" in top else Path(self.source).stem
        description = (
            self.typed(top["description"][1], str, "description") if "description" in top else ""
        )
        cluster = self.cluster(top["cluster"][1]) if "cluster" in top else ClusterSpec()
        topics = []
        if "topics" in top:
            node = top["topics"][1]
            if not isinstance(node, yaml.SequenceNode):
                self.fail(node, "topics must be a list")
            topics = [self.topic(t, cluster) for t in node.value]
        steps = []
        if "steps" in top:
            node = top["steps"][1]
            if not isinstance(node, yaml.SequenceNode):
                self.fail(node, "steps must be a list")
            steps = [self.step(s, cluster) for s in node.value]
        return Scenario(name, cluster, topics, steps, description, self.source)

    def cluster(self, node) -> ClusterSpec:
        fields = self.mapping(node, "cluster")
        spec = ClusterSpec()
        for key, (knode, vnode) in fields.items():
            if key == "brokers":
                v = self.value(vnode)
                if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
                    spec.brokers = list(range(1, v + 1))
                elif (
                    isinstance(v, list)
                    and v
                    and all(isinstance(b, int) and b >= 0 for b in v)
                    and len(set(v)) == len(v)
                ):
                    spec.brokers = list(v)
                else:
                    self.fail(
                        vnode,
                        f"cluster.brokers must be a count or a list of distinct ids, got {v!r}",
                    )
            elif key == "metadata_version":
                try:
                    spec.metadata_version = parse_metadata_version(self.value(vnode))
                except ValueError as exc:
                    self.fail(vnode, str(exc))
            elif key == "elr":
                v = self.value(vnode)
                if isinstance(v, bool):
                    spec.elr_version = int(v)
                elif isinstance(v, int) and v in (0, 1):
                    spec.elr_version = v
                else:
                    self.fail(
                        vnode,
                        "cluster.elr must be true/false (eligible.leader.replicas.version), "
                        f"got {v!r}",
                    )
            elif key in (
                "min_insync_replicas",
                "controllers",
                "step_gap_ms",
                "snapshot_every",
                "segment_bytes",
            ):
                v = self.typed(vnode, int, f"cluster.{key}")
                if v < (0 if key in ("snapshot_every", "step_gap_ms") else 1):
                    self.fail(vnode, f"cluster.{key} must be positive, got {v}")
                setattr(spec, key, v)
            elif key == "use_last_known_leader":
                spec.use_last_known_leader = self.typed(
                    vnode, bool, "cluster.use_last_known_leader"
                )
            else:
                self.fail(knode, f"unknown cluster setting {key!r}")
        if spec.elr_version and spec.metadata_version < 23:
            self.fail(
                node,
                f"cluster.elr needs metadata_version >= 23 (4.0-IV1), got {spec.metadata_version}",
            )
        if spec.metadata_version > LATEST:
            self.fail(node, f"metadata_version above {LATEST}")
        return spec

    def topic(self, node, cluster: ClusterSpec) -> TopicSpec:
        fields = self.mapping(node, "a topic")
        args = self.arguments(node, fields, STEP_KINDS["create_topic"][1], "topic")
        return self.topic_spec(node, args, cluster)

    def topic_spec(self, node, args, cluster: ClusterSpec) -> TopicSpec:
        assignment = args.get("assignment")
        if assignment is not None:
            if not assignment or not all(
                isinstance(r, list)
                and r
                and all(isinstance(b, int) for b in r)
                and len(set(r)) == len(r)
                for r in assignment
            ):
                self.fail(
                    node,
                    "assignment must be a non-empty list of replica lists of distinct broker ids",
                )
            if len({len(r) for r in assignment}) != 1:
                self.fail(node, "assignment: every partition needs the same number of replicas")
            unknown = sorted({b for r in assignment for b in r} - set(cluster.brokers))
            if unknown:
                self.fail(
                    node, f"assignment names brokers {unknown} that the cluster does not have"
                )
            args.setdefault("partitions", len(assignment))
            args.setdefault("replication_factor", len(assignment[0]))
            if args["partitions"] != len(assignment) or args["replication_factor"] != len(
                assignment[0]
            ):
                self.fail(node, "assignment disagrees with partitions / replication_factor")
        for key in ("partitions", "replication_factor"):
            if key not in args:
                self.fail(node, f"a topic needs {key} (or an assignment)")
        if args["partitions"] < 1:
            self.fail(node, "partitions must be at least 1")
        if not 1 <= args["replication_factor"] <= len(cluster.brokers):
            self.fail(
                node,
                f"replication_factor {args['replication_factor']} must be between 1 and the "
                f"{len(cluster.brokers)} brokers",
            )
        configs = {
            str(k): str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in (args.get("configs") or {}).items()
        }
        return TopicSpec(
            args["name"], args["partitions"], args["replication_factor"], configs, assignment
        )

    def arguments(self, node, fields, schema, what: str) -> dict:
        args = {}
        for key, (knode, vnode) in fields.items():
            if key not in schema:
                self.fail(
                    knode,
                    f"{what}: unknown argument {key!r} (expected {', '.join(schema) or 'none'})",
                )
            args[key] = self.typed(vnode, schema[key][0], f"{what}.{key}")
        for key, (_typ, required) in schema.items():
            if required and key not in args:
                self.fail(node, f"{what}: missing {key!r}")
        return args

    def step(self, node, cluster: ClusterSpec) -> Step:
        if isinstance(node, yaml.ScalarNode):
            kind, vnode = self.value(node), None
            knode = node
        else:
            fields = self.mapping(node, "a step")
            if len(fields) != 1:
                self.fail(node, f"a step has exactly one kind, got {', '.join(fields)}")
            kind, (knode, vnode) = next(iter(fields.items()))
        if kind not in STEP_KINDS:
            self.fail(knode, f"unknown step {kind!r}; steps are {', '.join(STEP_KINDS)}")
        main, schema = STEP_KINDS[kind]
        if vnode is None or (isinstance(vnode, yaml.ScalarNode) and self.value(vnode) is None):
            args = self.arguments(node, {}, schema, kind)
        elif isinstance(vnode, yaml.MappingNode):
            args = self.arguments(vnode, self.mapping(vnode, kind), schema, kind)
        elif main is not None:
            args = {main: self.typed(vnode, schema[main][0], f"{kind}")}
            args.update(
                self.arguments(node, {}, {k: (t, False) for k, (t, _) in schema.items()}, kind)
            )
        else:
            self.fail(vnode, f"{kind} takes a mapping of {', '.join(schema)}")
        for key in ("broker",):
            if key in args and args[key] not in cluster.brokers:
                self.fail(
                    vnode or node,
                    f"{kind}: broker {args[key]} is not one of the cluster's brokers "
                    f"{cluster.brokers}",
                )
        if kind == "create_topic":
            self.topic_spec(vnode, args, cluster)
        return Step(kind, args, node.start_mark.line + 1)
