"""Kafka's own views of a metadata log next to kraft-audit's, compared field by field.

- kafka-dump-log --cluster-metadata-decoder vs `kraft-audit dump`, record by record;
- kafka-topics --describe and the metadata shell vs `kraft-audit describe`, partition by
  partition;
- `kraft-audit check` for the findings on a real log.

Every comparison returns a list of differences (empty = agree), each a readable line.
Kafka's text is parsed here on its own, not with the project's dump-log reader, so a
shared misreading cannot hide.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kraft_audit.testing.realkafka.cluster import KafkaCluster

# --------------------------------------------------------------------------- dump-log


def metadata_files(log_dir: Path) -> list[Path]:
    """Segments and snapshots of a __cluster_metadata-0 dir, in name order."""
    return sorted([*log_dir.glob("*.log"), *log_dir.glob("*.checkpoint")])


_RECORD = re.compile(r"^\| offset: (\d+) CreateTime: (-?\d+) .*?(?:payload: (\{.*\})|"
                     r" (LeaderChange|SnapshotHeader|SnapshotFooter|KRaftVersion|KRaftVoters):? "
                     r"(\{.*\})|controlType: ([A-Z_]+)\(\d+\))\s*$")
_BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) .*isControl: (true|false)")
_CONTROL_TYPES = {"LeaderChange": "LEADER_CHANGE", "SnapshotHeader": "SNAPSHOT_HEADER",
                  "SnapshotFooter": "SNAPSHOT_FOOTER", "KRaftVersion": "KRAFT_VERSION",
                  "KRaftVoters": "KRAFT_VOTERS"}


def parse_kafka_dump(text: str) -> dict[str, list[dict]]:
    """kafka-dump-log output -> {file name: [record]}; a record has offset, timestamp,
    batch_base, batch_last, type, and version + data (None when Kafka printed only the
    control type, as 3.x does for LeaderChange)."""
    out: dict[str, list[dict]] = {}
    records: list[dict] = []
    batch = (-1, -1)
    for line in text.splitlines():
        if line.startswith("Dumping "):
            records = out.setdefault(Path(line[len("Dumping "):].strip()).name, [])
            continue
        m = _BATCH.match(line)
        if m:
            batch = (int(m.group(1)), int(m.group(2)))
            continue
        m = _RECORD.match(line)
        if not m:
            if line.startswith("|"):
                raise ValueError(f"unparsed kafka-dump-log record line: {line[:300]}")
            continue
        record = {"offset": int(m.group(1)), "timestamp": int(m.group(2)),
                  "batch_base": batch[0], "batch_last": batch[1]}
        if m.group(3):
            payload = json.loads(m.group(3))
            record.update(type=payload["type"], version=payload["version"], data=payload["data"])
        elif m.group(4):
            body = json.loads(m.group(5))
            record.update(type=_CONTROL_TYPES[m.group(4)], version=body.get("version"), data=body)
        else:
            record.update(type=m.group(6), version=None, data=None)
        records.append(record)
    return out


def kraft_audit_dump(path: Path) -> list[dict]:
    """`kraft-audit dump PATH` as records shaped like parse_kafka_dump's."""
    text = _cli("dump", str(path))
    return [{"offset": r["offset"], "timestamp": r["timestampMs"],
             "batch_base": r["batchBaseOffset"], "batch_last": r["batchLastOffset"],
             "type": r["type"], "version": r["version"], "data": r["data"]}
            for r in map(json.loads, text.splitlines()) if r]


