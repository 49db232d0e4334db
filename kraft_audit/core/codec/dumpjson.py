"""`kraft-audit dump`'s JSON text of a decoded metadata record, written
without building the dict `to_dump_json` returns and without `json.dumps`.

For every (record type, version) the schema table is compiled once, at
import, into a function from the decoder's ``data`` dict straight to the
JSON text of ``to_dump_json(event)["data"]`` with ``separators=(",", ":")``:
fields in schema order, tagged fields at their default left out, strings
escaped by json's own ASCII encoder. The functions count on the values the
binary decoder gives (an int is an int, never a bool): `data_writer` is for
events decoded from bytes; other events (text input, control records,
unknown records) go through `to_dump_json` and `json.dumps`, which give the
same bytes (tests/test_dump_json.py holds the two to each other).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring_ascii
from typing import Any

from kraft_audit.core.codec.records import UNKNOWN_TAGGED_FIELDS, SourceCompiler
from kraft_audit.core.codec.schemas import METADATA_RECORDS, Field, fields_for

_INTS = {"int8", "int16", "uint16", "int32", "int64"}
_STRINGS = {"string", "bytes", "uuid"}


def _float(value: float) -> str:
    return json.dumps(value)  # NaN/Infinity and repr() exactly as json writes them


def _strs(values: list[str]) -> str:
    return "[" + ",".join(map(encode_basestring_ascii, values)) + "]"


def _unknown(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


_NAMESPACE: dict[str, Any] = {
    "_f": _float,
    "_sa": _strs,
    "_s": encode_basestring_ascii,
    "_uk": _unknown,
    "_UNKNOWN": UNKNOWN_TAGGED_FIELDS,
}


class _WriterCompiler(SourceCompiler):

    def struct_function(self, fields: tuple[Field, ...], version: int) -> str:
        self.count += 1
        name = f"_write_{self.count}"
        body = ["p = []"]
        run: list[str] = []  # f-string pieces of consecutive untagged fields
        for fl in fields_for(fields, version):
            if fl.tag is None:
                text = self.value(fl, version, 'd["' + fl.name + '"]')
                run.append(f'"{fl.name}":{{{text}}}')
                continue
            if run:
                body.append("p.append(f'" + ",".join(run) + "')")
                run = []
            default = fl.default_value(version)
            default_expr = repr(default) if not isinstance(default, (list, dict)) else self.constant(default)
            # Left out at its default (so never null below when null is the default)
            text = self.value(fl, version, "v", default is not None)
            test = "v is not None" if default is None else f"v != {default_expr}"
            body += [
                f"v = d[{fl.name!r}]",
                f"if {test}:",
                f"    p.append(f'\"{fl.name}\":{{{text}}}')",
            ]
        if run:
            body.append("p.append(f'" + ",".join(run) + "')")
        body += [
            "if _UNKNOWN in d:",
            "    p.append('\"' + _UNKNOWN + '\":' + _uk(d[_UNKNOWN]))",
            "return '{' + ','.join(p) + '}'",
        ]
        self.sources.append(f"def {name}(d):\n" + "".join(f"    {line}\n" for line in body))
        return name

    def value(self, fl: Field, version: int, v: str, may_be_null: bool = True) -> str:
        """The expression giving the JSON text of the value ``v`` of field ``fl``."""
        t = fl.type
        if t in _INTS:
            text = f"{v}"
        elif t == "bool":
            text = f'("true" if {v} else "false")'
        elif t == "float64":
            text = f"_f({v})"
        elif t in _STRINGS:
            text = f"_s({v})"
        elif t == "[]int32":
            text = f'("[" + ",".join(map(str, {v})) + "]")'
        elif t in ("[]uuid", "[]string"):
            text = f"_sa({v})"
        elif t == "struct":
            text = f"{self.struct_function(fl.fields, version)}({v})"
        elif t == "[]struct":
            sub = self.struct_function(fl.fields, version)
            text = f'("[" + ",".join(map({sub}, {v})) + "]")'
        else:
            raise AssertionError(f"schema type {t} has no JSON writer")
        if may_be_null and fl.nullable_in(version):
            text = f'("null" if {v} is None else {text})'
        return text


def _compile() -> dict[tuple[str, int], Callable[[dict[str, Any]], str]]:
    compiler = _WriterCompiler()
    names = {
        (schema.type_name, version): compiler.struct_function(schema.fields, version)
        for schema in METADATA_RECORDS
        for version in schema.versions
    }
    namespace = {**_NAMESPACE, **compiler.constants}
    exec("\n".join(compiler.sources), namespace)  # noqa: S102 - source generated from our own schema table
    return {key: namespace[name] for key, name in names.items()}


# (type name, version) -> data dict -> the JSON text of its dump form
DATA_WRITERS = _compile()

# (type name, version) -> the text before the data: '"type":"...","version":V,"data":'
PAYLOAD_HEADS = {
    key: f'"type":{encode_basestring_ascii(key[0])},"version":{key[1]},"data":' for key in DATA_WRITERS
}
