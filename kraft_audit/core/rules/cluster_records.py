"""Invariants of the cluster records the partition rules never read: ACLs, SCRAM
credentials, client quotas and delegation tokens. Each field holds what the controller
validates before it writes the record, so a value outside it means the controller skipped
its validation (or the log was changed after it wrote it).

They are stateless field checks, judged before the record is applied (`on="record"`), at a
cost of a few dict reads per record; these records go to bucket 0 of the Spark shell only.
"""

from __future__ import annotations

import math

from kraft_audit.core.metadata_versions import (MV_CHANGED, MV_CIDR_ACL, MV_CONTROLLER_UNREGISTRATION,
                                               MV_KNOWN, MV_NAMES, feature_dependencies)
from kraft_audit.core.replay.settings import METADATA_VERSION
from kraft_audit.core.replay.state import acl_binding, feature_ranges, quota_key, token_kept
from kraft_audit.core.events import SNAPSHOT_SUFFIX
from kraft_audit.core.rules.registry import Finding, rule

# Codes of Kafka's ResourceType, PatternType, AclOperation and AclPermissionType that
# only a filter may hold: a stored ACL names one concrete value
_RESOURCE_FILTER_ONLY = {0: "UNKNOWN", 1: "ANY"}
_RESOURCE_STORED = range(2, 8)  # TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER
_PATTERN_STORED = {3: "LITERAL", 4: "PREFIXED"}
_OPERATION_FILTER_ONLY = {0: "UNKNOWN", 1: "ANY"}
_OPERATION_STORED = range(2, 15)  # ALL .. DESCRIBE_TOKENS
_PERMISSION_STORED = {2: "DENY", 3: "ALLOW"}
_CLUSTER_RESOURCE = 4
CLUSTER_NAME = "kafka-cluster"


def _principal_problem(principal) -> str | None:
    """Kafka parses a principal as Type:name and refuses one without the colon."""
    if not isinstance(principal, str) or ":" not in principal or principal.startswith(":"):
        return f"principal {principal!r} is not of the form Type:name"
    return None


@rule("kraft.acl-fields", on="record", records=("ACCESS_CONTROL_ENTRY_RECORD",), scope="cluster")
def acl_fields(c):
    """A stored ACL names one concrete resource type, pattern, operation and permission,
    a non-empty resource name (kafka-cluster for the cluster), a Type:name principal and a
    host."""
    data = c.event.data
    problems = []
    resource, pattern = data.get("resourceType"), data.get("patternType")
    operation, permission = data.get("operation"), data.get("permissionType")
    if type(resource) is int and resource not in _RESOURCE_STORED:
        problems.append(f"resource type {_RESOURCE_FILTER_ONLY.get(resource, resource)}")
    if type(pattern) is int and pattern not in _PATTERN_STORED:
        problems.append(f"pattern type {pattern} (a stored ACL is LITERAL or PREFIXED)")
    if type(operation) is int and operation not in _OPERATION_STORED:
        problems.append(f"operation {_OPERATION_FILTER_ONLY.get(operation, operation)}")
    if type(permission) is int and permission not in _PERMISSION_STORED:
        problems.append(f"permission type {permission} (a stored ACL is DENY or ALLOW)")
    name = data.get("resourceName")
    if isinstance(name, str):
        if name == "":
            problems.append("an empty resource name")
        elif resource == _CLUSTER_RESOURCE and name != CLUSTER_NAME:
            problems.append(f"cluster resource named {name!r}, not {CLUSTER_NAME!r}")
    bad = _principal_problem(data.get("principal", ""))
    if bad:
        problems.append(bad)
    if data.get("host") in (None, ""):
        problems.append("no host")
    if not problems:
        return None
    return f"ACL {data.get('id')} stored with " + "; ".join(problems)


# Kafka's ScramMechanism: code -> (name, digest length in bytes); iterations 4096..16384
SCRAM_MECHANISMS = {1: ("SCRAM-SHA-256", 32), 2: ("SCRAM-SHA-512", 64)}
SCRAM_MIN_ITERATIONS, SCRAM_MAX_ITERATIONS = 4096, 16384


def _key_length(value) -> int | None:
    """Bytes fields decode as base64 text: their length without decoding them."""
    if isinstance(value, str) and len(value) % 4 == 0:
        return len(value) // 4 * 3 - len(value) + len(value.rstrip("="))
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    return None


