"""Date questions worked out by rules, not by the model.

A 1.5B model reads dates well and counts them badly: asked "how many days after we adopted
Pilchard did I start my new job?", it names the right two messages and then guesses the number.
So for questions that count or order dates, the model only picks which evidence it rests on (its
``supports``), and the rules here do the rest:

- ``ago``: "how many days / weeks / months / years ago …", "how long ago …", "how long has it
  been since …": from the event's day to ``now``;
- ``between``: "how many days between X and Y", "how long after X did Y", "how many days had we
  had X when Y": between the two events' days;
- ``order``: "which came first, X or Y?": the option whose event is earlier;
- ``age``: "how old was I when X": from a birth date the evidence states to the event's day.

An event's day is the day a dated phrase in its sentence names ("yesterday", "last Friday",
"on 15 April", "Sunday the 12th"), read against the day the message was said, else the day it was said. Each
question event is matched to the evidence sentence that shares most of its words. The working
is kept in :class:`Worked` and shown in the answer's details.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass, field
from typing import Sequence

from ..text import sentences
from ..text.language import detect
from ..text.time_words import to_english
from ..text.times import count_between, day_text, days_of_month, find_time_phrases
from ..text.words import content_words, stem
from ..types import Hit

UNITS = ("days", "weeks", "months", "years")
_HOW_MANY = r"how (?:many (?P<unit>days?|weeks?|months?|years?)|long)"


@dataclass(frozen=True)
class DateQuestion:
    """What a date question asks: ``kind``, the unit it counts in (``None``: choose one), and
    the phrases naming its events (one for ``ago`` and ``age``, two for ``between``/``order``)."""

    kind: str
    unit: str | None
    events: tuple[str, ...]


@dataclass
class Event:
    """A dated sentence of the evidence."""

    day: dt.date
    text: str
    hit_id: str
    stated: bool = False  # the sentence names its time ("on 15 April", "yesterday", "last year")
    precision: str = "day"  # of a time named: "day", "week", "month" or "year" (``day`` is its start)
    assistant: bool = False  # said by an assistant (restating the user, sometimes wrongly)
    at: int = -1  # where in ``text`` the time named starts (-1: none named)


@dataclass
class Worked:
    """A date answer and how it was worked out."""

    answer: str
    kind: str
    unit: str | None
    events: list[dict[str, str]] = field(default_factory=list)  # the matched events: day, text, id
    arithmetic: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"rule": self.kind, "unit": self.unit, "events": self.events, "arithmetic": self.arithmetic}


_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("age", re.compile(r"\bhow old (?:was|were|am|is) \w+ when (?P<a>.+)", re.I)),
    (
        "order",
        re.compile(
            r"\bwhich (?:happened|came|was|did \w+ (?:do|get|have)) (?:first|earlier)\b"
            r"[\s:,-]*(?:,? ?(?:the )?)?(?P<a>.+?),? or (?P<b>.+)",
            re.I,
        ),
    ),
    # Only a yes/no question: "Where did Dana live before York?" asks for a place.
    ("order", re.compile(r"^\s*did (?P<a>.+?) (?:happen |come )?before (?P<b>.+)", re.I)),
    (
        "between",
        re.compile(
            rf"\b{_HOW_MANY} (?:were there |passed |went by |elapsed |was it |is it )?between "
            r"(?P<a>.+?) and (?P<b>.+)",
            re.I,
        ),
    ),
    ("between", re.compile(rf"\b{_HOW_MANY} (?:after|before) (?P<a>.+?) (?:did|was|were|had|have|do) (?P<b>.+)", re.I)),
    ("between", re.compile(rf"\b{_HOW_MANY} had \w+ (?:had|been|known|lived) (?P<a>.+?) when (?P<b>.+)", re.I)),
    ("ago", re.compile(rf"\b{_HOW_MANY} ago (?:did|was|were|had|have|do) (?P<a>.+)", re.I)),
    ("ago", re.compile(rf"\b{_HOW_MANY} (?:has it been|is it|have \w+ \w+) since (?P<a>.+)", re.I)),
]


# The same questions in the other languages the answer stage supports: (kind, pattern), each with
# the unit word (``unit``) and the events (``a``, ``b``) as groups; :data:`_UNITS` says the unit.
_DAYS = {
    "de": r"(?P<unit>tage?n?|wochen?|monate?n?|jahre?n?)",
    "es": r"(?P<unit>d[íi]as?|semanas?|mes(?:es)?|años?)",
    "fr": r"(?P<unit>jours?|semaines?|mois|ans|années?)",
    "pt": r"(?P<unit>dias?|semanas?|m[êe]s(?:es)?|anos?)",
}
_UNITS = {
    "tag": "days", "woche": "weeks", "monat": "months", "jahr": "years",
    "dia": "days", "día": "days", "semana": "weeks", "mes": "months", "año": "years",
    "jour": "days", "semaine": "weeks", "mois": "months", "an": "years", "année": "years",
    "mês": "months", "ano": "years",
    "天": "days", "周": "weeks", "星期": "weeks", "个月": "months", "月": "months", "年": "years",
    "日": "days", "週間": "weeks", "か月": "months", "ヶ月": "months",
}  # fmt: skip
_OTHER_PATTERNS: dict[str, list[tuple[str, re.Pattern[str]]]] = {
    "de": [
        ("age", re.compile(r"\bwie alt (?:war|bin|waren) \w+,? als (?P<a>.+)", re.I)),
        (
            "order",
            re.compile(r"\bwas (?:war|kam|passierte) (?:zuerst|früher)[\s:,-]*(?P<a>.+?),? oder (?P<b>.+)", re.I),
        ),
        ("between", re.compile(rf"\bwie viele {_DAYS['de']} (?:\w+ )?zwischen (?P<a>.+?) und (?P<b>.+)", re.I)),
        (
            "between",
            re.compile(
                rf"\bwie viele {_DAYS['de']} nach (?P<a>.+?) (?:habe|hat|haben|bin|ist|sind|war) (?P<b>.+)", re.I
            ),
        ),
        (
            "ago",
            re.compile(rf"\bvor wie vielen {_DAYS['de']} (?:habe|hat|haben|bin|ist|sind|war|wurde) (?P<a>.+)", re.I),
        ),
        ("ago", re.compile(r"\bwie lange ist es her,? (?:dass|seit) (?P<a>.+)", re.I)),
    ],
    "es": [
        ("age", re.compile(r"\bcu[áa]ntos años ten[íi]a(?: yo| \w+)? cuando (?P<a>.+)", re.I)),
        (
            "order",
            re.compile(r"\bqu[ée] (?:pas[óo]|fue|ocurri[óo]|hice) primero[\s:,-]*(?P<a>.+?),? o (?P<b>.+)", re.I),
        ),
        ("between", re.compile(rf"\bcu[áa]nt[oa]s {_DAYS['es']} (?:\w+ )?entre (?P<a>.+?) y (?P<b>.+)", re.I)),
        # The second event starts at its verb, said in the first person's past: "después de
        # adoptar a Lola empecé en La Fe" (empecé, me mudé, compramos).
        (
            "between",
            re.compile(
                rf"\bcu[áa]nt[oa]s {_DAYS['es']} despu[ée]s de (?P<a>.+?),? "
                r"(?P<b>(?:(?:me|nos|lo|la|le|les) )?\w+(?:é|í|amos|imos)\b.*)",
                re.I,
            ),
        ),
        ("ago", re.compile(rf"\bhace cu[áa]nt[oa]s {_DAYS['es']} (?:que )?(?P<a>.+)", re.I)),
    ],
    "fr": [
        ("age", re.compile(r"\bquel âge (?:avais|avait|ai)[- ]?\w* quand (?P<a>.+)", re.I)),
        (
            "order",
            re.compile(
                r"\bqu['’]est-ce qui (?:est arrivé|s['’]est passé|est venu) en premier[\s:,-]*(?P<a>.+?),? ou (?P<b>.+)",
                re.I,
            ),
        ),
        (
            "between",
            re.compile(
                rf"\bcombien de {_DAYS['fr']} (?:se sont écoulés |y a-t-il |)?entre (?P<a>.+?) et (?P<b>.+)", re.I
            ),
        ),
        # The second event starts at its verb: "ai-je commencé", "est-ce que j'ai commencé".
        (
            "between",
            re.compile(
                rf"\bcombien de {_DAYS['fr']} après (?P<a>.+?),? (?:est-ce qu(?:e |['’]))?"
                r"(?P<b>(?:\w+-(?:je|tu|t-il|t-elle|t-on|il|elle|on|nous|vous|ils|elles)|j['’]|je|nous|on|il|elle)\b.*)",
                re.I,
            ),
        ),
        ("ago", re.compile(rf"\bil y a combien de {_DAYS['fr']} (?:que )?(?P<a>.+)", re.I)),
    ],
    "pt": [
        ("age", re.compile(r"\bquantos anos (?:eu )?tinha(?: eu)? quando (?P<a>.+)", re.I)),
        ("order", re.compile(r"\bo que (?:aconteceu|veio|foi) primeiro[\s:,-]*(?P<a>.+?),? ou (?P<b>.+)", re.I)),
        ("between", re.compile(rf"\bquant[oa]s {_DAYS['pt']} (?:\w+ )?entre (?P<a>.+?) e (?P<b>.+)", re.I)),
        # The second event starts at its verb in the first person's past: "comecei", "nos mudamos".
        (
            "between",
            re.compile(
                rf"\bquant[oa]s {_DAYS['pt']} depois d[eoa] (?P<a>.+?),? "
                r"(?P<b>(?:(?:eu|nós|me|nos) )?\w+(?:ei|i|amos|emos|imos)\b.*)",
                re.I,
            ),
        ),
        ("ago", re.compile(rf"\bh[áa] quant[oa]s {_DAYS['pt']} (?:que )?(?P<a>.+)", re.I)),
    ],
    "zh": [
        (
            "between",
            re.compile(r"(?P<a>.+?)和(?P<b>.+?)之间(?:相隔|隔了|差了)?(?:多少|几)(?P<unit>天|周|星期|个月|年)"),
        ),
        ("ago", re.compile(r"(?P<a>.+?)是(?:多少|几)(?P<unit>天|周|星期|个月|年)前")),
        ("order", re.compile(r"(?P<a>.+?)和(?P<b>.+?)(?:哪个|哪一个)(?:先|更早)")),
    ],
    "ja": [
        ("between", re.compile(r"(?P<a>.+?)から(?P<b>.+?)まで(?:は)?何(?P<unit>日|週間|か月|ヶ月|年)")),
        ("ago", re.compile(r"(?P<a>.+?)(?:のは|は)何(?P<unit>日|週間|か月|ヶ月|年)前")),
        ("order", re.compile(r"(?P<a>.+?)と(?P<b>.+?)(?:の)?(?:どちら|どっち)が(?:先|早)")),
    ],
}


# The languages whose date questions are read besides English.
LANGUAGES = tuple(_OTHER_PATTERNS)


def classify(question: str, language: str = "en") -> DateQuestion | None:
    """The date question ``question`` asks, or ``None`` when it is not one these rules count.
    ``language``: the question's (ISO 639-1; "und" is read as English); English patterns are
    tried for English and undetermined questions, the language's own for German, Spanish,
    French, Portuguese, Chinese and Japanese."""
    patterns = _OTHER_PATTERNS.get(language) or (_PATTERNS if language in ("en", "und") else [])
    for kind, pattern in patterns:
        found = pattern.search(question)
        if found:
            groups = found.groupdict()
            events = tuple(_clean(groups[g]) for g in ("a", "b") if groups.get(g))
            return DateQuestion(kind, _unit(groups.get("unit")), events)
    return None


def _unit(word: str | None) -> str | None:
    if not word:
        return None
    word = word.lower()
    for stem_, unit in _UNITS.items():  # another language's unit word, singular or plural
        if word == stem_ or (
            word.startswith(stem_) and len(stem_) > 1 and word[len(stem_) :] in ("s", "e", "en", "n", "es")
        ):
            return unit
    return word if word.endswith("s") else word + "s"


def _clean(phrase: str) -> str:
    return phrase.strip(" ?.!,:;\"'")


def events_of(hits: Sequence[Hit], english: bool = True) -> list[Event]:
    """Every dated sentence of ``hits``: for each sentence, the day a dated phrase in it names
    (read against the day the message was said), else the start of the week, month or year one
    names ("ten years ago", "last June"), else the day it was said. Not ``english``: the time
    words of the other supported languages are read too ("gestern", "la semana pasada")."""
    out: list[Event] = []
    for hit in hits:
        said = hit.day
        if said is None:
            continue
        # Not English (the question's or the message's): its time words are read in English. A
        # store holds the owner's Spanish chat beside English ones.
        translate = not (english and detect(hit.text) in ("en", "und"))
        for sentence in _sentences(hit.text):
            read = to_english(sentence) if translate else sentence
            found = [*find_time_phrases(read, said), *days_of_month(read, said)]
            days = [(phrase, span) for phrase, span in found if span.precision == "day"]
            # A sentence naming two days ("we signed the lease last Friday, and we're moving on
            # Saturday, February 10") is an event for each: the match takes the one nearest its words.
            for phrase, span in days or found[:1] or [("", None)]:
                out.append(
                    Event(
                        span.start if span else said,
                        sentence,
                        hit.id,
                        span is not None,
                        span.precision if span else "day",
                        hit.speaker == "assistant",
                        _at(sentence, read, phrase) if span else -1,
                    )
                )
    return out


# A day written with a point, "am 11. November": the sentence does not end there.
_ORDINAL_END = re.compile(r"(?<!\d)\d{1,2}\.$")


def _sentences(text: str) -> list[str]:
    """``text``'s sentences (:func:`localmem.text.sentences.split`), a German "11." followed by
    its month kept in the sentence it belongs to."""
    out: list[str] = []
    for piece in sentences.split(text):
        if out and _ORDINAL_END.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece.strip())
    return out


def _at(sentence: str, read: str, phrase: str) -> int:
    """Where ``phrase`` (found in ``read``, the sentence in English) starts in ``sentence``, as
    near as a translated sentence allows (in proportion)."""
    found = read.find(phrase)
    if found < 0 or read == sentence:
        return found
    return round(found * len(sentence) / max(1, len(read)))


def _when(event: Event) -> str:
    """An event's time as precisely as it was said: "15 April 2024", "June 2022", "2013"."""
    if event.precision == "year":
        return str(event.day.year)
    if event.precision == "month":
        return event.day.strftime("%B %Y")
    if event.precision == "week":
        return f"the week of {day_text(event.day)}"
    return day_text(event.day)


