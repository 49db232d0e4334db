"""`kraft-audit ship` as a process, without Kafka: a sidecar on a controller that is
not --only-node stands by (serves /metrics, ships nothing) and stops on SIGTERM with 0;
usage mistakes are one line and exit 2."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import load_scenario
from services import free_port, wait_for

KRAFT_AUDIT = str(Path(sys.executable).parent / "kraft-audit")


def test_a_sidecar_on_another_node_stands_by_and_stops_on_sigterm(tmp_path):
    simulate(load_scenario("rolling-restart"), tmp_path / "log", seed=1)
    port = free_port()
    proc = subprocess.Popen([KRAFT_AUDIT, "ship", "--log-dir", str(tmp_path / "log"),
                             "--bootstrap-servers", "127.0.0.1:1", "--topic", "t",
                             "--only-node", "12345", "--metrics-port", str(port)],
                            stderr=subprocess.PIPE, text=True)
    try:
        def standby():
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
            return any(line.startswith("kraft_audit_ship_standby{") and line.endswith(" 1.0")
                       for line in text.splitlines())
        wait_for("the standby gauge", standby, timeout=30)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "standing by (this is node" in proc.stderr.read()


def test_a_log_dir_that_is_not_there_is_a_usage_error(tmp_path):
    done = subprocess.run([KRAFT_AUDIT, "ship", "--log-dir", str(tmp_path / "nope"),
                           "--bootstrap-servers", "127.0.0.1:1", "--topic", "t"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "is not a directory" in done.stderr
