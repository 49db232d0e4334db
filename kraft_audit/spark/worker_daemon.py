"""Spark's Python daemon for the job's tasks (`spark.python.daemon.module`, local runs):
pyspark's own daemon (`pyspark.daemon`), importing the installed pyspark, not its
copy in pyspark.zip.

Spark puts `$SPARK_HOME/python/lib/pyspark.zip` first on its workers' path; with
pyspark installed by pip, SPARK_HOME is that installed package and the zip a copy of
its sources without bytecode, so every worker compiled pyspark's modules again (about
0.6 s of CPU a process here). The zip leaves the path when it lies inside the pyspark
package the rest of the path imports (the same files, installed and compiled); a zip
of another Spark (a distribution's SPARK_HOME) stays where Spark put it.

Spark starts the data sources' planners with pyspark's daemon whatever this setting
says: they keep this cost (a few processes a query, at its start).

Nothing but the standard library may be imported before the path is settled: this
module is what the interpreter runs first (`python -m kraft_audit.spark.worker_daemon`,
then pyspark's daemon reads its worker module from argv as it would).
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import PathFinder


def without_own_zip(path: list[str]) -> list[str]:
    """`path` without pyspark's own archives (pyspark.zip, and py4j's source zip when the
    installed py4j is importable) where they lie inside the pyspark package the other
    entries import."""
    zips = [p for p in path if p.endswith(".zip")
            and os.path.basename(os.path.dirname(os.path.dirname(p))) == "python"]
    if not zips:
        return path
    rest = [p for p in path if p not in zips]
    spec = PathFinder.find_spec("pyspark", rest)
    if spec is None or not spec.submodule_search_locations:
        return path
    home = os.path.join(os.path.realpath(list(spec.submodule_search_locations)[0]), "")
    own = {p for p in zips if os.path.realpath(p).startswith(home)}
    if not any(os.path.basename(p) == "pyspark.zip" for p in own):
        return path
    if PathFinder.find_spec("py4j", rest) is None:
        own = {p for p in own if os.path.basename(p) == "pyspark.zip"}
    return [p for p in path if p not in own]


def main() -> None:
    sys.path[:] = without_own_zip(sys.path)
    import pyspark.daemon

    pyspark.daemon.manager()


if __name__ == "__main__":
    main()
