"""Each Delta table declared once (kraft_audit/tables/): the schema, the docs and
the questions come from the declarations; rows that lack a column are refused."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from kraft_audit import tables
from kraft_audit.core.rows import BrokerRow, Violation
from kraft_audit.tables import questions as q


def test_docs_tables_md_sections_are_rendered_from_the_declarations():
    from kraft_audit.tables.docs import render

    docs = Path(__file__).resolve().parents[1] / "docs" / "tables.md"
    text = docs.read_text()
    assert text == render(text), "run: python -m kraft_audit.tables.docs docs/tables.md"


def test_every_column_comes_from_a_declared_row_field_or_the_sink():
    for spec in tables.TABLES.values():
        declared = {f.name: f.metadata for f in fields(spec.row)}
        for field in spec.schema:
            if field.name in tables.SINK_COLUMNS:
                assert not field.nullable, (spec.name, field.name)
                continue
            assert field.nullable == (not declared[field.name]["key"]), (spec.name, field.name)
        assert set(spec.core_schema.names) == set(declared), spec.name
        for key in (*spec.keys, *spec.partition_by):
            assert not spec.schema.field(key).nullable, (spec.name, key)


def test_a_row_without_a_column_is_an_error_naming_table_and_column(output_rows):
    row = output_rows.violation(1)
    del row["evidence"]
    with pytest.raises(tables.MissingColumn, match="table violations: .*'evidence'"):
        tables.core_to_arrow("violations", [row])

    class NoEvidence:  # an object lacking an attribute is no better
        def __init__(self, violation: Violation):
            for f in fields(Violation):
                if f.name != "evidence":
                    setattr(self, f.name, getattr(violation, f.name))

    with pytest.raises(tables.MissingColumn, match="table violations: .*'evidence'"):
        tables.core_to_arrow(tables.VIOLATIONS, [NoEvidence(Violation(**output_rows.violation(1)))])


def test_row_objects_and_dicts_give_the_same_arrow(output_rows):
    as_dict = output_rows.broker(1, 5)
    assert tables.core_to_arrow("brokers", [BrokerRow(**as_dict)]) == \
        tables.core_to_arrow("brokers", [as_dict])
    progress = tables.core_to_arrow("progress", [output_rows.progress(0, 9)])
    assert progress.column("clusters").type == tables.PROGRESS.schema.field("clusters").type


def test_each_operator_output_feeds_tables_of_its_row_type():
    for spec in tables.TABLES.values():
        if spec.source is not None:
            assert tables.OUTPUTS[spec.source].row is spec.row
            output = tables.OUTPUTS[spec.source]
            if output.arrow:  # sent as Arrow: exactly the table's core columns
                assert output.schema == spec.core_schema, spec.name
            else:
                assert set(output.schema) == set(spec.core_schema), spec.name


def test_one_question_text_renders_for_both_engines():
    since = q.Since(lookback_ms=7_000)
    spark = q.render(q.VIOLATIONS_IN, "spark", since, rule="it's", severity=None, cluster=None)
    datafusion = q.render(q.VIOLATIONS_IN, "datafusion", since, rule="it's", severity=None,
                          cluster=None)
    assert "`offset`" in spark and "\\'" in spark and "'it\\'s'" in spark
    assert '"offset"' in datafusion and "'it''s'" in datafusion and "`" not in datafusion
    assert "(newest_ms - 7000)" in spark and "(newest_ms - 7000)" in datafusion
    assert "array()" in q.render(q.UNCLEAN_ELECTIONS, "spark", cluster=None)
    assert "make_array()" in q.render(q.UNCLEAN_ELECTIONS, "datafusion", cluster=None)
    with pytest.raises(TypeError, match="parameters"):
        q.render(q.UNDER_MIN_ISR, "spark")


def test_the_tables_package_imports_no_spark_and_delta_only_to_read():
    from test_core_boundary import PACKAGE, imported_modules

    for path in sorted((PACKAGE / "tables").glob("*.py")):
        modules = imported_modules(path)
        assert not any(m.split(".")[0] in ("pyspark", "delta") for m in modules), path.name
        if path.name != "read.py":
            assert not any(m.split(".")[0] == "deltalake" for m in modules), path.name
