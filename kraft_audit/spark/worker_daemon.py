"""Spark's Python daemon for the job's tasks (`spark.python.daemon.module`, local runs):
pyspark's own daemon (`pyspark.daemon`), started with two changes that cut what every
worker costs and change nothing it computes.

1. The installed pyspark, not its copy in pyspark.zip. Spark puts
   `$SPARK_HOME/python/lib/pyspark.zip` first on its workers' path; with pyspark
   installed by pip, SPARK_HOME is that installed package and the zip a copy of its
   sources without bytecode, so every worker compiled pyspark's modules again (about
   0.6 s of CPU a process here). The zip leaves the path when it lies inside the
   pyspark package the rest of the path imports (the same files, installed and
   compiled); a zip of another Spark (a distribution's SPARK_HOME) stays where Spark
   put it.
2. After each task a reused worker collects the young generations, not the whole
   heap. pyspark's daemon calls `gc.collect()` after every task a worker runs; in this
   job a worker keeps its buckets' live auditors (millions of objects at 100k
   partitions), so each of those full passes walked them all (0.1-0.4 s each, most of
   a worker's 8-12 full passes in a 400k-record backfill) and found next to nothing:
   what a task leaves is young, and the collector's own full passes still run when
   the old generation has grown.

Spark starts the data sources' planners with pyspark's daemon whatever this setting
says (a few processes a query, at its start): they import pyspark from the zip, with the
bytecode `make install` adds to it (pyspark_bytecode.py), and keep pyspark's collections.

Nothing but the standard library may be imported before the path is settled: this
module is what the interpreter runs first (`python -m kraft_audit.spark.worker_daemon`,
then pyspark's daemon reads its worker module from argv as it would).
"""

from __future__ import annotations

import gc
import os
import sys
from importlib.machinery import PathFinder
from typing import Any


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


class YoungCollections:
    """Stands for the `gc` module in pyspark's daemon: its `collect()` between two tasks
    of a reused worker collects generations 0 and 1 only; the rest is `gc`'s."""

    def collect(self, generation: int = 1) -> int:
        return gc.collect(min(generation, 1))

    def __getattr__(self, name: str) -> Any:
        return getattr(gc, name)


def prepare(daemon_module) -> None:
    """pyspark's daemon module, its collections between tasks made young ones."""
    daemon_module.gc = YoungCollections()


def main() -> None:
    sys.path[:] = without_own_zip(sys.path)
    import pyspark.daemon

    prepare(pyspark.daemon)
    pyspark.daemon.manager()


if __name__ == "__main__":
    main()