# The finest unit a count may be given in from an event said to this precision.
_FINEST = {"day": "days", "week": "weeks", "month": "months", "year": "years"}


def _same_word(a: str, b: str) -> bool:
    """Whether two stemmed words are one word's forms ("move" and "movin", "get" and "getti"):
    the stemmer leaves some endings on."""
    common = len(os.path.commonprefix([a, b]))
    return a == b or common >= 3 and common >= min(len(a), len(b)) - 1


def _match(phrase: str, events: Sequence[Event], taken: set[int]) -> int | None:
    """The index of the event that best matches ``phrase``, if any shares a (stemmed) content
    word with it. Each shared word counts by how few of ``events`` hold it ("adopt" over the
    dog's name, said in every other message). Of the events scoring at least half the best,
    one that names its own day comes first: it pins the event down ("I start on 15 July" over
    "A month into the new job" for "I start my new job"); then the user's own words over an
    assistant's restatement of them; then the best score; then a day over a month; then, of
    the days one sentence names, the one nearest the phrase's words; then the first."""
    wanted = {stem(w) for w in content_words(phrase)}
    held = [
        {w for w in wanted if any(_same_word(w, x) for x in {stem(v) for v in content_words(e.text)})} for e in events
    ]
    scores: dict[int, float] = {}
    for index, words in enumerate(held):
        if index not in taken and words:
            scores[index] = sum(1 / sum(1 for other in held if w in other) for w in words)
    if not scores:
        return None
    best = max(scores.values())
    close = [i for i, n in scores.items() if 2 * n >= best]

    def distance(event: Event) -> int:
        # From the time named to the nearest of the phrase's words, in characters.
        lower = event.text.lower()
        spots = [m.start() for w in wanted for m in re.finditer(re.escape(w[:4]), lower)]
        return min((abs(spot - event.at) for spot in spots), default=0) if event.at >= 0 else 0

    return max(
        close,
        key=lambda i: (
            events[i].stated,
            not events[i].assistant,
            scores[i],
            events[i].precision == "day",  # "on Sunday the 12th" over "in May"
            -distance(events[i]),
            -i,
        ),
    )


