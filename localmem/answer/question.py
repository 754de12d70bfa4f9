"""The question, read once: who it asks about, its content words, the date question it asks,
whether it asks about an image or about what someone said, and its language.

Every rule of the answer stage (:mod:`localmem.answer.rules`) reads this value instead of
reading the question again. What needs English patterns (a question in the first person,
"what did you suggest", the date questions, photos, saying) is read only from a question in
English or in a language that could not be told ("und": too short to say); another
language's question still finds the speaker it names.
"""

from __future__ import annotations

import datetime as dt
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


# What a question asks that code answers better than the model (:func:`kind`): how many things
# there are or were ("count"), how much they add up to ("sum"), the value something has now
# ("current"), or the one it had before that ("before"). Read in every language the answer stage
# supports: English, German, Spanish, French, Portuguese, Chinese and Japanese.
COUNT, SUM, CURRENT, BEFORE, AT = "count", "sum", "current", "before", "at"
KINDS = (COUNT, SUM, CURRENT, BEFORE, AT)

_COUNT = re.compile(
    r"\bhow (?:many|often)\b|\bnumber of times\b"
    r"|\bwie (?:viele|oft)\b|\bwie viel mal\b|\banzahl der\b"
    r"|\bcu[áa]nt[oa]s\b|\bcon qu[ée] frecuencia\b"
    r"|\bcombien (?:de |d['’])|\bà quelle fréquence\b"
    r"|\bquant[oa]s\b|\bcom que frequ[êe]ncia\b"
    r"|多少(?:个|次|本|辆|只|家|位|件|条|部)|几(?:个|次|本|辆|只|家|位|件|条|部|回)"
    r"|いくつ|何(?:回|個|冊|台|匹|人|度|軒|本|件)",
    re.I,
)
_SUM = re.compile(
    r"\bhow much\b.*\b(?:total|altogether|in all|all together|combined|overall)\b"
    r"|\bhow much (?:have|had|did) (?:i|we|\w+) (?:spend|spent|pay|paid|raise|raised|save|saved|donate|donated)\b"
    r"|\b(?:what|how much) (?:is|was|'s)? ?the (?:total|sum|combined)\b|\bwhat'?s the total\b|\bin total\b"
    r"|\bwie viel\b.*\b(?:insgesamt|zusammen|gesamt|ausgegeben)\b"
    r"|\bcu[áa]nto\b.*\b(?:en total|en conjunto|gastad\w*|gast[ée])\b"
    r"|\bcombien\b.*\b(?:au total|en tout|dépensé)\b"
    r"|\bquanto\b.*\b(?:no total|ao todo|gastei|gastamos|gasto)\b"
    r"|总共|一共|合计|总计|合計|全部で",
    re.I,
)
# "How long has she had her current friends?": a duration, not a value (the model's).
_HOW_LONG = re.compile(
    r"\bhow long\b|\bwie lange\b|\bcu[áa]nto tiempo\b|\bdepuis combien\b|\bh[áa] quanto tempo\b", re.I
)
# "How much more rent do I pay now?", "how many more": a difference, not a count (the model's).
_DIFFERENCE = re.compile(r"\bhow (?:much|many) (?:more|less|fewer|longer|further|bigger|smaller)\b", re.I)
_NOW = re.compile(
    r"\b(?:now|currently|current|these days|nowadays|at the moment|at present|any ?more|still)\b"
    r"|\b(?:jetzt|derzeit|aktuell|zurzeit|momentan|inzwischen|heutzutage)\b"
    r"|\b(?:ahora|actualmente|hoy en d[íi]a|en este momento|todav[íi]a|a[úu]n)\b"
    r"|\b(?:maintenant|actuellement|en ce moment|de nos jours)\b"
    r"|\b(?:agora|atualmente|hoje em dia|no momento|ainda)\b"
    r"|现在|目前|如今|现时|今は|いまは|現在|今の|最近の",
    re.I,
)
# "Where did I live in March?", "What car did I drive in 2023?": the value then (``AT``), when the
# question also names a time (:func:`localmem.retrieval.query_time.parse_query_time`).
_STATE_THEN = re.compile(
    r"\b(?:where|what|which|who|how much)\b.*\b(?:did|was|were) (?:i|we|my|our)\b.*"
    r"\b(?:live|living|work|working|job|drive|driving|car|home|flat|house|city|partner|title|team|school|"
    r"rent|paying|pay|salary|own|owned)\b"
    r"|\b(?:d[óo]nde|qu[ée]|cu[áa]l|cu[áa]nto)\b.*\b(?:viv[íi]a|trabajaba|ten[íi]a|conduc[íi]a|pagaba)\b"
    r"|\b(?:wo|was|welche\w*|wie viel)\b.*\b(?:wohnte|arbeitete|hatte|fuhr|zahlte) ich\b"
    r"|\b(?:où|quel\w*|combien)\b.*\b(?:habitais|travaillais|avais|conduisais|payais)\b"
    r"|\b(?:onde|qual|que|quanto)\b.*\b(?:morava|trabalhava|tinha|dirigia|pagava)\b",
    re.I,
)
# "What was my best time before the Leeds Half?", "how much was my rent before the increase?":
# the value before a change the question names.
_WAS_BEFORE = re.compile(r"\b(?:what|which|where|how much) (?:was|were|did) (?:my|our|i|we)\b.*\bbefore\b", re.I)
_BEFORE = re.compile(
    r"\bbefore (?:my|our|the|his|her|their) (?:current|present|new|latest|last)\b|\bbefore (?:that|this|then)\b"
    r"|\bprevious(?:ly)?\b|\bformer(?:ly)?\b"
    r"|\b(?:vorher|davor|früher|vorherige\w*|ehemalige\w*)\b"
    r"|\bvor (?:meine[mnr]?|unsere[mnr]?)(?: \w+)? (?:jetzig|aktuell|derzeitig|neu)\w*"
    r"|\bantes de (?:mi|mis|nuestr[oa]s?)(?: \w+)? (?:actual|nuev)\w*|\b(?:anteriormente|sol[íi]a)\b"
    r"|\bavant (?:mon|ma|mes|notre)(?: \w+)? (?:actuel|nouv)\w*|\b(?:auparavant|précédent\w*|ancien(?:ne)?)\b"
    r"|\bantes d[oa] (?:meu|minha)(?: \w+)? (?:atual|nov)\w*|\b(?:anterior|costumava)\b"
    r"|之前|以前|原来|前の|元の",
    re.I,
)


