"""Configuration: defaults ← file ← environment ← flags, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kraft_audit.config import DEFAULTS, ConfigError, LogSource, env_names, load_config

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
    assert cfg.metrics.port == 1000 and cfg.audit.buckets == 4
    assert cfg.sources.log_dirs == (LogSource(str(log.resolve()), None),)
    env = {"KRAFT_AUDIT_METRICS_PORT": "2000", "KRAFT_AUDIT_TRIGGER_AVAILABLE_NOW": "true"}
    cfg = load_config(cfg_file, environ=env)
    assert cfg.metrics.port == 2000 and cfg.trigger.available_now is True
    cfg = load_config(cfg_file, overrides={"metrics.port": "3000", "audit.buckets": 2}, environ=env)
    assert cfg.metrics.port == 3000 and cfg.audit.buckets == 2
    # relative paths become absolute, from where the job starts
    assert Path(cfg.checkpoint).is_absolute() and Path(cfg.tables).is_absolute()


def test_source_lists_from_the_environment_take_cluster_ids(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    cfg = load_config(environ={"KRAFT_AUDIT_SOURCES_LOG_DIRS": f"{a},prod={b}"})
    assert cfg.sources.log_dirs == (LogSource(str(a), None), LogSource(str(b), "prod"))
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
    ("sources:\n  kafka: [{bootstrap_servers: 'h:1', topic: t, max_offsets_per_trigger: many}]\n",
     "`sources.kafka[0].max_offsets_per_trigger` must be a positive integer"),
    ("sources:\n  kafka: [{bootstrap_servers: 'h:1', topic: t, starting_offsets: now}]\n",
     "`sources.kafka[0].starting_offsets` must be earliest or latest"),
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


def test_one_typed_frozen_config_whose_defaults_are_the_declaration(tmp_path):
    import dataclasses

    from kraft_audit.config import KEYS, Config

    assert Config().as_dict() == DEFAULTS
    assert all(key.doc for key in KEYS.values()), "every key has its one-line doc"
    cfg = load_config(overrides={"sources.log_dirs": str(tmp_path), "spark.conf": {"a": 1},
                                 "audit.min_insync_replicas": 2}, environ={})
    assert cfg.spark.conf == {"a": 1} and cfg.audit.settings == {"min_insync_replicas_default": 2}
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.metrics.port = 1
    with pytest.raises(TypeError):
        cfg.spark.conf["b"] = 2
    changed = cfg.with_values({"metrics.port": "1234", "sources.kafka": ["h:9092/t"]})
    assert changed.metrics.port == 1234 and cfg.metrics.port == KEYS["metrics.port"].default
    [topic] = changed.sources.kafka
    assert (topic.bootstrap_servers, topic.topic, topic.starting_offsets) == ("h:9092", "t", "earliest")
    assert load_config(overrides={"sources.log_dirs": str(tmp_path)}, environ={}) == \
        load_config(overrides={"sources.log_dirs": str(tmp_path)}, environ={})


def test_backends_choices_and_the_operator_come_from_the_declaration(tmp_path):
    import argparse

    from kraft_audit.cli import run
    from kraft_audit.config import KEYS
    from kraft_audit.spark import operator as op
    from kraft_audit.spark.sinks import BACKENDS

    assert BACKENDS == KEYS["sink.backend"].choices == ("deltalake", "delta-spark")
    parser = argparse.ArgumentParser()
    run.add_arguments(parser)
    flags = {a.dest: a for a in parser._actions}
    assert flags["backend"].choices == BACKENDS
    assert flags["starting_position"].choices == KEYS["sources.starting_position"].choices
    assert "(default: local[2])" in flags["master"].help
    assert op.OperatorConfig().buckets == KEYS["audit.buckets"].default
    assert op.OperatorConfig().timeout_ms == KEYS["audit.timeout_seconds"].default * 1000
    cfg = load_config(overrides={"sources.log_dirs": str(tmp_path), "audit.buckets": 3,
                                 "audit.settings": {"last_known_elr": "set"}}, environ={})
    derived = op.OperatorConfig.of(cfg.audit)
    assert (derived.buckets, derived.core_settings) == (3, {"last_known_elr": "set"})


def test_the_tests_kafka_versions_variable_is_not_a_configuration_key(tmp_path, monkeypatch):
    """The real-Kafka tests' KRAFT_TEST_KAFKA_VERSIONS (tests/services.py, `make
    test-kafka-matrix`) may be set where the job runs: it is no KRAFT_AUDIT_* key."""
    import os

    for name in [n for n in os.environ if n.startswith("KRAFT_AUDIT_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("KRAFT_TEST_KAFKA_VERSIONS", "4.3.1,3.9.2")
    cfg = load_config(overrides={"sources.log_dirs": str(tmp_path)})  # reads os.environ
    assert cfg.sources.log_dirs[0].path == str(tmp_path.resolve())
    monkeypatch.setenv("KRAFT_AUDIT_KAFKA_VERSIONS", "4.3.1")  # its old name was taken for a key
    with pytest.raises(ConfigError, match="environment: unknown key `KRAFT_AUDIT_KAFKA_VERSIONS`"):
        load_config(overrides={"sources.log_dirs": str(tmp_path)})


def test_no_harness_variable_is_in_the_configuration_namespace(tmp_path, monkeypatch):
    """Every environment variable the test harness reads is outside KRAFT_AUDIT_* (which
    `run` refuses when it names no key), so setting one where the job runs is harmless."""
    import os
    import re

    import kraft_audit.testing as harness

    root = Path(harness.__file__).parent
    read = {m for f in [*root.rglob("*.py"), *Path(__file__).parent.glob("*.py")]
            for m in re.findall(r"environ(?:\.get\(|\[)\s*[\"'](KRAFT_\w+)", f.read_text())}
    assert {"KRAFT_TEST_KAFKA_CACHE", "KRAFT_TEST_KAFKA_VERSIONS"} <= read
    assert not [n for n in read if n.startswith("KRAFT_AUDIT_")]
    for name in [n for n in os.environ if n.startswith("KRAFT_AUDIT_")]:
        monkeypatch.delenv(name)
    for name in read:
        monkeypatch.setenv(name, str(tmp_path))
    cfg = load_config(overrides={"sources.log_dirs": str(tmp_path)})  # reads os.environ
    assert cfg.sources.log_dirs[0].path == str(tmp_path.resolve())


def test_the_controllers_static_configs_come_from_its_server_properties(tmp_path):
    props = tmp_path / "server.properties"
    props.write_text("min.insync.replicas=2\nunclean.leader.election.enable=TRUE\n"
                     "auto.leader.rebalance.enable = false\nleader.imbalance.check.interval.seconds: 60\n")
    cfg = load_config(overrides={"sources.log_dirs": str(tmp_path), "audit.server_properties": str(props)},
                      environ={})
    assert cfg.audit.settings == {"min_insync_replicas_default": 2, "unclean_leader_election_default": True,
                                  "auto_leader_rebalance_enable": False,
                                  "leader_imbalance_check_interval_seconds": 60}
    # audit.min_insync_replicas wins over the file, and audit.settings over both
    cfg = load_config(overrides={"sources.log_dirs": str(tmp_path), "audit.server_properties": str(props),
                                 "audit.min_insync_replicas": 3,
                                 "audit.settings": {"leader_imbalance_check_interval_seconds": 30}},
                      environ={})
    assert cfg.audit.settings["min_insync_replicas_default"] == 3
    assert cfg.audit.settings["leader_imbalance_check_interval_seconds"] == 30
    props.write_text("leader.imbalance.check.interval.seconds=0\n")
    with pytest.raises(ConfigError, match=r"`audit.server_properties`: .*leader.imbalance.check.interval.seconds='0' "
                                          "must be at least 1"):
        load_config(overrides={"sources.log_dirs": str(tmp_path), "audit.server_properties": str(props)},
                    environ={})
