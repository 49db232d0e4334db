"""The codec's functions written as Python source from the schema table (codec/schemas.py):
the record decoders, one per (apiKey or control type, version), with the field reads
unrolled (consecutive fixed-width fields by one struct unpack, one-byte varints inline,
`data` as one dict literal with the tagged fields at their default); the encoders and
dump's writers (codec/records.py, codec/dumpjson.py) build on `SourceCompiler` and
`DecoderCompiler`.

The decoders live in a module, codec/generated_decoders.py, written by

    python -m kraft_audit.core.codec.codegen

(after a change to the schema table or to the compiler): a module, not source exec'd at
import, so that the optional compiled build (deploy/compiled/build.py) compiles them too,
and typed for it (`pos` and the lengths are ints). tests/test_codec_generated.py fails when
the committed file is not the text this gives.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kraft_audit.core.codec.decodesupport import INT32_ARRAYS, NAMES
from kraft_audit.core.codec.schemas import (
    CONTROL_BY_TYPE,
    METADATA_RECORDS,
    Field,
    MessageSchema,
    fields_for,
)

GENERATED_DECODERS = Path(__file__).with_name("generated_decoders.py")

# Fixed-width types and their struct format (a uuid is read as 16 raw bytes;
# struct's "?" is Kafka's "any non-zero byte is true").
FIXED_FORMAT = {
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "int64": "q",
    "float64": "d",
    "bool": "?",
    "uuid": "16s",
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


class DecoderCompiler:
    """Writes the source of one decode function per struct and version. What a subclass
    may change (dump's line writers, codec/dumpjson.py, read the same bytes the same way):
    where a tagged field's value goes, what becomes of an unknown tagged field and of an
    int32 array once read. The source calls the helpers of codec/decodesupport.py by the
    short names of its `NAMES`."""

    UNKNOWN_TAGGED = ("d.setdefault(_UNKNOWN, []).append("
                      "{'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})")

    def __init__(self) -> None:
        self.sources: list[str] = []
        # a struct format -> its unpacker's name in the generated code, one per format: a
        # smaller namespace (its dict is what every global name of the functions is read from)
        self.structs: dict[str, str] = {}
        self.count = 0

    def unpackers(self) -> dict[str, Callable]:
        """The structs' names -> their unpack_from, for source exec'd rather than imported."""
        return {name: struct.Struct(fmt).unpack_from for fmt, name in self.structs.items()}

    def struct_function(self, fields: tuple[Field, ...], version: int) -> str:
        self.count += 1
        name = f"_decode_{self.count}"
        present = fields_for(fields, version)
        # field name -> expression for the dict literal: a local, or a tagged field's default
        values = {fl.name: f"v{i}" if fl.tag is None else repr(fl.default_value(version))
                  for i, fl in enumerate(present)}
        body = self.read_untagged(present, version, lambda fl: values[fl.name])
        # One dict literal in schema order: tagged fields start at their default.
        body.append("d: dict[str, Any] = {"
                    + ", ".join(f"{k!r}: {v}" for k, v in values.items()) + "}")
        body += self.tagged_section([fl for fl in present if fl.tag is not None], version)
        body.append("return d, pos")
        self.sources.append(
            f"def {name}(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:\n"
            + "".join(f"    {line}\n" for line in body)
        )
        return name

    def read_untagged(self, present: tuple[Field, ...], version: int,
                      local_of: Callable[[Field], str]) -> list[str]:
        """Lines reading the untagged fields in order, each into local_of(field);
        consecutive fixed-width ones by one unpack."""
        body: list[str] = []
        run: list[tuple[Field, str]] = []
        for fl in present:
            if fl.tag is not None:
                continue
            if fl.type in FIXED_FORMAT:
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
        fmt = ">" + "".join(FIXED_FORMAT[fl.type] for fl, _ in run)
        unpacker = self.structs.setdefault(fmt, f"_S{len(self.structs)}")
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
        if t in FIXED_FORMAT:
            return self.fixed_run([(fl, target)])
        if t == "struct":
            sub = self.struct_function(fl.fields, version)
            return [f"{target}, pos = {sub}(buf, pos, end)"]
        lines, ind = self.length_prefix(fl, version, target)
        items = f"items_{fl.name}"  # a list per field: one type each, for the compiled build
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
                f"{items}: list[str] = []",
                "for _ in range(n):",
            ]
            body += ["    " + x for x in self.uvarint("k")]
            body += [
                "    if k == 0:",
                f"        raise _null({fl.name!r})",
                "    k -= 1",
                f"    {items}.append(bytes(buf[pos:pos + k]).decode('utf-8'))",
                "    pos += k",
                f"{target} = {items}",
            ]
        elif t == "[]struct":
            sub = self.struct_function(fl.fields, version)
            body = [
                "if n > end - pos:",
                f"    raise _overrun({fl.name!r}, n)",
                f"{items}: list[Any] = []",
                "for _ in range(n):",
                f"    item, pos = {sub}(buf, pos, end)",
                f"    {items}.append(item)",
                f"{target} = {items}",
            ]
        else:
            raise AssertionError(f"schema type {t} has no decoder")
        return lines + [ind + x for x in body]

    @staticmethod
    def int32_array(target: str) -> list[str]:
        """Lines reading the int32 array of n elements at pos into target."""
        return [f"{target} = list((_I32[n] if n < {len(INT32_ARRAYS)} else _int32s(n))(buf, pos))"]

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


class EncoderCompiler(SourceCompiler):
    """Writes the source of one encode function per struct and version: the
    mirror of `DecoderCompiler`. Missing fields take their default; the source calls
    what the namespace `compile_encoders` is given holds."""

    def struct_function(self, fields: tuple[Field, ...], version: int) -> str:
        self.count += 1
        name = f"_encode_{self.count}"
        present = fields_for(fields, version)
        body: list[str] = []
        run: list[Field] = []
        for fl in present:
            if fl.tag is not None:
                continue
            if fl.type in FIXED_FORMAT:
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
        fmt = ">" + "".join(FIXED_FORMAT[fl.type] for fl in run)
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
        if t in FIXED_FORMAT:
            return [f"{o} += {self.constant(struct.Struct('>' + FIXED_FORMAT[t]).pack)}(v)"]
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


def compile_encoders(schemas: tuple[MessageSchema, ...], namespace: dict[str, Any]
                     ) -> dict[tuple[str, int], Callable]:
    """(type name, version) -> its encoder of a data dict into a bytearray (exec'd: the
    simulator's writer and the tests encode, no reader does)."""
    compiler = EncoderCompiler()
    names = {
        (schema.type_name, version): compiler.struct_function(schema.fields, version)
        for schema in schemas
        for version in schema.versions
    }
    namespace = {**namespace, **compiler.constants}
    exec("\n".join(compiler.sources), namespace)  # noqa: S102 - source generated from our own schema table
    return {key: namespace[name] for key, name in names.items()}


def _schema_key(schema: MessageSchema) -> int:
    return schema.api_key if schema.api_key >= 0 else schema.control_type


def decoders_source() -> str:
    """The text of codec/generated_decoders.py."""
    compiler = DecoderCompiler()
    tables = {}
    for table, schemas in (("METADATA_DECODERS", METADATA_RECORDS),
                           ("CONTROL_DECODERS", tuple(CONTROL_BY_TYPE.values()))):
        tables[table] = {(_schema_key(schema), version): (schema.type_name,
                                                          compiler.struct_function(schema.fields, version))
                         for schema in schemas for version in schema.versions}
    out = [
        '"""The record decoders: one function per (apiKey or control type, version) from a\n'
        "value's body to its `data` dict and where the reads stopped. GENERATED from the schema\n"
        "table by `python -m kraft_audit.core.codec.codegen`, which rewrites this file: do not\n"
        "edit it (tests/test_codec_generated.py fails when it differs from what the table\n"
        'gives). codec/codegen.py says how they read."""\n'
        "# ruff: noqa\n\n"
        "from __future__ import annotations\n\n"
        "import struct\n"
        "from typing import Any, Final\n\n"
        "from kraft_audit.core.codec import decodesupport\n"
        "from kraft_audit.core.codec.decodesupport import BodyDecoder, Buffer\n\n"
        # assigned, not imported: CPython 3.11 reads `x.get(...)` of an imported x as an
        # attribute and a call of the bound method it makes, not as a method call
        + "".join(f"{short}: Final = decodesupport.{name}\n" for short, name in NAMES.items())
        + "\n",
        "".join(f"{name}: Final = struct.Struct({fmt!r}).unpack_from\n"
                for fmt, name in compiler.structs.items()),
    ]
    out += ["\n\n" + source for source in compiler.sources]
    # (apiKey or control type, version) -> (type name, decoder): all the codec reads of this
    # file, so that a stale one still imports (and this module can rewrite it)
    for table, names in tables.items():
        entries = "".join(f"    {key!r}: ({type_name!r}, {name}),\n"
                          for key, (type_name, name) in names.items())
        out.append(f"\n\n{table}: dict[tuple[int, int], tuple[str, BodyDecoder]] = {{\n{entries}}}\n")
    return "".join(out)


def rewrite(path: Path = GENERATED_DECODERS) -> bool:
    """Write the decoders' module where it is not already the text the table gives; whether
    it wrote."""
    text = decoders_source()
    if path.exists() and path.read_text() == text:
        return False
    path.write_text(text)
    return True


if __name__ == "__main__":
    rewritten = rewrite()
    print(f"{GENERATED_DECODERS.name}: {'rewritten' if rewritten else 'up to date'}")
