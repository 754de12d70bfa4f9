"""Stage 4, resolve: map extracted entity names to entities of the namespace.

Names are normalised (case, punctuation, "the", kinship words) and "my X" said
by a speaker becomes "<speaker>'s X", so "my mom" from Caroline and "Caroline's
mother" meet. A name matches an entity by normalised name or alias within the
same type family; a short person name that is a prefix of exactly one known
person's first name ("Mel" → "Melanie") becomes an alias of it. When several
entities share a name, the one that co-occurs most with the episode's other
entities wins, so namesakes in different circles stay apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from ..models.protocols import LLM
from ..store.engine import Store, now_iso
from ..store.rows import one_row, one_value
from ..text.names import normalise

_PERSONISH = {"person"}


def _family(entity_type: str) -> str:
    return "person" if entity_type in _PERSONISH else "thing"


@dataclass(frozen=True)
class Candidate:
    id: int
    name: str
    type: str


def resolve(
    conn: Store,
    ns: str,
    name: str,
    entity_type: str,
    *,
    speaker: str | None,
    context_ids: list[int],
    decided: dict[str, int | None] | None = None,
) -> tuple[int, bool]:
    """The entity id for ``name`` (creating it if new) and whether it was created.

    ``context_ids`` are entities already resolved in the same episode (for co-occurrence);
    ``decided`` maps normalised names of borderline cases to the entity the model chose
    (``None``: a different person of the same name, so a new entity).
    """
    norm = normalise(name, speaker)
    if not norm:
        norm = name.strip().lower()
    if decided is not None and norm in decided:
        chosen = decided[norm]
        if chosen is not None:
            conn.run("alias_insert", {"entity_id": chosen, "alias": name.strip(), "norm_alias": norm})
            return chosen, False
        return _create(conn, ns, name, norm, entity_type), True
    family = _family(entity_type)
    found = [
        Candidate(i, n, t) for i, n, t in conn.run("entity_by_alias", {"ns": ns, "alias": norm}) if _family(t) == family
    ]
    if not found and family == "person" and " " not in norm and len(norm) >= 3:
        found = [Candidate(i, n, t) for i, n, t in conn.run("person_by_first_name_prefix", {"ns": ns, "prefix": norm})]
        if len(found) != 1:
            shorter = [Candidate(i, n, t) for i, n, t in conn.run("person_short_names_of", {"ns": ns, "name": norm})]
            found = []
            if len(shorter) == 1:  # "Mel" was seen first: the fuller name becomes the entity's name
                found = shorter
                conn.run("entity_rename", {"id": shorter[0].id, "name": name.strip(), "norm_name": norm})
    if found:
        best = found[0] if len(found) == 1 else _most_cooccurring(conn, found, context_ids)
        conn.run("alias_insert", {"entity_id": best.id, "alias": name.strip(), "norm_alias": norm})
        return best.id, False
    return _create(conn, ns, name, norm, entity_type), True


def _create(conn: Store, ns: str, name: str, norm: str, entity_type: str) -> int:
    entity_id = one_value(
        conn.run(
            "entity_insert",
            {"ns": ns, "name": name.strip(), "norm_name": norm, "type": entity_type, "created_at": now_iso()},
        )
    )
    conn.run("alias_insert", {"entity_id": entity_id, "alias": name.strip(), "norm_alias": norm})
    return entity_id


@dataclass
class Borderline:
    """A bare personal name that matches known people with nothing in common with this episode."""

    name: str
    norm: str
    tag: str
    context: list[str]
    candidates: list[Candidate]


@dataclass(frozen=True)
class Mentioned:
    name: str
    type: str
    tag: str


def find_borderline(conn: Store, ns: str, mentions: Sequence[Mentioned], speakers: Iterable[str]) -> list[Borderline]:
    """The episode's mentions the rules cannot resolve (read-only; nothing is written).

    Speakers, "X's mother"-style names and names with one known bearer who appeared
    with another person of this episode are resolved by rules. What remains is a bare
    name whose known bearers share no company with this episode: the same friend in a
    new setting, or a namesake.
    """
    speaker_norms = {normalise(s) for s in speakers}
    others = [m for m in mentions if normalise(m.name) not in speaker_norms]
    known_ids: dict[str, list[int]] = {}
    for m in others:
        known_ids[normalise(m.name)] = [
            row[0] for row in conn.run("entity_by_alias", {"ns": ns, "alias": normalise(m.name)})
        ]
    out: list[Borderline] = []
    for m in others:
        norm = normalise(m.name)
        if _family(m.type) != "person" or "'s " in norm or not norm:
            continue
        found = [
            Candidate(i, n, t)
            for i, n, t in conn.run("entity_by_alias", {"ns": ns, "alias": norm})
            if _family(t) == "person"
        ]
        if not found:
            continue
        context_ids = [i for other, ids in known_ids.items() if other != norm for i in ids]
        together = {
            row[0]
            for row in conn.run(
                "entity_cooccurrence", {"ids": json.dumps([c.id for c in found]), "context": json.dumps(context_ids)}
            )
            if row[1]
        }
        if together:
            continue
        context = [o.name for o in mentions if normalise(o.name) != norm]
        out.append(Borderline(m.name, norm, m.tag, context, found[:3]))
    return out


def render_case(conn: Store, case: Borderline) -> str:
    """One case as the resolve prompt shows it."""
    lines = [
        f'New mention: "{case.name}" ({case.tag or "no details"}), in a chat with: '
        f"{', '.join(case.context) or 'nobody else'}"
    ]
    for i, cand in enumerate(case.candidates):
        tags, company = (json.loads(v or "[]") for v in one_row(conn.run("entity_profile", {"id": cand.id})))
        lines.append(
            f'Known {i}: "{cand.name}" ({", ".join(tags) or "no details"}), seen with: '
            f"{', '.join(company) or 'nobody else'}"
        )
    return "\n".join(lines)


def decide(
    conn: Store, llm: LLM, cases: Sequence[Borderline], log: Callable[..., None] | None = None
) -> dict[str, int | None]:
    """Ask the model about all ``cases`` in one call: normalised name → entity id or ``None``.

    When the call fails, the rules' choice stands (the most co-occurring known person).
    """
    from ..models.structured import complete_structured
    from ..prompts import resolve as prompt

    cases = list(cases)[: prompt.MAX_CASES]
    if not cases:
        return {}
    result = complete_structured(
        llm, prompt.render([render_case(conn, c) for c in cases]), prompt.SCHEMA, prompt.MAX_TOKENS
    )
    if log:
        log(stage="resolve", prompt_version=prompt.VERSION, result=result)
    if result.data is None:
        return {}
    out: dict[str, int | None] = {}
    for answer in result.data["answers"]:
        if not 0 <= answer["case"] < len(cases):
            continue
        case = cases[answer["case"]]
        match = answer["match"]
        out[case.norm] = case.candidates[match].id if 0 <= match < len(case.candidates) else None
    return out


def _most_cooccurring(conn: Store, found: list[Candidate], context_ids: list[int]) -> Candidate:
    scores = {
        row[0]: row[1]
        for row in conn.run(
            "entity_cooccurrence", {"ids": json.dumps([c.id for c in found]), "context": json.dumps(context_ids)}
        )
    }
    return max(found, key=lambda c: (scores.get(c.id, 0), -c.id))
