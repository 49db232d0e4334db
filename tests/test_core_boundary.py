"""The functional core (decode, replay, rules, the auditor, side inputs, the simulator)
imports nothing of Spark, Delta, matplotlib or the CLI: it runs single-process in `check`,
the benches and the fast tests. Checked on the source, imports inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "kraft_audit"
# the functional core, and the Spark-free parts that feed it or stand beside it
CORE = ["core", "errors.py", "sideinputs", "sim", "ship/tail.py"]
FORBIDDEN = ("pyspark", "deltalake", "delta", "matplotlib", "kraft_audit.cli", "kraft_audit.spark",
             "kraft_audit.questions", "kraft_audit.timeline", "kraft_audit.testing")


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_the_core_imports_no_spark_delta_matplotlib_or_cli():
    files = [f for name in CORE for f in ([PACKAGE / name] if name.endswith(".py")
                                          else sorted((PACKAGE / name).rglob("*.py")))]
    assert len(files) > 30
    crossing = {f"{f.relative_to(PACKAGE)}: {m}" for f in files for m in imported_modules(f)
                if any(m == bad or m.startswith(bad + ".") for bad in FORBIDDEN)}
    assert crossing == set()


def test_the_product_never_imports_the_test_harness():
    """kraft_audit.testing (real Kafka clusters, crash checks) is for tests, benches and demos."""
    product = [f for f in PACKAGE.rglob("*.py") if "testing" not in f.relative_to(PACKAGE).parts]
    crossing = {f"{f.relative_to(PACKAGE)}: {m}" for f in product for m in imported_modules(f)
                if m == "kraft_audit.testing" or m.startswith("kraft_audit.testing.")}
    assert crossing == set()
