"""Who speaks in a namespace, and the names they go by: read by search (the vector query is
embedded without them) and by answers (who a question is about)."""

from __future__ import annotations

from ..store.engine import Store
from ..store.owner import names as owner_names
from ..types import Speakers


def speakers(conn: Store, ns: str, user_name: str | None = None) -> Speakers:
    """The namespace's speakers, each with the names they go by (their own first, then the
    aliases of the person entity with their name: "Mel" for Melanie), and, when its messages
    have the roles ``user`` and ``assistant``, which speaker is which (``user_name``: the
    user's own name, which the user then also goes by), and which speakers are the store's
    owner (the user, and the owner's names as a speaker in other sources: ``Speakers.owner``)."""
    out: dict[str, list[str]] = {row[0]: [row[0]] for row in conn.run("namespace_speakers", {"ns": ns})}
    for speaker, alias in conn.run("namespace_speaker_aliases", {"ns": ns}):
        if alias.lower() not in (n.lower() for n in out[speaker]):
            out[speaker].append(alias)
    roles: dict[str, str] = {}
    users: list[str] = []  # every speaker with the user role: the owner, by role
    for speaker, role in conn.run("namespace_speaker_roles", {"ns": ns}):
        roles.setdefault(role, speaker)  # the speaker who said most in that role
        if role == "user":
            users.append(speaker)
    user = roles.get("user")
    if user is not None and user_name and user_name.lower() not in (n.lower() for n in out[user]):
        out[user].append(user_name)
    # The owner's names as a speaker (store/owner.py): those speakers are the chat's user too,
    # one person, so the user goes by their names as well.
    mine = {name.lower() for name in owner_names(conn, ns)}
    owner = list(dict.fromkeys([*users, *(speaker for speaker in out if speaker.lower() in mine)]))
    me = user if user is not None else (owner[0] if owner else None)
    for speaker in owner:
        if me is not None and speaker != me:
            out[me] += [n for n in out[speaker] if n.lower() not in (m.lower() for m in out[me])]
    return Speakers(out, user, roles.get("assistant"), owner)
