"""The SparkSession the auditor runs on, with the settings it needs.

Local runs (tests, demo, `kraft-audit run`) get local[N]; under spark-submit
the master and resources come from the submit command and only the settings
below are added.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import threading
from pathlib import Path
from kraft_audit.errors import DeltaJarsMissing  # noqa: F401 (exported here too)

# The Delta Lake Spark connector (backend "delta-spark"). Maven Central serves
# delta-spark_4.2_2.13 4.4.0 (no 4.4.1 jar, though PyPI has a 4.4.1 delta-spark).
DELTA_VERSION = "4.4.0"
DELTA_SPARK_PACKAGE = f"io.delta:delta-spark_4.2_2.13:{DELTA_VERSION}"
# Where `make delta-spark` puts the connector's jars (deploy/delta-spark/pom.xml);
# DELTA_SPARK_JARS_DIR overrides it for an installed package.
DELTA_JARS_DIR = Path(__file__).resolve().parents[2] / ".cache" / "delta-spark" / DELTA_VERSION
DELTA_SESSION_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Delta's default of 50 snapshot partitions makes every small-table read 50 tasks.
    "spark.databricks.delta.snapshotPartitions": "2",
    # progress.clusters holds structs with a NOT NULL cluster_id, as delta-rs
    # writes it; Spark's connector refuses NOT NULL inside arrays unless told
    # to leave it unenforced (tables it creates then mark the field nullable).
    "spark.databricks.delta.constraints.allowUnenforcedNotNull.enabled": "true",
}


# Spark's Python daemon for local runs (kraft_audit/spark/worker_daemon.py)
WORKER_DAEMON = "kraft_audit.spark.worker_daemon"

# The driver JVM's log4j2 configuration when the JVM is started here (data/log4j2.properties).
LOG4J2_PROPERTIES = Path(__file__).resolve().parents[1] / "data" / "log4j2.properties"
# The JIT of a JVM started here for a bounded run (one that ends once it has caught up: run
# --once, a test session): its first tier only. Spark's start and a backfill keep the
# optimising compiler busy for most of the JVM's CPU (run --once: 28 -> 18 s on a 400k-record
# log, 18 -> 11 s on a 4k-record one, the micro-batches no slower; docs/ARCHITECTURE.md). A
# job that keeps running keeps the optimising compiler: its code runs for days.
JIT_OPTIONS = "-XX:TieredStopAtLevel=1"
# What a JVM started here prints before any logging is set up: its module system's
# notice of the vector module Spark's launcher always adds. Dropped from its stderr.
JVM_START_NOISE = ("WARNING: Using incubator modules: jdk.incubator.vector",)


# Spark's Kafka source (`sources.kafka`), from `make spark-kafka`; SPARK_KAFKA_JARS_DIR overrides.
SPARK_KAFKA_VERSION = "4.2.0"
SPARK_KAFKA_PACKAGE = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{SPARK_KAFKA_VERSION}"
KAFKA_JARS_DIR = Path(__file__).resolve().parents[2] / ".cache" / "spark-kafka" / SPARK_KAFKA_VERSION


def resolved_jars(env: str, default: Path, main_jar: str, needed_by: str, make: str,
                  package: str) -> list[str]:
    """The jars `make <make>` resolved from Maven Central (or the folder `env` names);
    DeltaJarsMissing, saying how to get them, when `main_jar*` is not among them."""
    folder = Path(os.environ.get(env) or default)
    jars = sorted(glob.glob(str(folder / "*.jar")))
    if not any(Path(j).name.startswith(main_jar) for j in jars):
        raise DeltaJarsMissing(f"{needed_by} needs {package} in {folder}: run make {make} (or set "
                               f"{env} to a folder holding it and its dependencies)")
    return jars


def spark_kafka_jars() -> list[str]:
    """Spark's Kafka source and its client (`make spark-kafka`)."""
    return resolved_jars("SPARK_KAFKA_JARS_DIR", KAFKA_JARS_DIR, "spark-sql-kafka", "sources.kafka",
                         "spark-kafka", SPARK_KAFKA_PACKAGE)


def delta_spark_jars() -> list[str]:
    """The Delta Lake connector's jars (`make delta-spark`)."""
    return resolved_jars("DELTA_SPARK_JARS_DIR", DELTA_JARS_DIR, "delta-spark_",
                         'backend "delta-spark"', "delta-spark", DELTA_SPARK_PACKAGE)


