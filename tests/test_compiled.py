"""The compiled core (`make compiled`: mypyc, deploy/compiled/build.py) against the same
sources run as Python: `kraft-audit check --json` must print the same bytes, exit with the
same code and say the same on stderr, on every real log in tests/fixtures and on a generated
worst case (ISR changes in batches of 100, a fault every 1,000) and NoOp-heavy log. The pure
run imports a copy of the package without the extension modules; each run first proves which
kind of module it imported. Run by `make test-compiled`, which builds first: without the
build these tests fail (they are not part of `make test`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kraft_audit
from kraft_audit.testing.mutate import _log_name, fixture_logs

pytestmark = pytest.mark.compiled

PACKAGE = Path(kraft_audit.__file__).parent
BUILD = Path(__file__).resolve().parents[1] / "deploy" / "compiled" / "build.py"
# imports the core, checks it is the kind asked for, then runs the CLI as the script does
RUN = """
import importlib.machinery, sys
import kraft_audit.core.event_loop as m
compiled = m.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
if compiled != (sys.argv[1] == "compiled"):
    print(f"wanted {sys.argv[1]}, imported {m.__file__}", file=sys.stderr)
    sys.exit(97)
sys.argv = ["kraft-audit", *sys.argv[2:]]
from kraft_audit.cli.main import entry
entry()
"""

# audits a log's first or second half (from a stored auditor) and writes the stored form
STATE = """
import sys
from pathlib import Path
from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.logdir import read_log_dir
from kraft_audit.core.rules import load_catalog
log, stored, out = sys.argv[2:5]
events = list(read_log_dir(Path(log)))
cut = events[len(events) // 2].batch_base_offset  # on a batch boundary
if stored == "-":
    auditor = Auditor(load_catalog())
    auditor.process([e for e in events if e.offset < cut])
else:
    auditor = Auditor.from_bytes(Path(stored).read_bytes(), load_catalog())
    auditor.process([e for e in events if e.offset >= cut])
Path(out).write_bytes(auditor.to_bytes())
"""
CHECK_KIND = RUN.split("sys.argv = ")[0]


def compiled_modules() -> list[str]:
    """The MODULES the build lists that have an extension module beside them."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("compiled_build", BUILD)
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return [str(p.relative_to(PACKAGE.parent)) for p in build.built()]


@pytest.fixture(scope="module")
def pure_copy(tmp_path_factory) -> Path:
    """The package's sources without its extension modules, importable from here."""
    assert len(compiled_modules()) > 1, "not built: run `make compiled` (or make test-compiled)"
    root = tmp_path_factory.mktemp("pure")
    shutil.copytree(PACKAGE, root / "kraft_audit",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    return root


def run(kind: str, args: list[str], pure_root: Path, script: str = RUN) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONHASHSEED"] = "0"  # the same in both: a difference is the build's, not the seed's
    if kind == "pure":
        env["PYTHONPATH"] = str(pure_root)
    # `-c` puts the working directory first on sys.path: one without the package
    return subprocess.run([sys.executable, "-c", script, kind, *args], capture_output=True,
                          env=env, cwd=pure_root.parent, timeout=300)


def assert_same_bytes(args: list[str], pure_root: Path) -> bytes:
    pure = run("pure", args, pure_root)
    compiled = run("compiled", args, pure_root)
    for done in (pure, compiled):
        assert done.returncode in (0, 1), done.stderr.decode()[-2000:]
    assert compiled.stdout == pure.stdout, f"check {args}: stdout differs"
    assert (compiled.returncode, compiled.stderr) == (pure.returncode, pure.stderr)
    return pure.stdout


def test_every_listed_module_is_built():
    import importlib

    built = set(compiled_modules())
    for name in ("kraft_audit.core.event_loop", "kraft_audit.core.replay.partition",
                 "kraft_audit.core.rules.kip966"):
        module = importlib.import_module(name)
        assert str(Path(module.__file__).relative_to(PACKAGE.parent)) in built


@pytest.mark.parametrize("log", fixture_logs(), ids=_log_name)
def test_real_logs_give_the_same_bytes(log, pure_copy):
    out = assert_same_bytes(["check", "--json", str(log)], pure_copy)
    assert out.startswith(b"{") and b'"applied"' in out  # a report, not an empty output


@pytest.mark.parametrize("shape", ["worst case", "NoOp-heavy"])
def test_generated_logs_give_the_same_bytes(shape, pure_copy, tmp_path):
    from kraft_audit.testing.bulk import BulkLog

    if shape == "worst case":  # bench/bench_side_by_side.py's logs at a fifth of their size
        log = BulkLog(tmp_path / "log", 20_000, fault_every=1000)
        log.bootstrap(), log.changes(60_000, per_batch=100)
    else:
        log = BulkLog(tmp_path / "log", 2_000)
        log.bootstrap(), log.idle(78_000)
    log.close()
    assert_same_bytes(["check", "--json", str(tmp_path / "log")], pure_copy)


def test_the_stored_state_is_the_same_bytes_and_restores_across_the_two(pure_copy, tmp_path):
    """The stored form (what the Spark job keeps per bucket) of a half-audited log: the same
    bytes from both; each restores the other's and audits the rest to the same bytes again."""
    from kraft_audit.testing.bulk import BulkLog

    log = BulkLog(tmp_path / "log", 5_000, fault_every=500)
    log.bootstrap(), log.changes(20_000, per_batch=50)
    log.close()
    script = CHECK_KIND + STATE

    def stored(kind: str, start: str, name: str) -> bytes:
        done = run(kind, [str(tmp_path / "log"), start, str(tmp_path / name)], pure_copy, script)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        return (tmp_path / name).read_bytes()

    half = stored("pure", "-", "pure-half")
    assert stored("compiled", "-", "compiled-half") == half
    rest = stored("compiled", str(tmp_path / "pure-half"), "compiled-rest")
    assert stored("pure", str(tmp_path / "compiled-half"), "pure-rest") == rest
    assert rest != half