def _cited_first(
    question: DateQuestion, evidence: Sequence[Hit], others: Sequence[Hit], english: bool
) -> list[Event] | None:
    """Each event matched in what the model cited, else in the rest of what it saw."""
    events = events_of(evidence, english)
    spare: list[Event] | None = None  # read only when an event is not among the cited items
    taken: set[int] = set()
    matched: list[Event] = []
    for phrase in question.events:
        index = _match(phrase, events, taken)
        if index is None:
            spare = events_of(others, english) if spare is None else spare
            index = _match(phrase, spare, set())
            if index is None:
                return None
            events.append(spare.pop(index))
            index = len(events) - 1
        taken.add(index)
        matched.append(events[index])
    return matched


def _pooled(
    question: DateQuestion,
    evidence: Sequence[Hit],
    others: Sequence[Hit],
    english: bool,
    own: Sequence[Sequence[Hit]],
    close: Sequence[Sequence[Hit]] = (),
) -> list[Event] | None:
    """Each event matched among its own search's hits, what the model cited and the rest of
    what it saw, together (in that order on a tie): the model's pick is often the sentence
    that names the event, not the one that dates it. ``close``: each event's hits as the
    evidence shows them (a long one as its sentence nearest the event), read when no sentence
    shares a word with the event."""
    shared = [*events_of(evidence, english), *events_of(others, english)]
    matched: list[Event] = []
    for n, phrase in enumerate(question.events):
        pool: dict[tuple[str, str, int], Event] = {}
        for event in [*(events_of(own[n], english) if n < len(own) else []), *shared]:
            if not any((event.hit_id, event.text, event.at) == (m.hit_id, m.text, m.at) for m in matched):
                pool.setdefault((event.hit_id, event.text, event.at), event)
        candidates = list(pool.values())
        index = _match(phrase, candidates, set())
        if index is None:
            # No sentence says the event in the question's words ("getting engaged": "I
            # proposed on Saturday and she said yes"): the first sentence naming a day of what
            # its own search found best, as the evidence shows it (the sentence nearest the
            # event's meaning, for a long message).
            named = [e for hits in (close[n : n + 1] if n < len(close) else []) for e in events_of(hits, english)]
            named = [e for e in named if e.stated and e.precision == "day"]
            if not named:
                return None
            matched.append(named[0])
            continue
        matched.append(candidates[index])
    return matched


