"""The generated sections of docs/tables.md, rendered from the table
declarations (kraft_audit/tables/schema.py) and the analysts' questions
(kraft_audit/tables/questions.py), so the doc never disagrees with them.
Each section sits between `<!-- generated: NAME -->` and `<!-- end: NAME -->`;
the prose around them is written by hand.

    python -m kraft_audit.tables.docs docs/tables.md     (rewrites the sections in place)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pyarrow as pa

from kraft_audit.tables.schema import APPEND, SINK, TABLES, Table


def _code(names) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _type(t: pa.DataType) -> str:
    if pa.types.is_list(t):
        return f"list<{_type(t.value_type)}>"
    if pa.types.is_map(t):
        return f"map<{_type(t.key_type)}, {_type(t.item_type)}>"
    if pa.types.is_struct(t):
        return "struct"
    return {"bool": "boolean", "date32[day]": "date"}.get(str(t), str(t))


def _identity(spec: Table) -> str:
    names = spec.keys or spec.identity
    key = f"`{names[0]}`" if len(names) == 1 else f"`({', '.join(names)})`"
    return f"{key}; {spec.merge_note}" if spec.merge_note else key


def summary() -> str:
    lines = ["| table | write | key / order | partitioned by | one row per |",
             "|---|---|---|---|---|"]
    for spec in TABLES.values():
        lines.append(f"| `{spec.name}` | {spec.mode} | {_identity(spec)} | "
                     f"{_code(spec.partition_by) or '–'} | {spec.one_row_per} |")
    return "\n".join(lines) + "\n"


def columns() -> str:
    parts = []
    for spec in TABLES.values():
        how = f"merge on {_code(spec.keys)}" if spec.mode != APPEND else "append"
        if spec.partition_by:
            how += f", partitioned by {_code(spec.partition_by)}"
        fed = (f"the operator's `{spec.source}` output" if spec.source else "the job itself")
        parts.append(f"### {spec.name}\n\n{how}; rows from {fed} (row type "
                     f"`{spec.row.__name__}`).\n\n"
                     "| column | type | | meaning |\n|---|---|---|---|\n")
        docs = spec.docs()
        for f in spec.schema:
            kind = "key" if not f.nullable else ""
            doc = docs[f.name]
            if f.name in SINK:
                kind = (kind + ", sink").strip(", ")
            parts.append(f"| `{f.name}` | `{_type(f.type)}` | {kind} | {_cell(doc)} |\n")
            if pa.types.is_list(f.type) and pa.types.is_struct(f.type.value_type):
                nested = _nested_docs(spec, f.name)
                for sub in f.type.value_type:
                    sub_kind = "key" if not sub.nullable else ""
                    parts.append(f"| `{f.name}[].{sub.name}` | `{_type(sub.type)}` | {sub_kind} | "
                                 f"{_cell(nested.get(sub.name, ''))} |\n")
        if spec.notes:
            parts.append(f"\n{spec.notes}\n")
        parts.append("\n")
    return "".join(parts)


def _nested_docs(spec: Table, name: str) -> dict[str, str]:
    from dataclasses import fields

    from kraft_audit.tables.schema import column_docs

    declared = next(f for f in fields(spec.row) if f.name == name).metadata["type"]
    return column_docs(declared[1])


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def sections() -> dict[str, str]:
    """Generated section name -> its text."""
    from kraft_audit.tables.questions import docs as question_docs

    return {"tables": summary(), "columns": columns(), "questions": question_docs()}


def render(text: str) -> str:
    """The doc with every generated section replaced by its rendering."""
    for name, body in sections().items():
        pattern = re.compile(rf"(<!-- generated: {name} -->\n).*?(<!-- end: {name} -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"no <!-- generated: {name} --> section in the doc")
        text = pattern.sub(lambda m: m.group(1) + body.rstrip("\n") + "\n" + m.group(2), text)
    return text


if __name__ == "__main__":
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/tables.md")
    path.write_text(render(path.read_text()))
