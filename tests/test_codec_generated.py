"""The record decoders are a module written from the schema table (codec/codegen.py writes
codec/generated_decoders.py): the committed file must be what the table gives, as
docs/rules.md must be what the catalog gives."""

from __future__ import annotations

from kraft_audit.core.codec.codegen import GENERATED_DECODERS, decoders_source, rewrite
from kraft_audit.core.codec.records import CONTROL_DECODERS, METADATA_DECODERS, PREFIX_DECODERS
from kraft_audit.core.codec.schemas import CONTROL_RECORDS, METADATA_RECORDS


def test_the_committed_decoders_are_what_the_schema_table_gives():
    assert GENERATED_DECODERS.read_text() == decoders_source(), (
        "run: python -m kraft_audit.core.codec.codegen")


def test_rewrite_replaces_a_stale_file_and_keeps_a_current_one(tmp_path):
    path = tmp_path / GENERATED_DECODERS.name
    path.write_text(GENERATED_DECODERS.read_text().replace("'isr': None", "'isr': []"))
    assert rewrite(path) is True
    assert path.read_text() == decoders_source()
    assert rewrite(path) is False


def test_every_type_and_version_decodes_with_a_function_of_the_module():
    """Imported, not exec'd: what the compiled build (deploy/compiled/build.py) compiles."""
    tables = [(METADATA_DECODERS, METADATA_RECORDS, "api_key"),
              (CONTROL_DECODERS, CONTROL_RECORDS, "control_type")]
    for table, schemas, key in tables:
        expected = {(getattr(s, key), v): s.type_name for s in schemas for v in s.versions}
        assert {k: type_name for k, (type_name, _) in table.items()} == expected
        for _, decode in table.values():
            assert decode.__module__ == "kraft_audit.core.codec.generated_decoders"
    assert {entry[1] for entry in PREFIX_DECODERS.values()} <= {d for _, d in METADATA_DECODERS.values()}
