"""The "every record type" story: a real KRaft cluster made to write every kind of metadata
record a cluster writes, so that the auditor and the mutation tests have real material of
each (tests/fixtures/kraft-story keeps the logs; `make fixtures-story` regenerates them).

One controller (a StandardAuthorizer, small snapshot settings) and three brokers, each with
two log dirs and a SASL_PLAINTEXT SCRAM listener next to the plaintext one. The cluster is
formatted at an older metadata.version and upgraded during the story. In order:

  topics created (one with more partitions later), topic / broker / cluster-default configs
  set and deleted, ACLs created and deleted, SCRAM credentials upserted and deleted, client
  quotas on user, client-id and ip entities set and removed, idempotent producers (producer-id
  blocks), a delegation token created, renewed and expired, the feature upgrade, a replica
  moved between a broker's two log dirs, a reassignment, a controlled shutdown and restart, a
  killed broker fenced and unfenced, the ELR filled by a shrinking ISR (lines with ELR), a
  stopped broker unregistered and started again, a topic deleted, and min ISR changed while
  the ELR is on (ClearElr records, lines with ELR); snapshots are written throughout.

    python -m kraft_audit.testing.realkafka.story VERSION TARGET_DIR [--workdir DIR]

`run_story` returns the steps a line could not do (each with why); the rest ran.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from kraft_audit.testing.realkafka.cluster import (KafkaCluster, elr_on_by_default, free_port, has_elr,
                                                   release, wait_until)
from kraft_audit.testing.realkafka.tools import CONFIG_COMMAND, REASSIGN, ToolError

ACL_COMMAND = ("org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand")
TOKEN_COMMAND = ("org.apache.kafka.tools.DelegationTokenCommand", "kafka.admin.DelegationTokenCommand")
CLUSTER_TOOL = ("org.apache.kafka.tools.ClusterTool", "kafka.tools.ClusterTool")
ADMIN_USER, ADMIN_PASSWORD = "admin", "admin-secret"
SCRAM = "SCRAM-SHA-256"


def formatted_release(version: str) -> str:
    """The older metadata.version the story formats at: one the line accepts that already has
    SCRAM in KRaft and directory assignments (3.7), so only the upgrade differs."""
    line = release(version)
    if line < (3, 8):
        return "3.7-IV2"  # the first with directory assignments; upgraded to 3.7-IV4
    return "3.7-IV4" if line < (4, 0) else "3.9-IV0"


def latest_release(version: str) -> str:
    major, minor = release(version)
    return f"{major}.{minor}"


def story_cluster(version: str, workdir: Path) -> KafkaCluster:
    common = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        # brokers and controllers talk plaintext (User:ANONYMOUS); the story's admin over SCRAM
        "super.users": f"User:ANONYMOUS;User:{ADMIN_USER}",
        "delegation.token.secret.key": "story-token-secret",
        "delegation.token.expiry.check.interval.ms": "5000",
        # few NoOps (the fixtures stay small), snapshots every few seconds of changes
        "metadata.max.idle.interval.ms": "5000",
        "metadata.log.max.record.bytes.between.snapshots": "4000",
        "metadata.log.max.snapshot.interval.ms": "20000",
    }
    cluster = KafkaCluster(version, workdir, brokers=3, common_config=common,
                           release_version=formatted_release(version), data_dirs_per_broker=2)
    add_sasl_listeners(cluster)
    return cluster


def add_sasl_listeners(cluster: KafkaCluster) -> None:
    """A SASL_PLAINTEXT SCRAM listener on every broker next to the plaintext one (brokers and
    controllers keep talking plaintext): delegation tokens are asked for over it."""
    for b in cluster.brokers:
        b.sasl_port = free_port()
        b.config_overrides.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{b.port},SASL_PLAINTEXT://127.0.0.1:{b.sasl_port}",
            "advertised.listeners":
                f"PLAINTEXT://127.0.0.1:{b.port},SASL_PLAINTEXT://127.0.0.1:{b.sasl_port}",
            "listener.security.protocol.map":
                "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": SCRAM,
            f"listener.name.sasl_plaintext.{SCRAM.lower()}.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        })


class StoryRun:
    def __init__(self, cluster: KafkaCluster):
        self.cluster = cluster
        self.tools = cluster.tools
        self.skipped: dict[str, str] = {}

    def state(self):
        from kraft_audit.cli.describe import replay

        return replay(self.cluster.metadata_log_dir, self.cluster.cluster_id, None)

    def wait(self, what: str, check, timeout: float = 90):
        return wait_until(what, lambda: check(self.state()), timeout, every=0.5)

    def partition(self, state, topic: str, index: int = 0):
        tid = state.topic_ids.get(topic)
        return None if tid is None else state.partitions.get((tid, index))

    def wait_in_sync(self, timeout: float = 120) -> None:
        def done(s):
            return all(set(p.isr) == set(p.replicas) and p.leader >= 0 and not p.adding_replicas
                       and not p.removing_replicas for key, p in s.partitions.items() if key[0] in s.topics)
        self.wait("every partition in sync", done, timeout)

    def wait_fenced(self, broker_id: int, fenced: bool) -> None:
        self.wait(f"broker {broker_id} fenced={fenced}",
                  lambda s: broker_id in s.brokers and s.brokers[broker_id].fenced == fenced)

    def sasl_config(self) -> Path:
        path = self.cluster.workdir / "admin-sasl.properties"
        path.write_text(
            "security.protocol=SASL_PLAINTEXT\n"
            f"sasl.mechanism={SCRAM}\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{ADMIN_USER}" password="{ADMIN_PASSWORD}";\n')
        return path

    def sasl_bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{b.sasl_port}" for b in self.cluster.brokers if b.running)

    # ---------------------------------------------------------------- the steps
    def topics(self) -> None:
        t = self.tools
        t.create_topic("orders", partitions=2, replication_factor=3,
                       configs={"min.insync.replicas": "2", "retention.ms": "3600000"})
        t.create_topic("moving", assignment=[[1, 2]])
        t.create_topic("doomed", partitions=2, replication_factor=2)
        t.create_topic("elr", assignment=[[1, 2, 3]], configs={"min.insync.replicas": "3"})
        t.admin("org.apache.kafka.tools.TopicCommand", "--alter", "--topic", "orders",
                "--partitions", "4")

    def configs(self) -> None:
        t = self.tools
        t.alter_config("topics", "orders", add={"segment.bytes": "8388608", "cleanup.policy": "delete"})
        t.alter_config("topics", "orders", delete=["segment.bytes"])
        t.alter_config("brokers", "1", add={"log.cleaner.threads": "2"})
        t.alter_config("brokers", None, add={"min.insync.replicas": "1", "log.retention.ms": "86400000"})
        t.alter_config("brokers", None, delete=["log.retention.ms"])
        t.alter_config("brokers", "1", delete=["log.cleaner.threads"])

    def acls(self) -> None:
        t = self.tools
        t.admin(ACL_COMMAND, "--add", "--allow-principal", "User:alice", "--operation", "Read",
                "--operation", "Write", "--topic", "orders")
        t.admin(ACL_COMMAND, "--add", "--allow-principal", "User:bob", "--operation", "Read",
                "--group", "app-", "--resource-pattern-type", "prefixed")
        t.admin(ACL_COMMAND, "--add", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.1",
                "--operation", "All", "--cluster")
        t.admin(ACL_COMMAND, "--remove", "--force", "--allow-principal", "User:bob",
                "--operation", "Read", "--group", "app-", "--resource-pattern-type", "prefixed")

    def scram(self) -> None:
        t = self.tools
        for user, password in ((ADMIN_USER, ADMIN_PASSWORD), ("alice", "alice-secret"),
                               ("carol", "carol-secret")):
            t.admin(CONFIG_COMMAND, "--alter", "--entity-type", "users", "--entity-name", user,
                    "--add-config", f"{SCRAM}=[iterations=4096,password={password}]")
        t.admin(CONFIG_COMMAND, "--alter", "--entity-type", "users", "--entity-name", "alice",
                "--add-config", f"{SCRAM}=[iterations=8192,password=alice-new]")  # upserted again
        t.admin(CONFIG_COMMAND, "--alter", "--entity-type", "users", "--entity-name", "carol",
                "--delete-config", SCRAM)

    def quotas(self) -> None:
        t = self.tools
        t.alter_config("users", "alice", add={"producer_byte_rate": "1048576"})
        t.alter_config("clients", "app-1", add={"consumer_byte_rate": "2097152", "request_percentage": "50"})
        t.admin(CONFIG_COMMAND, "--alter", "--entity-type", "users", "--entity-name", "alice",
                "--entity-type", "clients", "--entity-name", "app-1", "--add-config",
                "producer_byte_rate=4096")
        t.alter_config("ips", "127.0.0.2", add={"connection_creation_rate": "10"})
        t.alter_config("clients", "app-1", delete=["request_percentage"])
        t.alter_config("ips", "127.0.0.2", delete=["connection_creation_rate"])

    def producers(self) -> None:
        # idempotent producers (the default): each broker leading a partition asks for a block
        self.tools.produce("orders", 2000)
        self.tools.produce("elr", 500)

    def tokens(self) -> None:
        conf = str(self.sasl_config())
        run = self.tools.run

        def token(*args: str) -> str:
            return run(TOKEN_COMMAND, "--bootstrap-server", self.sasl_bootstrap(),
                       "--command-config", conf, *args)

        out = token("--create", "--max-life-time-period", "3600000", "--renewer-principal",
                    f"User:{ADMIN_USER}")
        hmac = _token_hmac(out)
        token("--renew", "--hmac", hmac, "--renew-time-period", "600000")
        out2 = token("--create", "--max-life-time-period", "3600000")
        token("--expire", "--hmac", hmac, "--expiry-time-period", "-1")  # removed now
        token("--expire", "--hmac", _token_hmac(out2), "--expiry-time-period", "-1")

    def upgrade(self) -> None:
        target = latest_release(self.cluster.version)
        try:
            self.tools.features("upgrade", "--release-version", target)
        except ToolError as e:
            if "release-version" not in str(e):
                raise
            self.tools.features("upgrade", "--metadata", target)  # lines without --release-version
        if has_elr(self.cluster.version) and not elr_on_by_default(self.cluster.version):
            # a line where the release's features leave ELR off: turned on by name
            self.tools.features("upgrade", "--feature", "eligible.leader.replicas.version=1")
        self.wait("the brokers re-registered at the new level",
                  lambda s: all(not b.fenced for b in s.brokers.values()))

    def log_dirs(self) -> None:
        """A replica moved to its broker's other log dir: the broker copies it and asks the
        controller to assign it there."""
        out = self.tools.log_dirs([1])
        data = json.loads(out[out.index("{"):])
        where = {}
        for broker in data["brokers"]:
            for d in broker["logDirs"]:
                for p in d["partitions"]:
                    where[p["partition"]] = d["logDir"]
        current = where.get("moving-0")
        if current is None:
            raise RuntimeError(f"moving-0 is in no log dir of broker 1: {out}")
        other = next(str(d) for d in self.cluster.broker(1).data_log_dirs if str(d) != current)
        plan = {"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": [1, 2],
                                              "log_dirs": [other, "any"]}]}
        self._reassign(plan)

    def reassignment(self) -> None:
        plan = {"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": [2, 3]},
                                             {"topic": "orders", "partition": 3,
                                              "replicas": [3, 1, 2]}]}
        self._reassign(plan)
        self.wait("moving-0 on [2, 3]", lambda s: list(self.partition(s, "moving").replicas) == [2, 3])

    def _reassign(self, plan: dict) -> None:
        path = self.cluster.workdir / "story-reassignment.json"
        path.write_text(json.dumps(plan))
        self.tools.admin(REASSIGN, "--reassignment-json-file", str(path), "--execute")
        wait_until("the reassignment done", lambda: "is still in progress" not in self.tools.admin(
            REASSIGN, "--reassignment-json-file", str(path), "--verify", check=False), 120, every=2)
        self.wait_in_sync()

    def shutdowns(self) -> None:
        b3 = self.cluster.broker(3)
        b3.stop()  # controlled shutdown
        self.wait_fenced(3, True)
        if has_elr(self.cluster.version):
            self.wait("broker 3 in the ELR of elr-0", lambda s: 3 in (self.partition(s, "elr").elr or []))
        else:
            self.skipped["elr"] = "the line has no eligible leader replicas"
        b3.start()
        self.wait_fenced(3, False)
        self.wait_in_sync()
        b2 = self.cluster.broker(2)
        b2.kill()  # no controlled shutdown: fenced when its session times out
        self.wait_fenced(2, True)
        b2.start()
        self.wait_fenced(2, False)
        self.wait_in_sync()

    def unregister(self) -> None:
        """A stopped broker unregistered (kafka-cluster unregister), then started again: it
        registers afresh and catches up."""
        b3 = self.cluster.broker(3)
        b3.kill()
        self.wait_fenced(3, True)
        self.tools.run(CLUSTER_TOOL, "unregister", "--bootstrap-server", self.cluster.bootstrap,
                       "--id", "3")
        self.wait("broker 3 unregistered",
                  lambda s: 3 not in s.brokers or not s.brokers[3].registered)
        b3.start()
        self.wait_fenced(3, False)
        self.wait_in_sync()

    def clear_elr(self) -> None:
        """With the ELR on, a min ISR change makes the controller clear the ELRs it may have
        made stale: one ClearElr record for the topic, one for all topics (the cluster default,
        which may be changed but not removed while the ELR is on: Kafka refuses that)."""
        if not has_elr(self.cluster.version):
            self.skipped["clear_elr"] = "the line has no eligible leader replicas"
            return
        self.tools.alter_config("topics", "elr", add={"min.insync.replicas": "2"})
        self.tools.alter_config("brokers", None, add={"min.insync.replicas": "2"})

    def delete(self) -> None:
        self.tools.delete_topic("doomed")
        self.wait("doomed deleted", lambda s: "doomed" not in s.topic_ids)

    def steps(self) -> tuple:
        return (self.topics, self.configs, self.acls, self.scram, self.quotas, self.producers,
                self.tokens, self.upgrade, self.log_dirs, self.reassignment, self.shutdowns,
                self.unregister, self.delete, self.clear_elr)

    def after_step(self) -> None:
        """Called after each step (a subclass notes where the log stands)."""

    def run(self) -> None:
        for step in self.steps():
            step()
            self.after_step()
        self.wait_in_sync()


def _token_hmac(output: str) -> str:
    """The HMAC column of kafka-delegation-tokens --create's table."""
    lines = [line for line in output.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if line.split()[:2] == ["TOKENID", "HMAC"] and i + 1 < len(lines):
            return lines[i + 1].split()[1]
    raise RuntimeError(f"no token in:\n{output}")


def run_story(version: str, workdir: Path) -> tuple[KafkaCluster, dict[str, str]]:
    """Run the story on a fresh cluster in `workdir`; the controller is stopped cleanly at the
    end, the brokers killed (their files stay). Returns it and the steps skipped on this line."""
    cluster = story_cluster(version, workdir)
    try:
        cluster.start()
        story = StoryRun(cluster)
        story.run()
        # the controller first: its log ends with every partition led (stopping the brokers
        # first would end it with every partition offline)
        cluster.controller.stop()
        return cluster, story.skipped
    finally:
        cluster.close()


def keep(cluster: KafkaCluster, target: Path) -> Path:
    """The controller's __cluster_metadata-0 (with meta.properties and bootstrap.checkpoint)
    copied to `target` as a fixture."""
    src = cluster.metadata_log_dir
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name in ("meta.properties", "bootstrap.checkpoint"):
        if (src.parent / name).exists():
            shutil.copyfile(src.parent / name, target / name)
    out = target / src.name
    out.mkdir()
    for f in sorted(src.iterdir()):
        if f.suffix in (".log", ".checkpoint"):
            shutil.copyfile(f, out / f.name)  # Kafka leaves snapshots read-only
    return target


def keep_run(argv: list[str], name: str, run):
    """A fixture script's command line, `VERSION TARGET_DIR [--workdir DIR]`: `run(version,
    workdir)` (a cluster, or a tuple whose first item is one), its controller's log kept in
    TARGET_DIR, the workdir removed unless given. Returns (the parsed arguments, run's
    result)."""
    import argparse

    parser = argparse.ArgumentParser(prog=f"python -m kraft_audit.testing.realkafka.{name}")
    parser.add_argument("version")
    parser.add_argument("target", type=Path)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix=f"kraft-{name}-{args.version}-"))
    result = run(args.version, workdir)
    keep(result[0] if isinstance(result, tuple) else result, args.target)
    if args.workdir is None:  # a failed run raised above and left its files to look at
        shutil.rmtree(workdir, ignore_errors=True)
    return args, result


def main(argv: list[str]) -> int:
    args, (_cluster, skipped) = keep_run(argv, "story", run_story)
    for step, why in skipped.items():
        print(f"skipped {step}: {why}")
    print(f"kept {args.target}")
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
