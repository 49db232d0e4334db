"""Kafka's own command-line tools, run as their main classes with the cluster's jars (each
call is one JVM start, so callers batch what they can)."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import zipfile
from pathlib import Path
from typing import Protocol


class ToolTarget(Protocol):
    """What the tools need of a cluster (realkafka.cluster.KafkaCluster has it)."""

    jars: Path
    workdir: Path

    @property
    def bootstrap(self) -> str: ...

TOOL_JVM_OPTS = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
                 "-Djava.awt.headless=true"]

# A tool's main class, or the places it has lived across Kafka's lines (newest first): the
# one the version's jars hold is run (see main_class).
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
CONFIG_COMMAND = ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand")  # left core in 4.4
LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
FEATURES = "org.apache.kafka.tools.FeatureCommand"
LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"
PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
METADATA_SHELL = "org.apache.kafka.shell.MetadataShell"
STORAGE_TOOL = "kafka.tools.StorageTool"
DUMP_LOG = ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")
JMX_TOOL = "org.apache.kafka.tools.JmxTool"


@functools.cache
def main_class(jars: Path, candidates: str | tuple[str, ...]) -> str:
    """The first of `candidates` that the jars in `jars` hold: tools moved between packages
    across Kafka's release lines (DumpLogSegments left core for tools after 4.2), so the
    version's own jars are asked instead of guessing from the version number."""
    if isinstance(candidates, str):
        return candidates
    wanted = {name.replace(".", "/") + ".class": name for name in candidates}
    found = set()
    for jar in sorted(jars.glob("*.jar")):
        with zipfile.ZipFile(jar) as archive:
            found.update(wanted[n] for n in archive.namelist() if n in wanted)
    for name in candidates:
        if name in found:
            return name
    raise FileNotFoundError(f"none of {', '.join(candidates)} is in the jars of {jars}")


class ToolError(RuntimeError):
    def __init__(self, main: str, args: tuple[str, ...], result: subprocess.CompletedProcess):
        self.result = result
        super().__init__(f"{main} {' '.join(args)} exited {result.returncode}:\n"
                         f"{result.stdout[-2000:]}\n{result.stderr[-3000:]}")


