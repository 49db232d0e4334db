"""`kraft-audit ship` as a process, without Kafka: a sidecar on a controller that is
not --only-node stands by (serves /metrics, ships nothing) and stops on SIGTERM with 0;
usage mistakes are one line and exit 2."""

from __future__ import annotations

import signal
import time
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


def closed_port() -> int:
    """A loopback port nothing listens on (connections are refused)."""
    return free_port()


def test_kafka_unreachable_past_the_bound_is_one_line_and_exit_3(tmp_path):
    """No broker at all: every attempt is refused; the shipper retries with backoff and,
    once --kafka-timeout has passed, says so in one line and exits 3 (no traceback)."""
    simulate(load_scenario("rolling-restart"), tmp_path / "log", seed=1)
    started = time.monotonic()
    done = subprocess.run([KRAFT_AUDIT, "ship", "--log-dir", str(tmp_path / "log"),
                           "--bootstrap-servers", f"127.0.0.1:{closed_port()}", "--topic", "t",
                           "--metrics-port", "-1", "--kafka-timeout", "6"],
                          capture_output=True, text=True, timeout=60)
    took = time.monotonic() - started
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("kraft-audit ship: reading where to resume: Kafka unreachable for "), last
    assert "(--kafka-timeout 6)" in last
    assert "retrying in 0.5 s" in done.stderr and "retrying in 1.0 s" in done.stderr  # backoff
    assert 5 <= took < 6 + 10, took  # the bound, plus at most one attempt's own wait


def test_sigterm_while_kafka_is_unreachable_stops_at_once_with_0(tmp_path):
    simulate(load_scenario("rolling-restart"), tmp_path / "log", seed=1)
    proc = subprocess.Popen([KRAFT_AUDIT, "ship", "--log-dir", str(tmp_path / "log"),
                             "--bootstrap-servers", f"127.0.0.1:{closed_port()}", "--topic", "t",
                             "--metrics-port", "-1", "--kafka-timeout", "600"],
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for("a retry", lambda: proc.poll() is None and time.sleep(4) is None, timeout=10)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(40) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    err = proc.stderr.read()
    assert "retrying in" in err and err.rstrip().endswith("kraft-audit ship: stopped"), err


def test_a_setting_librdkafka_refuses_is_a_usage_error(tmp_path):
    simulate(load_scenario("rolling-restart"), tmp_path / "log", seed=1)
    done = subprocess.run([KRAFT_AUDIT, "ship", "--log-dir", str(tmp_path / "log"),
                           "--bootstrap-servers", "127.0.0.1:1", "--topic", "t", "--metrics-port",
                           "-1", "--producer-config", "no.such.setting=1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        'kraft-audit ship: --producer-config: No such configuration property: "no.such.setting"')


def test_a_kafka_timeout_of_zero_is_a_usage_error(tmp_path):
    done = subprocess.run([KRAFT_AUDIT, "ship", "--log-dir", str(tmp_path),
                           "--bootstrap-servers", "127.0.0.1:1", "--topic", "t",
                           "--kafka-timeout", "0"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "--kafka-timeout must be more than 0" in done.stderr


def test_a_bootstrap_controller_that_is_not_host_port_is_a_usage_error(tmp_path):
    done = subprocess.run([KRAFT_AUDIT, "ship", "--log-dir", str(tmp_path),
                           "--bootstrap-servers", "127.0.0.1:1", "--topic", "t",
                           "--bootstrap-controller", "127.0.0.1:9093,controller-2"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "--bootstrap-controller wants HOST:PORT, got 'controller-2'" in done.stderr


def test_the_harness_puts_a_key_where_kafka_does():
    """key_partition (the real-Kafka tests find the shipper's partition with it) is Kafka's
    Utils.murmur2: the values of Kafka's own UtilsTest."""
    from kraft_audit.testing.realkafka.ship_process import key_partition, murmur2

    vectors = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
               b"a-little-bit-longer-string": -1486304829, b"abc": 479470107,
               b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971}
    for key, signed in vectors.items():
        assert murmur2(key) == signed & 0xFFFFFFFF, key
    assert key_partition(b"21", 7) == (-973932308 & 0x7FFFFFFF) % 7
