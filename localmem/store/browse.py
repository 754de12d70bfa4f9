"""Read-only views of what was remembered: episodes, facts, entities, one unit in full."""

from __future__ import annotations

from typing import Any

import apsw

from ..build.resolve import normalise
from ..errors import NotFoundError
from .queries import q


def episodes(conn: apsw.Connection, ns: str, limit: int = 1000) -> list[dict[str, Any]]:
    keys = ("id", "conversation", "title", "narrative", "start", "end", "stage", "messages")
    return [dict(zip(keys, row)) for row in conn.execute(q("episodes_list"), {"ns": ns, "limit": limit})]


def facts(conn: apsw.Connection, ns: str, *, entity: str | None = None, start: str | None = None,
          end: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
    keys = ("id", "subject", "predicate", "object", "text", "occurred_start", "occurred_end",
            "precision", "mentioned_at")
    params = {"ns": ns, "entity": normalise(entity) if entity else None, "from": start,
              "to": end, "limit": limit}
    return [dict(zip(keys, row)) for row in conn.execute(q("facts_list"), params)]


def entities(conn: apsw.Connection, ns: str, limit: int = 1000) -> list[dict[str, Any]]:
    keys = ("id", "name", "type", "units", "aliases")
    return [dict(zip(keys, row)) for row in conn.execute(q("entities_list"), {"ns": ns, "limit": limit})]


def show(conn: apsw.Connection, unit_id: int) -> dict[str, Any]:
    """A unit with its source messages, entities and links."""
    row = conn.execute(q("unit_get"), {"id": unit_id}).fetchone()
    if row is None:
        raise NotFoundError(f"no unit u:{unit_id}; see 'localmem episodes' or 'localmem facts'")
    keys = ("id", "namespace", "kind", "conversation", "episode_id", "title", "text", "subject",
            "predicate", "object", "aspect", "occurred_start", "occurred_end", "precision",
            "mentioned_at", "stage", "prompt_version", "model_id")
    unit = dict(zip(keys, row))
    unit["sources"] = [dict(zip(("message_id", "external_id", "conversation", "session", "speaker",
                                 "sent_at", "text"), r))
                       for r in conn.execute(q("unit_sources_full"), {"id": unit_id})]
    unit["entities"] = [dict(zip(("id", "name", "type", "role", "tag"), r))
                        for r in conn.execute(q("unit_entities"), {"id": unit_id})]
    unit["links"] = [dict(zip(("type", "weight", "direction", "id", "kind", "text"), r))
                     for r in conn.execute(q("unit_links"), {"id": unit_id})]
    return unit