def _names_time(text: str) -> bool:
    from ..retrieval.query_time import parse_query_time

    return parse_query_time(text, dt.date.today()) is not None


def kind(text: str, dates: date_rules.DateQuestion | None = None) -> str | None:
    """Which of :data:`KINDS` ``text`` asks, by rules (``None``: none of them, or a date
    question, which :mod:`localmem.answer.dates` counts): "how much … in total" is a sum,
    "how many" or "how often" a count, a question about the present ("now", "these days", in
    every supported language) "current", one about the value before it "before", a first-person
    question about where one lived or worked (and the like) at a time it names "at"."""
    if dates is not None or _DIFFERENCE.search(text) or _HOW_LONG.search(text):
        return None
    if _SUM.search(text):
        return SUM
    if _COUNT.search(text):
        return COUNT
    if _BEFORE.search(text) or _WAS_BEFORE.search(text):
        return BEFORE
    if _STATE_THEN.search(text) and _names_time(text):
        return AT
    if _NOW.search(text):
        return CURRENT
    return None


@dataclass(frozen=True)
class Question:
    """A question as the answer stage reads it (:meth:`parse`).

    ``person``: the one speaker it asks about (:func:`person_asked`); ``words``: the stems
    of its content words; ``dates``: the date question the rules count
    (:func:`localmem.answer.dates.classify`), if any; ``asks_image``: it asks about a photo
    or picture; ``asks_words``: it asks what someone said, suggested or told;
    ``language``: ISO 639-1 code, or "und"; ``kind``: what code answers (:func:`kind`), if any."""

    text: str
    language: str
    person: str | None
    words: frozenset[str]
    dates: date_rules.DateQuestion | None
    asks_image: bool
    asks_words: bool
    kind: str | None = None

    @classmethod
    def parse(cls, text: str, speakers: Names, language: str | None = None) -> "Question":
        """Read ``text`` once, with the conversation's ``speakers`` (``language``: when known)."""
        language = language or detect(text)
        english = language in (*ENGLISH, UNDETERMINED)  # an undetermined one may be English
        dates = date_rules.classify(text, language)
        return cls(
            text=text,
            language=language,
            person=person_asked(text, speakers, english, language),
            words=frozenset(stem(w) for w in content_words(text)),
            dates=dates,
            asks_image=english and bool(_ASKS_IMAGE.search(text)),
            asks_words=english and bool(_ASKS_WORDS.search(text)),
            kind=kind(text, dates),
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
