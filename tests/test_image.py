"""The container image (deploy/container/, `make image`) run as a user runs it: podman, the
image's own entrypoint, a read-only root filesystem with only /tmp writable (a tmpfs) and the
volumes each command needs, every capability dropped, as uid 1000 (the image's user).

`make test-image` builds the image, then runs these (pytest -m image). They find it by the name
the Makefile gives it (KRAFT_TEST_IMAGE; podman's flags in KRAFT_TEST_PODMAN)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import urllib.request
from pathlib import Path

import pytest

from kraft_audit.core.codec.logdir import read_log_dir
from kraft_audit.core.events import MetadataEvent
from kraft_audit.testing.realkafka.cluster import KafkaCluster, free_port, wait_until
from kraft_audit.testing.realkafka.ship_process import TOPIC, create_topic
from services import KAFKA_VERSIONS

pytestmark = pytest.mark.image

REPO = Path(__file__).resolve().parents[1]
VERSION = re.search(r'^version = "(.+)"$', (REPO / "pyproject.toml").read_text(), re.MULTILINE).group(1)
IMAGE = os.environ.get("KRAFT_TEST_IMAGE") or f"localhost/kraft-audit:{VERSION}"
PODMAN = shlex.split(os.environ.get("KRAFT_TEST_PODMAN") or "podman")
ENV = {**os.environ, "CONTAINERS_CONF": os.environ.get("CONTAINERS_CONF")
       or str(REPO / "deploy" / "container" / "containers.conf")}
REAL_LOG = REPO / "tests" / "fixtures" / "kraft-real" / "Niloufar1171__LDI-POC"
# What Spark and Python write outside the volumes: Spark's local dir, the JVM's perf data,
# the Python workers' sockets, matplotlib's cache, all under /tmp. Nothing else is writable.
LOCKED_DOWN = ["--read-only", "--read-only-tmpfs=false", "--tmpfs", "/tmp:rw,mode=1777,size=1g",
               "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]


def podman(*args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run([*PODMAN, *args], env=ENV, capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: exit {done.returncode}\n{done.stderr[-3000:]}")
    return done


def run(*args: str, volumes: dict[Path, str] | None = None, network: str = "none", name: str | None = None,
        detach: bool = False, timeout: float = 600) -> subprocess.CompletedProcess:
    """`podman run` of the image, locked down; `volumes` maps host paths to container paths
    (a trailing ':ro' mounts read-only)."""
    mounts = [a for host, inside in (volumes or {}).items() for a in ("-v", f"{host}:{inside}")]
    return podman("run", *(["-d"] if detach else ["--rm"]), *(["--name", name] if name else []),
                  "--network", network, *LOCKED_DOWN, *mounts, IMAGE, *args,
                  check=False, timeout=timeout)


def writable_by_the_image(path: Path) -> Path:
    """A host folder the image's user (uid 1000) can write: a volume for its tables."""
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, 1000, 1000)
    return path


@pytest.fixture(scope="module", autouse=True)
def image():
    if podman("image", "exists", IMAGE, check=False).returncode != 0:
        pytest.fail(f"{IMAGE} is not built: `make image` builds it (make test-image does)")
    return IMAGE


