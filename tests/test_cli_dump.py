"""`kraft-audit dump`: JSON lines on stdout, quarantine on stderr, exit codes."""

from __future__ import annotations

import argparse
import json

import pytest
from conftest import REAL_FIXTURES

from kraft_audit.cli import dump
from kraft_audit.cli.main import UsageError
from kraft_audit.core.codec.logdir import LogDirWriter, list_segments

FIXTURE = REAL_FIXTURES / "subpxl__streamprocessing"


def run_dump(capsys, *argv):
    parser = argparse.ArgumentParser()
    dump.add_arguments(parser)
    code = dump.run(parser.parse_args([str(a) for a in argv]))
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def test_dump_log_dir_prints_one_json_object_per_record(capsys):
    code, rows, err = run_dump(capsys, FIXTURE)
    assert code == 0 and err == ""
    expected = json.loads((FIXTURE / "EXPECTED.json").read_text())
    assert len(rows) == expected["records"]
    first_change = next(r for r in rows if r["type"] == "PARTITION_CHANGE_RECORD")
    assert set(first_change) >= {
        "offset",
        "batchBaseOffset",
        "batchLastOffset",
        "timestampMs",
        "type",
        "version",
        "data",
        "source",
        "position",
    }
    assert (
        "leaderRecoveryState" not in first_change["data"]
    )  # tagged default omitted, like kafka-dump-log


def test_dump_offsets_filter_and_single_files(capsys, tmp_path):
    _, rows, _ = run_dump(capsys, FIXTURE, "--offsets", "10:12")
    assert [r["offset"] for r in rows] == [10, 11, 12]
    segment = list_segments(FIXTURE)[0][1]
    _, rows, _ = run_dump(capsys, segment, "--offsets", ":2")
    assert [r["type"] for r in rows] == [
        "LEADER_CHANGE",
        "BEGIN_TRANSACTION_RECORD",
        "FEATURE_LEVEL_RECORD",
    ]
    _, rows, _ = run_dump(capsys, FIXTURE / "bootstrap.checkpoint")
    assert rows[0]["type"] == "SNAPSHOT_HEADER" and rows[-1]["type"] == "SNAPSHOT_FOOTER"


def test_dump_reads_its_own_output_and_kafka_text(capsys, tmp_path):
    _, rows, _ = run_dump(capsys, FIXTURE, "--offsets", "470:480")
    lines = tmp_path / "dump.jsonl"
    lines.write_text("\n".join(json.dumps(r) for r in rows))
    _, again, _ = run_dump(capsys, lines)
    strip = [{k: v for k, v in r.items() if k not in ("source", "position")} for r in rows]
    assert [{k: v for k, v in r.items() if k not in ("source", "position")} for r in again] == strip


def test_dump_log_text_saved_as_dot_log_is_read_as_text(capsys, tmp_path):
    _, rows, _ = run_dump(capsys, FIXTURE, "--offsets", "0:5")
    text = tmp_path / "kafka-dump.log"
    text.write_text("Dumping x\n" + "\n".join(json.dumps(r) for r in rows) + "\n")
    _, again, err = run_dump(capsys, text)
    assert [r["type"] for r in again] == [r["type"] for r in rows] and err == ""


def test_quarantine_goes_to_stderr_with_position_and_exit_stays_zero(capsys, tmp_path):
    with LogDirWriter(tmp_path, "c") as writer:
        for i in range(3):
            writer.append([("NO_OP_RECORD", 0, {})], 1000 + i)
    segment = list_segments(tmp_path)[0][1]
    data = bytearray(segment.read_bytes())
    data[100] ^= 0xFF
    segment.write_bytes(bytes(data))
    code, rows, err = run_dump(capsys, tmp_path)
    assert code == 0 and len(rows) == 2
    assert "quarantined:" in err and "position" in err and "CRC mismatch" in err


def test_unusable_paths_are_usage_errors(capsys, tmp_path):
    with pytest.raises(UsageError):
        run_dump(capsys, tmp_path / "missing")
    with pytest.raises(UsageError):
        run_dump(capsys, tmp_path)  # a directory without a log
    with pytest.raises(UsageError):
        run_dump(capsys, FIXTURE, "--offsets", "x:y")
    with pytest.raises(UsageError):
        run_dump(capsys, FIXTURE, "--offsets", "9:3")
