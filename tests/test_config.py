"""Configuration: defaults ← file ← environment ← flags, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kraft_audit.config import DEFAULTS, ConfigError, env_names, load_config

REPO = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


def test_conf_default_yaml_documents_exactly_the_defaults():
    assert yaml.safe_load((REPO / "conf" / "default.yaml").read_text()) == DEFAULTS


def test_file_then_environment_then_flags(tmp_path):
    log = tmp_path / "log"
    log.mkdir()
    cfg_file = write(tmp_path, f"sources:\n  log_dirs: [{log}]\nmetrics:\n  port: 1000\n"
                               f"audit:\n  buckets: 4\n")
    cfg = load_config(cfg_file, environ={})
    assert cfg["metrics"]["port"] == 1000 and cfg["audit"]["buckets"] == 4
    assert cfg["sources"]["log_dirs"] == [{"path": str(log.resolve()), "cluster_id": None}]
    env = {"KRAFT_AUDIT_METRICS_PORT": "2000", "KRAFT_AUDIT_TRIGGER_AVAILABLE_NOW": "true"}
    cfg = load_config(cfg_file, environ=env)
    assert cfg["metrics"]["port"] == 2000 and cfg["trigger"]["available_now"] is True
    cfg = load_config(cfg_file, overrides={"metrics.port": "3000", "audit.buckets": 2}, environ=env)
    assert cfg["metrics"]["port"] == 3000 and cfg["audit"]["buckets"] == 2
    # relative paths become absolute, from where the job starts
    assert Path(cfg["checkpoint"]).is_absolute() and Path(cfg["tables"]).is_absolute()


def test_source_lists_from_the_environment_take_cluster_ids(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    cfg = load_config(environ={"KRAFT_AUDIT_SOURCES_LOG_DIRS": f"{a},prod={b}"})
    assert cfg["sources"]["log_dirs"] == [{"path": str(a), "cluster_id": None},
                                          {"path": str(b), "cluster_id": "prod"}]
    assert env_names()["KRAFT_AUDIT_SINK_BACKEND"] == "sink.backend"


@pytest.mark.parametrize("text, message", [
    ("sources:\n  log_dir: []\n", "unknown key `sources.log_dir` (did you mean `sources.log_dirs`?)"),
    ("metrics:\n  port: high\n", "`metrics.port` must be an integer"),
    ("metrics:\n  enabled: 1\n", "`metrics.enabled` must be true/false"),
    ("audit:\n  buckets: true\n", "`audit.buckets` must be an integer"),
    ("sink:\n  backend: parquet\n", "`sink.backend` must be one of deltalake, delta-spark"),
    ("trigger:\n  interval: soon\n", "`trigger.interval` must look like"),
    ("sources:\n  log_dirs: [/no/such/dir]\n", "`sources.log_dirs[0]`: path /no/such/dir does not exist"),
    ("sources:\n  log_dirs: [{path: x, cluster: y}]\n", "unknown key `cluster`"),
    ("- a\n- b\n", "the top level must be a mapping"),
    ("sources:\n  log_dirs: [.]\naudit:\n  settings: {last_known_elr: maybe}\n",
     "`audit.settings`: last_known_elr must be"),
])
def test_mistakes_are_named(tmp_path, text, message):
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, text), environ={})
    assert message in str(err.value)


def test_no_input_and_unknown_environment_names_are_errors(tmp_path):
    with pytest.raises(ConfigError, match="no input"):
        load_config(environ={})
    with pytest.raises(ConfigError, match="environment: unknown key `KRAFT_AUDIT_METRIC_PORT`"):
        load_config(environ={"KRAFT_AUDIT_METRIC_PORT": "1"})
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml", environ={})
    with pytest.raises(ConfigError, match="command line: unknown key `metrics.prot`"):
        load_config(overrides={"metrics.prot": 1}, environ={})


def test_every_run_flag_names_a_declared_key():
    from kraft_audit.cli import run
    from kraft_audit.config import KEYS

    assert set(run._FLAG_KEYS.values()) <= set(KEYS)
