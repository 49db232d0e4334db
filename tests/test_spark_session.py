"""The driver JVM kraft-audit starts says nothing at start-up (Spark's log4j notices,
NativeCodeLoader, the JVM's incubator-module notice), yet its errors still show."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark

NOISE = ("Using incubator modules", "NativeCodeLoader", "log4j profile", "Setting default log level",
         "sc.setLogLevel")

SCRIPT = """
from kraft_audit.spark.session import build_session
spark = build_session("local[1]")
assert spark.range(5).count() == 5
spark._jvm.org.apache.logging.log4j.LogManager.getLogger("kraft.audit.test").error("an error of the JVM")
spark._jvm.org.apache.logging.log4j.LogManager.getLogger("kraft.audit.test").warn("a warning of the JVM")
spark.stop()
print("done")
"""


def test_a_session_starts_quietly_and_its_errors_still_show():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
    assert not [line for line in done.stderr.splitlines() if any(n in line for n in NOISE)], done.stderr
    assert "ERROR test: an error of the JVM" in done.stderr
    assert "a warning of the JVM" not in done.stderr  # ERROR, as the session always ran once up


def test_the_tasks_workers_import_the_installed_pyspark_and_collect_young_between_tasks(spark):
    """The session's tasks run in workers forked by kraft_audit.spark.worker_daemon: pyspark
    comes from the installed package, not from pyspark.zip, and the daemon's collection
    between two tasks of a worker is a young one."""
    def probe(batches):
        import sys

        import pandas as pd
        import pyspark

        daemon = sys.modules.get("pyspark.daemon")
        for _ in batches:
            yield pd.DataFrame({"pyspark": [pyspark.__file__], "daemon": [sys.argv[0]],
                                "collector": [type(getattr(daemon, "gc", None)).__name__]})

    for _ in range(2):  # the second on reused workers
        rows = spark.range(4).repartition(2).mapInPandas(
            probe, "pyspark string, daemon string, collector string").collect()
        assert rows and all(".zip" not in r.pyspark for r in rows), rows
        assert all(r.daemon.endswith("worker_daemon.py") for r in rows), rows
        assert {r.collector for r in rows} == {"YoungCollections"}


def test_the_jvm_of_a_bounded_run_compiles_with_the_first_tier_only(spark):
    """The tests' session is bounded (it ends with them), as run --once's is."""
    from kraft_audit.spark.session import JIT_OPTIONS

    runtime = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert JIT_OPTIONS in list(runtime.getInputArguments())
