"""SIGTERM to a running auditor: `kraft-audit run` and deploy/spark-submit.sh stop the
query at a micro-batch boundary, close /metrics, exit 0 with one line on stderr, and
leave no process behind; the tables stay consistent (a restart continues without
writing anything twice)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[1]
KRAFT_AUDIT = Path(sys.executable).parent / "kraft-audit"


@pytest.fixture(scope="module")
def log(simulated_log):
    return simulated_log("unclean-shutdown-elr", seed=1, faults=[("leader-not-in-isr", 2)])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    """Nothing listens there and a new /metrics server can bind it (with SO_REUSEADDR, as
    prometheus_client's does: our scrapes leave the port's connections in TIME_WAIT)."""
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", port)) == 0:
            return False
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError:
            return False
        return True


def child_env(**extra) -> dict:
    """This checkout first on the child's path (the entry point may belong to another
    editable install); Spark on loopback; workers run this interpreter."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable, **extra}


def processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command name) of every live process (from /proc)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()  # state, ppid, ...
        if fields[0] != "Z":
            found[int(stat.parent.name)] = (int(fields[1]), text[text.index("(") + 1:text.rindex(")")])
    return found


def descendants(pid: int) -> dict[int, str]:
    """The processes under `pid` now: pid -> command name (the JVM, its Python workers)."""
    table = processes()
    out: dict[int, str] = {}
    parents = {pid}
    while True:
        more = {p: name for p, (ppid, name) in table.items() if ppid in parents and p not in out}
        if not more:
            return out
        out.update(more)
        parents = set(more)


