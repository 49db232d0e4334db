"""The quorum's own word on its commit point: Kafka's DescribeQuorum, asked of a controller.

A log dir does not say how far it is committed; the active controller does. DescribeQuorum
(API key 55, KIP-595; what `kafka-metadata-quorum describe --status` prints) answers with the
leader, its epoch and the high watermark: every offset below it is committed. Only the
active controller answers it; another answers NOT_LEADER_OR_FOLLOWER and the next address
is tried.

The high watermark is an offset of the leader's log. A reader holds its own copy, which may
lag or hold a deposed leader's tail, so the claim made of it (`commit_claim`) is about an
entry of the copy: only when the copy's newest batch is of the leader's epoch is the copy a
prefix of the leader's log (Raft's log matching: entries of an epoch are written by its
leader alone, and a copy that holds one agrees with that leader up to it). The copy is then
committed up to min(high watermark, its end); otherwise nothing is claimed and the log's
own proofs stand (kraft_audit/core/raft.py).

Request version 0 (every controller that speaks KRaft answers it), flexible encoding,
request header version 2; no dependency: the few fields are written by hand.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

from pathlib import Path

from kraft_audit.core.codec.logwalk import CopyEpochs, list_snapshots
from kraft_audit.core.codec.wire import read_uvarint, write_uvarint
from kraft_audit.errors import QuorumError, WireError
from kraft_audit.core.events import COMMIT_CLAIM, KIND_COMMIT, NO_OFFSET, MetadataEvent
from kraft_audit.core.raft import LogShape

DESCRIBE_QUORUM = 55
METADATA_TOPIC = "__cluster_metadata"
NOT_LEADER_OR_FOLLOWER = 6
CLIENT_ID = "kraft-audit"


@dataclass(frozen=True)
class QuorumStatus:
    leader_id: int
    leader_epoch: int
    high_watermark: int  # offsets below are committed
    voters: tuple[tuple[int, int], ...]  # (id, log end offset as the leader knows it)
    observers: tuple[tuple[int, int], ...]
    address: str  # who answered


def _compact_string(s: str) -> bytes:
    raw = s.encode()
    return write_uvarint(len(raw) + 1) + raw


def request_bytes(correlation_id: int) -> bytes:
    """A DescribeQuorum v0 request for partition 0 of the metadata topic, size-prefixed."""
    client = CLIENT_ID.encode()
    header = struct.pack(">hhih", DESCRIBE_QUORUM, 0, correlation_id, len(client)) + client + b"\x00"
    body = (write_uvarint(2) + _compact_string(METADATA_TOPIC)  # one topic
            + write_uvarint(2) + struct.pack(">i", 0) + b"\x00"  # one partition: 0; its tags
            + b"\x00"  # the topic's tags
            + b"\x00")  # the request's tags
    message = header + body
    return struct.pack(">i", len(message)) + message


class _Reader:
    def __init__(self, buf: bytes):
        self.buf, self.at = buf, 0

    def take(self, fmt: str):
        value = struct.unpack_from(fmt, self.buf, self.at)
        self.at += struct.calcsize(fmt)
        return value[0] if len(value) == 1 else value

    def uvarint(self) -> int:
        value, self.at = read_uvarint(self.buf, self.at)
        return value

    def string(self) -> str | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        s = self.buf[self.at:self.at + n].decode()
        self.at += n
        return s

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.at += self.uvarint()

    def array(self, item) -> list:
        n = self.uvarint() - 1
        return [item() for _ in range(max(n, 0))]


def parse_response(buf: bytes, correlation_id: int, address: str) -> QuorumStatus:
    """A DescribeQuorum v0 response (without its size) → the status; QuorumError when it is
    an error (NOT_LEADER_OR_FOLLOWER: asked a controller that is not active)."""
    r = _Reader(buf)
    if r.take(">i") != correlation_id:
        raise QuorumError(f"{address}: an answer to another request")
    r.tags()
    error = r.take(">h")
    if error:
        raise QuorumError(f"{address}: DescribeQuorum error code {error}")

    def replica():
        replica_id, end = r.take(">iq")
        r.tags()
        return replica_id, end

    def partition():
        index, error, leader, epoch, hwm = r.take(">ihiiq")
        voters, observers = r.array(replica), r.array(replica)
        r.tags()
        return index, error, leader, epoch, hwm, voters, observers

    def topic():
        name = r.string()
        parts = r.array(partition)
        r.tags()
        return name, parts

    for name, parts in r.array(topic):
        for index, error, leader, epoch, hwm, voters, observers in parts:
            if name != METADATA_TOPIC or index != 0:
                continue
            if error == NOT_LEADER_OR_FOLLOWER:
                raise QuorumError(f"{address}: not the active controller")
            if error:
                raise QuorumError(f"{address}: DescribeQuorum error code {error}")
            return QuorumStatus(leader, epoch, hwm, tuple(voters), tuple(observers), address)
    raise QuorumError(f"{address}: no answer for {METADATA_TOPIC}-0")


def describe_quorum(address: str, timeout_s: float = 5.0) -> QuorumStatus:
    """Ask one controller (`host:port` of a controller listener)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise QuorumError(f"{address!r} is not host:port")
    correlation_id = 1
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
            sock.sendall(request_bytes(correlation_id))
            size = struct.unpack(">i", _read_exactly(sock, 4))[0]
            return parse_response(_read_exactly(sock, size), correlation_id, address)
    except OSError as e:
        raise QuorumError(f"{address}: {e}") from e
    except (struct.error, IndexError, UnicodeDecodeError, WireError) as e:
        raise QuorumError(f"{address}: not a DescribeQuorum answer ({e})") from e


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise OSError("the connection closed mid-answer")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def leader_status(addresses: list[str], timeout_s: float = 5.0) -> QuorumStatus:
    """The active controller's answer, asking each address in turn."""
    errors = []
    for address in addresses:
        try:
            return describe_quorum(address, timeout_s)
        except QuorumError as e:
            errors.append(str(e))
    raise QuorumError("no active controller answered DescribeQuorum: " + "; ".join(errors))


