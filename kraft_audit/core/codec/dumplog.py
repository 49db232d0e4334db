"""kafka-dump-log --cluster-metadata-decoder output, read and written.

Accepted input, line by line (forms may mix):
- the tool's text: ``Dumping <file>`` / ``Log starting offset: N`` /
  ``Snapshot end offset: O, epoch: E`` headers; batch lines ``baseOffset: B
  lastOffset: L count: C ... position: P CreateTime: T ...`` that give atomic
  batch limits; record lines ``| offset: N CreateTime: T ... payload: {json}``;
  control record lines ``| offset: N ... SnapshotHeader {json}``,
  ``LeaderChange: {json}`` ([trunk]) or ``controlType: LEADER_CHANGE(2)``
  (3.x/4.0, no body: data stays empty);
- bare payload lines ``{"type":"PARTITION_CHANGE_RECORD","version":2,"data":{...}}``
  (also with ``offset``/``batchBaseOffset``/``batchLastOffset``/``timestampMs``,
  as ``kraft-audit dump`` prints them). Without offsets, records are numbered
  by line order; without batch limits, each record is its own batch.

Absent fields are filled with the defaults the binary decoder fills, so the
same record read from bytes or from text gives equal ``data``. Positions are
1-based line numbers. ``Error at <off>, skipping.`` lines and anything
unrecognised become `Quarantined` rows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from kraft_audit.core.codec.records import UNKNOWN_TAGGED_FIELDS, encode_body
from kraft_audit.core.codec.schemas import (
    CONTROL_BY_NAME,
    METADATA_BY_TYPE,
    Field,
    MessageSchema,
    fields_for,
)
from kraft_audit.core.events import KIND_CONTROL, KIND_RECORD, UNKNOWN_RECORD, MetadataEvent, Quarantined

_PAIR = re.compile(r"(\w+): (\S+)")
_ERROR = re.compile(r"Error at (-?\d+), skipping\.\s*(.*)")
# Control record prints: " SnapshotHeader {...}", " LeaderChange: {...}",
# " controlType: LEADER_CHANGE(2)"
_CONTROL_PRINTS = {
    "SnapshotHeader": "SNAPSHOT_HEADER",
    "SnapshotFooter": "SNAPSHOT_FOOTER",
    "KRaftVersion": "KRAFT_VERSION",
    "KRaftVoters": "KRAFT_VOTERS",
    "LeaderChange": "LEADER_CHANGE",
}
_CONTROL_PRINT = re.compile(
    r"\s(SnapshotHeader|SnapshotFooter|KRaftVersion|KRaftVoters|LeaderChange):? (\{.*\})\s*$"
)
_CONTROL_TYPE = re.compile(r"\scontrolType: (\w+)\((-?\d+)\)")
_HEADER_LINES = ("Dumping ", "Log starting offset:", "Snapshot end offset:", "Starting offset:")
_RAW_EXCERPT = 512


def parse_dump_log(
    lines: Iterable[str], cluster_id: str, source: str
) -> Iterator[MetadataEvent | Quarantined]:
    """Events from kafka-dump-log output (text or payload JSON lines)."""
    batch: dict[str, Any] | None = None  # the batch line the next record lines belong to
    next_offset = 0
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        stripped = line.strip()
        if not stripped or stripped.startswith(_HEADER_LINES):
            continue
        try:
            if stripped.startswith("{"):
                item = _payload_line(stripped, cluster_id, source, number, next_offset)
                batch = None
            elif stripped.startswith("baseOffset:"):
                batch = _batch_line(stripped)
                continue
            elif stripped.startswith("|"):
                item = _record_line(stripped, batch, cluster_id, source, number, next_offset)
                if batch and isinstance(item, MetadataEvent) and item.batch_base_offset == batch["base"]:
                    item.leader_epoch = batch["epoch"]
            elif error := _ERROR.search(stripped):
                item = Quarantined(
                    cluster_id,
                    source,
                    number,
                    f"line {number}: kafka-dump-log could not decode the "
                    f"record at offset {error.group(1)}: {error.group(2)}",
                    line.encode()[:_RAW_EXCERPT],
                    int(error.group(1)),
                )
            else:
                item = Quarantined(
                    cluster_id,
                    source,
                    number,
                    f"line {number} is not kafka-dump-log output",
                    line.encode()[:_RAW_EXCERPT],
                )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            item = Quarantined(
                cluster_id,
                source,
                number,
                f"line {number} does not parse: {exc}",
                line.encode()[:_RAW_EXCERPT],
            )
        if isinstance(item, MetadataEvent):
            next_offset = item.offset + 1
        yield item


def _batch_line(line: str) -> dict[str, Any]:
    pairs = dict(_PAIR.findall(line))
    return {
        "base": int(pairs["baseOffset"]),
        "last": int(pairs["lastOffset"]),
        "control": pairs.get("isControl") == "true",
        "epoch": int(pairs.get("partitionLeaderEpoch", -1)),
        "position": int(pairs.get("position", -1)),
        "time": int(pairs.get("CreateTime", pairs.get("LogAppendTime", -1))),
    }


def _record_line(
    line: str,
    batch: dict[str, Any] | None,
    cluster_id: str,
    source: str,
    number: int,
    next_offset: int,
) -> MetadataEvent | Quarantined:
    head, sep, payload = line.partition(" payload: ")
    pairs = dict(_PAIR.findall(head))
    offset = int(pairs.get("offset", next_offset))
    time = int(pairs.get("CreateTime", pairs.get("LogAppendTime", batch["time"] if batch else -1)))
    base, last = (
        (batch["base"], batch["last"])
        if batch and batch["base"] <= offset <= batch["last"]
        else (offset, offset)
    )
    if sep:
        error = _ERROR.search(payload)
        if error:
            return Quarantined(
                cluster_id,
                source,
                number,
                f"line {number}: kafka-dump-log could not decode the "
                f"record at offset {offset}: {error.group(2)}",
                line.encode()[:_RAW_EXCERPT],
                offset,
            )
        doc = json.loads(payload)
        return _event(doc, cluster_id, source, number, offset, base, last, time, line)
    if control := _CONTROL_PRINT.search(head):
        type_name = _CONTROL_PRINTS[control.group(1)]
        doc = json.loads(control.group(2))
        return _event(
            {"type": type_name, "version": doc.get("version", 0), "data": doc},
            cluster_id,
            source,
            number,
            offset,
            base,
            last,
            time,
            line,
        )
    if control := _CONTROL_TYPE.search(head):
        # 3.x/4.0 print only the type of a LeaderChange record, not its body.
        return MetadataEvent(
            cluster_id,
            source,
            number,
            offset,
            base,
            last,
            time,
            KIND_CONTROL,
            control.group(1),
            0,
            {},
        )
    raise ValueError("record line has neither a payload nor a control record")


def _payload_line(
    line: str, cluster_id: str, source: str, number: int, next_offset: int
) -> MetadataEvent | Quarantined:
    doc = json.loads(line)
    if not isinstance(doc, dict) or "type" not in doc:
        raise ValueError("JSON line has no record type")
    offset = int(doc.get("offset", next_offset))
    base = int(doc.get("batchBaseOffset", offset))
    last = int(doc.get("batchLastOffset", offset))
    return _event(
        doc, cluster_id, source, number, offset, base, last, int(doc.get("timestampMs", -1)), line
    )


def _event(
    doc: dict[str, Any],
    cluster_id: str,
    source: str,
    number: int,
    offset: int,
    base: int,
    last: int,
    time: int,
    line: str,
) -> MetadataEvent:
    type_name = doc["type"]
    version = int(doc.get("version", 0))
    data = doc.get("data") or {}
    if not isinstance(data, dict):
        raise ValueError("record data is not a JSON object")
    kind, api_key, raw = KIND_RECORD, -1, None
    if type_name in CONTROL_BY_NAME:
        kind = KIND_CONTROL
        schema = CONTROL_BY_NAME[type_name]
        read_version = min(max(version, schema.min_version), schema.max_version)
        data = _checked(schema, read_version, {**data, "version": version})
    elif type_name in METADATA_BY_TYPE and version in METADATA_BY_TYPE[type_name].versions:
        schema = METADATA_BY_TYPE[type_name]
        api_key = schema.api_key
        data = _checked(schema, version, data)
    else:
        type_name, api_key = UNKNOWN_RECORD, int(doc.get("apiKey", -1))
        has_hex = isinstance(doc.get("raw"), str)
        raw = bytes.fromhex(doc["raw"]) if has_hex else line.encode()[:_RAW_EXCERPT]
    return MetadataEvent(
        cluster_id, source, number, offset, base, last, time, kind, type_name, version, data,
        api_key, raw,
    )  # fmt: skip


def _checked(schema: MessageSchema, version: int, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` completed with defaults, with every value of the schema's
    type (encoding it is the check), so text gives what bytes would."""
    full = normalize(schema.fields, version, data)
    encode_body(schema, version, full)
    return full


