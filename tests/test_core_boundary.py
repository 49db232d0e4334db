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


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    """kraft_audit module -> the kraft_audit modules it imports, at module level or inside
    functions (`from package import module` names the module); imports only for type
    checkers (`if TYPE_CHECKING:`) never run and are left out."""
    files = {module_name(f): f for f in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        tree = ast.parse(path.read_text(), str(path))
        typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                       for stmt in block.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the package, one level up per extra dot
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in node.names:
                    targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base)
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def test_no_import_cycle_in_kraft_audit():
    graph = import_graph()
    assert len(graph) > 50 and "kraft_audit.core.audit" in graph
    cycles, done, path = [], set(), []

    def visit(name: str) -> None:
        path.append(name)
        for target in sorted(graph[name]):
            if target in path:
                cycles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in done:
                visit(target)
        path.pop()
        done.add(name)

    for name in sorted(graph):
        if name not in done:
            visit(name)
    assert cycles == []