class KafkaTools:
    """The CLI tools of one cluster's Kafka version, pointed at its brokers."""

    def __init__(self, cluster: ToolTarget):
        self.cluster = cluster

    def run(self, main: str | tuple[str, ...], *args: str, timeout: float = 180.0,
            check: bool = True, stdin: str | None = None) -> str:
        """`java -cp <jars> main args...`; returns stdout (ToolError on a non-zero exit)."""
        main = main_class(self.cluster.jars, main)
        result = subprocess.run(
            ["java", *TOOL_JVM_OPTS, "-cp", f"{self.cluster.jars}/*", main, *args],
            input=stdin, capture_output=True, text=True, timeout=timeout,
            stdin=None if stdin is not None else subprocess.DEVNULL)
        if check and result.returncode != 0:
            raise ToolError(main, args, result)
        return result.stdout

    def admin(self, main: str | tuple[str, ...], *args: str, **kw) -> str:
        """A tool that talks to the brokers (--bootstrap-server)."""
        return self.run(main, "--bootstrap-server", self.cluster.bootstrap, *args, **kw)

    # --- topics and configs
    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     configs: dict[str, str] | None = None,
                     assignment: list[list[int]] | None = None) -> None:
        args = ["--create", "--topic", name]
        if assignment:
            args += ["--replica-assignment", ",".join(":".join(map(str, r)) for r in assignment)]
        else:
            args += ["--partitions", str(partitions), "--replication-factor",
                     str(replication_factor)]
        for k, v in (configs or {}).items():
            args += ["--config", f"{k}={v}"]
        self.admin(TOPIC_COMMAND, *args)

    def delete_topic(self, name: str) -> None:
        self.admin(TOPIC_COMMAND, "--delete", "--topic", name)

    def describe_topics(self, topic: str | None = None) -> list[dict]:
        """`kafka-topics --describe`, one dict per partition line: topic, partition, leader
        (-1 for none), replicas, isr, elr, last_known_elr (None when printed N/A),
        adding_replicas, removing_replicas."""
        args = ["--describe"] + (["--topic", topic] if topic else [])
        return parse_topic_describe(self.admin(TOPIC_COMMAND, *args))

    def alter_config(self, entity_type: str, entity: str | None, add: dict[str, str] | None = None,
                     delete: list[str] | None = None) -> None:
        """kafka-configs --alter (entity None = the cluster-wide default, --entity-default)."""
        args = ["--alter", "--entity-type", entity_type]
        args += ["--entity-name", entity] if entity is not None else ["--entity-default"]
        if add:
            args += ["--add-config", ",".join(f"{k}={v}" for k, v in add.items())]
        if delete:
            args += ["--delete-config", ",".join(delete)]
        self.admin(CONFIG_COMMAND, *args)

    # --- leadership and reassignment
    def elect_leaders(self, election_type: str, topic: str | None = None,
                      partition: int | None = None, check: bool = True) -> str:
        args = ["--election-type", election_type]
        if topic is None:
            args += ["--all-topic-partitions"]
        else:
            args += ["--topic", topic, "--partition", str(partition or 0)]
        return self.admin(LEADER_ELECTION, *args, check=check)

    def reassign(self, moves: dict[tuple[str, int], list[int]], verify: bool = False) -> str:
        plan = {"version": 1, "partitions": [
            {"topic": t, "partition": p, "replicas": r} for (t, p), r in moves.items()]}
        path = self.cluster.workdir / "reassignment.json"
        path.write_text(json.dumps(plan))
        mode = "--verify" if verify else "--execute"
        return self.admin(REASSIGN, "--reassignment-json-file", str(path), mode, check=not verify)

    def features(self, *args: str) -> str:
        """kafka-features (describe / upgrade / downgrade / disable ...)."""
        return self.admin(FEATURES, *args)

    def log_dirs(self, brokers: list[int] | None = None) -> str:
        """`kafka-log-dirs --describe` as printed (a header line, then JSON)."""
        args = ["--describe"]
        if brokers:
            args += ["--broker-list", ",".join(map(str, brokers))]
        return self.admin(LOG_DIRS, *args)

    # --- traffic
    def produce(self, topic: str, records: int, record_size: int = 100, acks: str = "all",
                throughput: int = -1, check: bool = True) -> str:
        """ProducerPerformance with short timeouts, so a produce to an under-min-ISR partition
        fails fast instead of retrying for two minutes."""
        props = [f"bootstrap.servers={self.cluster.bootstrap}", f"acks={acks}",
                 "delivery.timeout.ms=8000", "request.timeout.ms=3000", "linger.ms=5",
                 "max.block.ms=8000"]
        return self.run(PRODUCER_PERF, "--topic", topic, "--num-records", str(records),
                        "--record-size", str(record_size), "--throughput", str(throughput),
                        "--producer-props", *props, check=check)

    def start_producer(self, topic: str, per_second: int = 100) -> subprocess.Popen:
        """A ProducerPerformance JVM producing acks=all at a steady rate until stopped (its
        own process group: stop it with os.killpg). Failed sends are printed and skipped."""
        props = [f"bootstrap.servers={self.cluster.bootstrap}", "acks=all",
                 "delivery.timeout.ms=8000", "request.timeout.ms=3000", "linger.ms=5",
                 "max.block.ms=8000"]
        log = open(self.cluster.workdir / f"producer-{topic}.log", "ab")
        try:
            return subprocess.Popen(
                ["java", *TOOL_JVM_OPTS, "-cp", f"{self.cluster.jars}/*", PRODUCER_PERF,
                 "--topic", topic, "--num-records", str(10**9), "--record-size", "100",
                 "--throughput", str(per_second), "--producer-props", *props],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        finally:
            log.close()

    # --- offline readers of the metadata log
    def dump_log(self, files: list[Path]) -> str:
        """kafka-dump-log --cluster-metadata-decoder over segments and snapshots."""
        return self.run(DUMP_LOG, "--cluster-metadata-decoder", "--files",
                        ",".join(str(f) for f in files))

    @functools.cached_property
    def has_metadata_shell(self) -> bool:
        """Whether the version's jars hold a metadata shell: kafka-shell is not published for
        every release, and a shell of another line cannot read this one's log (the Makefile's
        KAFKA_SHELL_FOR_<version>)."""
        return any(self.cluster.jars.glob("kafka-shell-*.jar"))

    def metadata_shell(self, snapshot: Path, *command: str, timeout: float = 45) -> str:
        """kafka-metadata-shell --snapshot FILE with one non-interactive command."""
        return self.run(METADATA_SHELL, "--snapshot", str(snapshot), *command, timeout=timeout)


_FIELD = re.compile(r"^\s*([A-Za-z ]+):\s?(.*)$")


def parse_topic_describe(text: str) -> list[dict]:
    """Partition lines of TopicCommand --describe (tab separated `Key: value` pairs)."""
    rows = []
    for line in text.splitlines():
        fields = {}
        for part in line.split("\t"):
            m = _FIELD.match(part)
            if m:
                fields[m.group(1).strip()] = m.group(2).strip()
        if "Partition" not in fields or "Leader" not in fields:
            continue

        def ids(key: str):
            value = fields.get(key)
            if value is None:
                return [] if key in ("Adding Replicas", "Removing Replicas") else None
            if value == "N/A":
                return None
            return [int(v) for v in value.split(",") if v.strip()]

        leader = fields["Leader"]
        rows.append({
            "topic": fields["Topic"], "partition": int(fields["Partition"]),
            "leader": -1 if leader == "none" else int(leader),
            "replicas": ids("Replicas"), "isr": ids("Isr"), "elr": ids("Elr"),
            "last_known_elr": ids("LastKnownElr"),
            "adding_replicas": ids("Adding Replicas"),
            "removing_replicas": ids("Removing Replicas"),
        })
    return rows