def committed_end(status: QuorumStatus, last_epoch: int | None, end: int) -> int | None:
    """The offset below which the quorum's answer commits a copy of the log whose newest
    batch is of `last_epoch` and whose entries end before `end`: min(high watermark, end)
    when that epoch is the leader's (the copy is then a prefix of the leader's log, module
    doc); None otherwise."""
    if last_epoch != status.leader_epoch or end <= 0:
        return None
    return min(status.high_watermark, end)


def commit_claim(status: QuorumStatus, cluster_id: str, shape: LogShape, copy: str = ""
                 ) -> MetadataEvent | None:
    """The claim the quorum's answer supports about a copy of the log, as the Raft gate has
    its shape: entry `committed_end` - 1 is committed; None when nothing is."""
    end = committed_end(status, shape.last_epoch, shape.end)
    if end is None:
        return None
    offset = end - 1
    epoch = shape.epoch_at(offset)
    if offset < 0 or epoch is None:
        return None
    data = {"copy": copy, "voters": [v for v, _ in status.voters],
            "proof": f"the quorum's high watermark {status.high_watermark} (DescribeQuorum, "
                     f"leader {status.leader_id}, epoch {status.leader_epoch})"}
    return MetadataEvent(cluster_id, "DescribeQuorum", -1, offset, NO_OFFSET, NO_OFFSET, 0, KIND_COMMIT,
                         COMMIT_CLAIM, 0, data, leader_epoch=epoch)


class CommitPoint:
    """The offset below which a log dir's copy is proven committed, never going back (`end`):
    the quorum's high watermark (DescribeQuorum) when the copy's
    newest batch is of the leader's epoch (the copy is then a prefix of the leader's log),
    its newest snapshot's end (a controller snapshots committed state only), and the first
    offset of the newest epoch with a metadata batch (its leader wrote metadata only once
    everything before was committed: kraft_audit/core/raft.py)."""

    def __init__(self, d: Path):
        self.dir = d
        self.copy = CopyEpochs(d)
        self.end = 0
        self.quorum_error: str | None = None  # why the quorum did not answer, last time asked

    def refresh(self, controllers: list[str]) -> int:
        copy = self.copy.refresh()
        proofs = [self.end]
        snapshots = list_snapshots(self.dir)
        if snapshots:
            proofs.append(snapshots[-1][0])
        for i in range(len(copy.runs) - 1, -1, -1):
            _, start, data = copy.runs[i]
            if data and (i > 0 or start == 0):  # the first run starts where the copy does
                proofs.append(start)
                break
        if controllers and copy.end > max(proofs):  # (nothing left to prove: no question)
            try:
                status = leader_status(controllers, timeout_s=2.0)
            except QuorumError as e:
                self.quorum_error = str(e)
            else:
                self.quorum_error = None
                claimed = committed_end(status, copy.runs[-1][0] if copy.runs else None, copy.end)
                if claimed is not None:
                    proofs.append(claimed)
        self.end = max(proofs)
        return self.end
