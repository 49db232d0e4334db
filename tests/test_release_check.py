"""`make kafka-release-check`'s comparison, without a Kafka run: a release's jars (`make kafka`)
against the codec's schemas and the level table. 4.4.0 brings nothing the committed table and
codec lack; against a table cut below 4.4's levels the check lists exactly those and fails.
Jars that are not there fail the test (run `make kafka-matrix KAFKA_MATRIX=4.4.0`): it is not
skipped, so a missing cache cannot pass for a clean check. Marked `kafka` for its jars (no
cluster runs): `make test-fast` leaves it out, `make test` resolves them."""

from __future__ import annotations

import pytest

from kraft_audit.core.metadata_versions import TABLE
from kraft_audit.testing import release_check
from kraft_audit.testing.realkafka.cluster import kafka_jars

pytestmark = pytest.mark.kafka

RELEASE = "4.4.0"  # the Makefile's KAFKA_4, the newest release
OLDER = "3.9.2"  # its KAFKA_3


def trimmed(table: dict, highest: int) -> dict:
    """The table as it was before any level above `highest`."""
    return {**table,
            "metadata_versions": {k: m for k, m in table["metadata_versions"].items() if int(k) <= highest},
            "capabilities": {n: span for n, span in table["capabilities"].items() if span[0] <= highest}}


def test_the_release_brings_nothing_the_committed_table_and_codec_lack(capsys):
    assert release_check.main([RELEASE]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert out.count("nothing new") == 2


def test_against_a_table_without_its_levels_the_check_lists_them_and_fails(capsys):
    codec, levels = release_check.release_changes(RELEASE, kafka_jars(RELEASE), trimmed(TABLE, 30))
    assert codec == []
    assert sorted(int(key) for what, key, _ in levels if what == "metadata.version") == [31, 32, 33, 34]
    assert {key for what, key, _ in levels if what == "capability"} == {
        "isCidrAclSupported", "isControllerUnregistrationSupported"}
    assert {what for what, _, _ in levels} == {"metadata.version", "capability"}
    assert release_check.main([RELEASE], table=trimmed(TABLE, 30)) == 1
    assert "metadata.version 32 (4.4-IV1, production, changes the metadata format)" in capsys.readouterr().out


def test_an_older_release_than_the_table_brings_nothing(capsys):
    assert release_check.main([OLDER]) == 0, capsys.readouterr().out


def test_a_field_spelled_otherwise_is_the_same_field_and_a_field_added_is_news():
    """3.7's PartitionChangeRecord spells lastKnownElr LastKnownELR (the same tag, type and
    versions): not a change. A field of another name is one."""
    from kraft_audit.core.codec.schemas import METADATA_RECORDS

    [ours] = [s for s in METADATA_RECORDS if s.name == "PartitionChangeRecord"]
    [mine] = [f for f in ours.fields if f.name == "lastKnownElr"]
    field = {"name": "LastKnownELR", "type": "[]int32", "versions": "2+", "nullableVersions": "2+",
             "tag": mine.tag, "taggedVersions": "2+", "default": "null"}
    assert release_check.field_changes("P", [field], (mine,), 2, {}) == []
    renamed = {**field, "name": "LastKnownLeaders"}
    assert release_check.field_changes("P", [renamed], (mine,), 2, {}) == [
        "P: field lastKnownLeaders ([]int32, versions 2+) unknown", "P: field lastKnownElr the release does not have"]