def compare_dump(cluster: KafkaCluster, log_dir: Path | None = None) -> tuple[int, list[str]]:
    """Every segment and snapshot of the controller's metadata log, through both tools.
    Returns (records compared, differences). The files are copied first so both read the
    same bytes while the controller keeps appending."""
    source = log_dir or cluster.metadata_log_dir
    copy = _copy_files(source, cluster.workdir / "oracle-dump", metadata_files(source))
    files = metadata_files(copy)
    kafka = parse_kafka_dump(cluster.tools.dump_log(files))
    compared, diffs = 0, []
    for f in files:
        theirs, ours = kafka.get(f.name, []), kraft_audit_dump(f)
        if not theirs:
            diffs.append(f"{f.name}: kafka-dump-log printed no record")
        ours_by_offset = {r["offset"]: r for r in ours}
        if len(ours) != len(theirs):
            diffs.append(f"{f.name}: kafka-dump-log has {len(theirs)} records, "
                         f"kraft-audit dump {len(ours)}")
        for t in theirs:
            compared += 1
            o = ours_by_offset.get(t["offset"])
            if o is None:
                diffs.append(f"{f.name} offset {t['offset']}: missing from kraft-audit dump")
                continue
            for key in ("type", "version", "data", "timestamp", "batch_base", "batch_last"):
                if t[key] is None:  # Kafka printed the control type only
                    continue
                if t[key] != o[key]:
                    diffs.append(f"{f.name} offset {t['offset']} {key}: kafka {t[key]!r} "
                                 f"!= kraft-audit {o[key]!r}")
    return compared, diffs


# --------------------------------------------------------------------------- describe

_REGISTRATION = re.compile(r"PartitionRegistration\((.*)\)")


def parse_shell_partitions(text: str) -> dict[tuple[str, int], dict]:
    """`tree /image/topics/byName` of the metadata shell -> {(topic, partition): fields}."""
    out: dict[tuple[str, int], dict] = {}
    topic, partition = None, None
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        item = line.strip()
        if indent == 0 and item.endswith(":"):
            topic = item[:-1]
        elif indent == 2 and item.endswith(":"):
            partition = int(item[:-1]) if item[:-1].isdigit() else None
        elif indent == 4 and partition is not None:
            m = _REGISTRATION.search(item)
            if m:
                out[(topic, partition)] = _registration_fields(m.group(1))
    return out


def _registration_fields(body: str) -> dict:
    fields = {}
    for key, value in re.findall(r"(\w+)=(\[[^\]]*\]|[^,]+)", body):
        if value.startswith("["):
            inner = value[1:-1].strip()
            fields[key] = [int(v) for v in inner.split(",")] if inner and key != "directories" \
                else ([] if not inner else inner.split(", "))
        elif value.lstrip("-").isdigit():
            fields[key] = int(value)
        else:
            fields[key] = value
    return fields


SHELL_HANG_S = 20
SHELL_ATTEMPTS = 6


def shell_partitions(cluster: KafkaCluster, segment: Path) -> dict[tuple[str, int], dict] | None:
    """The metadata shell's partitions of a copied segment (None where the version has no
    shell: docs/real-kafka.md). Asked again when it lists none
    or hangs: the shell's non-interactive mode can wait forever for a load that a race in its
    bootstrap dropped (a race Kafka later fixed; on a loaded machine 3.9.2's shell hung in
    one call of a few), and was seen answering before it had loaded the log. A call that
    loads the log ends in seconds (0.5 s to read this file alone), so a hung one is given
    up on after SHELL_HANG_S rather than the tools' minutes."""
    if not cluster.tools.has_metadata_shell:
        return None
    text = ""
    for _attempt in range(SHELL_ATTEMPTS):
        try:
            text = cluster.tools.metadata_shell(segment, "tree", "/image/topics/byName",
                                                timeout=SHELL_HANG_S)
        except subprocess.TimeoutExpired:
            text = f"(no answer in {SHELL_HANG_S} s)"
            continue
        partitions = parse_shell_partitions(text)
        if partitions:
            return partitions
    raise AssertionError(f"the metadata shell listed no partition of {segment.name} in "
                         f"{SHELL_ATTEMPTS} calls; the last printed:\n{text[-2000:]}")


def kraft_audit_describe(path: Path, cluster_id: str) -> dict[tuple[str, int], dict]:
    rows = map(json.loads, _cli("describe", "--json", "--cluster-id", cluster_id,
                                str(path)).splitlines())
    return {(r["topic"], r["partition"]): r for r in rows}