def normalize(fields: tuple[Field, ...], version: int, data: dict[str, Any]) -> dict[str, Any]:
    """Every field of the version in schema order, absent ones at their default. A field is
    found whatever its case: a release's JSON spells it as its schema did (3.7's
    lastKnownELR is the bytes of the later lastKnownElr)."""
    out = {}
    spelled: dict[str, str] | None = None  # the keys by their lower case, made when one is missing
    for fl in fields_for(fields, version):
        if fl.name in data:
            value = data[fl.name]
        else:
            if spelled is None:
                spelled = {k.lower(): k for k in data}
            key = spelled.get(fl.name.lower())
            value = fl.default_value(version) if key is None else data[key]
        if fl.type == "struct" and isinstance(value, dict):
            value = normalize(fl.fields, version, value)
        elif fl.type == "[]struct" and isinstance(value, list):
            value = [normalize(fl.fields, version, item) for item in value]
        elif fl.type == "float64" and isinstance(value, int):
            value = float(value)
        out[fl.name] = value
    if UNKNOWN_TAGGED_FIELDS in data:
        out[UNKNOWN_TAGGED_FIELDS] = data[UNKNOWN_TAGGED_FIELDS]
    return out


# ---------------------------------------------------------------- writing


def to_dump_json(event: MetadataEvent) -> dict[str, Any]:
    """The payload kafka-dump-log prints: tagged fields at their default omitted."""
    if event.type == UNKNOWN_RECORD:
        return {
            "type": UNKNOWN_RECORD,
            "version": event.version,
            "apiKey": event.api_key,
            "raw": (event.raw or b"").hex(),
        }
    schema = (
        CONTROL_BY_NAME.get(event.type)
        if event.kind == KIND_CONTROL
        else METADATA_BY_TYPE.get(event.type)
    )
    data = (
        _without_tagged_defaults(schema, event.version, event.data) if schema else dict(event.data)
    )
    return {"type": event.type, "version": event.version, "data": data}