def still_running(seen: dict[int, str], timeout: float = 10) -> dict[int, str]:
    """Which of `seen` are still alive after up to `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        table = processes()
        left = {p: name for p, name in seen.items() if p in table and table[p][1] == name}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def kill_all(seen: dict[int, str]) -> None:
    for pid in still_running(seen, timeout=0):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def progress_batches(tables: Path) -> list[int]:
    from kraft_audit.questions import read_rows

    try:
        return [r["batch_id"] for r in read_rows(str(tables), "progress", ["batch_id"])]
    except Exception:  # noqa: BLE001 - not written yet, or a commit in flight
        return []


def wait_streaming(process: subprocess.Popen, port: int, tables: Path, timeout: float = 240) -> None:
    """Until /metrics answers and a micro-batch is in the progress table."""
    deadline = time.monotonic() + timeout
    served = False
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1][-3000:]
        if not served:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read()
                served = True
            except OSError:
                pass
        if served and progress_batches(tables):
            return
        time.sleep(0.3)
    raise AssertionError("the run did not serve /metrics and write a micro-batch in time")


def assert_consistent(log: Path, tables: Path, checkpoint: Path) -> None:
    """Every batch in the progress table is committed in the checkpoint; after a restart
    with --once, no batch and no violation is there twice."""
    committed = {int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit()}
    batches = progress_batches(tables)
    assert batches and set(batches) <= committed, (batches, committed)
    restart = subprocess.run(
        [str(KRAFT_AUDIT), "run", "--once", "--no-metrics", "--checkpoint", str(checkpoint),
         "--tables", str(tables), "--log-dir", str(log)],
        env=child_env(), capture_output=True, text=True, timeout=120, check=False)
    assert restart.returncode == 0, restart.stderr[-3000:]
    from kraft_audit.questions import read_rows

    batches = progress_batches(tables)
    assert len(batches) == len(set(batches))
    ids = [r["violation_id"] for r in read_rows(str(tables), "violations", ["violation_id"])]
    assert ids and len(ids) == len(set(ids))


def stop_with(process: subprocess.Popen, sig: int | None, seen: dict[int, str],
              timeout: float = 45) -> tuple[int, str, str]:
    """Send `sig` (None: already sent) and wait for the exit: (code, stdout, stderr).
    Past `timeout`, kill it and `seen` (which may hold its pipes open)."""
    if sig is not None:
        process.send_signal(sig)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        exited = process.poll()  # not None: it exited, but what it started holds its output
        left = still_running(seen, 0)
        process.kill()
        kill_all(seen)
        _out, err = process.communicate(timeout=30)
        raise AssertionError(f"not done {timeout}s after the signal (exit status {exited}, "
                             f"processes left: {left}): "
                             f"{err[-3000:]}")
    return process.returncode, out, err


# All three in `make test-variants`, for make test's budget: make test sends SIGTERM to the
# process in the back-to-back test below (with the same asserts) and a group's SIGINT
# through deploy/spark-submit.sh.
@pytest.mark.parametrize("sig, group", [
    pytest.param(signal.SIGTERM, False, marks=pytest.mark.variants),
    pytest.param(signal.SIGINT, True, marks=pytest.mark.variants),
    pytest.param(signal.SIGTERM, True, marks=pytest.mark.variants)],
    ids=["SIGTERM", "SIGINT-to-its-group", "SIGTERM-to-its-group"])
def test_run_stops_at_a_batch_boundary_on_a_signal(tmp_path, log, sig, group):
    """To the process (kill PID, Kubernetes, docker stop) or to its whole process group
    (a terminal's Ctrl-C, `kill %1`, `kill -TERM -PGID`): the JVM runs in a session of
    its own, so the group's signal reaches the Python driver only."""
    port = free_port()
    checkpoint, tables = tmp_path / "cp", tmp_path / "tables"
    process = subprocess.Popen(
        [str(KRAFT_AUDIT), "run", "--log-dir", str(log), "--metrics-port", str(port),
         "--checkpoint", str(checkpoint), "--tables", str(tables), "--trigger", "1 second",
         "--max-records-per-trigger", "40"],
        env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    seen: dict[int, str] = {}
    try:
        wait_streaming(process, port, tables)
        seen = descendants(process.pid)
        assert "java" in seen.values(), seen
        if group:
            os.killpg(process.pid, sig)
        code, _out, err = stop_with(process, None if group else sig, seen)
        left = still_running(seen)
    finally:
        kill_all(seen)
        if process.poll() is None:
            process.kill()
    assert_stopped_once(code, err, sig)
    assert left == {}, left  # the JVM and its Python workers ended with the driver
    assert port_is_free(port)
    assert_consistent(log, tables, checkpoint)


def assert_stopped_once(code: int, err: str, sig: int) -> None:
    """Exit 0 with one line on stderr that names the signal, and no traceback."""
    assert code == 0, err[-3000:]
    lines = [line for line in err.splitlines() if line.startswith("kraft-audit run:")]
    assert len(lines) == 1 and lines[0].startswith(
        f"kraft-audit run: stopped on {signal.Signals(sig).name} at a micro-batch boundary "
        "(last committed batch "), err
    assert "Traceback" not in err


def pyspark_submit() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-submit"


@pytest.mark.parametrize("sig, group", [
    pytest.param(signal.SIGTERM, False, marks=pytest.mark.variants), (signal.SIGINT, True)],
    ids=["SIGTERM", "SIGINT-to-its-group"])
def test_spark_submit_script_stops_the_driver_and_its_jvm_on_a_signal(tmp_path, log, sig, group):
    """deploy/spark-submit.sh forwards the signal to the Python driver (a terminal's Ctrl-C
    reaches the script only: spark-submit runs in a process group of its own) and exits
    with spark-submit's status once the driver, the JVM and its workers are gone."""
    port = free_port()
    checkpoint, tables = tmp_path / "cp", tmp_path / "tables"
    env = child_env(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        SPARK_SUBMIT=str(pyspark_submit()), SPARK_MASTER="local[2]",
        SPARK_LOCAL_DIRS=str(tmp_path / "local"),
        KRAFT_AUDIT_CHECKPOINT=str(checkpoint), KRAFT_AUDIT_TABLES=str(tables),
        KRAFT_AUDIT_METRICS_PORT=str(port))
    process = subprocess.Popen(
        [str(REPO / "deploy" / "spark-submit.sh"), "--log-dir", str(log), "--trigger",
         "1 second", "--max-records-per-trigger", "40"],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    seen: dict[int, str] = {}
    try:
        wait_streaming(process, port, tables)
        seen = descendants(process.pid)  # spark-submit's JVM, the Python driver, its workers
        assert "java" in seen.values() and any(n.startswith("python") for n in seen.values()), seen
        if group:
            os.killpg(process.pid, sig)
        code, out, err = stop_with(process, None if group else sig, seen)
        left = still_running(seen)
    finally:
        kill_all(seen)
        if process.poll() is None:
            process.kill()
    assert code == 0, (out + err)[-3000:]
    assert left == {}, left
    # spark-submit's PythonRunner sends the Python driver's stderr to its own stdout
    lines = [line for line in (out + err).splitlines() if line.startswith("audit_job.py:")]
    assert len(lines) == 1 and lines[0].startswith(
        f"audit_job.py: stopped on {signal.Signals(sig).name} at a micro-batch boundary"), \
        (out + err)[-3000:]
    assert "Traceback" not in out + err
    assert port_is_free(port)
    assert_consistent(log, tables, checkpoint)


def test_spark_submit_script_with_its_metrics_port_taken_is_a_one_line_usage_error(tmp_path, log):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = child_env(
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            SPARK_SUBMIT=str(pyspark_submit()), SPARK_MASTER="local[1]",
            SPARK_LOCAL_DIRS=str(tmp_path / "local"),
            KRAFT_AUDIT_CHECKPOINT=str(tmp_path / "cp"), KRAFT_AUDIT_TABLES=str(tmp_path / "t"),
            KRAFT_AUDIT_METRICS_PORT=str(port))
        done = subprocess.run([str(REPO / "deploy" / "spark-submit.sh"), "--log-dir", str(log),
                               "--once"], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=120, start_new_session=True, check=False)
    assert done.returncode == 2, done.stderr[-3000:]
    both = done.stdout + done.stderr  # the driver's stderr comes out on spark-submit's stdout
    errors = [line for line in both.splitlines() if line.startswith("audit_job.py:")]
    assert errors == [(f"audit_job.py: cannot serve /metrics on 127.0.0.1:{port}: Address "
                       "already in use (another run holds it? choose metrics.port, "
                       "--metrics-port, or 0 for any free port)")]
    assert "Traceback" not in both
    assert not (tmp_path / "cp").exists()


@pytest.fixture(scope="module")
def backlog(simulated_log):
    # 1,110 records: ~28 micro-batches of 40; the fault makes violations to count
    return simulated_log("chaos", seed=1, faults=[("leader-not-in-isr", 2)])


def progress_rows(tables: Path) -> list[dict]:
    from kraft_audit.questions import read_rows

    try:
        return sorted(read_rows(str(tables), "progress", ["batch_id", "started_ms", "duration_seconds"]),
                      key=lambda r: r["batch_id"])
    except Exception:  # noqa: BLE001 - not written yet, or a commit in flight
        return []


# What a stop adds to the running micro-batch: the trigger loop's end, query.stop(), the
# run's summary (it counts the tables' rows), /metrics closed and the JVM's exit.
STOP_MARGIN_S = 10


def test_sigterm_with_back_to_back_micro_batches_ends_after_the_running_one(tmp_path, backlog):
    """A backlog read 40 records a micro-batch with a 100 ms trigger: each batch starts as
    the last one ends. SIGTERM must trigger no new batch: the process exits 0 with one line
    on stderr within the longest micro-batch seen plus STOP_MARGIN_S, leaving no process and
    /metrics' port free, the checkpoint has no batch left to replay (at most a batch that was
    still being planned, which wrote nothing), and the backlog is not read to its end. A
    restart continues from there and writes nothing twice."""
    port = free_port()
    checkpoint, tables = tmp_path / "cp", tmp_path / "tables"
    process = subprocess.Popen(
        [str(KRAFT_AUDIT), "run", "--log-dir", str(backlog), "--metrics-port", str(port),
         "--checkpoint", str(checkpoint), "--tables", str(tables), "--trigger", "100 ms",
         "--max-records-per-trigger", "40"],
        env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    seen: dict[int, str] = {}
    try:
        wait_streaming(process, port, tables, timeout=240)  # (a loaded machine starts slowly)
        deadline = time.monotonic() + 120
        while len(progress_rows(tables)) < 4:  # past the first (slow) batches
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        before = progress_rows(tables)
        seen = descendants(process.pid)
        assert "java" in seen.values(), seen
        signalled_ms = time.time() * 1000
        signalled = time.monotonic()
        code, _out, err = stop_with(process, signal.SIGTERM, seen, timeout=120)
        took = time.monotonic() - signalled
        left = still_running(seen)
    finally:
        kill_all(seen)
        if process.poll() is None:
            process.kill()
    assert_stopped_once(code, err, signal.SIGTERM)
    assert left == {}, left
    assert port_is_free(port)
    rows = progress_rows(tables)
    # back to back: every micro-batch (from one start to the next) took longer than the
    # 100 ms trigger, so Spark started each next one at once
    periods = [(b["started_ms"] - a["started_ms"]) / 1000 for a, b in zip(before[1:], before[2:])]
    assert min(periods) > 0.1, periods
    batch_s = max(periods)
    print(f"stopped {took:.1f} s after SIGTERM; longest micro-batch {batch_s:.1f} s")
    assert took <= batch_s + STOP_MARGIN_S, (took, batch_s, periods)
    # at most the batch that was running (or being planned) when the signal came
    after = [r for r in rows if r["started_ms"] > signalled_ms]
    assert len(after) <= 1, (after, signalled_ms)
    offsets = {int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()}
    committed = {int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit()}
    # a batch still being planned when the signal came is dropped before it writes
    # anything (Spark's own check after planning); the next run replays it
    left_to_replay = offsets - committed
    assert left_to_replay <= {max(offsets)}, (offsets, committed)
    assert not left_to_replay & {r["batch_id"] for r in rows}, "a cut batch wrote its tables"
    assert len(offsets) < 1110 // 40, "the backlog was read to its end"
    assert_consistent(backlog, tables, checkpoint)
