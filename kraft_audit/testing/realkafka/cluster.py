"""A KRaft cluster of real Kafka JVMs on loopback: dedicated controller(s) and brokers,
each node its own process group, ports chosen free at runtime, storage formatted with
Kafka's StorageTool. The cheapest layout that still exercises fencing and ELR is one
controller and three brokers (the default).

Per node: start, wait until ready, stop (SIGTERM: controlled shutdown), kill (SIGKILL:
unclean shutdown), pause/resume (SIGSTOP/SIGCONT), restart. Log dirs and server logs
stay in the work dir, so a failed test leaves everything to look at.
"""

from __future__ import annotations

import base64
import os
import random
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

# Small heaps and a fast-starting JVM: the machine runs several clusters at once.
SERVER_JVM_OPTS = ["-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   "-Djava.awt.headless=true"]
METADATA_PARTITION = "__cluster_metadata-0"
READY_LINE = "Kafka Server started"

T = TypeVar("T")


def kafka_jars(version: str) -> Path:
    """The folder `make kafka` filled with the jars of this Kafka version."""
    root = Path(os.environ.get("KRAFT_TEST_KAFKA_CACHE")
                or Path(__file__).resolve().parents[3] / ".cache" / "kafka")
    folder = root / version
    if not (folder / ".resolved").exists():
        raise FileNotFoundError(f"Kafka {version} jars are not in {folder}: run `make kafka`")
    return folder


def jmx_exporter_agent() -> Path:
    """The Prometheus JMX exporter java agent `make jmx-exporter` resolved."""
    root = Path(os.environ.get("KRAFT_TEST_JMX_EXPORTER_CACHE")
                or Path(__file__).resolve().parents[3] / ".cache" / "jmx-exporter")
    jars = sorted(root.glob("jmx_prometheus_javaagent-*.jar"))
    if not (root / ".resolved").exists() or not jars:
        raise FileNotFoundError(f"the JMX exporter agent is not in {root}: run `make jmx-exporter`")
    return jars[-1]


def release(version: str) -> tuple[int, int]:
    """"4.0.2" -> (4, 0): what a release line can do is decided by its line."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def uses_log4j2(version: str) -> bool:
    """Kafka 4 logs through log4j2; 3.x through reload4j (log4j 1 syntax)."""
    return release(version) >= (4, 0)


def has_elr(version: str) -> bool:
    """Eligible leader replicas exist from 4.0 (the feature eligible.leader.replicas.version);
    4.0 formats new clusters with it off, 4.1 and later with it on."""
    return release(version) >= (4, 0)


def elr_on_by_default(version: str) -> bool:
    return release(version) >= (4, 1)


def describes_elr(version: str) -> bool:
    """kafka-topics --describe prints Elr and LastKnownElr from 3.8 (DescribeTopicPartitions)."""
    return release(version) >= (3, 8)


def counts_unclean_elections(version: str) -> bool:
    """The KRaft controller's UncleanLeaderElectionsPerSec exists from 3.9."""
    return release(version) >= (3, 9)


def counts_elr_elections(version: str) -> bool:
    """The controller's ElectionFromEligibleLeaderReplicasPerSec exists from 4.1."""
    return release(version) >= (4, 1)


def elr_features(version: str) -> dict[str, int]:
    """The StorageTool features that give a new cluster of `version` ELR where it has it:
    on 4.0 the feature must be asked for, later lines turn it on themselves."""
    return {"eligible.leader.replicas.version": 1} \
        if has_elr(version) and not elr_on_by_default(version) else {}


_PORTS_GIVEN: set[int] = set()


def free_port() -> int:
    """A port free now, below the kernel's ephemeral range and not given before by this
    process. A port the kernel picks (bind to 0) comes from the range every outgoing
    connection draws from, so one can take it between this check and the node's own bind:
    seen as brokers dying with "Address already in use" while other clusters' clients ran."""
    try:
        first_ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first_ephemeral = 32768
    for _attempt in range(1000):
        port = random.randrange(10000, max(first_ephemeral, 10001))
        if port in _PORTS_GIVEN:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _PORTS_GIVEN.add(port)
        return port
    raise RuntimeError("no free port below the ephemeral range")


def random_cluster_id() -> str:
    """A Kafka Uuid as StorageTool's random-uuid prints it (base64url, no padding)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def wait_until(what: str, check: Callable[[], T], timeout: float = 90.0,
               every: float = 0.25) -> T:
    """Poll `check` until it returns something true; TimeoutError names `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:.0f} s for {what}")
        time.sleep(every)


class KafkaNode:
    """One Kafka process: a controller or a broker."""

    def __init__(self, cluster: "KafkaCluster", node_id: int, role: str):
        self.cluster = cluster
        self.node_id = node_id
        self.role = role  # "controller" or "broker"
        self.dir = cluster.workdir / f"{role}-{node_id}"
        self.port = free_port()
        self.jmx_port = free_port()
        self.exporter_port = free_port()  # the JMX exporter agent's /metrics, when it runs
        self.proc: subprocess.Popen | None = None
        self.config_overrides: dict[str, str] = {}
        self.paused = False

    def __repr__(self) -> str:
        return f"<{self.role} {self.node_id} port {self.port}>"

    # --- where things are
    @property
    def metadata_dir(self) -> Path:
        """metadata.log.dir: holds __cluster_metadata-0 (and meta.properties)."""
        return self.dir / "metadata"

    @property
    def metadata_log_dir(self) -> Path:
        """The node's copy of the metadata log (the controller's is the one Kafka writes)."""
        return self.metadata_dir / METADATA_PARTITION

    @property
    def data_log_dirs(self) -> list[Path]:
        """log.dirs of a broker (empty for a controller)."""
        if self.role != "broker":
            return []
        return [self.dir / f"data-{i}" for i in range(self.cluster.data_dirs_per_broker)]

    @property
    def logs_dir(self) -> Path:
        return self.dir / "logs"

    @property
    def server_log(self) -> Path:
        return self.logs_dir / "server.log"

    @property
    def request_log(self) -> Path | None:
        """kafka.request.logger's file, when the cluster turned it on."""
        return self.logs_dir / "kafka-request.log" if self.cluster.request_log_level else None

    @property
    def properties_file(self) -> Path:
        return self.dir / "server.properties"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.running else None

    # --- configuration
    def properties(self) -> dict[str, str]:
        c = self.cluster
        props = {
            "process.roles": self.role,
            "node.id": str(self.node_id),
            "controller.quorum.voters": c.quorum_voters,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "metadata.log.dir": str(self.metadata_dir),
        }
        if self.role == "controller":
            props.update({
                "listeners": f"CONTROLLER://127.0.0.1:{self.port}",
                "log.dirs": str(self.metadata_dir),
                # a silent broker is fenced after 3 s instead of 9
                "broker.session.timeout.ms": "3000",
            })
        else:
            props.update({
                "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                "inter.broker.listener.name": "PLAINTEXT",
                "log.dirs": ",".join(str(d) for d in self.data_log_dirs),
                "broker.heartbeat.interval.ms": "500",
                # a follower that stops fetching leaves the ISR after 3 s instead of 30
                "replica.lag.time.max.ms": "3000",
                "offsets.topic.replication.factor": "1",
                "transaction.state.log.replication.factor": "1",
                "transaction.state.log.min.isr": "1",
                "group.initial.rebalance.delay.ms": "0",
                "auto.create.topics.enable": "false",
                "num.partitions": "1",
                "log.segment.bytes": str(16 * 1024 * 1024),
            })
        props.update(c.common_config)
        props.update(c.controller_config if self.role == "controller" else c.broker_config)
        props.update(self.config_overrides)
        return props

    def write_properties(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.logs_dir.mkdir(exist_ok=True)
        self.properties_file.write_text(
            "".join(f"{k}={v}\n" for k, v in sorted(self.properties().items())))

    def format(self) -> None:
        """StorageTool format (with the cluster's release version and features, if any)."""
        self.write_properties()
        args = ["format", "-t", self.cluster.cluster_id, "-c", str(self.properties_file),
                "--ignore-formatted"]
        if self.cluster.release_version:
            args += ["--release-version", self.cluster.release_version]
        for name, level in self.cluster.features.items():
            args += ["--feature", f"{name}={level}"]
        from kraft_audit.testing.realkafka.tools import STORAGE_TOOL

        self.cluster.tools.run(STORAGE_TOOL, *args)

    # --- lifecycle
    def launch(self) -> int:
        """Start the JVM without waiting; returns the server log's size before it started."""
        if self.running:
            raise RuntimeError(f"{self} is already running")
        self.write_properties()
        c = self.cluster
        mark = self.server_log.stat().st_size if self.server_log.exists() else 0
        log_opt = (f"-Dlog4j2.configurationFile={c.log_config}" if uses_log4j2(c.version)
                   else f"-Dlog4j.configuration=file:{c.log_config}")
        jmx = [f"-Dcom.sun.management.jmxremote.port={self.jmx_port}",
               f"-Dcom.sun.management.jmxremote.rmi.port={self.jmx_port}",
               "-Dcom.sun.management.jmxremote.host=127.0.0.1",
               "-Djava.rmi.server.hostname=127.0.0.1",
               "-Dcom.sun.management.jmxremote.authenticate=false",
               "-Dcom.sun.management.jmxremote.ssl=false"]
        if c.jmx_exporter is not None:  # Kafka's MBeans on /metrics, as operators scrape them
            agent, config = c.jmx_exporter
            jmx.append(f"-javaagent:{agent}=127.0.0.1:{self.exporter_port}:{config}")
        # a controller may run other controller classes first (a mutant) and an agent (coverage)
        extra_opts, classpath = ((c.controller_jvm_opts, [*c.controller_classpath, f"{c.jars}/*"])
                                 if self.role == "controller" else ([], [f"{c.jars}/*"]))
        with open(self.logs_dir / "stdout.log", "ab") as out:
            self.proc = subprocess.Popen(
                ["java", *SERVER_JVM_OPTS, *jmx, *extra_opts, f"-Dkafka.logs.dir={self.logs_dir}", log_opt,
                 "-cp", os.pathsep.join(map(str, classpath)), "kafka.Kafka", str(self.properties_file)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)  # own process group: kill -9 takes the whole JVM
        return mark

    def wait_ready(self, mark: int = 0, timeout: float = 120.0) -> None:
        """Until the server logs that it started (a broker: registered and unfenced)."""
        wait_until(f"{self} to start (see {self.server_log})",
                   lambda: self._check_alive() and self.logged_since(mark, READY_LINE),
                   timeout=timeout)

    def start(self, timeout: float = 120.0) -> None:
        self.wait_ready(self.launch(), timeout)

    def stop(self, timeout: float = 90.0) -> None:
        """SIGTERM: Kafka's own shutdown hook, a controlled shutdown for a broker."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self._signal(signal.SIGCONT)  # a paused JVM cannot handle SIGTERM
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.proc.wait(30)
        self.proc = None

    def begin_stop(self) -> None:
        """SIGTERM without waiting: a controlled shutdown under way (`stop()` waits for it)."""
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        """kill -9: an unclean shutdown (no .kafka_cleanshutdown marker)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self._signal(signal.SIGKILL)
            self.proc.wait(30)
        self.proc = None
        self.paused = False

    def pause(self) -> None:
        """SIGSTOP: the JVM stops heartbeating and fetching but keeps its sockets."""
        self._signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        self._signal(signal.SIGCONT)
        self.paused = False

    def restart(self, timeout: float = 120.0) -> None:
        self.stop()
        self.start(timeout)

    def _signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def _check_alive(self) -> bool:
        if self.proc is None or self.proc.poll() is not None:
            code = None if self.proc is None else self.proc.returncode
            raise RuntimeError(f"{self} is not running (exit {code}); see {self.server_log}")
        return True

    # --- its server log
    def logged_since(self, mark: int, text: str) -> bool:
        if not self.server_log.exists():
            return False
        with open(self.server_log, "rb") as f:
            f.seek(mark)
            return text.encode() in f.read()


class KafkaCluster:
    """Controllers (ids 100, 101, ...) and brokers (ids 1..N) of one Kafka version.

    `common_config`, `controller_config` and `broker_config` are server properties laid
    over the harness's defaults; `features` are passed to StorageTool format (e.g.
    {"eligible.leader.replicas.version": 0}); `request_log_level` ("DEBUG" or "TRACE")
    turns on kafka.request.logger into each node's logs/kafka-request.log, rolled at
    `request_log_roll_bytes`; `jmx_exporter` (agent jar, config) runs the Prometheus JMX
    exporter agent in every node, serving on its `exporter_port`.
    """

    def __init__(self, version: str, workdir: Path | str, brokers: int = 3, controllers: int = 1,
                 *, common_config: dict[str, str] | None = None,
                 controller_config: dict[str, str] | None = None,
                 broker_config: dict[str, str] | None = None,
                 features: dict[str, int] | None = None, release_version: str | None = None,
                 request_log_level: str | None = None, request_log_roll_bytes: int = 50 << 20,
                 data_dirs_per_broker: int = 1, jmx_exporter: tuple[Path, Path] | None = None):
        from kraft_audit.testing.realkafka.tools import KafkaTools

        self.version = version
        self.jars = kafka_jars(version)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.common_config = dict(common_config or {})
        self.controller_config = dict(controller_config or {})
        self.broker_config = dict(broker_config or {})
        self.features = dict(features or {})
        self.release_version = release_version
        self.request_log_level = request_log_level
        self.request_log_roll_bytes = request_log_roll_bytes
        self.data_dirs_per_broker = data_dirs_per_broker
        self.jmx_exporter = jmx_exporter  # (agent jar, its config): every node serves /metrics
        # put before Kafka's jars on the controllers' classpath, and their extra JVM options
        self.controller_classpath: list[Path] = []
        self.controller_jvm_opts: list[str] = []
        self.cluster_id = random_cluster_id()
        self.controllers = [KafkaNode(self, 100 + i, "controller") for i in range(controllers)]
        self.brokers = [KafkaNode(self, 1 + i, "broker") for i in range(brokers)]
        self.log_config = self.workdir / ("log4j2.properties" if uses_log4j2(version)
                                          else "log4j.properties")
        self.tools = KafkaTools(self)
        self.formatted = False

    def __enter__(self) -> "KafkaCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- the nodes
    @property
    def nodes(self) -> list[KafkaNode]:
        return [*self.controllers, *self.brokers]

    def node(self, node_id: int) -> KafkaNode:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise KeyError(f"no node {node_id}")

    def broker(self, broker_id: int) -> KafkaNode:
        node = self.node(broker_id)
        if node.role != "broker":
            raise KeyError(f"node {broker_id} is not a broker")
        return node

    @property
    def controller(self) -> KafkaNode:
        """The first controller (the only one in the default layout)."""
        return self.controllers[0]

    @property
    def quorum_voters(self) -> str:
        return ",".join(f"{c.node_id}@127.0.0.1:{c.port}" for c in self.controllers)

    @property
    def bootstrap(self) -> str:
        """The listeners of the brokers not paused. A stopped broker refuses the connection
        and clients move on; a paused one accepts it and never answers, so a tool that
        bootstraps from it times out (seen: "Timed out waiting for a node assignment")."""
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers if not b.paused)

    @property
    def metadata_log_dir(self) -> Path:
        """The first controller's __cluster_metadata-0: the log the auditor reads."""
        return self.controller.metadata_log_dir

    # --- lifecycle
    def format(self) -> None:
        self._write_log_config()
        _in_parallel(KafkaNode.format, self.nodes)  # one StorageTool JVM per node, together
        self.formatted = True

    def start(self, timeout: float = 180.0) -> "KafkaCluster":
        """Format (once) and start every node; returns when all brokers are unfenced."""
        if not self.formatted:
            self.format()
        for node in self.controllers:
            node.launch()
        for node in self.controllers:
            node.wait_ready(0, timeout)
        marks = [(b, b.launch()) for b in self.brokers]  # brokers start side by side
        for b, mark in marks:
            b.wait_ready(mark, timeout)
        return self

    def close(self) -> None:
        """Kill every process the cluster started (brokers first); files stay."""
        for node in reversed(self.nodes):
            try:
                node.kill()
            except Exception:  # noqa: BLE001 - every process must go even if one fails
                pass

    def stop(self) -> None:
        """Stop every node cleanly (brokers first)."""
        for node in reversed(self.nodes):
            node.stop()

    def _write_log_config(self) -> None:
        level = self.request_log_level
        if uses_log4j2(self.version):
            text = _LOG4J2_SERVER + (_LOG4J2_REQUESTS.format(level=level,
                                                             roll=self.request_log_roll_bytes)
                                     if level else "")
        else:
            text = _LOG4J1_SERVER + (_LOG4J1_REQUESTS.format(level=level,
                                                             roll=self.request_log_roll_bytes)
                                     if level else "")
        self.log_config.write_text(text)


def _in_parallel(fn: Callable[[KafkaNode], object], nodes: Iterable[KafkaNode]) -> None:
    nodes = list(nodes)
    with ThreadPoolExecutor(len(nodes)) as pool:
        for result in [pool.submit(fn, n) for n in nodes]:
            result.result()


# Logging: the server log per node; kafka.request.logger to its own file when asked.
_LOG4J2_SERVER = """\
status = warn
appender.server.type = RollingFile
appender.server.name = SERVER
appender.server.fileName = ${sys:kafka.logs.dir}/server.log
appender.server.filePattern = ${sys:kafka.logs.dir}/server.log.%i
appender.server.layout.type = PatternLayout
appender.server.layout.pattern = [%d] %p %m (%c)%n
appender.server.policies.type = Policies
appender.server.policies.size.type = SizeBasedTriggeringPolicy
appender.server.policies.size.size = 100MB
rootLogger.level = INFO
rootLogger.appenderRef.server.ref = SERVER
"""
_LOG4J2_REQUESTS = """\
appender.req.type = RollingFile
appender.req.name = REQ
appender.req.fileName = ${{sys:kafka.logs.dir}}/kafka-request.log
appender.req.filePattern = ${{sys:kafka.logs.dir}}/kafka-request.log.%i
appender.req.layout.type = PatternLayout
appender.req.layout.pattern = [%d] %p %m (%c)%n
appender.req.policies.type = Policies
appender.req.policies.size.type = SizeBasedTriggeringPolicy
appender.req.policies.size.size = {roll}
appender.req.strategy.type = DefaultRolloverStrategy
appender.req.strategy.max = 50
logger.req.name = kafka.request.logger
logger.req.level = {level}
logger.req.additivity = false
logger.req.appenderRef.req.ref = REQ
"""
_LOG4J1_SERVER = """\
log4j.rootLogger=INFO, server
log4j.appender.server=org.apache.log4j.RollingFileAppender
log4j.appender.server.File=${kafka.logs.dir}/server.log
log4j.appender.server.MaxFileSize=100MB
log4j.appender.server.layout=org.apache.log4j.PatternLayout
log4j.appender.server.layout.ConversionPattern=[%d] %p %m (%c)%n
"""
_LOG4J1_REQUESTS = """\
log4j.appender.req=org.apache.log4j.RollingFileAppender
log4j.appender.req.File=${{kafka.logs.dir}}/kafka-request.log
log4j.appender.req.MaxFileSize={roll}
log4j.appender.req.MaxBackupIndex=50
log4j.appender.req.layout=org.apache.log4j.PatternLayout
log4j.appender.req.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger={level}, req
log4j.additivity.kafka.request.logger=false
"""