def work_out(
    question: DateQuestion,
    evidence: Sequence[Hit],
    now: dt.date | None,
    others: Sequence[Hit] = (),
    english: bool = True,
    own: Sequence[Sequence[Hit]] = (),
    close: Sequence[Sequence[Hit]] = (),
) -> Worked | None:
    """The answer to ``question`` counted from ``evidence`` (the items the model said it rests
    on) and ``now``; ``None`` when the events or their days cannot be found. An event that no
    sentence of ``evidence`` matches is looked for in ``others`` (the rest of what the model
    saw): the model often cites one of the two events a question names. ``own``: for each of
    the question's events (and then the birth, for ``age``), the hits a search for it alone
    found best, where it is looked for first, and ``close`` the same as the evidence shows them
    (see :func:`_pooled`). ``english``: as in :func:`events_of`."""
    matched = (
        _pooled(question, evidence, others, english, own) if own else _cited_first(question, evidence, others, english)
    )
    if matched is None:
        return None
    if question.kind == "ago":
        if now is None or not matched:
            return None
        return _counted(question, matched[0], Event(now, "now", "", True), matched, "ago")
    if question.kind == "between" and len(matched) == 2:
        first, second = sorted(matched, key=lambda e: e.day)
        return _counted(question, first, second, matched, "between")
    if question.kind == "order" and len(matched) == 2:
        a, b = matched
        if a.day == b.day or a.precision != b.precision and a.day.year == b.day.year:
            return None  # the same day, or "in June" against "on 3 June": not told apart
        earlier, later = (0, 1) if a.day < b.day else (1, 0)
        answer = (
            f"{question.events[earlier]} ({_when(matched[earlier])}; {question.events[later]} "
            f"was on {_when(matched[later])})"
        )
        return Worked(
            answer, "order", None, _shown(matched), f"{_when(matched[earlier])} is before {_when(matched[later])}"
        )
    if question.kind == "age":
        births = own[len(question.events)] if len(own) > len(question.events) else ()
        # Whole messages before excerpts: a birth is often said in passing, beside the question's event.
        born = _birth([*births, *(hit for hits in own for hit in hits), *evidence, *others])
        if born is None or not matched:
            return None
        years = count_between(born, matched[0].day, "years")
        return Worked(
            f"{years} years old",
            "age",
            "years",
            _shown(matched),
            f"from birth on {day_text(born)} to {day_text(matched[0].day)}: {years} whole years",
        )
    return None