def snapshot_of_log(cluster: KafkaCluster, name: str) -> Path:
    """A copy of the controller's segments as they are now (the metadata shell and
    kraft-audit then read the very same bytes)."""
    source = cluster.metadata_log_dir
    segments = sorted(source.glob("*.log"))
    return _copy_files(source, cluster.workdir / "oracle-describe" / name, segments)


def compare_describe(cluster: KafkaCluster, name: str) -> tuple[list[dict], list[str], dict]:
    """kafka-topics --describe (live) and the metadata shell (on a copy of the log) vs
    kraft-audit describe on that copy, every partition; and `kraft-audit check` on the copy.
    The four run side by side; the comparison is retried while the cluster still moves.
    Returns (kafka-topics rows, differences, check report)."""
    diffs: list[str] = []
    for _attempt in range(3):
        copy = snapshot_of_log(cluster, name)
        segment = sorted(copy.glob("*.log"))
        if len(segment) != 1:
            return [], [f"expected one metadata segment, found {len(segment)}"], {}
        with ThreadPoolExecutor(4) as pool:
            topics = pool.submit(cluster.tools.describe_topics)
            shell = pool.submit(shell_partitions, cluster, segment[0])
            ours = pool.submit(kraft_audit_describe, copy, cluster.cluster_id)
            report = pool.submit(kraft_audit_check, copy, cluster.cluster_id)
            rows = topics.result()
            diffs = _describe_diffs(rows, shell.result(), ours.result())
            if not diffs:
                return rows, [], report.result()
    return rows, diffs, report.result()


_TOPICS_FIELDS = ("leader", "replicas", "isr", "elr", "last_known_elr", "adding_replicas",
                  "removing_replicas")
_SHELL_FIELDS = {"leader": "leader", "replicas": "replicas", "isr": "isr", "elr": "elr",
                 "last_known_elr": "lastKnownElr", "adding_replicas": "addingReplicas",
                 "removing_replicas": "removingReplicas",
                 "leader_recovery_state": "leaderRecoveryState",
                 "leader_epoch": "leaderEpoch", "partition_epoch": "partitionEpoch"}


def _describe_diffs(topics: list[dict], shell: dict | None, ours: dict) -> list[str]:
    diffs = []
    theirs = {(r["topic"], r["partition"]): r for r in topics}
    for key in sorted(set(theirs) | set(shell or ()) | set(ours)):
        o = ours.get(key)
        if o is None:
            diffs.append(f"{key}: not in kraft-audit describe")
            continue
        t = theirs.get(key)
        if t is None:
            diffs.append(f"{key}: not in kafka-topics --describe")
        else:
            for f in _TOPICS_FIELDS:
                if t[f] is not None and t[f] != o[f]:  # None: the version prints no such field
                    diffs.append(f"{key} {f}: kafka-topics {t[f]} != kraft-audit {o[f]}")
        if shell is None:
            continue
        s = shell.get(key)
        if s is None:
            diffs.append(f"{key}: not in the metadata shell")
        else:
            for f, sf in _SHELL_FIELDS.items():
                if sf in s and s[sf] != o[f]:
                    diffs.append(f"{key} {f}: metadata shell {s[sf]} != kraft-audit {o[f]}")
    return diffs


# --------------------------------------------------------------------------- conditions

def _segment_records(kafka_dump: dict[str, list[dict]]) -> list[dict]:
    """The metadata records of the dump's segments (not its snapshots), once each, in
    offset order."""
    return sorted({r["offset"]: r for name, recs in kafka_dump.items() if name.endswith(".log")
                   for r in recs if r["data"] is not None}.values(), key=lambda r: r["offset"])


