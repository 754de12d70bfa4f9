"""Forgetting: choose exactly what goes, delete it with what rests only on it, and leave none
of its text in the file.

What can be named: one or more memories by id (``m:ID``, ``u:ID``), a conversation, the
messages said before a date, the messages and units whose text contains some text, a source,
or a whole namespace. Then:

- a derived unit resting only on deleted messages goes with them, and so do the units
  derived from it (an episode's gists, facts and knowledge) unless they also rest on a message
  that stays; a unit that also rests on other messages stays with those as its sources (it is
  reported as kept: model-written text such as an episode's narrative may still repeat what
  was said, and ``forget u:ID`` or ``--match`` removes it);
- a unit named itself goes with everything derived from it; its messages stay (a later build
  groups them into an episode again);
- the full-text row of the message after a deleted one is written again, since it held the
  deleted text as context; logged model replies of the episodes that read a deleted message
  lose their text; people whose knowledge lost a statement lose their written summary;
  entities nothing mentions any more go; a finished source left empty goes;
- :func:`purge` then clears the deleted text from the file's bytes: the full-text index
  segments, the room left in its pages (the file is written anew) and the write-ahead log.

A dry run reports the same without deleting anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Sequence

import apsw

from ..errors import LocalmemError, NotFoundError
from .queries import q
from .refs import ref


@dataclass
class Plan:
    """What a forget deletes (ids), and what it touches but keeps."""

    messages: list[int] = field(default_factory=list)
    units: list[int] = field(default_factory=list)
    entities: list[int] = field(default_factory=list)
    sources: list[int] = field(default_factory=list)
    kept_units: list[int] = field(default_factory=list)  # rested on deleted messages too, kept
    followers: list[int] = field(default_factory=list)  # full-text rows to write again
    episodes: list[int] = field(default_factory=list)  # kept episodes whose call logs are scrubbed
    summaries: list[int] = field(default_factory=list)  # kept entities whose summary is cleared

    def report(self, dry_run: bool) -> dict[str, Any]:
        return {
            "messages": [ref("m", i) for i in self.messages],
            "units": [ref("u", i) for i in self.units],
            "sources": self.sources,
            "entities": [f"e:{i}" for i in self.entities],
            "kept_units": [ref("u", i) for i in self.kept_units],
            "counts": {"sources": len(self.sources), "messages": len(self.messages),
                       "units": len(self.units), "entities": len(self.entities)},
            "dry_run": dry_run,
        }

    @property
    def empty(self) -> bool:
        return not (self.messages or self.units or self.sources or self.entities)


def forget(conn: apsw.Connection, ns: str, *, namespace: str | None = None, source_id: int | None = None,
           messages: Sequence[int] | None = None, units: Sequence[int] | None = None,
           conversation: str | None = None, before: str | None = None, match: str | None = None,
           dry_run: bool = False) -> dict[str, Any]:
    """Delete one target (exactly one given; ``messages``/``units`` together are one target,
    the ids named) in namespace ``ns``, or the whole ``namespace``; what went (or would go)."""
    folded = None
    if namespace is not None:
        plan = _namespace_plan(conn, namespace)
    elif source_id is not None:
        if conn.execute(q("source_get"), {"id": source_id}).fetchone() is None:
            raise NotFoundError(f"no source with id {source_id}", "see 'localmem stats --sources'")
        plan = _plan(conn, _column(conn, "forget_messages_of_source", id=source_id), [])
        plan.sources = sorted(set(plan.sources) | {source_id})
    elif messages is not None or units is not None:
        plan = _plan(conn, _named(conn, ns, "m", messages or []), _named(conn, ns, "u", units or []))
    elif conversation is not None:
        found = _column(conn, "forget_messages_of_conversation", ns=ns, conversation=conversation)
        if not found:
            raise NotFoundError(f"no conversation '{conversation}' in namespace '{ns}'",
                                "see 'localmem stats' and the conversation names search prints")
        plan = _plan(conn, found, [])
    elif before is not None:
        plan = _plan(conn, _column(conn, "forget_messages_before", ns=ns, before=before), [])
    elif match is not None:
        folded = match.casefold()
        plan = _plan(conn, _column(conn, "forget_messages_matching", ns=ns, folded=folded),
                     _column(conn, "forget_units_matching", ns=ns, folded=folded))
    else:
        raise LocalmemError("forget needs exactly one target",
                            "name ids (m:ID, u:ID), a conversation, --before, --match, --source or --namespace")
    if not dry_run and not plan.empty:
        conn.pragma("secure_delete", 1)  # overwrite what is deleted from here on (see purge)
        with conn:
            if namespace is not None:
                conn.execute(q("forget_namespace"), {"ns": namespace})
            else:
                _delete(conn, ns, plan, folded)
        purged = purge(conn)
    return {**plan.report(dry_run), "purged": purged if not dry_run and not plan.empty else None}


def _column(conn: apsw.Connection, name: str, **params: Any) -> list[int]:
    return [row[0] for row in conn.execute(q(name), params)]


def _named(conn: apsw.Connection, ns: str, kind: str, ids: Sequence[int]) -> list[int]:
    """``ids`` of ``kind``, each of which must be in ``ns``."""
    if not ids:
        return []
    query = "forget_messages_by_ids" if kind == "m" else "forget_units_by_ids"
    found = set(_column(conn, query, ns=ns, ids=json.dumps(list(ids))))
    missing = [ref(kind, i) for i in ids if i not in found]
    if missing:
        what = "message" if kind == "m" else "unit"
        raise NotFoundError(f"no {what} {', '.join(missing)} in namespace '{ns}'",
                            "see 'localmem search' for ids (ids belong to one namespace: pass --namespace)")
    return sorted(found)


def _plan(conn: apsw.Connection, messages: Sequence[int], named_units: Sequence[int]) -> Plan:
    """Everything that goes with ``messages`` and ``named_units`` (see the module docstring)."""
    m_json = json.dumps(list(messages))
    resting = conn.execute(q("forget_units_resting_on"), {"messages": m_json}).fetchall()
    explicit = set(named_units)
    gone = explicit | {unit for unit, only in resting if only}
    kept = {unit for unit, only in resting if not only}
    frontier = set(gone)
    while frontier:  # what was derived from a unit that goes (an episode's units), level by level
        rows = conn.execute(q("forget_children"), {"units": json.dumps(sorted(frontier)),
                                                   "messages": m_json}).fetchall()
        frontier = set()
        for unit, parent, elsewhere in rows:
            if unit in gone:
                continue
            if parent in explicit or not elsewhere:
                gone.add(unit)
                frontier.add(unit)
                if parent in explicit:
                    explicit.add(unit)
            else:
                kept.add(unit)  # rests on a message that stays: kept, without its parent
    u_json = json.dumps(sorted(gone))
    mentioned = _column(conn, "forget_entities_of", units=u_json)
    orphans = _column(conn, "forget_orphan_entities", entities=json.dumps(mentioned), units=u_json)
    return Plan(
        messages=sorted(messages), units=sorted(gone),
        entities=orphans, sources=_column(conn, "forget_emptied_sources", messages=m_json),
        kept_units=sorted(kept - gone),
        followers=_column(conn, "forget_followers", messages=m_json),
        episodes=_column(conn, "forget_touched_episodes", messages=m_json, units=u_json),
        summaries=sorted(set(mentioned) - set(orphans)))


def _namespace_plan(conn: apsw.Connection, namespace: str) -> Plan:
    plan = Plan()
    lists = {"s": plan.sources, "m": plan.messages, "u": plan.units, "e": plan.entities}
    for kind, number in conn.execute(q("forget_namespace_ids"), {"ns": namespace}):
        lists[kind].append(number)
    if plan.empty:
        raise NotFoundError(f"namespace '{namespace}' is empty or does not exist", "see 'localmem namespaces'")
    return plan


def _delete(conn: apsw.Connection, ns: str, plan: Plan, folded: str | None) -> None:
    conn.execute(q("forget_delete"), {
        "units": json.dumps(plan.units), "messages": json.dumps(plan.messages),
        "entities": json.dumps(plan.entities), "sources": json.dumps(plan.sources)})
    for message_id in plan.followers:
        conn.execute(q("fts_message_reindex"), {"id": message_id})
    conn.execute(q("forget_scrub_calls"), {"ns": ns, "episodes": json.dumps(plan.episodes), "folded": folded})
    conn.execute(q("forget_clear_summaries"), {"entities": json.dumps(plan.summaries)})


def purge(conn: apsw.Connection) -> bool:
    """The one step after every forget that clears deleted text from the file's bytes; False
    when another connection was reading and the write-ahead log could not be emptied yet (its
    old pages are overwritten by the next checkpoint that completes).

    Deleted rows are overwritten as they go (``secure_delete``, set before deleting). The
    full-text indexes keep a deleted row's terms in their segments until they are merged, so
    both are merged into one segment ('optimize'). That is not enough: when SQLite rebalances a
    b-tree it moves cells between pages without clearing the room they leave, so copies
    survive in the unused part of live pages; VACUUM writes the file anew from the live rows.
    A checkpoint then copies the result into the file and truncates the write-ahead log, which
    held the old pages. Measured on the test store of tests/test_forget_targets.py (one secret
    message of 42, its marker in 14 places): forgetting it left 1 copy (in the slack of an FTS
    page reused as an interior page) without VACUUM, 0 with it. VACUUM rewrites the whole file:
    0.25 s for a 14 MB store of 5K messages, 3.5 s for 137 MB (50K), on 2 cores.

    (The trust-store work, issue 17, makes this the store's own purge step.)
    """
    conn.execute(q("purge_fts"))
    try:
        conn.execute(q("purge_vacuum"))
        busy, _log, _copied = conn.execute(q("purge_checkpoint")).fetchone()
    except (apsw.BusyError, apsw.LockedError):  # another writer: the deletion itself is committed
        return False
    return busy == 0
