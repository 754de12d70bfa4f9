"""Forgetting: choose exactly what goes, with what rests only on it, and name its deletion.

What can be named: one or more memories by id (``m:ID``, ``u:ID``), a conversation, the
messages said before a date, the messages and units whose text contains some text, a source,
or a whole namespace (ids, conversations and sources of the namespace worked in). Then:

- a derived unit resting only on deleted messages goes with them, and so do the units
  derived from it (an episode's gists, facts and knowledge) unless they also rest on a message
  that stays; a unit that also rests on other messages stays with those as its sources (it is
  reported as kept: model-written text such as an episode's narrative may still repeat what
  was said, and ``forget u:ID`` or ``--match`` removes it);
- a unit named itself goes with everything derived from it; its messages stay (a later build
  groups them into an episode again);
- entities nothing mentions any more go; a finished source left empty goes; with ``match``,
  logged model replies that hold the text lose it.

This module only works out the ids and names the deletion (``forget_delete`` or
``forget_namespace``), inside the write transaction that deletes them; :func:`purge.purge` runs it and does the rest, the same for every kind:
the message after a deleted one is indexed again, logged replies of episodes that read a
deleted message lose their text, summaries written from forgotten memory go, and none of it
stays in the file's bytes or its WAL. A dry run reports the same without deleting anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence, TypedDict

from ..config import StoreLocation
from ..errors import LocalmemError, NotFoundError
from ..text.times import day_or_time
from .engine import Store
from .refs import parse, ref
from .results import ForgetResult
from .rows import all_rows

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11


@dataclass
class Plan:
    """What a forget deletes (ids), and what it touches but keeps."""

    messages: list[int] = field(default_factory=list)
    units: list[int] = field(default_factory=list)
    entities: list[int] = field(default_factory=list)
    sources: list[int] = field(default_factory=list)
    kept_units: list[int] = field(default_factory=list)  # rested on deleted messages too, kept

    def report(self, dry_run: bool) -> dict[str, Any]:
        """What went, or would go (see :meth:`Memory.forget <localmem.Memory.forget>`); ``file``
        is filled in once the deletion has run."""
        return {
            "messages": [ref("m", i) for i in self.messages],
            "units": [ref("u", i) for i in self.units],
            "sources": self.sources,
            "entities": [f"e:{i}" for i in self.entities],
            "kept_units": [ref("u", i) for i in self.kept_units],
            "counts": {
                "sources": len(self.sources),
                "messages": len(self.messages),
                "units": len(self.units),
                "entities": len(self.entities),
            },
            "dry_run": dry_run,
            "file": None,
        }

    @property
    def empty(self) -> bool:
        return not (self.messages or self.units or self.sources or self.entities)


class Target(TypedDict, total=False):
    """What :meth:`Memory.forget <localmem.memory.Memory.forget>` deletes: exactly one of

    ``ids`` (memories of the namespace worked in: ``m:ID`` messages, ``u:ID`` units; one id
    or several), a ``conversation``, the messages said ``before`` a date or time, the messages
    and units whose text contains ``match`` (case-insensitive), a source of the namespace
    (``source_id``), or a whole ``namespace``."""

    namespace: str | None
    source_id: int | None
    ids: Sequence[str] | str | None
    conversation: str | None
    before: Any
    match: str | None


def forget(
    conn: Store, path: StoreLocation, ns: str, *, dry_run: bool = False, **target: Unpack[Target]
) -> ForgetResult:
    """Delete the one ``target`` (checked here) in namespace ``ns``, or the whole ``namespace``,
    from the store at ``path``; what went (or would go), and what scrubbing the file did.

    What goes is worked out inside the write transaction that deletes it (:func:`purge.purge`),
    so the report lists exactly what went: a message another writer adds while the forget runs
    is either among them (added before the forget took the write lock) or kept (added after).
    A dry run works it out in one read snapshot."""
    return _forget(conn, path, ns, _checked(target), dry_run)


def _checked(target: Target) -> Target:
    """The one target of ``target``, checked, in the form :func:`_decide` reads: ``ids`` a
    list of printed ids, ``before`` an ISO date or time, ``match`` stripped."""
    unknown = set(target) - set(Target.__annotations__)
    if unknown:
        raise TypeError(f"forget() got an unexpected keyword argument {sorted(unknown)[0]!r}")
    given = [name for name in Target.__annotations__ if target.get(name) is not None]
    if len(given) != 1:
        raise LocalmemError(
            f"forget needs exactly one target, got {len(given)}" + (f" ({', '.join(given)})" if given else ""),
            "name ids (m:ID, u:ID), a conversation, before, match, a source or a namespace",
        )
    ids, match, source_id = target.get("ids"), target.get("match"), target.get("source_id")
    if ids is not None:
        parsed = [parse(item) for item in ([ids] if isinstance(ids, str) else ids or [])]
        if not parsed:
            raise LocalmemError("forget() was given no ids")
        return Target(ids=[ref(kind, number) for kind, number in parsed])
    if match is not None:
        if not isinstance(match, str) or not match.strip():
            raise LocalmemError("forget --match needs some text")
        return Target(match=match.strip())
    if source_id is not None and (not isinstance(source_id, int) or isinstance(source_id, bool)):
        raise LocalmemError(
            f"forget() needs source_id as a number, not {source_id!r}", "see 'localmem stats --sources'"
        )
    if target.get("before") is not None:
        return Target(before=day_or_time(target.get("before"), "--before"))
    return target


def _forget(conn: Store, path: StoreLocation, ns: str, target: Target, dry_run: bool) -> ForgetResult:
    if dry_run:
        with conn.reading():
            return ForgetResult(**_decide(conn, ns, target)[0].report(dry_run=True))
    decided: list[Plan] = []

    def decide() -> tuple[str, dict[str, Any]] | None:
        plan, folded = _decide(conn, ns, target)
        decided.append(plan)
        if plan.empty:
            return None
        if target.get("namespace") is not None:
            return "forget_namespace", {"ns": target.get("namespace")}
        return (
            "forget_delete",
            {
                "ns": ns,
                "folded": folded,
                "units": json.dumps(plan.units),
                "messages": json.dumps(plan.messages),
                "entities": json.dumps(plan.entities),
                "sources": json.dumps(plan.sources),
            },
        )

    scrubbed = conn.purge(decide)
    report = decided[-1].report(dry_run=False)
    report["file"] = scrubbed.to_dict() if scrubbed is not None else None
    return ForgetResult(**report)


def _decide(conn: Store, ns: str, target: Target) -> tuple[Plan, str | None]:
    """What the (checked) target takes with it, read in the caller's transaction; and the
    case-folded ``match`` (for the logged replies that lose it)."""
    folded = None
    namespace, source_id, ids = target.get("namespace"), target.get("source_id"), target.get("ids")
    conversation, before, match = target.get("conversation"), target.get("before"), target.get("match")
    if namespace is not None:
        plan = _namespace_plan(conn, namespace)
    elif source_id is not None:
        if conn.run("source_get", {"id": source_id, "ns": ns}).fetchone() is None:
            raise NotFoundError(
                f"no source {source_id} in namespace '{ns}'",
                "see 'localmem stats --sources' (sources belong to one namespace: pass --namespace)",
            )
        plan = _plan(conn, _column(conn, "forget_messages_of_source", id=source_id), [])
        plan.sources = sorted(set(plan.sources) | {source_id})
    elif ids is not None:
        parsed = [parse(item) for item in ([ids] if isinstance(ids, str) else ids)]
        named = {kind: [number for k, number in parsed if k == kind] for kind in ("m", "u")}
        plan = _plan(conn, _named(conn, ns, "m", named["m"]), _named(conn, ns, "u", named["u"]))
    elif conversation is not None:
        found = _column(conn, "forget_messages_of_conversation", ns=ns, conversation=conversation)
        if not found:
            raise NotFoundError(
                f"no conversation '{conversation}' in namespace '{ns}'",
                "see 'localmem stats' and the conversation names search prints",
            )
        plan = _plan(conn, found, [])
    elif before is not None:
        plan = _plan(conn, _column(conn, "forget_messages_before", ns=ns, before=before), [])
    elif match is not None:
        folded = match.casefold()
        plan = _plan(
            conn,
            _column(conn, "forget_messages_matching", ns=ns, folded=folded),
            _column(conn, "forget_units_matching", ns=ns, folded=folded),
        )
    else:
        raise LocalmemError(
            "forget needs exactly one target",
            "name ids (m:ID, u:ID), a conversation, --before, --match, --source or --namespace",
        )
    return plan, folded


def _column(conn: Store, name: str, **params: Any) -> list[int]:
    return [row[0] for row in conn.run(name, params)]


def _named(conn: Store, ns: str, kind: str, ids: Sequence[int]) -> list[int]:
    """``ids`` of ``kind``, each of which must be in ``ns``."""
    if not ids:
        return []
    query = "forget_messages_by_ids" if kind == "m" else "forget_units_by_ids"
    found = set(_column(conn, query, ns=ns, ids=json.dumps(list(ids))))
    missing = [ref(kind, i) for i in ids if i not in found]
    if missing:
        what = "message" if kind == "m" else "unit"
        raise NotFoundError(
            f"no {what} {', '.join(missing)} in namespace '{ns}'",
            "see 'localmem search' for ids (ids belong to one namespace: pass --namespace)",
        )
    return sorted(found)


def _plan(conn: Store, messages: Sequence[int], named_units: Sequence[int]) -> Plan:
    """Everything that goes with ``messages`` and ``named_units`` (see the module docstring)."""
    m_json = json.dumps(list(messages))
    resting = all_rows(conn.run("forget_units_resting_on", {"messages": m_json}))
    explicit = set(named_units)
    gone = explicit | {unit for unit, only in resting if only}
    kept = {unit for unit, only in resting if not only}
    frontier = set(gone)
    while frontier:  # what was derived from a unit that goes (an episode's units), level by level
        rows = all_rows(conn.run("forget_children", {"units": json.dumps(sorted(frontier)), "messages": m_json}))
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
        messages=sorted(messages),
        units=sorted(gone),
        entities=orphans,
        sources=_column(conn, "forget_emptied_sources", messages=m_json),
        kept_units=sorted(kept - gone),
    )


def _namespace_plan(conn: Store, namespace: str) -> Plan:
    plan = Plan()
    lists = {"s": plan.sources, "m": plan.messages, "u": plan.units, "e": plan.entities}
    for kind, number in conn.run("forget_namespace_ids", {"ns": namespace}):
        lists[kind].append(number)
    if plan.empty:
        raise NotFoundError(f"namespace '{namespace}' is empty or does not exist", "see 'localmem namespaces'")
    return plan