def condition_intervals(kafka_dump: dict[str, list[dict]], topic: str, min_isr: int,
                        partition: int = 0) -> list[tuple[str, int, int | None]]:
    """(condition, start offset, end offset or None) of one partition, folded from
    kafka-dump-log's records of the metadata segments alone: under_min_isr (|ISR| <
    min_isr), leaderless, manual_election_required (leaderless with ISR and ELR empty),
    recovering, elr_in_use, leader_imbalanced (led by another than its first replica,
    which is in the ISR, registered, unfenced and not in controlled shutdown: the story's
    log dirs never go offline) and directory_unassigned (a replica's directory UNASSIGNED on
    a broker registered with log dirs, unfenced and not in controlled shutdown), each from
    the record that set it to the record that cleared it. `min_isr` is the topic's, fixed
    for the whole log; unclean election is off."""
    records = _segment_records(kafka_dump)
    topic_id, state = None, None
    brokers: dict[int, tuple[bool, bool]] = {}  # registered -> (fenced, in controlled shutdown)
    with_dirs: set[int] = set()  # registered with log dirs
    open_at: dict[str, int] = {}
    out: list[tuple[str, int, int | None]] = []
    for r in records:
        data = r["data"]
        if r["type"] == "TOPIC_RECORD" and data["name"] == topic:
            topic_id = data["topicId"]
            continue
        if r["type"] == "CLEAR_ELR_RECORD" and state is not None and \
                data.get("topicName", "") in ("", topic):
            state.update(elr=[], last_known_elr=[])
        elif r["type"] in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD") and \
                data["topicId"] == topic_id and data["partitionId"] == partition:
            state = _fold_partition(state, r["type"], data)
        elif r["type"] in _BROKER_RECORDS:
            _fold_broker(brokers, r["type"], data)
            if r["type"] == "REGISTER_BROKER_RECORD":
                (with_dirs.add if data.get("logDirs") else with_dirs.discard)(data["brokerId"])
            if state is None:
                continue
        else:
            continue
        leaderless = state["leader"] == -1
        first = state["replicas"][0] if state["replicas"] else -1
        now = {"under_min_isr": len(state["isr"]) < min_isr, "leaderless": leaderless,
               "manual_election_required": leaderless and not state["isr"] and not state["elr"],
               "recovering": state["recovery"] == 1, "elr_in_use": bool(state["elr"]),
               "leader_imbalanced": (not leaderless and first not in (-1, state["leader"])
                                     and (first in state["isr"]
                                          or (not state["isr"] and first in state["elr"]))
                                     and brokers.get(first) == (False, False)),
               "directory_unassigned": any(
                   d == UNASSIGNED and brokers.get(b) == (False, False) and b in with_dirs
                   for b, d in zip(state["replicas"], state["directories"]))}
        for condition, on in now.items():
            if on and condition not in open_at:
                open_at[condition] = r["offset"]
            elif not on and condition in open_at:
                out.append((condition, open_at.pop(condition), r["offset"]))
    out.extend((condition, start, None) for condition, start in open_at.items())
    return sorted(out, key=lambda i: (i[1], i[0]))


def leaders_elected_while_fenced(kafka_dump: dict[str, list[dict]], topic: str | None = None,
                                 partition: int = 0) -> list[int]:
    """Offsets of kafka-dump-log's records that make a broker a partition's leader while
    that broker is fenced or not registered, folded from the records alone: of `topic`'s
    `partition`, or of every partition (topic None)."""
    records = _segment_records(kafka_dump)
    topic_id, brokers, out = None, {}, []
    for r in records:
        data = r["data"]
        if r["type"] == "TOPIC_RECORD" and data["name"] == topic:
            topic_id = data["topicId"]
        elif r["type"] in _BROKER_RECORDS:
            _fold_broker(brokers, r["type"], data)
        elif (r["type"] in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD")
              and (topic is None or (data["topicId"] == topic_id and data["partitionId"] == partition))
              and data.get("leader", -2) >= 0
              and brokers.get(data["leader"], (True, False))[0]):
            out.append(r["offset"])
    return out


def partition_from_dump(kafka_dump: dict[str, list[dict]], topic: str, partition: int = 0) -> dict | None:
    """`topic`'s `partition` (leader, ISR, ELR, recovery state) folded from kafka-dump-log's
    records alone: Kafka's own witness of a log where the version has no metadata shell."""
    topic_id, state = None, None
    for r in _segment_records(kafka_dump):
        data = r["data"]
        if r["type"] == "TOPIC_RECORD" and data["name"] == topic:
            topic_id = data["topicId"]
        elif (r["type"] in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD")
              and data["topicId"] == topic_id and data["partitionId"] == partition):
            state = _fold_partition(state, r["type"], data)
    return state


