"""kraft_audit.spark.pyspark_bytecode: bytecode added to pyspark.zip, used by zipimport,
never when it no longer matches its source (`make install` runs it on the venv's pyspark)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from kraft_audit.spark.pyspark_bytecode import add_bytecode, installed_zip

# Imports pyspark's daemon and worker from the zip on argv[1], counting the modules zipimport
# had to compile from source, and says where pyspark came from.
_IMPORT = """
import sys, zipimport
compiled = []
compile_source = zipimport._compile_source
zipimport._compile_source = lambda path, src: compiled.append(path) or compile_source(path, src)
sys.path.insert(0, sys.argv[1])
import pyspark.daemon, pyspark.worker
print(len(compiled), pyspark.__file__)
"""


def _sources_only(src: Path, dst: Path) -> Path:
    """A copy of the zip as pip ships it: sources and data, no bytecode."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            if not info.filename.endswith(".pyc"):
                zout.writestr(info, zin.read(info))
    return dst


def _imported(zip_path: Path) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-c", _IMPORT, str(zip_path)], capture_output=True,
                          text=True, check=True)
    compiled, where = done.stdout.split()
    return int(compiled), where


def test_pyspark_from_the_zip_imports_its_bytecode_once_added(tmp_path):
    shipped = installed_zip()
    assert shipped is not None, "the pinned pip pyspark ships python/lib/pyspark.zip"
    zip_path = _sources_only(shipped, tmp_path / "pyspark.zip")
    compiled, where = _imported(zip_path)
    assert compiled > 50 and where.startswith(str(zip_path))  # as pip ships it: compiled each time

    with zipfile.ZipFile(zip_path) as z:
        sources = {n: z.read(n) for n in z.namelist() if n.endswith(".py")}
    assert add_bytecode(zip_path) == len(sources)
    with zipfile.ZipFile(zip_path) as z:
        assert {n + "c" for n in sources} <= set(z.namelist())
        assert all(z.read(n) == source for n, source in sources.items())  # the sources stay
    compiled, where = _imported(zip_path)
    assert compiled == 0 and where.startswith(str(zip_path))

    before = zip_path.read_bytes()
    assert add_bytecode(zip_path) == 0  # once only: a zip holding its bytecode is left alone
    assert zip_path.read_bytes() == before


def test_bytecode_that_no_longer_matches_its_source_is_not_used(tmp_path):
    zip_path = tmp_path / "m.zip"
    with zipfile.ZipFile(zip_path, "w") as z:
        z.writestr("m.py", "X = 1\n")
    assert add_bytecode(zip_path) == 1
    with zipfile.ZipFile(zip_path) as z:
        stale_pyc = z.read("m.pyc")
    with zipfile.ZipFile(zip_path, "w") as z:  # the source edited, the old bytecode kept
        z.writestr("m.py", "X = 2\n")
        z.writestr("m.pyc", stale_pyc)
    done = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                           "import m; print(m.X)", str(zip_path)],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "2"


def test_the_zip_keeps_its_file_mode(tmp_path):
    zip_path = tmp_path / "m.zip"
    with zipfile.ZipFile(zip_path, "w") as z:
        z.writestr("m.py", "X = 1\n")
    zip_path.chmod(0o644)
    add_bytecode(zip_path)
    assert zip_path.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["m.zip"]  # no temporary file left