def prepare_environment() -> None:
    """Point Spark's Python workers at this interpreter (otherwise they run
    whatever `python3` is on PATH, which may lack pandas and this package)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def build_session(master: str | None = "local[2]", app_name: str = "kraft-audit",
                  shuffle_partitions: int = 2, extra_conf: dict[str, str] | None = None,
                  delta_spark: bool = False, kafka_source: bool = False, bounded: bool = False):
    """Get or create the session and register the `kraft-log` data source.
    `delta_spark`: with the Delta connector (backend "delta-spark"); `kafka_source`: with
    Spark's Kafka source (`sources.kafka`). Under spark-submit (no master) the submit
    command may bring them itself (--packages), so local jars are added only when present.
    `bounded`: the process ends once it has caught up (JIT_OPTIONS for a JVM started here)."""
    prepare_environment()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    conf = {
        # 200 shuffle partitions would mean 200 state-store tasks per batch on
        # a few cores; the value is recorded in each checkpoint on first run.
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # Keep fewer old batch files in the checkpoint (default 100).
        "spark.sql.streaming.minBatchesToRetain": "20",
    }
    if master and master.startswith("local") and os.environ.get("PYSPARK_PYTHON") == sys.executable:
        # The tasks' Python workers cheaper to start and to reuse (worker_daemon.py): only
        # where they run this interpreter, which imports this package (under spark-submit
        # the executors may get it only with their first task, by --py-files).
        conf["spark.python.daemon.module"] = WORKER_DAEMON
    jars: list[str] = []
    if delta_spark:
        try:
            jars += delta_spark_jars()
        except DeltaJarsMissing:
            if master:
                raise
        conf.update(DELTA_SESSION_CONF)
    if kafka_source:
        try:
            jars += spark_kafka_jars()
        except DeltaJarsMissing:
            if master:
                raise
    if jars:
        conf["spark.jars"] = ",".join(jars)
    if master:  # a JVM started here: quiet from its first line (spark-submit brings its own)
        conf["spark.driver.extraJavaOptions"] = " ".join(
            [f"-Dlog4j2.configurationFile={LOG4J2_PROPERTIES}", *([JIT_OPTIONS] if bounded else [])])
    conf.update(extra_conf or {})
    for key, value in conf.items():
        builder = builder.config(key, value)
    _launch_jvm_in_own_session({**conf, "spark.app.name": app_name,
                                **({"spark.master": master} if master else {})})
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register_sources(spark)
    return spark


def _launch_jvm_in_own_session(conf: dict[str, str]) -> None:
    """Start the driver JVM as PySpark would, but in a session (and process group)
    of its own, so that a signal to this process's group (`kill -TERM -PGID`, a
    shell's `kill %1`, a terminal's Ctrl-C) reaches only this Python process,
    which stops the query between micro-batches. In the same group, a SIGTERM
    would end the JVM (and the query) under the running batch; PySpark itself
    only makes the JVM ignore SIGINT. The JVM still ends with this process (it
    exits when its stdin closes). Not under spark-submit, where the JVM is
    already running (deploy/spark-submit.sh keeps group signals away from it)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    spark_conf = SparkConf(loadDefaults=False)
    for key, value in conf.items():
        spark_conf.set(key, value)
    with SparkContext._lock:
        if SparkContext._gateway is None:
            SparkContext._gateway = launch_gateway(spark_conf, popen_kwargs={
                "start_new_session": True, "stderr": subprocess.PIPE})
            SparkContext._jvm = SparkContext._gateway.jvm
            proc = SparkContext._gateway.proc
            threading.Thread(target=_forward_stderr, args=(proc.stderr,), daemon=True,
                             name="jvm-stderr").start()


def _forward_stderr(stream) -> None:
    """The JVM's stderr to ours, line by line, but for its start-up notices (JVM_START_NOISE):
    its errors and log lines still show."""
    for line in iter(stream.readline, b""):
        if not line.rstrip().decode(errors="replace").startswith(JVM_START_NOISE):
            try:
                os.write(2, line)  # the descriptor the JVM would have written to itself
            except OSError:  # our stderr is gone: keep draining the JVM's
                pass


def register_sources(spark) -> None:
    from kraft_audit.spark.lines_source import LinesSource
    from kraft_audit.spark.logdir_scan_source import LogDirScanSource
    from kraft_audit.spark.source import KraftLogSource

    spark.dataSource.register(KraftLogSource)
    spark.dataSource.register(LinesSource)
    spark.dataSource.register(LogDirScanSource)