UNASSIGNED = "AAAAAAAAAAAAAAAAAAAAAQ"  # DirectoryId.UNASSIGNED, as kafka-dump-log prints it
_BROKER_RECORDS = ("REGISTER_BROKER_RECORD", "UNREGISTER_BROKER_RECORD", "FENCE_BROKER_RECORD",
                   "UNFENCE_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD")


def _fold_broker(brokers: dict[int, tuple[bool, bool]], type_: str, data: dict) -> None:
    """A broker's (fenced, in controlled shutdown) after one of Kafka's records (a
    BrokerRegistrationChangeRecord: fenced 1 / -1, inControlledShutdown 1, 0 unchanged)."""
    broker = data.get("brokerId", data.get("id"))
    if type_ == "REGISTER_BROKER_RECORD":
        brokers[broker] = (bool(data.get("fenced", True)),
                           bool(data.get("inControlledShutdown", False)))
    elif type_ == "UNREGISTER_BROKER_RECORD":
        brokers.pop(broker, None)
    elif broker in brokers:
        fenced, shutdown = brokers[broker]
        if type_ == "FENCE_BROKER_RECORD":
            fenced = True
        elif type_ == "UNFENCE_BROKER_RECORD":
            fenced = False
        else:
            fenced = {1: True, -1: False}.get(data.get("fenced", 0), fenced)
            shutdown = shutdown or data.get("inControlledShutdown", 0) == 1
        brokers[broker] = (fenced, shutdown)


def _fold_partition(state: dict | None, type_: str, data: dict) -> dict:
    """A partition's leader, ISR, ELR and recovery state after one of Kafka's records
    (PartitionChangeRecord: leader -2, a null list and recovery -1 mean unchanged)."""
    if type_ == "PARTITION_RECORD" or state is None:
        return {"leader": data["leader"], "isr": data["isr"], "replicas": data["replicas"],
                "elr": data.get("eligibleLeaderReplicas") or [],
                "last_known_elr": data.get("lastKnownElr") or [],
                "recovery": data.get("leaderRecoveryState", 0),
                "directories": data.get("directories") or []}
    state = dict(state)
    if data.get("leader", -2) != -2:
        state["leader"] = data["leader"]
    for key, field in (("isr", "isr"), ("replicas", "replicas"), ("elr", "eligibleLeaderReplicas"),
                       ("last_known_elr", "lastKnownElr"), ("directories", "directories")):
        if data.get(field) is not None:
            state[key] = data[field]
    if data.get("leaderRecoveryState", -1) != -1:
        state["recovery"] = data["leaderRecoveryState"]
    return state


# --------------------------------------------------------------------------- findings

def kraft_audit_check(log_dir: Path, cluster_id: str) -> dict:
    """`kraft-audit check --json` on the controller's log (a copy, so it holds still)."""
    return json.loads(_cli("check", "--json", "--cluster-id", cluster_id, str(log_dir),
                           ok=(0, 1)))  # 1 = a rule fired


# --------------------------------------------------------------------------- helpers

def _cli(*args: str, ok: tuple[int, ...] = (0,)) -> str:
    """`kraft-audit ARGS`' output; RuntimeError on an exit code not in `ok`."""
    result = subprocess.run([sys.executable, "-m", "kraft_audit.cli.main", *args],
                            capture_output=True, text=True, timeout=300)
    if result.returncode not in ok:
        raise RuntimeError(f"kraft-audit {' '.join(args)} failed ({result.returncode}): "
                           f"{result.stderr[-2000:]}")
    return result.stdout


def _copy_files(source: Path, target: Path, files: list[Path]) -> Path:
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for f in files:
        shutil.copyfile(f, target / f.name)
    return target
