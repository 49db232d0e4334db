"""Broker registration requests, one line each, in either of two formats:

- Kafka's own request log: the controller's `kafka.request.logger` at TRACE
  writes, per request it answered, a line
  `[2026-11-23 08:16:39,146] DEBUG Completed request:{...} (kafka.request.logger)`
  whose JSON holds the request header (`requestApiVersion`), the request body
  (`brokerId`, `clusterId`, `incarnationId`, `previousBrokerEpoch`) and the
  response (`errorCode`, `brokerEpoch`). Only BROKER_REGISTRATION lines the
  controller answered without error are registrations; a rejected attempt
  (DUPLICATE_BROKER_REGISTRATION while the old session lives, NOT_CONTROLLER)
  leads to no record and is retried with the same incarnation id.
- A neutral JSON object per line: {brokerId, incarnationId,
  previousBrokerEpoch, requestVersion, timestampMs[, clusterId]}.

Every line becomes a `MetadataEvent` (kind "registration"), a `Quarantined`
row with its reason, or nothing (a request log line of another API, or a
rejected registration: not an input to the audit).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any

from kraft_audit.core.events import (BROKER_REGISTRATION_REQUEST, KIND_REGISTRATION, NO_OFFSET,
                                MetadataEvent, Quarantined)

UNKNOWN_CLUSTER = "unknown"
REQUEST_LOG_MARK = "Completed request:"
_REGISTRATION_API = 62  # ApiKeys.BROKER_REGISTRATION
_RAW_LIMIT = 4096


def parse_registration_line(line: str, cluster_id: str | None, source: str, position: int
                            ) -> MetadataEvent | Quarantined | None:
    """One line of a registration input; None when the line is not a registration."""
    text = line.strip()
    if not text:
        return None
    if REQUEST_LOG_MARK in text:
        return _request_log_line(text, cluster_id, source, position)
    if text.startswith("{"):
        return _json_line(text, cluster_id, source, position)
    return _bad(cluster_id, source, position, text,
                "registration line is neither a JSON object nor a kafka.request.logger "
                "'Completed request:' line")


def _request_log_line(text: str, cluster_id, source, position):
    body = text[text.index(REQUEST_LOG_MARK) + len(REQUEST_LOG_MARK):]
    # The JSON ends at the last '}' (the layout may append " (kafka.request.logger)").
    end = body.rfind("}")
    try:
        doc = json.loads(body[:end + 1])
        header = doc["requestHeader"]
        api_key = header["requestApiKey"]
    except (ValueError, KeyError, TypeError) as exc:
        return _bad(cluster_id, source, position, text,
                    f"request log line does not hold Kafka's request JSON: {exc}")
    if api_key != _REGISTRATION_API:
        return None
    request, response = doc.get("request"), doc.get("response")
    if not isinstance(request, dict):
        return _bad(cluster_id, source, position, text,
                    "BROKER_REGISTRATION line without its request body: kafka.request.logger "
                    "prints bodies only at TRACE")
    if isinstance(response, dict) and response.get("errorCode", 0) != 0:
        return None  # rejected: no record follows; the broker retries with this incarnation
    data = {
        "brokerId": request.get("brokerId"),
        "incarnationId": request.get("incarnationId"),
        # absent before request v3: Kafka's default
        "previousBrokerEpoch": request.get("previousBrokerEpoch", -1),
        "requestVersion": header.get("requestApiVersion"),
        "timestampMs": _log_time_ms(text),
        "clusterId": request.get("clusterId"),
    }
    if isinstance(response, dict) and "brokerEpoch" in response:
        data["brokerEpoch"] = response["brokerEpoch"]
    return _event(data, cluster_id, source, position, text)


def _json_line(text: str, cluster_id, source, position):
    try:
        data = json.loads(text)
    except ValueError as exc:
        return _bad(cluster_id, source, position, text, f"registration line is not JSON: {exc}")
    return _event(data, cluster_id, source, position, text)


def _event(data: Any, cluster_id, source, position, text):
    problem = registration_problem(data)
    if problem:
        return _bad(cluster_id, source, position, text, f"registration event {problem}")
    named = data.get("clusterId")
    if cluster_id and named and named != cluster_id:
        return _bad(cluster_id, source, position, text,
                    f"registration event is for cluster {named}, this input is configured "
                    f"for {cluster_id}")
    return MetadataEvent(
        cluster_id=named or cluster_id or UNKNOWN_CLUSTER, source=source, position=position,
        offset=NO_OFFSET, batch_base_offset=NO_OFFSET, batch_last_offset=NO_OFFSET,
        timestamp_ms=int(data.get("timestampMs") or 0), kind=KIND_REGISTRATION,
        type=BROKER_REGISTRATION_REQUEST, version=int(data.get("requestVersion") or 0), data=data)


def registration_problem(data: Any) -> str | None:
    """What makes `data` unusable as a registration request, or None."""
    if not isinstance(data, dict):
        return "is not a JSON object"
    if not _is_int(data.get("brokerId")):
        return "lacks brokerId (int)"
    if not isinstance(data.get("incarnationId"), str) or not data["incarnationId"]:
        return "lacks incarnationId (str)"
    for name in ("previousBrokerEpoch", "timestampMs", "requestVersion"):
        if data.get(name) is not None and not _is_int(data[name]):
            return f"has a non-integer {name}: {data[name]!r}"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_LOG_TIME = re.compile(r"\[(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})[,.](\d{3})"
                       r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?\]")


def _log_time_ms(text: str) -> int | None:
    """The time log4j's layout puts first: `[2026-11-23 08:16:39,146]` (Kafka's
    default pattern, no zone: read as UTC) or with an offset (`%d{ISO8601_OFFSET_DATE_TIME_HHCMM}`)."""
    m = _LOG_TIME.match(text)
    if m is None:
        return None
    day, clock, millis, zone = m.groups()
    moment = datetime.strptime(f"{day} {clock}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    ms = int(moment.timestamp() * 1000) + int(millis)
    if zone and zone != "Z":
        digits = zone[1:].replace(":", "")
        minutes = int(digits[:2]) * 60 + (int(digits[2:4]) if len(digits) > 2 else 0)
        ms -= (1 if zone[0] == "+" else -1) * minutes * 60_000
    return ms


def _bad(cluster_id, source, position, text: str, reason: str) -> Quarantined:
    return Quarantined(cluster_id or UNKNOWN_CLUSTER, source, position, reason,
                       text.encode()[:_RAW_LIMIT])
