"""What Kafka's released classes say about the metadata.version levels and feature levels,
read at import from data/kafka_versions.json (no Java at audit time). The table is written
from the jars of every release line by `python -m kraft_audit.testing.kafka_facts` and
checked against a new release by `make kafka-release-check VERSION=x.y.z`."""

from __future__ import annotations

import json
from importlib.resources import files

# a resource, not a path: under spark-submit the package is imported from the zip given to
# --py-files (kraft_audit.testing.kafka_facts writes the file in a source checkout)
TABLE_FILE = "kafka_versions.json"
TABLE = json.loads(files("kraft_audit").joinpath("data", TABLE_FILE).read_text())

_LEVELS = {int(key): m for key, m in TABLE["metadata_versions"].items()}
# the highest level this auditor knows: rules keyed by level judge none above it
MV_KNOWN = max(_LEVELS)
# each level's name (MetadataVersion.version()), for the findings
MV_NAMES = {level: m["version"] for level, m in _LEVELS.items()}
# levels whose didMetadataChange is true on every release that knows them
MV_CHANGED = frozenset(level for level, m in _LEVELS.items() if m["metadata_changed"])


def first_level(capability: str) -> int:
    """The lowest level at which MetadataVersion.<capability>() holds (it holds at every
    level above, up to the highest known)."""
    first, last = TABLE["capabilities"][capability]
    if last is not None:
        raise ValueError(f"{capability} stops holding above level {last}")
    return first


MV_CIDR_ACL = first_level("isCidrAclSupported")
MV_CONTROLLER_UNREGISTRATION = first_level("isControllerUnregistrationSupported")


def feature_dependencies() -> dict[str, dict[int, dict[str, int]]]:
    """FeatureVersion.dependencies() of every level above 0 of each feature: feature ->
    level -> {feature it depends on: the lowest level that does}."""
    return {name: {int(level): needs for level, needs in feature["levels"].items() if int(level) > 0}
            for name, feature in TABLE["features"].items()}
