"""What a Kafka release brings that kraft-audit does not know (`make kafka-release-check
VERSION=x.y.z`, after `make kafka-matrix KAFKA_MATRIX=x.y.z`):

    python -m kraft_audit.testing.release_check 4.4.0

compares the release's own jars with what the auditor holds:
- its record schemas (the message JSON of kafka-metadata's common/metadata/ and of the Raft
  control records in kafka-clients' common/message/) with codec/schemas.py, and its
  ControlRecordType codes with the codec's control record types;
- its MetadataVersion levels, their capabilities and its features (KafkaFacts.java) with
  data/kafka_versions.json: the table with the release merged in must be the table.
It prints what is new or differs and exits 1 if anything does. An older release than the
table's newest counts only for what the table lacks (what a newer line says wins).
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

from kraft_audit.core.codec.schemas import (CONTROL_RECORDS, CONTROL_TYPE_NAMES, METADATA_RECORDS,
                                            Field, MessageSchema, version_range, type_default)
from kraft_audit.core.metadata_versions import TABLE
from kraft_audit.testing.kafka_facts import changes, merge, release_facts, version_key
from kraft_audit.testing.realkafka.cluster import kafka_jars

METADATA_JSON = "common/metadata/"
CONTROL_JSON = "common/message/"
_UNKNOWN_CONTROL = "-1"  # ControlRecordType.UNKNOWN, what an unknown type id parses to


def message_definitions(jar: Path, folder: str) -> dict[str, dict]:
    """The message JSON files of `folder` in `jar`, by their name (Kafka's files start with
    // comment lines, which JSON does not allow)."""
    found = {}
    with zipfile.ZipFile(jar) as archive:
        for entry in archive.namelist():
            if entry.startswith(folder) and entry.endswith(".json"):
                text = archive.read(entry).decode()
                body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
                message = json.loads(body)
                found[message["name"]] = message
    return found


def _default(kafka: dict, type_: str):
    """A field's default as Kafka's JSON gives it, as a value (absent: the type's default)."""
    value = kafka.get("default")
    if value is None:
        return type_default(type_)
    if value == "null":
        return None
    if type_ == "bool":
        return value == "true"
    if type_ in ("int8", "int16", "uint16", "int32", "int64"):
        return int(value, 0)
    return float(value) if type_ == "float64" else value


# the field types that are no struct (a struct's type is its name: "Voter", "[]Voter")
_PRIMITIVES = {"bool", "int8", "int16", "uint16", "int32", "int64", "float64", "string", "bytes", "uuid"}


def field_changes(where: str, kafka_fields: list[dict], ours: tuple[Field, ...], highest: int,
                  structs: dict[str, list]) -> list[str]:
    """How Kafka's fields differ from ours, for the versions up to `highest` the release has.
    `structs`: the struct types the message defines so far (a later field may name one
    without its fields, as LeaderChangeMessage's grantingVoters does)."""
    found = []
    # by name, whatever its case: a release may spell a field otherwise (3.7's lastKnownELR)
    # with the same bytes on the wire, and the dump-log reader takes any spelling
    by_name = {fl.name.lower(): fl for fl in ours}
    for kafka in kafka_fields:
        name = kafka["name"][0].lower() + kafka["name"][1:]  # the camelCase kafka-dump-log prints
        low, high = version_range(kafka["versions"])
        element = kafka["type"].removeprefix("[]")
        members = kafka.get("fields") or structs.get(element)
        if members is not None:
            structs[element] = members
            type_ = "[]struct" if kafka["type"].startswith("[]") else "struct"
        else:
            type_ = kafka["type"]
        mine = by_name.pop(name.lower(), None)
        if mine is None:
            found.append(f"{where}: field {name} ({type_}, versions {kafka['versions']}) unknown")
            continue
        theirs = (type_, low, high, version_range(kafka["nullableVersions"])[0] if "nullableVersions" in kafka
                  else None, None if kafka.get("tag") is None else int(kafka["tag"]))
        held = (mine.type, mine.min_version, mine.max_version, mine.nullable_from, mine.tag)
        if theirs != held:
            found.append(f"{where}: field {name} is (type, versions, nullable from, tag) {theirs}, "
                         f"the codec has {held}")
        if members is not None:
            found += field_changes(f"{where}.{name}", members, mine.fields, highest, structs)
        elif element in _PRIMITIVES and _default(kafka, type_) != mine.default_value(low):
            found.append(f"{where}: field {name} defaults to {_default(kafka, type_)!r}, "
                         f"the codec to {mine.default_value(low)!r}")
    found += [f"{where}: field {fl.name} the release does not have" for fl in by_name.values()
              if fl.min_version <= highest]
    return found


def schema_changes(kafka: dict, ours: MessageSchema | None) -> list[str]:
    """How one of Kafka's record definitions differs from the codec's."""
    name = kafka["name"]
    low, high = version_range(kafka["validVersions"])
    if ours is None:
        return [f"{name}: a record type the codec lacks (versions {kafka['validVersions']})"]
    found = []
    if kafka.get("flexibleVersions") != "0+":
        found.append(f"{name}: flexible versions {kafka.get('flexibleVersions')}, the codec reads 0+")
    if low < ours.min_version or high > ours.max_version:  # an older release may have fewer
        found.append(f"{name}: versions {kafka['validVersions']}, the codec has "
                     f"{ours.min_version}-{ours.max_version}")
    structs = {s["name"]: s["fields"] for s in kafka.get("commonStructs", ())}
    return found + field_changes(name, kafka["fields"], ours.fields, high, structs)


def codec_changes(jars: Path, facts: dict, older: bool = False) -> list[str]:
    """Record types, versions and fields the release defines otherwise than the codec.
    `older`: a release older than the table's newest, which may lack control records a
    later line added (counted only for what it defines otherwise)."""
    [metadata_jar] = jars.glob("kafka-metadata-*.jar")
    [clients_jar] = jars.glob("kafka-clients-*.jar")
    by_key = {s.api_key: s for s in METADATA_RECORDS}
    found = []
    for kafka in sorted(message_definitions(metadata_jar, METADATA_JSON).values(), key=lambda m: m["apiKey"]):
        if kafka.get("type") == "metadata":
            found += schema_changes(kafka, by_key.get(kafka["apiKey"]))
    control = message_definitions(clients_jar, CONTROL_JSON)
    for ours in CONTROL_RECORDS:
        if ours.name not in control:
            if not older:
                found.append(f"{ours.name}: a control record the release does not define")
        else:
            found += schema_changes(control[ours.name], ours)
    for code, name in facts["control_records"].items():
        if code != _UNKNOWN_CONTROL and CONTROL_TYPE_NAMES.get(int(code)) != name:
            found.append(f"control record type {code} is {name}, the codec has {CONTROL_TYPE_NAMES.get(int(code))}")
    return found


def release_changes(release: str, jars: Path, table: dict) -> tuple[list[str], list[tuple[str, str, str]]]:
    """(what the codec lacks or defines otherwise, what the level table lacks or says otherwise)."""
    facts = release_facts(jars)
    older = version_key(release) < max(map(version_key, table["releases"]), default=())
    return codec_changes(jars, facts, older), changes(table, merge(table, release, facts))


def main(argv: list[str], table: dict = TABLE) -> int:
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    release = argv[0]
    codec, levels = release_changes(release, kafka_jars(release), table)
    print(f"Kafka {release} against what kraft-audit knows:")
    print(f"  record schemas (codec/schemas.py): {'nothing new' if not codec else ''}")
    for line in codec:
        print(f"    {line}")
    print(f"  metadata.version levels, capabilities, features (data/kafka_versions.json): "
          f"{'nothing new' if not levels else ''}")
    for _, _, text in levels:
        print(f"    {text}")
    if codec or levels:
        print("  update codec/schemas.py (python -m kraft_audit.core.codec.codegen) and regenerate the table "
              "(python -m kraft_audit.testing.kafka_facts <the matrix and this release>), then the rules")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
