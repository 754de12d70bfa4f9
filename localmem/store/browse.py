"""Read-only views of what was remembered: episodes, facts, entities, one memory in full."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from ..errors import NotFoundError
from ..text.names import normalise
from .engine import Store
from .refs import parse, ref
from .results import (
    ConversationWindow,
    Entity,
    Episode,
    Fact,
    MessageDetail,
    Period,
    SpeakerSummary,
    TimelinePeriod,
    UnitDetail,
)
from .rows import all_rows, one_row


def episodes(conn: Store, ns: str, limit: int = 1000) -> list[Episode]:
    keys = ("id", "conversation", "title", "narrative", "start", "end", "stage", "messages")
    return [Episode(**_unit_ref(dict(zip(keys, row)))) for row in conn.run("episodes_list", {"ns": ns, "limit": limit})]


def facts(
    conn: Store,
    ns: str,
    *,
    entity: str | None = None,
    start: str | None = None,
    end: str | None = None,
    limit: int = 1000,
) -> list[Fact]:
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
    return [Fact(**_unit_ref(dict(zip(keys, row)))) for row in conn.run("facts_list", params)]


def _unit_ref(row: dict[str, Any]) -> dict[str, Any]:
    row["id"] = ref("u", row["id"])
    return row


def entities(conn: Store, ns: str, limit: int = 1000) -> list[Entity]:
    return [Entity(*row) for row in conn.run("entities_list", {"ns": ns, "limit": limit})]


def get(conn: Store, ns: str, item: str) -> MessageDetail | UnitDetail:
    """One message (``m:ID``) or unit (``u:ID``) of namespace ``ns``, in full."""
    kind, number = parse(item)
    return message(conn, ns, number) if kind == "m" else unit(conn, ns, number)


def message(conn: Store, ns: str, message_id: int) -> MessageDetail:
    """A message with its source, metadata, corrections and the units resting on it."""
    row = conn.run("message_get", {"id": message_id, "ns": ns}).fetchone()
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
    return MessageDetail(
        id=ref("m", mid),
        kind="message",
        namespace=namespace,
        conversation=conversation,
        session=session,
        seq=seq,
        external_id=external_id,
        speaker=speaker,
        role=role,
        text=text,
        time=sent_at,
        attachments=json.loads(attachments) if attachments else [],
        meta=json.loads(meta) if meta else {},
        replaces=ref("m", replaces) if replaces is not None else None,
        replaced_by=ref("m", replaced_by) if replaced_by is not None else None,
        source={"id": source_id, "kind": source_kind, "uri": source_uri},
        units=[
            {"id": ref("u", uid), "kind": kind, "text": utext}
            for uid, kind, utext in conn.run("message_units", {"id": mid})
        ],
    )


def unit(conn: Store, ns: str, unit_id: int) -> UnitDetail:
    """A unit with its source messages, entities and links."""
    row = conn.run("unit_get", {"id": unit_id}).fetchone()
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
    found: dict[str, Any] = dict(zip(keys, row))
    found["id"] = ref("u", unit_id)
    if found["episode_id"] is not None:
        found["episode_id"] = ref("u", found["episode_id"])
    found["sources"] = [
        {
            "id": ref("m", r[0]),
            **dict(zip(("external_id", "conversation", "session", "speaker", "sent_at", "text"), r[1:])),
        }
        for r in conn.run("unit_sources_full", {"id": unit_id})
    ]
    found["entities"] = [
        dict(zip(("id", "name", "type", "role", "tag"), r)) for r in conn.run("unit_entities", {"id": unit_id})
    ]
    found["links"] = [
        {**dict(zip(("type", "weight", "direction"), r[:3])), "id": ref("u", r[3]), "kind": r[4], "text": r[5]}
        for r in conn.run("unit_links", {"id": unit_id})
    ]
    return UnitDetail(**found)


def _missing(what: str, item: str, ns: str) -> NotFoundError:
    return NotFoundError(
        f"no {what} {item} in namespace '{ns}'",
        "see 'localmem search' for ids (ids belong to one namespace: pass --namespace)",
    )


def timeline(conn: Store, ns: str, period: str, speaker: str | None = None) -> list[TimelinePeriod]:
    """Messages and episodes per ``period`` ("week", starting on Monday, or "month"), oldest
    first: ``start`` and ``end`` (ISO dates, end excluded), ``messages``, ``episodes``; the
    periods between the first and the last with neither are there too, with zeros. ``speaker``:
    only their messages, and the episodes they speak in."""
    counts: dict[str, dict[str, Any]] = {}
    for name, query in (("messages", "timeline_messages"), ("episodes", "timeline_episodes")):
        for start, n in conn.run(query, {"ns": ns, "period": period, "speaker": speaker}):
            if start is None:  # a time SQLite cannot read
                continue
            counts.setdefault(start, {"start": start, "messages": 0, "episodes": 0})[name] = n
    out: list[TimelinePeriod] = []
    if not counts:
        return out
    day, last = dt.date.fromisoformat(min(counts)), dt.date.fromisoformat(max(counts))
    while day <= last:  # every period from the first to the last, the empty ones too
        end = (
            day + dt.timedelta(days=7)
            if period == "week"
            else dt.date(day.year + day.month // 12, day.month % 12 + 1, 1)
        )
        found = counts.get(day.isoformat(), {"start": day.isoformat(), "messages": 0, "episodes": 0})
        out.append(TimelinePeriod(**found, end=end.isoformat()))
        day = end
    return out


def period(conn: Store, ns: str, start: str, end: str, limit: int = 1000) -> Period:
    """What happened in [``start``, ``end``): the conversations with messages in it and the
    episodes that started in it."""
    params = {"ns": ns, "start": start, "end": end, "limit": limit}
    conversations = [
        {"conversation": c, "messages": n, "first": first, "last": last, "first_id": ref("m", mid)}
        for c, n, first, last, mid in conn.run("period_conversations", params)
    ]
    keys = ("id", "conversation", "title", "narrative", "start", "end", "messages")
    episodes: list[dict[str, Any]] = [dict(zip(keys, row)) for row in conn.run("period_episodes", params)]
    for episode in episodes:
        episode["opening"] = [] if episode["narrative"] else opening(conn, ns, episode["id"])
    return Period(start, end, conversations, [_unit_ref(e) for e in episodes])


def opening(conn: Store, ns: str, unit_id: int, n: int = 3) -> list[dict[str, str]]:
    """The first ``n`` messages of an episode (``speaker``, ``text``): what an episode closed
    without the LLM (no title, no narrative) is shown as."""
    rows = conn.run("episode_opening", {"ns": ns, "id": unit_id, "n": n})
    return [{"speaker": speaker, "text": text} for speaker, text in rows]


def conversations(conn: Store, ns: str, limit: int = 1000) -> list[dict[str, Any]]:
    """The conversations of ``ns``, the largest first: ``conversation``, ``messages``, ``first``, ``last``."""
    keys = ("conversation", "messages", "first", "last")
    return [dict(zip(keys, row)) for row in conn.run("conversations_list", {"ns": ns, "limit": limit})]


def names(conn: Store, ns: str, limit: int = 200) -> tuple[list[str], list[str]]:
    """The speakers and the conversations of ``ns`` by name, the most messages first (read from
    indexes alone: quick on a large store)."""
    params = {"ns": ns, "limit": limit}
    return (
        [row[0] for row in conn.run("speaker_names", params)],
        [row[0] for row in conn.run("conversation_names", params)],
    )


def said_by(conn: Store, ns: str, speaker: str, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
    """What ``speaker`` said in ``ns``, the latest first: ``id`` (``m:ID``), ``conversation``,
    ``text``, ``time``, ``attachments`` (a list, or None)."""
    params = {"ns": ns, "speaker": speaker, "limit": limit, "offset": offset}
    return [
        {
            "id": ref("m", mid),
            "conversation": conv,
            "text": text,
            "time": sent_at,
            "attachments": json.loads(attachments) if attachments else None,
        }
        for mid, conv, text, sent_at, attachments in conn.run("speaker_messages", params)
    ]


def context(conn: Store, ns: str, item: str, around: int = 3) -> ConversationWindow:
    """Message ``item`` (``m:ID``) among its neighbours: the ``around`` messages before and after
    it in its conversation, and whether there are more on either side."""
    kind, number = parse(item)
    if kind != "m":
        raise NotFoundError(f"{item} is not a message; only messages have a place in a conversation")
    found = message(conn, ns, number)
    return window(conn, ns, found.conversation, found.seq - around, found.seq + around, found.id)


def window(
    conn: Store, ns: str, conversation: str, first: int, last: int, focus: str | None = None
) -> ConversationWindow:
    """The messages of ``conversation`` at places ``first``..``last``; ``focus``: the one in the middle."""
    bounds = conn.run("conversation_bounds", {"ns": ns, "conversation": conversation}).fetchone()
    if bounds is None or bounds[0] is None:
        raise NotFoundError(f"no conversation {conversation!r} in namespace '{ns}'")
    low, high = int(bounds[0]), int(bounds[1])
    params = {"ns": ns, "conversation": conversation, "from": first, "to": last}
    keys = ("id", "speaker", "role", "text", "time", "seq", "replaces", "replaced_by", "session")
    messages = []
    for row in conn.run("conversation_window", params):
        found = dict(zip(keys, row))
        found["id"] = ref("m", found["id"])
        for name in ("replaces", "replaced_by"):
            found[name] = ref("m", found[name]) if found[name] is not None else None
        messages.append(found)
    return ConversationWindow(
        conversation=conversation,
        focus=focus,
        first=max(first, low),
        last=min(last, high),
        more_before=first > low,
        more_after=last < high,
        messages=messages,
    )


def speakers(conn: Store, ns: str, limit: int = 1000) -> list[SpeakerSummary]:
    """Who speaks in ``ns``, the most messages first: ``speaker``, ``messages``, ``first``, ``last``."""
    return [SpeakerSummary(*row) for row in conn.run("speakers_list", {"ns": ns, "limit": limit})]


def conversations_by_source(conn: Store, ns: str, limit: int = 1000) -> list[dict[str, Any]]:
    """The conversations of ``ns`` per source (import), the latest first within each:
    ``source_id``, ``conversation``, ``messages``, ``first``, ``last``, ``first_id`` (``m:ID``),
    ``people`` (speaker and count, the most first) and ``episodes`` (built in it)."""
    params = {"ns": ns, "limit": limit}
    people: dict[str, list[dict[str, Any]]] = {}
    for conversation, speaker, n in conn.run("conversation_speakers", {"ns": ns}):
        people.setdefault(conversation, []).append({"speaker": speaker, "messages": n})
    episodes: dict[str, int] = dict(all_rows(conn.run("conversation_episodes", {"ns": ns})))
    return [
        {
            "source_id": source,
            "conversation": conversation,
            "messages": n,
            "first": first,
            "last": last,
            "first_id": ref("m", mid),
            "people": people.get(conversation, []),
            "episodes": episodes.get(conversation, 0),
        }
        for source, conversation, n, first, last, mid in conn.run("conversations_by_source", params)
    ]


def built(conn: Store, ns: str) -> dict[str, Any]:
    """What was built from the messages of ``ns`` and what was not: ``episodes``, ``summarised``
    (episodes with a summary, written by the LLM), ``unbuilt`` (messages in no episode),
    ``units`` (per kind) and ``vectors`` (of messages, units and parts; None: no vector index)."""
    episodes, summarised, unbuilt = one_row(conn.run("overview_built", {"ns": ns}))
    units: dict[str, int] = dict(all_rows(conn.run("stats_units", {"ns": ns})))
    vectors = None
    if conn.has_vectors():
        rows = one_row(conn.run("stats_vector_rows", {"ns": ns}))
        vectors = dict(zip(("messages", "units", "parts"), rows))
    return {"episodes": episodes, "summarised": summarised, "unbuilt": unbuilt, "units": units, "vectors": vectors}
