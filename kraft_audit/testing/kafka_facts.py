"""What Kafka's released jars say about metadata.version levels and features, merged into
the table the rules read (kraft_audit/data/kafka_versions.json):

    python -m kraft_audit.testing.kafka_facts 3.7.2 3.8.1 ... 4.4.0   # `make kafka-matrix` first

Each release's own classes are asked (KafkaFacts.java, run with the release's jars on the
classpath), never its version number. The merge keeps, for each level, what the newest release
that knows it says of its name and whether it is production, and counts it as changing the
metadata format only when every release that knows it says so (a level an unreleased line
flagged differently is not held against a downgrade). A capability (an `is...()` method of
MetadataVersion) is the range of levels it holds at, each level as the newest release that
knows it says, open (None) when it holds up to the highest level known.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kraft_audit.core.metadata_versions import TABLE_FILE
from kraft_audit.testing.realkafka.cluster import kafka_jars

PROGRAM = Path(__file__).resolve().parent / "realkafka" / "KafkaFacts.java"


def version_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def release_facts(jars: Path) -> dict:
    """KafkaFacts.java's answer for the release whose jars are in `jars`."""
    result = subprocess.run(["java", "-cp", f"{jars}/*", str(PROGRAM)],
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"KafkaFacts.java on {jars} failed: {result.stderr[-2000:]}")
    facts = json.loads(result.stdout)
    # a 3.x MetadataVersion also lists the ZooKeeper inter-broker protocols, at level -1
    facts["metadata_versions"] = [m for m in facts["metadata_versions"] if m["level"] > 0]
    return facts


def capabilities(holds: dict[int, set[str]]) -> dict[str, list]:
    """Each is...() method -> [first level, last level or None: up to the highest], from
    the methods that hold at each level."""
    holding: dict[str, list[int]] = {}
    for level in sorted(holds):
        for name in holds[level]:
            holding.setdefault(name, []).append(level)
    ranges = {}
    for name, at in sorted(holding.items()):
        if at != list(range(at[0], at[-1] + 1)):
            raise ValueError(f"{name} holds at levels {at}, not one range")
        ranges[name] = [at[0], None if at[-1] == max(holds) else at[-1]]
    return ranges


def _holds(table: dict, levels: set[int]) -> dict[int, set[str]]:
    """The table's capabilities as the methods that hold at each of `levels` (an open range
    goes on to the highest of them)."""
    return {level: {name for name, (first, last) in table["capabilities"].items()
                    if first <= level <= (max(levels) if last is None else last)} for level in levels}


EMPTY = {"releases": [], "metadata_versions": {}, "capabilities": {}, "features": {}}


def merge(table: dict, release: str, facts: dict) -> dict:
    """The table with what `release` says added: a new table (the inputs are not changed)."""
    newer = not table["releases"] or version_key(release) > max(map(version_key, table["releases"]))
    levels = dict(table["metadata_versions"])
    said = {m["level"]: m for m in facts["metadata_versions"]}
    for level, m in said.items():
        key, view = str(level), {k: m[k] for k in ("version", "production", "metadata_changed")}
        known = levels.get(key)
        levels[key] = view if known is None else {
            **(view if newer else known), "metadata_changed": known["metadata_changed"] and m["metadata_changed"]}
    # a level's capabilities as the newest release that knows it says; a method this release
    # does not have (one a later line dropped, or an earlier one lacked) keeps the table's range
    has, known_methods = set(facts["capabilities"]), set(table["capabilities"])
    table_holds = _holds(table, {int(key) for key in levels})
    holds = {}
    for level, held in table_holds.items():
        if level in said and (newer or str(level) not in table["metadata_versions"]):
            held = (held - has) | set(said[level]["holds"])
        elif level in said:
            held = held | (set(said[level]["holds"]) - known_methods)
        holds[level] = held
    features = dict(table["features"])
    for name, feature in (facts.get("features") or {}).items():
        if newer or name not in features:
            features[name] = feature
    by_number = lambda items: dict(sorted(items.items(), key=lambda kv: int(kv[0])))  # noqa: E731
    return {"releases": sorted({*table["releases"], release}, key=version_key),
            "metadata_versions": by_number(levels), "capabilities": capabilities(holds),
            "features": dict(sorted(features.items()))}


def _level(key: str, m: dict) -> str:
    production = "production" if m["production"] else "testing"
    changed = ", changes the metadata format" if m["metadata_changed"] else ""
    return f"metadata.version {key} ({m['version']}, {production}{changed})"


def changes(old: dict, new: dict) -> list[tuple[str, str, str]]:
    """What `new` knows that `old` does not, or says otherwise: (what, key, text) for each
    level, capability and feature (the list of releases is not a change)."""
    found = []
    for key, m in new["metadata_versions"].items():
        was = old["metadata_versions"].get(key)
        if was is None:
            found.append(("metadata.version", key, f"{_level(key, m)}: a level the table lacks"))
        elif was != m:
            found.append(("metadata.version", key, f"{_level(key, m)}: the table has {_level(key, was)}"))
    for section, what in (("capabilities", "capability"), ("features", "feature")):
        for key, value in new[section].items():
            was = old[section].get(key)
            if was != value:
                said = "the table lacks it" if was is None else f"the table has {json.dumps(was)}"
                found.append((what, key, f"{what} {key} {json.dumps(value)}: {said}"))
    return found


def dump(table: dict) -> str:
    """The table as JSON with one entry per line, so a new release shows as a small diff."""
    sections = []
    for section, value in table.items():
        if isinstance(value, dict):
            body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in value.items())
            sections.append(f"{json.dumps(section)}: {{\n{body}\n}}")
        else:
            sections.append(f"{json.dumps(section)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(sections) + "\n}\n"


def table_of(releases: list[str]) -> dict:
    table = EMPTY
    for release in sorted(releases, key=version_key):
        table = merge(table, release, release_facts(kafka_jars(release)))
    return table


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path = Path(__file__).resolve().parents[1] / "data" / TABLE_FILE
    path.write_text(dump(table_of(argv)))
    print(f"wrote {path.name} from {', '.join(sorted(argv, key=version_key))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
