"""Log directories (KIP-858): the directory ids a broker registers, and the directory each
replica of a partition is placed in.

A broker registers the ids of its online log directories; the controller refuses a
registration naming a reserved id, an id twice or another broker's directory
(ClusterControlManager.registerBroker), and later drops only the directories the broker
reports offline (BrokerRegistrationChangeRecord). A partition's Directories list runs
parallel to its Replicas; the controller fills an entry with the broker's only directory,
UNASSIGNED (several directories: the broker picks one and reports it) or MIGRATING (a
registration without directories), and later with the directory the broker reports
(AssignReplicasToDirs), which the broker registered.
"""

from __future__ import annotations

from kraft_audit.core.codec import wire
from kraft_audit.core.events import SNAPSHOT_SUFFIX
from kraft_audit.core.replay.state import LOST_DIRECTORY_ID, MIGRATING_DIRECTORY_ID, UNASSIGNED_DIRECTORY_ID
from kraft_audit.core.rules.registry import SETS_ASSIGNMENT, SETS_ISR, SETS_LEADER, Finding, rule

MIGRATING, UNASSIGNED, LOST = MIGRATING_DIRECTORY_ID, UNASSIGNED_DIRECTORY_ID, LOST_DIRECTORY_ID
# the reserved ids a controller writes in a partition's Directories (LOST is never written)
_PLACEHOLDERS = {MIGRATING: "MIGRATING", UNASSIGNED: "UNASSIGNED"}


def reserved(directory) -> bool:
    """DirectoryId.reserved: the first 100 ids (most significant half 0, least below 100)."""
    try:
        raw = wire.uuid_from_str(directory)
    except (TypeError, ValueError, wire.WireError):
        return False
    return raw[:8] == bytes(8) and int.from_bytes(raw[8:], "big") < 100


@rule("kraft.registration-log-dirs", on="record", scope="cluster",
      records=("REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD"))
def registration_log_dirs(c):
    """A registration names each of its log directories once, none reserved and none
    another registered broker's; a registration change only drops directories (those the
    broker reported offline)."""
    data, state = c.event.data, c.state
    dirs = data.get("logDirs") or ()
    broker_id = data.get("brokerId")
    if not dirs:
        return None  # before directories were registered, or a change leaving them as they were
    problems = []
    if len(set(dirs)) != len(dirs):
        problems.append("a directory twice")
    named = sorted({d for d in dirs if reserved(d)})
    if named:
        problems.append(f"reserved directory ids {named}")
    if c.event.type == "REGISTER_BROKER_RECORD":
        owners = sorted({f"{d} of broker {b.broker_id}" for b in state.brokers.values()
                         if b.broker_id != broker_id and b.registered for d in b.log_dirs if d in dirs})
        if owners:
            problems.append(f"the directories {', '.join(owners)}")
    else:
        broker = state.brokers.get(broker_id)
        added = sorted(set(dirs) - set(broker.log_dirs)) if broker is not None and broker.log_dirs else []
        if added:
            problems.append(f"directories {added} it had not registered (a change only drops offline ones)")
    if not problems:
        return None
    return f"broker {broker_id} registration {'change ' if c.event.type != 'REGISTER_BROKER_RECORD' else ''}" \
           f"with {'; '.join(problems)}"


@rule("kraft.partition-directories", on="partition", records=("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"),
      when=SETS_ASSIGNMENT)
def partition_directories(c):
    """A partition's Directories has one entry per replica; an entry the record places anew
    is MIGRATING, UNASSIGNED or a directory that replica's broker registered."""
    data, after, state = c.event.data, c.after, c.state
    dirs = data.get("directories")
    if not dirs:
        return None
    if c.event.type == "PARTITION_RECORD":
        replicas = data.get("replicas")
    else:
        replicas = data.get("replicas")
        if replicas is None:
            replicas = after.replicas
    if replicas is not None and len(dirs) != len(replicas):
        return f"{len(dirs)} directories for the {len(replicas)} replicas {list(replicas)}"
    if SNAPSHOT_SUFFIX in c.event.source or state.history_from is not None or replicas is None:
        return None  # what the brokers registered before the input began is unknown
    before = c.before
    placed = dict(zip(before.replicas, before.directories)) if before is not None else {}
    problems = []
    for broker_id, directory in zip(replicas, dirs):
        if directory in _PLACEHOLDERS or placed.get(broker_id) == directory:
            continue
        owner = state.dir_owner.get(directory)
        if owner == broker_id:
            continue
        broker = state.brokers.get(broker_id)
        if owner is None and (broker is None or not broker.log_dirs) and not reserved(directory):
            continue  # the broker's directories are not in the input: not judged
        if directory == LOST:
            problems.append(f"replica {broker_id} placed in LOST, which no controller writes")
        elif reserved(directory):
            problems.append(f"replica {broker_id} placed in reserved directory {directory}")
        elif owner is not None:
            problems.append(f"replica {broker_id} placed in {directory}, a directory of broker {owner}")
        else:
            problems.append(f"replica {broker_id} placed in {directory}, which broker {broker_id} never registered")
    return "; ".join(problems) if problems else None


@rule("kraft.replica-in-offline-directory", on="batch_end",
      records=("PARTITION_CHANGE_RECORD", "REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD"))
def replica_in_offline_directory(c):
    """A replica whose directory is offline on its broker has no log to serve: it leads
    nothing, and it leaves the ISR in the batch that finds it offline (the directory
    dropped from the registration, or the broker reporting the replica in it); without
    ELR the ISR's last member stays, as for a fence. Visits the partitions whose leader,
    ISR or directories the batch changed and, for a broker record, that broker's. (A new
    partition's entries are the broker's only online directory or a placeholder:
    kraft.partition-directories.)"""
    batch, state = c.batch, c.state
    keys = {ch.site.key for ch in batch.changes if ch.shape & (SETS_LEADER | SETS_ISR | SETS_ASSIGNMENT)}
    for change in batch.broker_changes:
        broker = state.brokers.get(change.broker_id)
        if broker is not None and broker.log_dirs:
            keys.update(state.partitions_of(change.broker_id))
    findings = []
    partitions, brokers, owners = state.partitions, state.brokers, state.dir_owner
    for key in sorted(keys):
        part = partitions.get(key)
        if part is None or not part.directories:
            continue
        for broker_id, directory in zip(part.replicas, part.directories):
            leads = broker_id == part.leader
            if not leads and broker_id not in part.isr:
                continue
            broker = brokers.get(broker_id)
            if broker is None or not broker.log_dirs or owners.get(directory) != broker_id \
                    or broker.has_online_dir(directory):
                continue  # online, no directories registered, or not its own (partition-directories')
            if leads:
                findings.append(Finding(f"leader {broker_id} serves from directory {directory}, "
                                        f"which is not online on broker {broker_id}", key=key, broker_id=broker_id))
            elif state.elr_enabled or len(part.isr) > 1:
                findings.append(Finding(f"replica {broker_id} in the ISR {list(part.isr)} although its "
                                        f"directory {directory} is offline", key=key, broker_id=broker_id))
    return findings or None