def test_the_image_runs_kraft_audit_as_a_user_not_root():
    config = json.loads(podman("image", "inspect", IMAGE).stdout)[0]["Config"]
    assert config["User"] == "1000:1000"
    assert config["Entrypoint"] == ["/usr/local/bin/kraft-audit-entrypoint"]
    done = run("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"kraft-audit {VERSION}"
    # the root filesystem is read-only; the user is not root and cannot become it
    done = podman("run", "--rm", *LOCKED_DOWN, "--entrypoint", "/bin/sh", IMAGE, "-c",
                  "id -u; touch /opt/kraft-audit/x 2>/dev/null && echo wrote-root; touch /tmp/x && echo wrote-tmp")
    assert done.stdout.split() == ["1000", "wrote-tmp"], done.stderr


def test_check_reads_a_real_log_mounted_read_only_like_the_installed_command(tmp_path):
    inside = run("check", "/log", "--json", volumes={REAL_LOG: "/log:ro"})
    host = subprocess.run([str(REPO / ".venv" / "bin" / "kraft-audit"), "check", str(REAL_LOG), "--json"],
                          capture_output=True, text=True)
    assert inside.returncode == host.returncode == 1, inside.stderr  # 1: partitions offline at the end
    assert json.loads(inside.stdout) == json.loads(host.stdout)
    assert json.loads(inside.stdout)["records"]["applied"] == 4929


def test_demo_writes_its_delta_tables_to_a_volume_the_host_reads(tmp_path):
    from deltalake import DeltaTable

    out = writable_by_the_image(tmp_path / "out")
    done = run("demo", "--workdir", "/out", volumes={out: "/out"}, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    tables = out / "tables"
    violations = DeltaTable(str(tables / "violations")).to_pyarrow_table().to_pylist()
    progress = DeltaTable(str(tables / "progress")).to_pyarrow_table().to_pylist()
    assert violations, "the demo's injected bugs are found (it exits 3 when one is missed)"
    # the job in the container read the whole simulated log, and its counts balance
    records = sum(1 for e in read_log_dir(next(out.glob("**/__cluster_metadata-0")))
                  if isinstance(e, MetadataEvent))
    assert sum(p["records"] for p in progress) >= records > 0
    # what was read (log records, side inputs, unreadable input) = applied + duplicates + quarantined
    assert sum(p["applied"] + p["duplicates"] + p["quarantined"] for p in progress) == \
        sum(p["records"] + p["side_inputs"] + p["unreadable"] for p in progress)


def test_the_spark_operators_driver_command_runs_the_job_the_application_names(tmp_path):
    """What a driver pod of the SparkApplication runs: the entrypoint's `driver` with the
    arguments Spark on Kubernetes passes (a properties file, PythonRunner, the job as a
    local:// path inside the image), here with a local master, on a real log."""
    from deltalake import DeltaTable

    log = REPO / "tests" / "fixtures" / "kraft-real" / "subpxl__streamprocessing"
    conf = writable_by_the_image(tmp_path / "conf")
    (conf / "spark.properties").write_text("spark.master=local[2]\nspark.app.name=kraft-audit\n"
                                           "spark.sql.shuffle.partitions=2\n")
    data = writable_by_the_image(tmp_path / "data")
    done = run("driver", "--properties-file", "/etc/spark/spark.properties",
               "--class", "org.apache.spark.deploy.PythonRunner",
               "local:///opt/kraft-audit/jobs/audit_job.py", "--log-dir", "/log", "--once",
               "--set", "metrics.enabled=false",
               volumes={log: "/log:ro", conf: "/etc/spark:ro", data: "/data"}, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    expected = json.loads((log / "EXPECTED.json").read_text())
    state = DeltaTable(str(data / "kraft-audit-run" / "tables" / "partition_state")).to_pyarrow_table()
    got = {(r["topic"], r["partition"]): (r["leader"], r["isr"]) for r in state.to_pylist()}
    assert got == {(p["topic"], p["partition"]): (p["leader"], p["isr"]) for p in expected["partitions"]}


def test_the_executor_command_starts_sparks_kubernetes_executor_that_calls_its_driver():
    """What an executor pod runs: the entrypoint's `executor`, from the variables Spark on
    Kubernetes sets. No driver here: a socket stands in for it and sees the executor call."""
    import socket

    with socket.socket() as driver:
        driver.bind(("127.0.0.1", 0))
        driver.listen()
        driver.settimeout(180)
        port = driver.getsockname()[1]
        env = {"SPARK_EXECUTOR_MEMORY": "512m", "SPARK_EXECUTOR_ID": "1", "SPARK_EXECUTOR_CORES": "1",
               "SPARK_DRIVER_URL": f"spark://CoarseGrainedScheduler@127.0.0.1:{port}",
               "SPARK_APPLICATION_ID": "spark-probe", "SPARK_EXECUTOR_POD_IP": "127.0.0.1",
               "SPARK_RESOURCE_PROFILE_ID": "0", "SPARK_EXECUTOR_POD_NAME": "kraft-audit-exec-1",
               "SPARK_JAVA_OPT_0": "-Dkraft.audit.probe=1"}
        name = f"kraft-audit-executor-{port}"
        proc = subprocess.Popen([*PODMAN, "run", "--rm", "--name", name, "--network", "host", *LOCKED_DOWN,
                                 *[a for k, v in env.items() for a in ("-e", f"{k}={v}")], IMAGE, "executor"],
                                env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            conn, _ = driver.accept()  # the executor asks its driver for the app's configuration
            conn.close()
        finally:
            podman("rm", "--force", "--time", "0", name, check=False)  # it would retry for minutes
            out, _ = proc.communicate(timeout=60)
    assert "KubernetesExecutorBackend: Started daemon" in out, out[-3000:]


def metrics(port: int) -> dict[str, float]:
    """The samples of a /metrics page, scraped from the host: name{labels} -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines() if line and not line.startswith("#")}


def sample(port: int, name: str) -> float | None:
    try:
        found = metrics(port)
    except OSError:
        return None
    return next((v for k, v in found.items() if k == name or k.startswith(name + "{")), None)


def test_ship_in_one_container_and_the_job_in_another_audit_a_real_kafka(tmp_path):
    from deltalake import DeltaTable

    data = writable_by_the_image(tmp_path / "data")
    ship_port, job_port = free_port(), free_port()
    names = [f"kraft-audit-ship-{ship_port}", f"kraft-audit-job-{job_port}"]
    with KafkaCluster(KAFKA_VERSIONS[0], tmp_path / "kafka", brokers=1) as cluster:
        cluster.start()
        create_topic(cluster)
        try:
            # the sidecar: the controller's log dir read-only, /metrics for the host to scrape
            done = run("ship", "--log-dir", "/var/lib/kraft/__cluster_metadata-0",
                       "--bootstrap-servers", cluster.bootstrap, "--topic", TOPIC,
                       "--metrics-host", "127.0.0.1", "--metrics-port", str(ship_port),
                       volumes={cluster.controller.metadata_dir: "/var/lib/kraft:ro"},
                       network="host", name=names[0], detach=True)
            assert done.returncode == 0, done.stderr
            # the job: Spark's Kafka source on the topic, its tables and checkpoint on a volume. The
            # controller writes a NoOp every 500 ms: a trigger interval a batch overruns would leave
            # SIGTERM no batch boundary to stop at (the stop waits for one)
            done = run("run", "--kafka", f"{cluster.bootstrap}/{TOPIC}", "--set", "trigger.interval=10 seconds",
                       "--set", "audit.buckets=2", "--metrics-port", str(job_port),
                       volumes={data: "/data"}, network="host", name=names[1], detach=True)
            assert done.returncode == 0, done.stderr
            cluster.tools.create_topic("orders", partitions=3, replication_factor=1)
            end = max(e.offset for e in read_log_dir(cluster.metadata_log_dir) if isinstance(e, MetadataEvent))

            def audited():
                for name in names:
                    state = podman("inspect", "--format", "{{.State.Status}}", name).stdout.strip()
                    assert state == "running", f"{name} {state}:\n" + podman("logs", name).stderr[-3000:]
                return (sample(job_port, "kraft_audit_last_offset") or -1) >= end
            wait_until("the job in its container to audit the shipped log", audited, 300, 2)
            assert sample(ship_port, "kraft_audit_ship_next_offset") > end
            assert sample(job_port, "kraft_audit_global_under_min_isr_partition_count") is not None

            # SIGTERM to both, as Kubernetes stops a pod: each exits 0 (the job at a batch boundary)
            for name in names:
                podman("stop", "--time", "120", name, timeout=150)
                status = podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
                assert status == "0", f"{name} exited {status}:\n" + podman("logs", name).stderr[-3000:]
        finally:
            podman("rm", "--force", *names, check=False)

    tables = data / "kraft-audit-run" / "tables"
    state = DeltaTable(str(tables / "partition_state")).to_pyarrow_table().to_pylist()
    assert sorted(r["partition"] for r in state if r["topic"] == "orders") == [0, 1, 2]
    brokers = DeltaTable(str(tables / "brokers")).to_pyarrow_table().to_pylist()
    assert [b["broker_id"] for b in brokers] == [1]
