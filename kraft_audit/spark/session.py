"""The SparkSession the auditor runs on, with the settings it needs.

Local runs (tests, demo, `kraft-audit run`) get local[N]; under spark-submit
the master and resources come from the submit command and only the settings
below are added.
"""

from __future__ import annotations

import os
import sys


def prepare_environment() -> None:
    """Point Spark's Python workers at this interpreter (otherwise they run
    whatever `python3` is on PATH, which may lack pandas and this package)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def build_session(master: str | None = "local[2]", app_name: str = "kraft-audit",
                  shuffle_partitions: int = 2, extra_conf: dict[str, str] | None = None):
    """Get or create the session and register the `kraft-log` data source."""
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
    conf.update(extra_conf or {})
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register_sources(spark)
    return spark


def register_sources(spark) -> None:
    from kraft_audit.spark.lines_source import LinesSource
    from kraft_audit.spark.logdir_scan_source import LogDirScanSource
    from kraft_audit.spark.source import KraftLogSource

    spark.dataSource.register(KraftLogSource)
    spark.dataSource.register(LinesSource)
    spark.dataSource.register(LogDirScanSource)
