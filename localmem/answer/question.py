"""The question, read once: who it asks about, its content words, the date question it asks,
whether it asks about an image or about what someone said, and its language.

Every rule of the answer stage (:mod:`localmem.answer.rules`) reads this value instead of
reading the question again. What needs English patterns (a question in the first person,
"what did you suggest", the date questions, photos, saying) is read only from a question in
English or in a language that could not be told ("und": too short to say); another
language's question still finds the speaker it names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ..text.language import detect
from ..text.person import first_person
from ..text.words import content_words, stem
from ..types import Names, Speakers
from . import dates as date_rules

ENGLISH = ("en",)
UNDETERMINED = "und"

_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|we|us|our|ours|i'm|i've|i'd|i'll|we're|we've)\b", re.I)
# "you" as the one who said or did something: what the assistant said, suggested, recommended.
_YOU_SAID = re.compile(
    r"\b(?:did|do|have|had|would|could|can|will|were) you\b"
    r"|\byou (?:said|suggested|recommended|told|mentioned|gave|proposed|advised|named|wrote|"
    r"listed|shared|explained|calculated|thought)\b"
    r"|\byour (?:suggestion|recommendation|advice|answer|idea|tip|list|plan)s?\b",
    re.I,
)
# A question about an image itself may be answered from its description.
_ASKS_IMAGE = re.compile(
    r"\b(?:photos?|pictures?|pics?|images?|snaps?|selfies?|paintings?|drawings?|look(?:s|ed)? like)\b", re.I
)
# A question about what someone said, not about what they did.
_ASKS_WORDS = re.compile(
    r"\b(?:say|said|says|tell|told|mention(?:ed)?|suggest(?:ed)?|recommend(?:ed)?|advise[ds]?)\b", re.I
)


@dataclass(frozen=True)
class Question:
    """A question as the answer stage reads it (:meth:`parse`).

    ``person``: the one speaker it asks about (:func:`person_asked`); ``words``: the stems
    of its content words; ``dates``: the date question the rules count
    (:func:`localmem.answer.dates.classify`), if any; ``asks_image``: it asks about a photo
    or picture; ``asks_words``: it asks what someone said, suggested or told;
    ``language``: ISO 639-1 code, or "und"."""

    text: str
    language: str
    person: str | None
    words: frozenset[str]
    dates: date_rules.DateQuestion | None
    asks_image: bool
    asks_words: bool

    @classmethod
    def parse(cls, text: str, speakers: Names, language: str | None = None) -> "Question":
        """Read ``text`` once, with the conversation's ``speakers`` (``language``: when known)."""
        language = language or detect(text)
        english = language in (*ENGLISH, UNDETERMINED)  # an undetermined one may be English
        return cls(
            text=text,
            language=language,
            person=person_asked(text, speakers, english, language),
            words=frozenset(stem(w) for w in content_words(text)),
            dates=date_rules.classify(text) if english else None,
            asks_image=english and bool(_ASKS_IMAGE.search(text)),
            asks_words=english and bool(_ASKS_WORDS.search(text)),
        )


def person_asked(question: str, speakers: Names, english: bool = True, language: str = "en") -> str | None:
    """The one speaker ``question`` is about: the one it names; in a user–assistant chat (and
    an ``english`` question), the assistant when it asks what "you" said or suggested, else the
    user when it speaks in the first person; ``None`` when it names none of them, or several.

    A question in the first person in any language :func:`~localmem.text.person.first_person`
    reads ("wo wohne ich?", "¿qué coche tengo?") is about the store's owner when it is known
    (:attr:`Speakers.me`: the chat's user, or the owner's name in a WhatsApp or Slack chat)."""
    owner = speakers.owner if isinstance(speakers, Speakers) else ()
    named = [s for s, names in speakers.items() if names_in(question, names)]
    if owner and named and set(named) <= {*owner}:
        named = [owner[0]]  # the owner's names, one person
    if named:
        return named[0] if len(named) == 1 else None
    if english and isinstance(speakers, Speakers) and speakers.chat:
        if _YOU_SAID.search(question):
            return speakers.assistant
        if _FIRST_PERSON.search(question):
            return speakers.user
    if isinstance(speakers, Speakers) and speakers.me is not None and first_person(question, language):
        return speakers.me
    return None


def names_in(text: str, names: Sequence[str]) -> bool:
    """Whether ``text`` says one of ``names`` as a word."""
    return any(re.search(rf"\b{re.escape(n)}\b", text, re.I) for n in names if n)
