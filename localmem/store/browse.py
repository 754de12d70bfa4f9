"""Read-only views of what was remembered: episodes, facts, entities, one memory in full."""

from __future__ import annotations

import json
from typing import Any

import apsw

from ..errors import NotFoundError
from ..text.names import normalise
from .queries import q
from .refs import parse, ref


def episodes(conn: apsw.Connection, ns: str, limit: int = 1000) -> list[dict[str, Any]]:
    keys = ("id", "conversation", "title", "narrative", "start", "end", "stage", "messages")
    return [_unit_ref(dict(zip(keys, row))) for row in conn.execute(q("episodes_list"), {"ns": ns, "limit": limit})]


def facts(
    conn: apsw.Connection,
    ns: str,
    *,
    entity: str | None = None,
    start: str | None = None,
    end: str | None = None,
    limit: int = 1000,
) -> list[dict[str, Any]]:
    keys = (
        "id",
        "subject",
        "predicate",
        "object",
        "text",
        "occurred_start",
        "occurred_end",
        "precision",
        "mentioned_at",
    )
    params = {"ns": ns, "entity": normalise(entity) if entity else None, "from": start, "to": end, "limit": limit}
    return [_unit_ref(dict(zip(keys, row))) for row in conn.execute(q("facts_list"), params)]


def _unit_ref(row: dict[str, Any]) -> dict[str, Any]:
    row["id"] = ref("u", row["id"])
    return row


def entities(conn: apsw.Connection, ns: str, limit: int = 1000) -> list[dict[str, Any]]:
    keys = ("id", "name", "type", "units", "aliases")
    return [dict(zip(keys, row)) for row in conn.execute(q("entities_list"), {"ns": ns, "limit": limit})]


def get(conn: apsw.Connection, ns: str, item: str) -> dict[str, Any]:
    """One message (``m:ID``) or unit (``u:ID``) of namespace ``ns``, in full."""
    kind, number = parse(item)
    return message(conn, ns, number) if kind == "m" else unit(conn, ns, number)


def message(conn: apsw.Connection, ns: str, message_id: int) -> dict[str, Any]:
    """A message with its source, metadata, corrections and the units resting on it."""
    row = conn.execute(q("message_get"), {"id": message_id, "ns": ns}).fetchone()
    if row is None:
        raise _missing("message", ref("m", message_id), ns)
    (
        mid,
        namespace,
        conversation,
        session,
        seq,
        external_id,
        speaker,
        role,
        text,
        sent_at,
        attachments,
        meta,
        replaces,
        replaced_by,
        source_id,
        source_kind,
        source_uri,
    ) = row
    return {
        "id": ref("m", mid),
        "kind": "message",
        "namespace": namespace,
        "conversation": conversation,
        "session": session,
        "seq": seq,
        "external_id": external_id,
        "speaker": speaker,
        "role": role,
        "text": text,
        "time": sent_at,
        "attachments": json.loads(attachments) if attachments else [],
        "meta": json.loads(meta) if meta else {},
        "replaces": ref("m", replaces) if replaces is not None else None,
        "replaced_by": ref("m", replaced_by) if replaced_by is not None else None,
        "source": {"id": source_id, "kind": source_kind, "uri": source_uri},
        "units": [
            {"id": ref("u", uid), "kind": kind, "text": utext}
            for uid, kind, utext in conn.execute(q("message_units"), {"id": mid})
        ],
    }


def unit(conn: apsw.Connection, ns: str, unit_id: int) -> dict[str, Any]:
    """A unit with its source messages, entities and links."""
    row = conn.execute(q("unit_get"), {"id": unit_id}).fetchone()
    if row is None or row[1] != ns:
        raise _missing("unit", ref("u", unit_id), ns)
    keys = (
        "id",
        "namespace",
        "kind",
        "conversation",
        "episode_id",
        "title",
        "text",
        "subject",
        "predicate",
        "object",
        "aspect",
        "occurred_start",
        "occurred_end",
        "precision",
        "mentioned_at",
        "stage",
        "prompt_version",
        "model_id",
    )
    found = dict(zip(keys, row))
    found["id"] = ref("u", unit_id)
    if found["episode_id"] is not None:
        found["episode_id"] = ref("u", found["episode_id"])
    found["sources"] = [
        {
            "id": ref("m", r[0]),
            **dict(zip(("external_id", "conversation", "session", "speaker", "sent_at", "text"), r[1:])),
        }
        for r in conn.execute(q("unit_sources_full"), {"id": unit_id})
    ]
    found["entities"] = [
        dict(zip(("id", "name", "type", "role", "tag"), r)) for r in conn.execute(q("unit_entities"), {"id": unit_id})
    ]
    found["links"] = [
        {**dict(zip(("type", "weight", "direction"), r[:3])), "id": ref("u", r[3]), "kind": r[4], "text": r[5]}
        for r in conn.execute(q("unit_links"), {"id": unit_id})
    ]
    return found


def _missing(what: str, item: str, ns: str) -> NotFoundError:
    return NotFoundError(
        f"no {what} {item} in namespace '{ns}'",
        "see 'localmem search' for ids (ids belong to one namespace: pass --namespace)",
    )
