"""Character profiles (CAST): a person's timeline and what memory knows about them.

The timeline is derived, not stored: the episodes that mention the person, in time order,
with their role (``main`` when they speak, ``supporting`` when they are only mentioned).
Knowledge comes from consolidation (``knowledge`` units whose ``subject`` mention is the
person, tagged with an aspect); within an aspect the current statements come first and the
ones a newer statement replaced follow, with when they stopped holding.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .errors import NotFoundError
from .queries import q
from .resolve import normalise


@dataclass
class Appearance:
    episode_id: int
    title: str | None
    time: str | None
    role: str  # "main" or "supporting"


@dataclass
class Statement:
    unit_id: int
    text: str
    time: str | None
    sources: list[str]  # external ids of the messages it rests on
    current: bool = True
    superseded_by: int | None = None  # the newer statement, when replaced
    until: str | None = None  # when the newer statement took over
    supersedes: list[int] = field(default_factory=list)


@dataclass
class Profile:
    """What :meth:`Memory.profile` returns."""

    name: str
    entity_id: int
    type: str
    aliases: list[str]
    episodes: list[Appearance]
    knowledge: dict[str, list[Statement]]  # aspect → statements, current first

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def profile(conn: Any, ns: str, name: str) -> Profile:
    """The profile of the entity ``name`` names in ``ns`` (alias-aware)."""
    rows = conn.execute(q("profile_entity"), {"ns": ns, "norm": normalise(name)}).fetchall()
    if not rows:
        people = [r[0] for r in conn.execute(q("profile_people"), {"ns": ns, "limit": 8})]
        known = f"; people in it: {', '.join(people)}" if people else \
            " (it has no people yet: ingest with --extract llm)"
        raise NotFoundError(f"no one called {name!r} in namespace '{ns}'{known}")
    entity_id, shown, kind = rows[0]
    aliases = [r[0] for r in conn.execute(q("profile_aliases"), {"id": entity_id})]
    episodes = [Appearance(eid, title, when, role)
                for eid, title, when, role in conn.execute(q("profile_episodes"), {"id": entity_id})]
    statements: list[tuple[str, Statement]] = []
    for uid, text, aspect, when, newer, until, older in conn.execute(q("profile_knowledge"), {"id": entity_id}):
        statements.append((aspect, Statement(uid, text, when, [], newer is None, newer, until,
                                             [int(i) for i in json.loads(older or "[]")])))
    by_id = {s.unit_id: s for _a, s in statements}
    if by_id:
        for uid, _mid, ext, *_rest in conn.execute(q("unit_sources_by_ids"), {"ids": json.dumps(list(by_id))}):
            by_id[uid].sources.append(ext or "")
    knowledge: dict[str, list[Statement]] = {}
    for aspect, st in statements:
        knowledge.setdefault(aspect, []).append(st)
    for aspect in knowledge:  # current first; each group oldest first (the query's order)
        knowledge[aspect].sort(key=lambda s: not s.current)
    return Profile(shown, entity_id, kind, aliases, episodes, dict(sorted(knowledge.items())))
