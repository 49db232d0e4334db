"""Exit codes a script can trust (README, "Exit codes"): 0 done, 1 findings,
2 usage or input error (with a message on stderr), 3 the work failed. Every
command, through the real `kraft-audit` entry point."""

from __future__ import annotations

import random
import re

import pytest

from kraft_audit.cli.main import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, main


@pytest.fixture(scope="module")
def garbage(tmp_path_factory):
    """One random binary file and one file of text that is no kafka-dump-log output."""
    root = tmp_path_factory.mktemp("garbage")
    (root / "random.bin").write_bytes(random.Random(7).randbytes(4096))
    (root / "words.txt").write_text("not\na metadata log\n")
    (root / "empty.txt").write_text("")
    (root / "empty-dir").mkdir()
    return root


@pytest.fixture(scope="module")
def clean_log(simulated_log):
    return simulated_log("rolling-restart", seed=2)


@pytest.fixture(scope="module")
def faulty_log(simulated_log):
    return simulated_log("unclean-shutdown-elr", seed=1, faults=[("leader-not-in-isr", 2)])


def exit_code(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", ["dump", "describe", "check"])
@pytest.mark.parametrize("name, reason", [
    ("random.bin", "no usable record in .*random.bin: 1 unreadable part"),
    ("words.txt", "no usable record in .*words.txt"),
    ("empty.txt", "empty.txt holds no metadata record"),
    ("empty-dir", "holds no metadata log segments"),
    ("missing", "missing does not exist"),
])
def test_an_input_with_nothing_usable_is_an_input_error(capsys, garbage, command, name, reason):
    code, out, err = exit_code(capsys, command, garbage / name)
    assert code == EXIT_USAGE
    assert out == ""  # no empty report a script could take for a clean bill of health
    message = err.splitlines()[-1]  # after any "quarantined: ..." lines
    assert message.startswith(f"kraft-audit {command}: ")
    assert re.search(reason, message), err


def test_check_exit_codes_tell_findings_from_none(capsys, clean_log, faulty_log):
    assert exit_code(capsys, "check", clean_log)[0] == EXIT_OK
    code, out, _ = exit_code(capsys, "check", faulty_log)
    assert code == EXIT_FINDINGS and "kip704.unclean-election-sets-recovering" in out


def test_dump_and_describe_name_what_does_not_exist(capsys, clean_log):
    assert exit_code(capsys, "dump", clean_log, "--offsets", "0:3")[0] == EXIT_OK
    code, _, err = exit_code(capsys, "dump", clean_log, "--offsets", "900000:")
    assert code == EXIT_USAGE and "no record in offsets 900000:" in err
    assert exit_code(capsys, "describe", clean_log)[0] == EXIT_OK
    code, _, err = exit_code(capsys, "describe", clean_log, "--topic", "no-such-topic")
    assert code == EXIT_USAGE and "'no-such-topic' does not exist" in err


def test_simulate_exit_codes(capsys, tmp_path, clean_log):
    code, _, err = exit_code(capsys, "simulate", "--scenario", "no-such-scenario", "--out", tmp_path / "a")
    assert code == EXIT_USAGE and "no-such-scenario" in err
    code, _, err = exit_code(capsys, "simulate", "--scenario", "rolling-restart", "--out", clean_log)
    assert code == EXIT_USAGE and "not an empty directory" in err
    code, _, err = exit_code(capsys, "simulate", "--scenario", "chaos", "--out", tmp_path / "c",
                             "--faults", "no-such-fault")
    assert code == EXIT_USAGE and "unknown fault" in err
    # a bug with no chance to fire: the log is written, the summary and stderr say so
    code, out, err = exit_code(capsys, "simulate", "--scenario", "reassignment", "--seed", "3",
                               "--out", tmp_path / "b", "--faults", "wrong-elr")
    assert code == EXIT_OK and "never found a chance to fire: wrong-elr" in err
    assert '"faults_unfired": [\n  "wrong-elr"' in out


def test_run_once_on_an_empty_or_missing_log_dir_is_an_input_error(capsys, tmp_path, garbage):
    # refused before Spark starts
    common = ["--checkpoint", tmp_path / "ck", "--tables", tmp_path / "tables", "--no-metrics"]
    code, _, err = exit_code(capsys, "run", "--once", "--log-dir", garbage / "empty-dir", *common)
    assert code == EXIT_USAGE and "nothing to audit" in err
    code, _, err = exit_code(capsys, "run", "--once", "--log-dir", tmp_path / "missing", *common)
    assert code == EXIT_USAGE and "does not exist" in err
    assert not (tmp_path / "ck").exists() and not (tmp_path / "tables").exists()


def test_demo_refuses_a_workdir_it_did_not_make(capsys, tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    code, _, err = exit_code(capsys, "demo", "--workdir", tmp_path)
    assert code == EXIT_USAGE and "is not a demo workdir" in err
    assert (tmp_path / "precious.txt").exists()


def test_argparse_mistakes_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check"])
    assert exc.value.code == EXIT_USAGE


@pytest.mark.spark
def test_a_first_run_once_that_applies_nothing_is_an_input_error(spark, capsys, tmp_path):
    """The streaming job runs over a segment of garbage, applies nothing, and `run` says so."""
    log_dir = tmp_path / "__cluster_metadata-0"
    log_dir.mkdir()
    (log_dir / "00000000000000000000.log").write_bytes(random.Random(3).randbytes(2048))
    argv = ["run", "--once", "--log-dir", log_dir, "--checkpoint", tmp_path / "ck",
            "--tables", tmp_path / "tables", "--no-metrics", "--set", "audit.buckets=1"]
    code, _, err = exit_code(capsys, *argv)
    assert code == EXIT_USAGE
    assert "no usable record in the inputs: nothing applied" in err.splitlines()[-1]


def test_run_with_its_metrics_port_taken_is_a_one_line_usage_error(tmp_path, clean_log):
    """Before Spark starts: a second run on a busy /metrics port says so and exits 2."""
    import socket
    import subprocess
    import sys
    from pathlib import Path

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [str(Path(sys.executable).parent / "kraft-audit"), "run", "--log-dir", str(clean_log),
             "--once", "--metrics-port", str(port), "--checkpoint", str(tmp_path / "cp"),
             "--tables", str(tmp_path / "tables")],
            capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_USAGE
    errors = [line for line in done.stderr.splitlines() if line.startswith("kraft-audit run:")]
    assert errors == [f"kraft-audit run: cannot serve /metrics on 127.0.0.1:{port}: Address "
                      "already in use (another run holds it? choose metrics.port, "
                      "--metrics-port, or 0 for any free port)"]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "cp").exists()  # nothing started


def test_a_topic_partitions_log_dir_is_said_not_to_be_a_metadata_log(capsys, tmp_path):
    """An ordinary topic partition (orders-0) given for a metadata log: one line saying so,
    exit 2, and `run --once` makes no table or checkpoint before refusing it."""
    from kraft_audit.core.codec.logdir import LogDirWriter

    writer = LogDirWriter(tmp_path / "w", "x")
    for i in range(3):
        writer.append_values([b'{"order": %d}' % i], 1_700_000_000_000 + i)
    writer.close()
    orders = tmp_path / "orders-0"
    orders.mkdir()
    [segment] = (tmp_path / "w").rglob("*.log")
    segment.rename(orders / segment.name)
    for argv in (["check", orders], ["run", "--once", "--log-dir", orders, "--checkpoint", tmp_path / "ck",
                                     "--tables", tmp_path / "tables", "--no-metrics"]):
        code, _, err = exit_code(capsys, *argv)
        assert code == 2 and err.count("\n") == 1
        assert f"{orders} is not a KRaft metadata log (orders-0 looks like a topic partition's log dir)" in err
    assert not (tmp_path / "ck").exists() and not (tmp_path / "tables").exists()


def through_the_script(*argv, timeout=300):
    """A command as the `kraft-audit` script runs it (cli.main.entry), in a process of its
    own with an atexit handler: the handler must not run (the script leaves by os._exit,
    never reaching the interpreter teardown in which delta-rs may abort with SIGABRT)."""
    import subprocess
    import sys

    code = ("import atexit, sys; atexit.register(lambda: print('TEARDOWN', flush=True)); "
            f"sys.argv = ['kraft-audit', *{[str(a) for a in argv]!r}]; "
            "from kraft_audit.cli.main import entry; entry()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    assert "TEARDOWN" not in done.stdout and "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def test_the_script_is_cli_main_entry():
    import importlib.metadata

    scripts = {e.name: e.value for e in importlib.metadata.entry_points(group="console_scripts")}
    assert scripts["kraft-audit"] == "kraft_audit.cli.main:entry"


def test_the_script_keeps_the_documented_codes_without_a_teardown(clean_log, faulty_log, tmp_path):
    assert through_the_script("check", clean_log)[0] == EXIT_OK
    assert through_the_script("check", faulty_log)[0] == EXIT_FINDINGS
    assert through_the_script("check", tmp_path / "missing")[0] == EXIT_USAGE
    assert through_the_script("check")[0] == EXIT_USAGE  # argparse
    assert through_the_script("--version")[0] == EXIT_OK


@pytest.mark.spark
def test_commands_that_use_deltalake_exit_with_the_documented_codes(faulty_log, tmp_path):
    """run, query and timeline read or write Delta tables through delta-rs: each exits
    with its documented code through the script, however delta-rs leaves at exit."""
    tables = tmp_path / "tables"
    code, out, err = through_the_script(
        "run", "--once", "--log-dir", faulty_log, "--checkpoint", tmp_path / "ck", "--tables", tables,
        "--no-metrics", "--set", "audit.buckets=1")
    assert code == EXIT_OK, err
    assert "micro-batches this run: 1" in out and " applied + " in out
    noise = ("Using incubator modules", "NativeCodeLoader", "log4j profile", "Setting default log level")
    assert not [line for line in err.splitlines() if any(n in line for n in noise)], err
    code, out, _ = through_the_script("query", tables, "violations", "--json")
    assert code == EXIT_OK and out.strip()
    assert through_the_script("query", tables, "offline", "--cluster", "nope")[0] == EXIT_USAGE
    assert through_the_script("timeline", "--tables", tables, "--topic", "orders", "--partition", 0,
                              "--out", tmp_path / "t.svg")[0] == EXIT_OK
    assert (tmp_path / "t.svg").stat().st_size > 0
    assert through_the_script("timeline", "--tables", tables, "--topic", "nope", "--partition", 0,
                              "--out", tmp_path / "u.svg")[0] == EXIT_USAGE
    # a second run finds nothing new and still exits 0
    assert through_the_script("run", "--once", "--log-dir", faulty_log, "--checkpoint", tmp_path / "ck",
                              "--tables", tables, "--no-metrics", "--set", "audit.buckets=1")[0] == EXIT_OK
