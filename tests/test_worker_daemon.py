"""kraft_audit.spark.worker_daemon without Spark: which archives leave the workers' path,
and what the daemon's collection between tasks collects (tests/test_spark_session.py runs
it under a real session)."""

from __future__ import annotations

import gc
import os
import types
import zipfile
from pathlib import Path

import pytest

from kraft_audit.spark.worker_daemon import YoungCollections, prepare, without_own_zip


def _package(root: Path, name: str) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")


def _zip(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("pyspark/__init__.py", "")
    return str(path)


@pytest.fixture
def site(tmp_path):
    """A site-packages holding pyspark (with its python/lib zips) and py4j."""
    site = tmp_path / "site"
    _package(site, "pyspark")
    _package(site, "py4j")
    lib = site / "pyspark" / "python" / "lib"
    return site, _zip(lib / "pyspark.zip"), _zip(lib / "py4j-0.10.9.9-src.zip")


def test_the_installed_pysparks_own_zips_leave_the_path(site):
    site, pyspark_zip, py4j_zip = site
    path = ["/cwd", pyspark_zip, py4j_zip, "/other", str(site)]
    assert without_own_zip(path) == ["/cwd", "/other", str(site)]


def test_py4js_zip_stays_without_an_installed_py4j(site):
    site, pyspark_zip, py4j_zip = site
    (site / "py4j" / "__init__.py").unlink()
    (site / "py4j").rmdir()
    assert without_own_zip([pyspark_zip, py4j_zip, str(site)]) == [py4j_zip, str(site)]


def test_another_sparks_zip_stays(site, tmp_path):
    site, _, _ = site
    other = _zip(tmp_path / "spark-dist" / "python" / "lib" / "pyspark.zip")
    assert without_own_zip([other, str(site)]) == [other, str(site)]


def test_the_zip_stays_when_nothing_else_imports_pyspark(tmp_path):
    lone = _zip(tmp_path / "spark" / "python" / "lib" / "pyspark.zip")
    assert without_own_zip([lone, str(tmp_path / "empty")]) == [lone, str(tmp_path / "empty")]


def test_this_venvs_pyspark_zip_is_its_own():
    import pyspark

    zip_path = os.path.join(os.path.dirname(pyspark.__file__), "python", "lib", "pyspark.zip")
    # the pip-installed pyspark the project pins ships it: worker_daemon exists because of it
    assert os.path.exists(zip_path), zip_path
    site = os.path.dirname(os.path.dirname(pyspark.__file__))
    assert without_own_zip([zip_path, site]) == [site]


def test_the_daemons_collection_between_tasks_is_young():
    generations: list[int] = []

    def seen(phase, info):
        if phase == "start":
            generations.append(info["generation"])

    daemon = types.SimpleNamespace(gc=gc)
    prepare(daemon)
    assert isinstance(daemon.gc, YoungCollections)
    gc.callbacks.append(seen)
    try:
        daemon.gc.collect()
        daemon.gc.collect(2)
    finally:
        gc.callbacks.remove(seen)
    assert generations == [1, 1]
    assert daemon.gc.isenabled() == gc.isenabled()  # the rest is gc's


def test_pysparks_daemon_collects_through_its_gc_name():
    """What prepare() relies on: pyspark's daemon calls `gc.collect` through its module's
    `gc` name (if it stops, the workers go back to full passes between tasks)."""
    import pyspark.daemon

    assert "gc" in pyspark.daemon.manager.__code__.co_names
    assert "collect" in pyspark.daemon.manager.__code__.co_names