def _counted(question: DateQuestion, first: Event, last: Event, matched: Sequence[Event], kind: str) -> Worked | None:
    """The count from ``first`` to ``last``; ``None`` when the unit asked is finer than either
    was said in ("how many days ago" of something said to have been "last year")."""
    start, end = first.day, last.day
    coarsest = max(UNITS.index(_FINEST[e.precision]) for e in (first, last))
    unit = question.unit or UNITS[max(UNITS.index(_natural_unit(start, end)), coarsest)]
    if any(UNITS.index(unit) < UNITS.index(_FINEST[e.precision]) for e in (first, last)):
        return None
    count = count_between(start, end, unit)
    shown = unit[:-1] if count == 1 else unit
    answer = f"{count} {shown} ({_when(first)} to {_when(last)})"
    return Worked(
        answer,
        kind,
        unit,
        _shown(matched),
        f"{day_text(end)} − {day_text(start)} = {(end - start).days} days = {count} whole {unit}",
    )


def _natural_unit(start: dt.date, end: dt.date) -> str:
    """The unit people answer "how long" in: days under two months, then months, then years."""
    days = (end - start).days
    return "days" if days < 60 else "months" if days < 730 else "years"


def _shown(events: Sequence[Event]) -> list[dict[str, str]]:
    return [{"day": e.day.isoformat(), "text": e.text, "id": e.hit_id} for e in events]