@rule("kraft.scram-fields", on="record",
      records=("USER_SCRAM_CREDENTIAL_RECORD", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD"), scope="cluster")
def scram_fields(c):
    """A SCRAM credential names a user and a known mechanism, its iterations are within
    the mechanism's bounds and its keys are as long as the mechanism's digest."""
    data = c.event.data
    user, mechanism = data.get("name"), data.get("mechanism")
    problems = []
    if user == "":
        problems.append("an empty user name")
    known = SCRAM_MECHANISMS.get(mechanism)
    if type(mechanism) is int and known is None:
        problems.append(f"unknown mechanism {mechanism}")
    if c.event.type == "USER_SCRAM_CREDENTIAL_RECORD":
        iterations = data.get("iterations")
        if type(iterations) is int and not SCRAM_MIN_ITERATIONS <= iterations <= SCRAM_MAX_ITERATIONS:
            problems.append(f"{iterations} iterations, outside {SCRAM_MIN_ITERATIONS}..{SCRAM_MAX_ITERATIONS}")
        if known is not None:
            for field in ("storedKey", "serverKey"):
                length = _key_length(data.get(field))
                if length is not None and length != known[1]:
                    problems.append(f"a {length}-byte {field} ({known[0]} digests are {known[1]} bytes)")
        if _key_length(data.get("salt")) == 0:
            problems.append("an empty salt")
    if not problems:
        return None
    return f"SCRAM credential of user {user!r} with " + "; ".join(problems)


# Kafka's client quota keys per entity kind, and whether the value is integral
_CLIENT_KEYS = {"producer_byte_rate": True, "consumer_byte_rate": True,
                "request_percentage": False, "controller_mutation_rate": False}
_IP_KEYS = {"connection_creation_rate": True}
# the largest whole quota Kafka's type for the key holds (INT for connection rates, else LONG)
_WHOLE_MAX = {"connection_creation_rate": 2**31 - 1}
_ENTITY_TYPES = ("user", "client-id", "ip")


@rule("kraft.quota-fields", on="record", records=("CLIENT_QUOTA_RECORD",), scope="cluster")
def quota_fields(c):
    """A client quota's entity is a user, a client id, both, or an IP address; its key is a
    quota of that entity; a value set (not removed) is positive, finite, and whole for the
    integral quotas."""
    data = c.event.data
    entity = data.get("entity")
    if not isinstance(entity, list):
        return None
    types = []
    for part in entity:
        kind, name = part.get("entityType"), part.get("entityName")
        if kind not in _ENTITY_TYPES:
            return f"client quota entity type {kind!r} is none of {', '.join(_ENTITY_TYPES)}"
        if name == "":
            return f"client quota entity {kind} with an empty name (the default entity has none)"
        types.append(kind)
    if not types or len(set(types)) != len(types) or ("ip" in types and len(types) > 1):
        return f"client quota entity {types} is not a user, a client id, both, or an IP address"
    keys = _IP_KEYS if "ip" in types else _CLIENT_KEYS
    key = data.get("key")
    if key not in keys:
        return f"client quota key {key!r} is not a quota of entity {'+'.join(types)}"
    value = data.get("value")
    if data.get("remove") or not isinstance(value, float):
        return None
    if not math.isfinite(value) or value <= 0:
        return f"client quota {key} of {'+'.join(types)} set to {value}, not a positive finite value"
    if keys[key] and (value != int(value) or value > _WHOLE_MAX.get(key, 2**63 - 1)):
        return f"client quota {key} of {'+'.join(types)} set to {value}, not a whole number its type holds"
    return None


@rule("kraft.token-fields", on="record", records=("DELEGATION_TOKEN_RECORD",), scope="cluster")
def token_fields(c):
    """A delegation token has an id, Type:name owner and requester, and times in order:
    issued <= expires <= its max lifetime."""
    data = c.event.data
    problems = []
    if data.get("tokenId") == "":
        problems.append("an empty token id")
    for field in ("owner", "requester"):
        if field in data:
            bad = _principal_problem(data[field])
            if bad:
                problems.append(f"{field} {bad}")
    issued, expires, most = (data.get(k) for k in ("issueTimestamp", "expirationTimestamp", "maxTimestamp"))
    if type(issued) is int and type(expires) is int and type(most) is int and not issued <= expires <= most:
        problems.append(f"issue {issued}, expiration {expires} and max {most} timestamps out of order")
    if not problems:
        return None
    return f"delegation token {data.get('tokenId')!r} with " + "; ".join(problems)


@rule("kraft.acl-unique", on="record", records=("ACCESS_CONTROL_ENTRY_RECORD",), scope="cluster")
def acl_unique(c):
    """A new ACL has an id no live ACL has, and is not a copy of a live ACL."""
    data, state = c.event.data, c.state
    acl_id = data.get("id")
    if acl_id in state.acls:
        return f"ACL id {acl_id} of a live ACL given to another ACL"
    if acl_binding(data) in state.acl_bindings:
        return (f"ACL {acl_id} repeats a live ACL ({data.get('principal')} {data.get('permissionType')} "
                f"{data.get('operation')} on {data.get('resourceName')!r})")
    return None


@rule("kraft.removal-names-live", on="record", scope="cluster",
      records=("REMOVE_ACCESS_CONTROL_ENTRY_RECORD", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
               "REMOVE_DELEGATION_TOKEN_RECORD", "CLIENT_QUOTA_RECORD"))
def removal_names_live(c):
    """A removal names a live ACL, SCRAM credential, client quota or delegation token."""
    state, event = c.state, c.event
    if state.history_from is not None:  # a partial log: what it removes may predate it
        return None
    data, etype = event.data, event.type
    if etype == "CLIENT_QUOTA_RECORD":
        if data.get("remove") and quota_key(data) not in state.quotas:
            return f"removal of client quota {data.get('key')} of {quota_key(data)[0]}, which is not set"
    elif etype == "REMOVE_ACCESS_CONTROL_ENTRY_RECORD":
        if data.get("id") not in state.acls:
            return f"removal of ACL {data.get('id')}, which no live ACL has"
    elif etype == "REMOVE_USER_SCRAM_CREDENTIAL_RECORD":
        if (data.get("name"), data.get("mechanism")) not in state.scram:
            mechanism = SCRAM_MECHANISMS.get(data.get("mechanism"), (data.get("mechanism"),))[0]
            return f"removal of the {mechanism} credential of user {data.get('name')!r}, which is not live"
    elif data.get("tokenId") not in state.tokens:
        return f"removal of delegation token {data.get('tokenId')!r}, which is not live"
    return None


@rule("kraft.token-renewal", on="record", records=("DELEGATION_TOKEN_RECORD",), scope="cluster")
def token_renewal(c):
    """A record for a live token is a renewal: only its expiration changes."""
    data = c.event.data
    before = c.state.tokens.get(data.get("tokenId"))
    if before is None or token_kept(data) == before:
        return None
    names = ("owner", "requester", "renewers", "issue time", "max time")
    changed = [n for n, old, new in zip(names, before, token_kept(data)) if old != new]
    return f"delegation token {data.get('tokenId')!r} rewritten with another {', '.join(changed)}"


def _node(key: tuple[str, int]) -> str:
    return f"{key[0]} {key[1]}"


@rule("kraft.feature-level-supported", on="record", scope="cluster",
      records=("FEATURE_LEVEL_RECORD", "REGISTER_BROKER_RECORD", "REGISTER_CONTROLLER_RECORD"))
def feature_level_supported(c):
    """Every finalized feature level is within the range each registered broker and
    controller declares for that feature, and every declared range has min <= max."""
    event, state = c.event, c.state
    data = event.data
    if event.type == "FEATURE_LEVEL_RECORD":
        name, level = data.get("name"), data.get("featureLevel")
        if type(level) is not int or level <= 0:  # 0 turns the feature off
            return None
        for key, ranges in state.supported.items():
            low, high = ranges.get(name, (None, None))
            if low is not None and not low <= level <= high:
                return f"{name} finalized at level {level}, outside {_node(key)}'s supported range {low}..{high}"
        return None
    key = ("broker", data.get("brokerId")) if event.type == "REGISTER_BROKER_RECORD" else \
        ("controller", data.get("controllerId"))
    ranges = feature_ranges(data)
    for name, (low, high) in ranges.items():
        if low > high:
            return f"{_node(key)} registered with feature {name} range {low}..{high}, min above max"
    for name, level in state.features.items():
        low, high = ranges.get(name, (None, None))
        if low is not None and level > 0 and not low <= level <= high:
            return f"{_node(key)} registered supporting {name} {low}..{high}, not its finalized level {level}"
    return None


@rule("kraft.leader-change-voters", on="record", records=("LEADER_CHANGE",), scope="cluster")
def leader_change_voters(c):
    """A LeaderChange names a leader among its voters, each voter once, and voters that
    granted the vote among the voters."""
    data = c.event.data
    voters = [v.get("voterId") for v in data.get("voters") or ()]
    granting = [v.get("voterId") for v in data.get("grantingVoters") or ()]
    leader = data.get("leaderId")
    if not voters or type(leader) is not int:
        return None
    if len(set(voters)) != len(voters):
        return f"leader change names voters {voters}, one twice"
    if leader not in voters:
        return f"leader change elects {leader}, not among its voters {voters}"
    strangers = sorted(set(granting) - set(voters))
    if strangers:
        return f"leader change counts votes of {strangers}, not among its voters {voters}"
    return None


@rule("kraft.feature-level-fields", on="record", records=("FEATURE_LEVEL_RECORD",), scope="cluster")
def feature_level_fields(c):
    """A finalized feature has a name and a level that is not negative; metadata.version is
    never finalized at level 0 (it cannot be turned off)."""
    data = c.event.data
    name, level = data.get("name"), data.get("featureLevel")
    if name == "":
        return f"feature level {level} finalized for a feature with no name"
    if type(level) is int and level < 0:
        return f"feature {name} finalized at level {level}"
    if name == "metadata.version" and level == 0:
        return "metadata.version finalized at level 0 (it cannot be turned off)"
    return None


@rule("kraft.metadata-version-downgrade", on="record", records=("FEATURE_LEVEL_RECORD",), scope="cluster")
def metadata_version_downgrade(c):
    """metadata.version is lowered only across levels that changed no metadata
    (FeatureControlManager.updateMetadataVersion refuses the others)."""
    data, event = c.event.data, c.event
    if data.get("name") != "metadata.version" or SNAPSHOT_SUFFIX in event.source:
        return None
    current, level = c.state.metadata_version, data.get("featureLevel")
    if type(current) is not int or type(level) is not int or not 0 < level < current <= MV_KNOWN:
        return None
    changed = sorted(v for v in MV_CHANGED if level < v <= current)
    if not changed:
        return None
    return (f"metadata.version lowered from {current} to {level} across level(s) {changed}, "
            "which changed the metadata format: Kafka refuses that downgrade")


# What each finalized level needs, as the feature's FeatureVersion.dependencies() states it
# in server-common (the *Version enums, read from the jars into data/kafka_versions.json):
# feature -> level -> {feature it depends on: the lowest level that does}. A level above
# the highest listed needs what that one does. The controller checks these against the
# levels the update leaves (Feature.validateVersion in FeatureControlManager.updateFeature).
# kraft.version depends on nothing and nothing depends on it; it is the Raft layer's (its
# KRaftVersion control record), and the controller's replay skips a FeatureLevelRecord of it
# (image.py's _RAFT_FEATURE), so one is neither judged nor counted as a level here.
RAFT_FEATURE = "kraft.version"
FEATURE_DEPENDENCIES: dict[str, dict[int, dict[str, int]]] = feature_dependencies()


def feature_needs(name: str, level: int) -> dict[str, int]:
    """The levels of other features that `name` at `level` needs (empty: nothing)."""
    levels = FEATURE_DEPENDENCIES.get(name)
    if not levels or name == RAFT_FEATURE:
        return {}
    known = [v for v in levels if v <= level]
    return levels[max(known)] if known else {}


def _level_name(name: str, level: int) -> str:
    named = MV_NAMES.get(level) if name == METADATA_VERSION else None
    return f"{level} ({named})" if named else str(level)


@rule("input.unknown-metadata-version", on="record", records=("FEATURE_LEVEL_RECORD",), scope="cluster")
def unknown_metadata_version(c):
    """metadata.version is finalized at a level this auditor knows; a level above the
    highest it knows is reported, and the rules keyed by level do not judge it."""
    data = c.event.data
    level = data.get("featureLevel")
    if data.get("name") != METADATA_VERSION or type(level) is not int or level <= MV_KNOWN:
        return None
    return (f"unknown metadata.version level {level} (the highest known is "
            f"{_level_name(METADATA_VERSION, MV_KNOWN)}): rules keyed by level are not judged")


def _needs_level(mv, lowest: int, what: str) -> str | None:
    """A finding when the finalized metadata.version `mv` is below `lowest`, which `what` needs."""
    if type(mv) is not int or mv >= lowest:
        return None
    return (f"{what} at metadata.version {_level_name(METADATA_VERSION, mv)}; it needs "
            f"metadata.version {_level_name(METADATA_VERSION, lowest)} or above")


@rule("kraft.acl-cidr-host-supported", on="record", records=("ACCESS_CONTROL_ENTRY_RECORD",), scope="cluster")
def acl_cidr_host_supported(c):
    """An ACL's host is a CIDR block (a host pattern holding "/") only where the finalized
    metadata.version supports CIDR hosts (AclControlManager.validateHostPattern)."""
    data = c.event.data
    host = data.get("host")
    if not isinstance(host, str) or "/" not in host:
        return None
    return _needs_level(c.state.metadata_version, MV_CIDR_ACL, f"ACL {data.get('id')} with CIDR host {host!r}")


@rule("kraft.controller-unregistration-supported", on="record", records=("UNREGISTER_CONTROLLER_RECORD",),
      scope="cluster")
def controller_unregistration_supported(c):
    """A controller is unregistered only where the finalized metadata.version supports
    controller unregistration (ClusterControlManager.unregisterController)."""
    return _needs_level(c.state.metadata_version, MV_CONTROLLER_UNREGISTRATION,
                        f"controller {c.event.data.get('controllerId')} unregistered")


@rule("kraft.feature-dependencies", on="batch_end", records=("FEATURE_LEVEL_RECORD",), scope="cluster")
def feature_dependencies(c):
    """At the end of a batch that finalizes feature levels, every finalized level's
    dependencies hold: a level is finalized only once the features it depends on are at
    their levels, and metadata.version is not lowered below what a finalized level needs.
    The operation that first sets metadata.version (the bootstrap, or a log that starts
    mid-history) and snapshots are not judged, nor a batch inside an open metadata
    transaction."""
    before, event, state = c.batch.features_before, c.event, c.state
    if (before is None or METADATA_VERSION not in before or state.transaction_open
            or event.source.endswith(SNAPSHOT_SUFFIX)):
        return None
    features = state.features
    findings = []
    for name, level in sorted(features.items()):
        for needed, lowest in feature_needs(name, level).items():
            have = features.get(needed, 0)
            if have >= lowest or (before.get(name, 0) == level and before.get(needed, 0) == have):
                continue  # met, or broken before this batch (reported where it broke)
            if before.get(name, 0) != level:
                findings.append(f"{name} {level} finalized while {needed} is {_level_name(needed, have)}; "
                                f"it needs {needed} {_level_name(needed, lowest)} or above")
            else:
                findings.append(f"{needed} lowered to {_level_name(needed, have)} while {name} {level} "
                                f"needs it at {_level_name(needed, lowest)} or above")
    return [Finding(f) for f in findings] or None


# Kafka's ConfigResource.Type codes: TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP
_CONFIG_RESOURCES = {2: "topic", 4: "broker", 8: "broker logger", 16: "client metrics", 32: "group"}
_TOPIC_RESOURCE = 2


@rule("kraft.config-resource-exists", on="record", records=("CONFIG_RECORD",), scope="cluster")
def config_resource_exists(c):
    """A config belongs to a resource type Kafka has; a topic's config, set or removed, to a
    live topic (the TopicRecord comes before the configs it is created with)."""
    data, state = c.event.data, c.state
    resource = data.get("resourceType")
    if type(resource) is int and resource not in _CONFIG_RESOURCES:
        return f"config {data.get('name')} of resource type {resource}, which Kafka does not have"
    # a removal too: deleting a topic drops its configs without a record
    if (resource == _TOPIC_RESOURCE and state.history_from is None
            and data.get("resourceName") not in state.topic_ids):
        done = "set" if data.get("value") is not None else "removed"
        return f"config {data.get('name')} {done} for topic {data.get('resourceName')!r}, which does not exist"
    return None


@rule("kraft.producer-ids-to-registered-broker", on="record", records=("PRODUCER_IDS_RECORD",),
      scope="cluster")
def producer_ids_to_registered_broker(c):
    """A producer-id block goes to a broker registered when it asks (the controller checks
    the asking broker's epoch); -1 is a block taken over from outside the controller."""
    data, state = c.event.data, c.state
    broker = data.get("brokerId")
    if type(broker) is not int or broker == -1 or state.history_from is not None or not state.brokers:
        return None
    if broker not in state.brokers:
        return f"producer-id block handed to broker {broker}, which is not registered"
    return None


@rule("kraft.controller-registration-fields", on="record", records=("REGISTER_CONTROLLER_RECORD",),
      scope="cluster")
def controller_registration_fields(c):
    """A controller registers with its node id, which is never negative."""
    controller = c.event.data.get("controllerId")
    if type(controller) is int and controller < 0:
        return f"controller registered with id {controller}"
    return None


@rule("kraft.transaction-markers", on="record", scope="cluster",
      records=("BEGIN_TRANSACTION_RECORD", "END_TRANSACTION_RECORD", "ABORT_TRANSACTION_RECORD"))
def transaction_markers(c):
    """Metadata transactions never nest: one begins only when none is open, and ends or is
    aborted only when one is."""
    open_now = c.state.transaction_open
    if c.event.type == "BEGIN_TRANSACTION_RECORD":
        return "a metadata transaction begins inside another" if open_now else None
    return None if open_now else f"{c.event.type} with no metadata transaction open"


# the broker records replay refuses (ClusterControlManager throws) once the registration is gone
_LATER_BROKER_RECORDS = ("UNREGISTER_BROKER_RECORD", "FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD",
                         "BROKER_REGISTRATION_CHANGE_RECORD")


@rule("kraft.record-names-registered-node", on="record", scope="cluster",
      records=("UNREGISTER_CONTROLLER_RECORD",) + _LATER_BROKER_RECORDS)
def record_names_registered_node(c):
    """An unregistration, fence, unfence or registration change names a node whose
    registration is live (a broker never registered at all is input.unknown-broker's)."""
    event, data, state = c.event, c.event.data, c.state
    if state.history_from is not None:
        return None
    if event.type == "UNREGISTER_CONTROLLER_RECORD":
        controller = data.get("controllerId")
        if type(controller) is int and ("controller", controller) not in state.supported:
            return f"controller {controller} unregistered, which is not registered"
        return None
    broker_id = data.get("id", data.get("brokerId"))
    broker = state.brokers.get(broker_id)
    if broker is not None and not broker.registered:
        return Finding(f"{event.type} for broker {broker_id}, whose registration was removed at offset "
                       f"{broker.offset}", broker_id=broker_id)
    return None


# KRaftVersion's levels: 0 (a static voter set) and 1 (voters in the log, KIP-853)
KRAFT_VERSIONS = (0, 1)


@rule("kraft.kraft-version-voters", on="record", records=("KRAFT_VERSION", "KRAFT_VOTERS"), scope="cluster")
def kraft_version_voters(c):
    """kraft.version is a level Kafka has and never goes down; a Voters record names at
    least one voter, each once, and appears only at a kraft.version that keeps voters."""
    data, state = c.event.data, c.state
    if c.event.type == "KRAFT_VERSION":
        level = data.get("kRaftVersion")
        if type(level) is not int:
            return None
        if level not in KRAFT_VERSIONS:
            return f"kraft.version {level}, not a level Kafka has ({', '.join(map(str, KRAFT_VERSIONS))})"
        if state.kraft_version is not None and level < state.kraft_version:
            return f"kraft.version lowered from {state.kraft_version} to {level}; it cannot be downgraded"
        return None
    voters = [v.get("voterId") for v in data.get("voters") or ()]
    if not voters:
        return "a Voters record with no voter"
    if len(set(voters)) != len(voters):
        return f"a Voters record names voters {voters}, one twice"
    if state.kraft_version == 0:
        return f"a Voters record {voters} while kraft.version is 0 (a static voter set, not in the log)"
    return None
