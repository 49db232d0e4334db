"""Bytecode for pyspark.zip: `python -m kraft_audit.spark.pyspark_bytecode` (`make install`
and the container image run it).

Spark puts `$SPARK_HOME/python/lib/pyspark.zip` first on the path of every Python process it
starts: the tasks' workers, and the data sources' planners and the streaming source's runner
(a few a query, started with pyspark's own daemon whatever `spark.python.daemon.module` says).
With pyspark installed by pip that zip is a copy of its sources without bytecode, and an import
from a zip never writes any, so each of those processes compiled pyspark again: about 0.6 s
of CPU each (`import pyspark.daemon, pyspark.worker`: 0.8 s from the zip as shipped, 0.25 s
with bytecode in it). This adds, beside each module's source in the zip, its bytecode as
zipimport looks for it (`name.pyc` next to `name.py`), as checked hash-based pycs: zipimport
compares each with its source's hash, so a pyc that no longer matches its source is never
used. The sources stay; only the zip is rewritten, atomically, and only once.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import zipfile
from importlib._bootstrap_external import _code_to_hash_pyc  # type: ignore[attr-defined]
from pathlib import Path


def installed_zip() -> Path | None:
    """The pyspark.zip inside the installed pyspark package (where pip puts it), or None."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "python" / "lib" / "pyspark.zip"
    return path if path.is_file() else None


def checked_pyc(filename: str, source: bytes) -> bytes:
    """The checked hash-based pyc of a module's source, compiled as zipimport compiles one
    (the same file name in tracebacks, the same line endings)."""
    code = compile(source.replace(b"\r\n", b"\n").replace(b"\r", b"\n"), filename, "exec",
                   dont_inherit=True)
    return bytes(_code_to_hash_pyc(code, importlib.util.source_hash(source), checked=True))


def add_bytecode(path: Path) -> int:
    """Rewrite the zip at `path` with a checked hash-based pyc beside each .py that has none;
    the number of pycs added (0: nothing to do, the zip left as it was)."""
    with zipfile.ZipFile(path) as zin:
        names = set(zin.namelist())
        missing = [n for n in names if n.endswith(".py") and n + "c" not in names]
        if not missing:
            return 0
        fd, tmp = tempfile.mkstemp(prefix=".pyspark-", suffix=".zip", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as out, \
                    zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
                for info in zin.infolist():
                    data = zin.read(info)
                    zout.writestr(info, data)
                    if info.filename.endswith(".py") and info.filename + "c" not in names:
                        entry = zipfile.ZipInfo(info.filename + "c", info.date_time)
                        entry.compress_type = zipfile.ZIP_DEFLATED
                        zout.writestr(entry, checked_pyc(os.path.join(path, info.filename), data))
            os.chmod(tmp, path.stat().st_mode & 0o777)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return len(missing)


def main() -> int:
    path = installed_zip()
    if path is None:  # a pyspark without the zip (a source checkout): nothing to add to
        print("pyspark_bytecode: the installed pyspark has no python/lib/pyspark.zip",
              file=sys.stderr)
        return 0
    added = add_bytecode(path)
    print(f"pyspark_bytecode: {added} modules compiled into {path.name}" if added
          else f"pyspark_bytecode: {path.name} already holds its bytecode")
    return 0


if __name__ == "__main__":
    sys.exit(main())
