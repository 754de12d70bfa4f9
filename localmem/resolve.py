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
import re
from dataclasses import dataclass

import apsw

from . import db
from .queries import q

KIN = {
    "mom": "mother", "mum": "mother", "mommy": "mother", "mama": "mother", "ma": "mother",
    "dad": "father", "daddy": "father", "papa": "father", "pa": "father",
    "grandma": "grandmother", "granny": "grandmother", "grandpa": "grandfather",
    "bro": "brother", "sis": "sister", "hubby": "husband", "kids": "children", "kid": "child",
}
_PERSONISH = {"person"}


def normalise(name: str, speaker: str | None = None) -> str:
    """Lower-case, unpunctuated, kinship-canonical; "my X" from a speaker is "<speaker>'s X"."""
    text = name.strip().lower().replace("’", "'")
    text = re.sub(r"^(the|a|an)\s+", "", text)
    if speaker and re.match(r"^(my|our)\s+", text):
        text = f"{speaker.strip().lower()}'s " + re.sub(r"^(my|our)\s+", "", text)
    words = [KIN.get(w, w) for w in re.findall(r"[\w']+", text)]
    return " ".join(words)


def _family(entity_type: str) -> str:
    return "person" if entity_type in _PERSONISH else "thing"


@dataclass(frozen=True)
class Candidate:
    id: int
    name: str
    type: str


def resolve(conn: apsw.Connection, ns: str, name: str, entity_type: str, *,
            speaker: str | None, context_ids: list[int]) -> tuple[int, bool]:
    """The entity id for ``name`` (creating it if new) and whether it was created.

    ``context_ids`` are entities already resolved in the same episode (for co-occurrence).
    """
    norm = normalise(name, speaker)
    if not norm:
        norm = name.strip().lower()
    family = _family(entity_type)
    found = [Candidate(i, n, t) for i, n, t in conn.execute(q("entity_by_alias"), {"ns": ns, "alias": norm})
             if _family(t) == family]
    if not found and family == "person" and " " not in norm and len(norm) >= 3:
        found = [Candidate(i, n, t) for i, n, t in conn.execute(
            q("person_by_first_name_prefix"), {"ns": ns, "prefix": norm})]
        if len(found) != 1:
            shorter = [Candidate(i, n, t) for i, n, t in conn.execute(
                q("person_short_names_of"), {"ns": ns, "name": norm})]
            found = []
            if len(shorter) == 1:  # "Mel" was seen first: the fuller name becomes the entity's name
                found = shorter
                conn.execute(q("entity_rename"), {"id": shorter[0].id, "name": name.strip(), "norm_name": norm})
    if found:
        best = found[0] if len(found) == 1 else _most_cooccurring(conn, found, context_ids)
        conn.execute(q("alias_insert"), {"entity_id": best.id, "alias": name.strip(), "norm_alias": norm})
        return best.id, False
    entity_id = conn.execute(q("entity_insert"), {
        "ns": ns, "name": name.strip(), "norm_name": norm, "type": entity_type,
        "created_at": db.now_iso()}).fetchone()[0]
    conn.execute(q("alias_insert"), {"entity_id": entity_id, "alias": name.strip(), "norm_alias": norm})
    return entity_id, True


def _most_cooccurring(conn: apsw.Connection, found: list[Candidate], context_ids: list[int]) -> Candidate:
    scores = {row[0]: row[1] for row in conn.execute(q("entity_cooccurrence"), {
        "ids": json.dumps([c.id for c in found]), "context": json.dumps(context_ids)})}
    return max(found, key=lambda c: (scores.get(c.id, 0), -c.id))
