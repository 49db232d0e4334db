"""Record values: the framed metadata record (`uvarint frameVersion=1,
uvarint apiKey, uvarint version, body`) and the bodies of Raft control records.

Decoding is the hot path of the whole auditor, so for every (apiKey,
version) the schema table is compiled once, at import, into a plain Python
function with the field reads unrolled (struct.unpack_from, inline varints);
the per-record work has no per-field dispatch. Encoders are compiled the
same way, for the simulator's writer.

`data` dicts hold every field of the version by camelCase name, in schema
order, with absent tagged fields at their default. Unknown tagged fields are
kept (not an error) under ``data["_unknownTaggedFields"]`` as
``[{"tag": n, "hex": "..."}]`` and are written back by the encoder.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import Any

from kraft_audit.core.codec import wire
from kraft_audit.core.codec.schemas import (
    CONTROL_BY_NAME,
    CONTROL_BY_TYPE,
    CONTROL_TYPE_NAMES,
    METADATA_BY_TYPE,
    METADATA_RECORDS,
    Field,
    MessageSchema,
    fields_for,
)
from kraft_audit.core.events import UNKNOWN_RECORD
from kraft_audit.errors import RecordDecodeError  # noqa: F401 (exported here too)

FRAME_VERSION = 1  # AbstractApiMessageSerde: any other frame version is rejected
MAX_API_KEY_OR_VERSION = 32767
UNKNOWN_TAGGED_FIELDS = "_unknownTaggedFields"


# ---------------------------------------------------------------- decoding

_UUID_CACHE: dict[bytes, str] = {}
_UUID_CACHE_LIMIT = 1 << 16


def _uuid(raw: bytes) -> str:
    # Topic ids repeat on every partition record: cache their text form.
    text = _UUID_CACHE.get(raw)
    if text is None:
        if len(raw) != 16:
            raise RecordDecodeError("uuid runs past the end of the record")
        if len(_UUID_CACHE) >= _UUID_CACHE_LIMIT:
            _UUID_CACHE.clear()
        text = _UUID_CACHE[raw] = wire.uuid_to_str(raw)
    return text


# The unpackers of the int32 arrays a record holds (broker lists), by length: the
# generated decoders index this list instead of calling _int32s (a call per array)
_INT32_ARRAYS = [struct.Struct(f">{count}i").unpack_from for count in range(256)]


def _int32s(count: int) -> Callable:
    return _INT32_ARRAYS[count] if count < len(_INT32_ARRAYS) else struct.Struct(f">{count}i").unpack_from


def _null_in_non_nullable(name: str):
    return RecordDecodeError(f"non-nullable field {name} was serialized as null")


def _overrun(name: str, count: int):
    return RecordDecodeError(f"field {name} claims length {count}, more than the record holds")


# Fixed-width types and their struct format (a uuid is read as 16 raw bytes;
# struct's "?" is Kafka's "any non-zero byte is true").
_FIXED_FORMAT = {
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "int64": "q",
    "float64": "d",
    "bool": "?",
    "uuid": "16s",
}

_NAMESPACE: dict[str, Any] = {
    "_uvarint": wire.read_uvarint,
    "_uuid": _uuid,
    "_int32s": _int32s,
    "_I32": _INT32_ARRAYS,
    "_UUIDS": _UUID_CACHE,
    "_b64": lambda raw: base64.b64encode(raw).decode("ascii"),
    "_null": _null_in_non_nullable,
    "_overrun": _overrun,
    "RecordDecodeError": RecordDecodeError,
    "_UNKNOWN": UNKNOWN_TAGGED_FIELDS,
}


class _DecoderCompiler:
    """Writes the source of one decode function per struct and version. What a subclass
    may change (dump's line writers, codec/dumpjson.py, read the same bytes the same way):
    where a tagged field's value goes, what becomes of an unknown tagged field and of an
    int32 array once read."""

    UNKNOWN_TAGGED = ("d.setdefault(_UNKNOWN, []).append("
                      "{'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})")

    def __init__(self) -> None:
        self.sources: list[str] = []
        self.structs: dict[str, Callable] = {}  # name in the generated code -> Struct.unpack_from
        self.count = 0

    def struct_function(self, fields: tuple[Field, ...], version: int) -> str:
        self.count += 1
        name = f"_decode_{self.count}"
        present = fields_for(fields, version)
        # field name -> expression for the dict literal: a local, or a tagged field's default
        values = {fl.name: f"v{i}" if fl.tag is None else repr(fl.default_value(version))
                  for i, fl in enumerate(present)}
        body = self.read_untagged(present, version, lambda fl: values[fl.name])
        # One dict literal in schema order: tagged fields start at their default.
        body.append("d = {" + ", ".join(f"{k!r}: {v}" for k, v in values.items()) + "}")
        body += self.tagged_section([fl for fl in present if fl.tag is not None], version)
        body.append("return d, pos")
        self.sources.append(
            f"def {name}(buf, pos, end):\n" + "".join(f"    {line}\n" for line in body)
        )
        return name

    def read_untagged(self, present: list[Field], version: int, local_of: Callable[[Field], str]
                      ) -> list[str]:
        """Lines reading the untagged fields in order, each into local_of(field);
        consecutive fixed-width ones by one unpack."""
        body: list[str] = []
        run: list[tuple[Field, str]] = []
        for fl in present:
            if fl.tag is not None:
                continue
            if fl.type in _FIXED_FORMAT:
                run.append((fl, local_of(fl)))
                continue
            body += self.fixed_run(run)
            run = []
            body += self.read_field(fl, version, local_of(fl))
        return body + self.fixed_run(run)

    def fixed_run(self, run: list[tuple[Field, str]]) -> list[str]:
        """Read fixed-width fields into their targets with one struct unpack."""
        if not run:
            return []
        fmt = ">" + "".join(_FIXED_FORMAT[fl.type] for fl, _ in run)
        unpacker = f"_S{len(self.structs)}"
        self.structs[unpacker] = struct.Struct(fmt).unpack_from
        lines = [
            ", ".join(local for _, local in run) + f", = {unpacker}(buf, pos)",
            f"pos += {struct.calcsize(fmt)}",
        ]
        # a cached text first (topic ids repeat): no call; a text is never empty
        lines += [f"{local} = _UUIDS.get({local}) or _uuid({local})"
                  for fl, local in run if fl.type == "uuid"]
        return lines

    @staticmethod
    def uvarint(var: str) -> list[str]:
        return [
            f"{var} = buf[pos]",
            f"if {var} < 128:",
            "    pos += 1",
            "else:",
            f"    {var}, pos = _uvarint(buf, pos)",
        ]

    def length_prefix(self, fl: Field, version: int, target: str) -> tuple[list[str], str]:
        """Read a compact length into n; returns the lines and the indent for what follows."""
        lines = self.uvarint("n")
        if fl.nullable_in(version):
            lines += ["if n == 0:", f"    {target} = None", "else:", "    n -= 1"]
            return lines, "    "
        lines += ["if n == 0:", f"    raise _null({fl.name!r})", "n -= 1"]
        return lines, ""

    def read_field(self, fl: Field, version: int, target: str) -> list[str]:
        t = fl.type
        if t in _FIXED_FORMAT:
            return self.fixed_run([(fl, target)])
        if t == "struct":
            sub = self.struct_function(fl.fields, version)
            return [f"{target}, pos = {sub}(buf, pos, end)"]
        lines, ind = self.length_prefix(fl, version, target)
        if t in ("string", "bytes"):
            convert = (
                "bytes(buf[pos:pos + n]).decode('utf-8')"
                if t == "string"
                else "_b64(buf[pos:pos + n])"
            )
            body = [
                "if pos + n > end:",
                f"    raise _overrun({fl.name!r}, n)",
                f"{target} = {convert}",
                "pos += n",
            ]
        elif t == "[]int32":
            body = [
                "if n > (end - pos) >> 2:",
                f"    raise _overrun({fl.name!r}, n)",
                *self.int32_array(target),
                "pos += 4 * n",
            ]
        elif t == "[]uuid":
            body = [
                "if n > (end - pos) >> 4:",
                f"    raise _overrun({fl.name!r}, n)",
                f"{target} = [_uuid(buf[p:p + 16]) for p in range(pos, pos + 16 * n, 16)]",
                "pos += 16 * n",
            ]
        elif t == "[]string":
            body = [
                "if n > end - pos:",
                f"    raise _overrun({fl.name!r}, n)",
                "items = []",
                "for _ in range(n):",
            ]
            body += ["    " + x for x in self.uvarint("k")]
            body += [
                "    if k == 0:",
                f"        raise _null({fl.name!r})",
                "    k -= 1",
                "    items.append(bytes(buf[pos:pos + k]).decode('utf-8'))",
                "    pos += k",
                f"{target} = items",
            ]
        elif t == "[]struct":
            sub = self.struct_function(fl.fields, version)
            body = [
                "if n > end - pos:",
                f"    raise _overrun({fl.name!r}, n)",
                "items = []",
                "for _ in range(n):",
                f"    item, pos = {sub}(buf, pos, end)",
                "    items.append(item)",
                f"{target} = items",
            ]
        else:
            raise AssertionError(f"schema type {t} has no decoder")
        return lines + [ind + x for x in body]

    @staticmethod
    def int32_array(target: str) -> list[str]:
        """Lines reading the int32 array of n elements at pos into target."""
        return [f"{target} = list((_I32[n] if n < {len(_INT32_ARRAYS)} else _int32s(n))(buf, pos))"]

    @staticmethod
    def tagged_target(fl: Field) -> str:
        return f"d[{fl.name!r}]"

    def tagged_section(self, tagged: list[Field], version: int) -> list[str]:
        lines = self.uvarint("tags")
        lines += [
            "for _ in range(tags):",
            "    tag = buf[pos]",
            "    size = buf[pos + 1]",
            "    if tag < 128 and size < 128:",
            "        pos += 2",
            "    else:",
            "        tag, pos = _uvarint(buf, pos)",
            "        size, pos = _uvarint(buf, pos)",
            "    fend = pos + size",
            "    if fend > end:",
            "        raise RecordDecodeError(",
            "            f'tagged field {tag} of size {size} runs past the end')",
        ]
        keyword = "if"
        for fl in sorted(tagged, key=lambda x: x.tag):
            lines.append(f"    {keyword} tag == {fl.tag}:")
            lines += ["        " + x for x in self.read_field(fl, version, self.tagged_target(fl))]
            keyword = "elif"
        unknown = [self.UNKNOWN_TAGGED, "pos = fend"]
        if tagged:
            lines += ["    else:"] + ["        " + x for x in unknown]
        else:
            lines += ["    " + x for x in unknown]
        lines += [
            "    if pos != fend:",
            "        raise RecordDecodeError(",
            "            f'tagged field {tag} declared {size} bytes but held a different amount')",
        ]
        return lines


def _compile(schemas: tuple[MessageSchema, ...]) -> dict[tuple[int, int], Callable]:
    compiler = _DecoderCompiler()
    names = {}
    for schema in schemas:
        for version in schema.versions:
            names[(schema.api_key if schema.api_key >= 0 else schema.control_type, version)] = (
                compiler.struct_function(schema.fields, version)
            )
    namespace = {**_NAMESPACE, **compiler.structs}
    exec("\n".join(compiler.sources), namespace)  # noqa: S102 - source generated from our own schema table
    return {key: namespace[name] for key, name in names.items()}


_METADATA_DECODERS = _compile(METADATA_RECORDS)
_CONTROL_DECODERS = _compile(tuple(CONTROL_BY_TYPE.values()))

# (apiKey, version) -> (type name, body decoder): what the batch reader inlines.
METADATA_DECODERS: dict[tuple[int, int], tuple[str, Callable]] = {
    (schema.api_key, version): (schema.type_name, _METADATA_DECODERS[(schema.api_key, version)])
    for schema in METADATA_RECORDS
    for version in schema.versions
}

# The batch reader's lookup: the first three bytes of a value (frame 1,
# one-byte apiKey, one-byte version) -> (type name, body decoder, apiKey, version).
PREFIX_DECODERS: dict[bytes, tuple[str, Callable, int, int]] = {
    bytes((FRAME_VERSION, api_key, version)): (type_name, decode_body, api_key, version)
    for (api_key, version), (type_name, decode_body) in METADATA_DECODERS.items()
    if api_key < 0x80 and version < 0x80
}


def decode_value(
    buf: bytes | bytearray, pos: int = 0, end: int | None = None
) -> tuple[int, int, str, dict[str, Any]]:
    """Decode one framed metadata record value.

    Returns ``(api_key, version, type_name, data)``. An apiKey or version this
    build does not know gives ``type_name == "UNKNOWN_RECORD"`` and empty data.
    Raises `RecordDecodeError` for bytes Kafka would reject.
    """
    end = len(buf) if end is None else end
    try:
        frame, pos = wire.read_uvarint(buf, pos)
        if frame != FRAME_VERSION:
            raise RecordDecodeError(f"frame version {frame}, expected {FRAME_VERSION}")
        api_key, pos = wire.read_uvarint(buf, pos)
        version, pos = wire.read_uvarint(buf, pos)
        if api_key > MAX_API_KEY_OR_VERSION or version > MAX_API_KEY_OR_VERSION:
            raise RecordDecodeError(
                f"apiKey {api_key} or version {version} is above {MAX_API_KEY_OR_VERSION}"
            )
        entry = METADATA_DECODERS.get((api_key, version))
        if entry is None:
            return api_key, version, UNKNOWN_RECORD, {}
        type_name, decode_body = entry
        data, pos = decode_body(buf, pos, end)
    except RecordDecodeError:
        raise
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as exc:
        raise RecordDecodeError(f"body ends early or is malformed ({exc})") from None
    if pos != end:
        raise RecordDecodeError(_length_mismatch(type_name, version, pos, end))
    return api_key, version, type_name, data


def _length_mismatch(type_name: str, version: int, pos: int, end: int) -> str:
    if pos > end:
        return f"{type_name} v{version} runs {pos - end} bytes past the end of the value"
    return f"{end - pos} bytes left over after {type_name} v{version}"


def decode_control(
    control_type: int, buf: bytes, pos: int = 0, end: int | None = None
) -> tuple[str, int, dict[str, Any]]:
    """Decode a control record value. Returns ``(type_name, version, data)``.

    The body starts with its own int16 Version; it is read at that version
    (capped at the newest this build knows). ABORT/COMMIT markers and
    unknown control types come back with empty data.
    """
    end = len(buf) if end is None else end
    schema = CONTROL_BY_TYPE.get(control_type)
    if schema is None:
        return CONTROL_TYPE_NAMES.get(control_type, f"CONTROL_TYPE_{control_type}"), 0, {}
    try:
        (version,) = wire.INT16.unpack_from(buf, pos)
        read_version = min(max(version, schema.min_version), schema.max_version)
        data, pos = _CONTROL_DECODERS[(control_type, read_version)](buf, pos, end)
    except RecordDecodeError:
        raise
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as exc:
        raise RecordDecodeError(
            f"{schema.type_name} body ends early or is malformed ({exc})"
        ) from None
    if pos != end:
        raise RecordDecodeError(_length_mismatch(schema.type_name, version, pos, end))
    return schema.type_name, version, data


# ---------------------------------------------------------------- encoding


def _not_nullable(name: str):
    return ValueError(f"field {name} is not nullable")


def _uuid_bytes(text: str) -> bytes:
    raw = _UUID_BYTES_CACHE.get(text)
    if raw is None:
        if len(_UUID_BYTES_CACHE) >= _UUID_CACHE_LIMIT:
            _UUID_BYTES_CACHE.clear()
        raw = _UUID_BYTES_CACHE[text] = wire.uuid_from_str(text)
    return raw


_UUID_BYTES_CACHE: dict[str, bytes] = {}

_ENCODE_NAMESPACE: dict[str, Any] = {
    "_uv": wire.write_uvarint,
    "_ub": _uuid_bytes,
    "_b64d": base64.b64decode,
    "_not_null": _not_nullable,
    "_pack": struct.pack,
    "_UNKNOWN": UNKNOWN_TAGGED_FIELDS,
    "_fromhex": bytes.fromhex,
}


class SourceCompiler:
    """What the compilers that write functions as source share: the sources written so far,
    the constants they name and a counter for function names."""

    def __init__(self) -> None:
        self.sources: list[str] = []
        self.constants: dict[str, Any] = {}
        self.count = 0

    def constant(self, value: Any) -> str:
        name = f"_C{len(self.constants)}"
        self.constants[name] = value
        return name


class _EncoderCompiler(SourceCompiler):
    """Writes the source of one encode function per struct and version: the
    mirror of `_DecoderCompiler`. Missing fields take their default."""

    def struct_function(self, fields: tuple[Field, ...], version: int) -> str:
        self.count += 1
        name = f"_encode_{self.count}"
        present = fields_for(fields, version)
        body: list[str] = []
        run: list[Field] = []
        for fl in present:
            if fl.tag is not None:
                continue
            if fl.type in _FIXED_FORMAT:
                run.append(fl)
                continue
            body += self.fixed_run(run, version)
            run = []
            body.append(f"v = d.get({fl.name!r}, {self.default(fl, version)})")
            body += self.write_field(fl, version, "o")
        body += self.fixed_run(run, version)
        tagged = sorted((fl for fl in present if fl.tag is not None), key=lambda x: x.tag)
        body.append("tagged = []")
        for fl in tagged:
            default = self.default(fl, version)
            body += [
                f"v = d.get({fl.name!r}, {default})",
                f"if v != {default}:",
                "    t = bytearray()",
            ]
            body += ["    " + x for x in self.write_field(fl, version, "t")]
            body.append(f"    tagged.append(({fl.tag}, t))")
        body += [
            "unknown = d.get(_UNKNOWN)",
            "if unknown:",
            "    tagged += [(u['tag'], _fromhex(u['hex'])) for u in unknown]",
            "    tagged.sort(key=lambda item: item[0])",
            "o += _uv(len(tagged))",
            "for tag, t in tagged:",
            "    o += _uv(tag)",
            "    o += _uv(len(t))",
            "    o += t",
        ]
        self.sources.append(f"def {name}(d, o):\n" + "".join(f"    {line}\n" for line in body))
        return name

    def default(self, fl: Field, version: int) -> str:
        value = fl.default_value(version)
        return repr(value) if not isinstance(value, (list, dict)) else self.constant(value)

    def fixed_run(self, run: list[Field], version: int) -> list[str]:
        if not run:
            return []
        fmt = ">" + "".join(_FIXED_FORMAT[fl.type] for fl in run)
        args = []
        for fl in run:
            get = f"d.get({fl.name!r}, {self.default(fl, version)})"
            args.append(f"_ub({get})" if fl.type == "uuid" else get)
        return [f"o += {self.constant(struct.Struct(fmt).pack)}({', '.join(args)})"]

    def write_field(self, fl: Field, version: int, o: str) -> list[str]:
        """Lines writing the value in ``v`` to the bytearray named ``o``."""
        t = fl.type
        if t == "uuid":
            return [f"{o} += _ub(v)"]
        if t in _FIXED_FORMAT:
            return [f"{o} += {self.constant(struct.Struct('>' + _FIXED_FORMAT[t]).pack)}(v)"]
        if t == "struct":
            return [f"{self.struct_function(fl.fields, version)}(v, {o})"]
        null = f"{o}.append(0)" if fl.nullable_in(version) else f"raise _not_null({fl.name!r})"
        lines = ["if v is None:", f"    {null}", "else:"]
        if t == "string":
            body = ["r = v.encode('utf-8')", f"{o} += _uv(len(r) + 1)", f"{o} += r"]
        elif t == "bytes":
            body = [
                "r = _b64d(v) if isinstance(v, str) else bytes(v)",
                f"{o} += _uv(len(r) + 1)",
                f"{o} += r",
            ]
        else:
            body = [f"{o} += _uv(len(v) + 1)"]
            if t == "[]int32":
                body.append(f"{o} += _pack(f'>{{len(v)}}i', *v)")
            elif t == "[]uuid":
                body += ["for x in v:", f"    {o} += _ub(x)"]
            elif t == "[]string":
                body += [
                    "for x in v:",
                    "    r = x.encode('utf-8')",
                    f"    {o} += _uv(len(r) + 1)",
                    f"    {o} += r",
                ]
            elif t == "[]struct":
                body += ["for x in v:", f"    {self.struct_function(fl.fields, version)}(x, {o})"]
            else:
                raise AssertionError(f"schema type {t} has no encoder")
        return lines + ["    " + x for x in body]


def _compile_encoders(schemas: tuple[MessageSchema, ...]) -> dict[tuple[str, int], Callable]:
    compiler = _EncoderCompiler()
    names = {
        (schema.type_name, version): compiler.struct_function(schema.fields, version)
        for schema in schemas
        for version in schema.versions
    }
    namespace = {**_ENCODE_NAMESPACE, **compiler.constants}
    exec("\n".join(compiler.sources), namespace)  # noqa: S102 - source generated from our own schema table
    return {key: namespace[name] for key, name in names.items()}


_ENCODERS: dict[tuple[str, int], Callable] = {}  # compiled on first use: reading a log encodes nothing


def _encoder(type_name: str, version: int) -> Callable | None:
    if not _ENCODERS:
        _ENCODERS.update(_compile_encoders(METADATA_RECORDS + tuple(CONTROL_BY_TYPE.values())))
    return _ENCODERS.get((type_name, version))


def encode_body(schema: MessageSchema, version: int, data: dict[str, Any]) -> bytes:
    """The message body alone (no frame); missing fields take their default."""
    encode = _encoder(schema.type_name, version)
    if encode is None:
        raise ValueError(f"{schema.type_name} has no version {version}")
    out = bytearray()
    try:
        encode(data, out)
    except (struct.error, TypeError, AttributeError, KeyError, wire.WireError) as exc:
        raise ValueError(f"{schema.type_name} v{version}: {exc}") from None
    return bytes(out)


def encode_value(type_name: str, version: int, data: dict[str, Any]) -> bytes:
    """A framed metadata record value, as MetadataRecordSerde writes it.

    Tagged fields at their default are omitted and the rest are written in
    ascending tag order, as Kafka's generated code does.
    """
    schema = METADATA_BY_TYPE.get(type_name)
    if schema is None:
        raise ValueError(f"unknown metadata record type {type_name!r}")
    return (
        wire.write_uvarint(FRAME_VERSION)
        + wire.write_uvarint(schema.api_key)
        + wire.write_uvarint(version)
        + encode_body(schema, version, data)
    )


def encode_control(type_name: str, data: dict[str, Any]) -> tuple[bytes, bytes]:
    """A control record's ``(key, value)``: key = int16 version 0 + int16 type."""
    schema = CONTROL_BY_NAME.get(type_name)
    if schema is None:
        raise ValueError(f"unknown control record type {type_name!r}")
    version = data.get("version", schema.min_version)
    key = wire.INT16.pack(0) + wire.INT16.pack(schema.control_type)
    return key, encode_body(schema, min(version, schema.max_version), {**data, "version": version})