def _without_tagged_defaults(
    schema: MessageSchema, version: int, data: dict[str, Any]
) -> dict[str, Any]:
    read_version = min(max(version, schema.min_version), schema.max_version)
    return _strip(schema.fields, read_version, data)


def _strip(fields: tuple[Field, ...], version: int, data: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for fl in fields_for(fields, version):
        if fl.name not in data:
            continue
        value = data[fl.name]
        if fl.tag is not None and value == fl.default_value(version):
            continue
        if fl.type == "struct" and isinstance(value, dict):
            value = _strip(fl.fields, version, value)
        elif fl.type == "[]struct" and isinstance(value, list):
            value = [_strip(fl.fields, version, item) for item in value]
        out[fl.name] = value
    if UNKNOWN_TAGGED_FIELDS in data:
        out[UNKNOWN_TAGGED_FIELDS] = data[UNKNOWN_TAGGED_FIELDS]
    return out


_CONTROL_LABELS = {v: k for k, v in _CONTROL_PRINTS.items()}


def format_dump_log(events: Iterable[MetadataEvent | Quarantined]) -> Iterator[str]:
    """kafka-dump-log's text form of events (one string per line, no newline).

    Events do not carry a batch's leader epoch, byte size or CRC: those
    columns print as -1. Quarantined rows print as ``Error at`` lines.
    """
    pending: list[MetadataEvent] = []
    for item in events:
        if isinstance(item, Quarantined):
            yield from _format_batch(pending)
            pending = []
            yield f"Error at {item.offset}, skipping. {item.reason}"
            continue
        if pending and (item.batch_base_offset, item.source) != (
            pending[0].batch_base_offset,
            pending[0].source,
        ):
            yield from _format_batch(pending)
            pending = []
        pending.append(item)
    yield from _format_batch(pending)


def _format_batch(events: list[MetadataEvent]) -> Iterator[str]:
    if not events:
        return
    first = events[0]
    control = "true" if first.kind == KIND_CONTROL else "false"
    yield (
        f"baseOffset: {first.batch_base_offset} lastOffset: {first.batch_last_offset} "
        f"count: {len(events)} baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        f"partitionLeaderEpoch: {first.leader_epoch} "
        f"isTransactional: false isControl: {control} deleteHorizonMs: OptionalLong.empty "
        f"position: {first.position} CreateTime: {first.timestamp_ms} size: -1 magic: 2 "
        f"compresscodec: none "
        f"crc: -1 isvalid: true"
    )
    for event in events:
        head = (
            f"| offset: {event.offset} CreateTime: {event.timestamp_ms} keySize: "
            f"{4 if event.kind == KIND_CONTROL else -1} valueSize: -1 sequence: -1 headerKeys: []"
        )
        payload = to_dump_json(event)
        if event.kind == KIND_CONTROL and event.type in _CONTROL_LABELS and event.data:
            body = json.dumps(payload["data"], separators=(",", ":"))
            label = _CONTROL_LABELS[event.type]
            yield f"{head} {label}{':' if label == 'LeaderChange' else ''} {body}"
        elif (
            event.kind == KIND_CONTROL
        ):  # a control record whose body is not known: as Kafka 3.x prints it
            schema = CONTROL_BY_NAME.get(event.type)
            yield f"{head} controlType: {event.type}({schema.control_type if schema else -1})"
        else:
            yield f"{head} payload: {json.dumps(payload, separators=(',', ':'))}"
