"""Who the owner of an import is, where the export tells: the names to suggest as "I".

An assistant chat export (ChatGPT, Claude, chat JSON with roles) says it by role: its ``user``
is the owner, and needs no name. A chat between people (WhatsApp, Slack, Discord) has only
names, and the export tells who exported it in two ways:

- a WhatsApp chat is named after the other party ("WhatsApp Chat with Carmen Ruiz.txt" is the
  conversation "Carmen Ruiz"): when that person speaks in it and one other person does, the
  other is the owner;
- otherwise the owner is in every chat they exported: the sender found in the most
  conversations of the import, then the one with the most messages (in a single chat: the most
  frequent sender), unless another is as frequent (then nothing is suggested).

Notes need no name either: a note without an author of its own is the owner's, with the role
``user`` (importers/notes.py); one whose front matter names another author is not.
What is suggested is stored as a suggestion, which the owner confirms or replaces
(``localmem owner``); a name the owner set is never replaced by a suggestion.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from .common import MessageIn

# The formats whose speakers are people named in the export, without roles.
PEOPLE_CHATS = ("whatsapp", "slack", "discord", "telegram")


@dataclass(frozen=True)
class Suggestion:
    """A name to suggest as the owner, and why (said in the ingest report)."""

    name: str
    why: str


def suggest(sources: Iterable[tuple[str, Sequence[MessageIn]]]) -> list[Suggestion]:
    """The owner's names to suggest for ``sources`` (each its format and messages) stored in one
    namespace; none when the export does not tell."""
    out: dict[str, Suggestion] = {}
    people: list[MessageIn] = []
    for fmt, messages in sources:
        named = [m for m in messages if m.role is None and m.speaker]
        if fmt in PEOPLE_CHATS:
            people += named
    by_conversation: dict[str, Counter[str]] = {}
    for m in people:
        by_conversation.setdefault(m.conversation, Counter())[m.speaker] += 1
    for conversation, senders in by_conversation.items():
        others = [s for s in senders if s.lower() != conversation.lower()]
        if len(senders) == 2 and len(others) == 1:
            name = others[0]
            why = f"the other sender of the chat named after {conversation}"
            out.setdefault(name.lower(), Suggestion(name, why))
    if not out and by_conversation:
        chats = Counter(s for senders in by_conversation.values() for s in senders)
        said = Counter(m.speaker for m in people)
        ranked = sorted(chats, key=lambda s: (-chats[s], -said[s], s))
        best = ranked[0]
        tie = len(ranked) > 1 and (chats[ranked[1]], said[ranked[1]]) == (chats[best], said[best])
        if not tie:
            many = len(by_conversation) > 1
            why = f"the sender in the most of its {len(by_conversation)} chats" if many else "the most frequent sender"
            out[best.lower()] = Suggestion(best, why)
    return list(out.values())