# A sentence telling a birth, in the languages whose date questions are read: "born 22 September
# 1993", "Ich bin am 11. November 1988 geboren", "nací el 3 de marzo de 1990", "née le …".
_BORN = re.compile(
    r"(?<!\w)(?:born|geboren|nac[ií]d[oa]|nac[ií]|née?|naissance|nascid[oa]|nasci)(?!\w)|出生|生于|生まれ", re.I
)
# The owner's own birth before anyone else's: "I was born …" over "my brother was born …".
_FIRST_PERSON = re.compile(r"(?<!\w)(?:i|i'm|ich|yo|je|j'|eu|me|mi|mein)(?!\w)|我|私", re.I)


def _birth(hits: Sequence[Hit]) -> dt.date | None:
    """The birth day a sentence of ``hits`` tells with its year (the first person's first)."""
    found: list[tuple[bool, dt.date]] = []
    for hit in hits:
        for sentence in _sentences(hit.text):
            if not _BORN.search(sentence):
                continue
            for phrase, span in find_time_phrases(to_english(sentence), hit.day or dt.date.today()):
                if span.precision == "day" and re.search(r"\d{4}", phrase):
                    found.append((bool(_FIRST_PERSON.search(sentence)), span.start))
                    break
    mine = [day for first, day in found if first]
    return (mine or [day for _first, day in found] or [None])[0]
