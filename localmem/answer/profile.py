"""Character profiles (CAST): a person's timeline and what memory knows about them.

The timeline is derived, not stored: the episodes that mention the person, in time order,
with their role (``main`` when they speak, ``supporting`` when they are only mentioned).
Knowledge comes from consolidation (``knowledge`` units whose ``subject`` mention is the
person, tagged with an aspect); within an aspect the current statements come first and the
ones a newer statement replaced follow, with when they stopped holding.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import LocalmemError, NotFoundError
from ..models.protocols import LLM
from ..models.structured import complete_structured
from ..prompts import profile as summary_prompt
from ..store.engine import Store, now_iso
from ..store.rows import all_rows, one_row
from ..text.names import normalise

if TYPE_CHECKING:
    from ..models.factory import Models


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
    summary: str | None = None  # written by the model on request (see write_summary)
    summary_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """As JSON: episodes and statements named by their printed ids (``u:45``)."""
        out = asdict(self)
        for ep in out["episodes"]:
            ep["episode_id"] = f"u:{ep['episode_id']}"
        for statements in out["knowledge"].values():
            for st in statements:
                st["unit_id"] = f"u:{st['unit_id']}"
                st["superseded_by"] = f"u:{st['superseded_by']}" if st["superseded_by"] is not None else None
                st["supersedes"] = [f"u:{i}" for i in st["supersedes"]]
        return out


def profile(conn: Store, ns: str, name: str, models: "Models | None" = None) -> Profile:
    """The profile of the entity ``name`` names in ``ns`` (alias-aware); given the ``models``,
    with its summary (:func:`with_summary`)."""
    rows = all_rows(conn.run("profile_entity", {"ns": ns, "norm": normalise(name)}))
    if not rows:
        people = [r[0] for r in conn.run("profile_people", {"ns": ns, "limit": 8})]
        known = (
            f"; people in it: {', '.join(people)}" if people else " (it has no people yet: ingest with --extract llm)"
        )
        raise NotFoundError(f"no one called {name!r} in namespace '{ns}'{known}")
    entity_id, shown, kind = rows[0]
    aliases = [r[0] for r in conn.run("profile_aliases", {"id": entity_id})]
    episodes = [
        Appearance(eid, title, when, role) for eid, title, when, role in conn.run("profile_episodes", {"id": entity_id})
    ]
    statements: list[tuple[str, Statement]] = []
    for uid, text, aspect, when, newer, until, older in conn.run("profile_knowledge", {"id": entity_id}):
        statements.append(
            (
                aspect,
                Statement(
                    uid, text, when, [], newer is None, newer, until, [int(i) for i in json.loads(older or "[]")]
                ),
            )
        )
    by_id = {s.unit_id: s for _a, s in statements}
    if by_id:
        for uid, _mid, ext, *_rest in conn.run("unit_sources_by_ids", {"ids": json.dumps(list(by_id))}):
            by_id[uid].sources.append(ext or "")
    knowledge: dict[str, list[Statement]] = {}
    for aspect, st in statements:
        knowledge.setdefault(aspect, []).append(st)
    for aspect in knowledge:  # current first; each group oldest first (the query's order)
        knowledge[aspect].sort(key=lambda s: not s.current)
    summary, summary_at, _basis = _stored_summary(conn, entity_id)
    prof = Profile(shown, entity_id, kind, aliases, episodes, dict(sorted(knowledge.items())), summary, summary_at)
    return with_summary(conn, models, prof) if models is not None else prof


def _stored_summary(conn: Store, entity_id: int) -> tuple[str | None, str | None, str | None]:
    summary, summary_at, data = one_row(conn.run("entity_summary", {"id": entity_id}))
    basis = (json.loads(data or "{}").get("summary") or {}).get("basis")
    return summary, summary_at, basis


@dataclass
class SummaryBasis:
    """What a summary rests on: current statements (aspect, text, date), the newest episodes
    (date, title), and a digest of both (and the prompt) that changes when either does."""

    statements: list[tuple[str, str, str]]
    episodes: list[tuple[str, str]]
    digest: str


def stale_summary(conn: Store, prof: Profile) -> SummaryBasis | None:
    """What a new summary of ``prof`` would rest on, when the stored one is missing or rests
    on something else (new or replaced knowledge, new episodes); None when it is current or
    memory holds nothing about the person."""
    statements = [
        (aspect, st.text, (st.time or "date unknown")[:10])
        for aspect, lines in prof.knowledge.items()
        for st in lines
        if st.current
    ]
    statements = statements[: summary_prompt.MAX_STATEMENTS]
    episodes = [((ep.time or "date unknown")[:10], ep.title or "untitled") for ep in prof.episodes]
    episodes = episodes[-summary_prompt.MAX_EPISODES :]
    if not statements and not episodes:
        return None
    digest = hashlib.sha256(json.dumps([summary_prompt.VERSION, statements, episodes]).encode()).hexdigest()[:16]
    _summary, _at, basis = _stored_summary(conn, prof.entity_id)
    return None if basis == digest and prof.summary else SummaryBasis(statements, episodes, digest)


def write_summary(conn: Store, llm: LLM, prof: Profile, basis: SummaryBasis, now: str) -> None:
    """Have the model write ``prof``'s summary from ``basis`` and store it on the person
    (the model call runs first; only the write needs the caller's transaction)."""
    result = complete_structured(
        llm,
        summary_prompt.render(prof.name, basis.statements, basis.episodes),
        summary_prompt.SCHEMA,
        summary_prompt.MAX_TOKENS,
    )
    if not result.ok or not result.data:
        raise LocalmemError(f"the model's profile summary stayed invalid: {result.error}")
    prof.summary = " ".join(str(result.data["summary"]).split())
    prof.summary_at = now
    with conn:
        conn.run(
            "entity_summary_update",
            {
                "id": prof.entity_id,
                "summary": prof.summary,
                "summary_at": now,
                "meta": json.dumps(
                    {
                        "basis": basis.digest,
                        "prompt_version": summary_prompt.VERSION,
                        "model_id": getattr(llm, "model_id", "unknown"),
                    }
                ),
            },
        )


def with_summary(conn: Store, models: "Models", prof: Profile) -> Profile:
    """``prof`` with its summary: the stored one, or, when that is missing or rests on
    something else (:func:`stale_summary`), one the model writes now and stores."""

    basis = stale_summary(conn, prof)
    if basis is not None:
        write_summary(conn, models.llm, prof, basis, now_iso())
    return prof
