"""Time words of other languages, said in English: so the query-time parser (written for English,
:mod:`localmem.retrieval.query_time`) resolves "gestern", "la semana pasada", "上周" and "ontem".

:func:`to_english` replaces each phrase it knows with the English one the parser understands
("gestern" → "yesterday", "vor zwei Wochen" → "2 weeks ago", "im Juni 2023" → "in June 2023",
"上个月" → "last month", "3天前" → "3 days ago"); the rest of the text stays. The languages, and
what each has, are :data:`SUPPORTED` (docs/languages.md lists them). Phrases, not grammar: a
phrase written differently from these is not understood, and the query is searched without a
time, as before.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Sequence

# Per language: relative phrases → English. Longest first when matched, so "letzte Woche" is
# not read as something shorter. German "morgen" is left out: it is also "Morgen" (morning).
_PHRASES: dict[str, dict[str, str]] = {
    "de": {
        "heute": "today",
        "gestern abend": "last night",
        "gestern": "yesterday",
        "vorgestern": "day before yesterday",
        "übermorgen": "day after tomorrow",
        "diese woche": "this week",
        "letzte woche": "last week",
        "letzten woche": "last week",
        "vergangene woche": "last week",
        "vergangenen woche": "last week",
        "nächste woche": "next week",
        "letztes wochenende": "last weekend",
        "letzten wochenende": "last weekend",
        "am wochenende": "this weekend",
        "diesen monat": "this month",
        "letzten monat": "last month",
        "letzter monat": "last month",
        "vergangenen monat": "last month",
        "im letzten monat": "last month",
        "nächsten monat": "next month",
        "dieses jahr": "this year",
        "letztes jahr": "last year",
        "letzten jahr": "last year",
        "vergangenes jahr": "last year",
        "vergangenen jahr": "last year",
        "nächstes jahr": "next year",
    },
    "es": {
        "hoy": "today",
        "anoche": "last night",
        "anteayer": "day before yesterday",
        "antier": "day before yesterday",
        "ayer": "yesterday",
        "pasado mañana": "day after tomorrow",
        "mañana": "tomorrow",
        "esta semana": "this week",
        "la semana pasada": "last week",
        "semana pasada": "last week",
        "la próxima semana": "next week",
        "la semana que viene": "next week",
        "el fin de semana pasado": "last weekend",
        "este fin de semana": "this weekend",
        "este mes": "this month",
        "el mes pasado": "last month",
        "mes pasado": "last month",
        "el mes que viene": "next month",
        "el próximo mes": "next month",
        "este año": "this year",
        "el año pasado": "last year",
        "año pasado": "last year",
        "el año que viene": "next year",
        "el próximo año": "next year",
    },
    "fr": {
        "aujourd'hui": "today",
        "aujourd’hui": "today",
        "hier soir": "last night",
        "avant-hier": "day before yesterday",
        "hier": "yesterday",
        "après-demain": "day after tomorrow",
        "demain": "tomorrow",
        "cette semaine": "this week",
        "la semaine dernière": "last week",
        "la semaine passée": "last week",
        "la semaine prochaine": "next week",
        "le week-end dernier": "last weekend",
        "le weekend dernier": "last weekend",
        "ce week-end": "this weekend",
        "ce mois-ci": "this month",
        "le mois dernier": "last month",
        "le mois passé": "last month",
        "le mois prochain": "next month",
        "cette année": "this year",
        "l'année dernière": "last year",
        "l’année dernière": "last year",
        "l'an dernier": "last year",
        "l’an dernier": "last year",
        "l'année passée": "last year",
        "l'année prochaine": "next year",
    },
    "pt": {
        "hoje": "today",
        "ontem à noite": "last night",
        "anteontem": "day before yesterday",
        "ontem": "yesterday",
        "depois de amanhã": "day after tomorrow",
        "amanhã": "tomorrow",
        "esta semana": "this week",
        "essa semana": "this week",
        "semana passada": "last week",
        "na semana passada": "last week",
        "semana que vem": "next week",
        "próxima semana": "next week",
        "fim de semana passado": "last weekend",
        "este fim de semana": "this weekend",
        "este mês": "this month",
        "esse mês": "this month",
        "mês passado": "last month",
        "no mês passado": "last month",
        "mês que vem": "next month",
        "próximo mês": "next month",
        "este ano": "this year",
        "esse ano": "this year",
        "ano passado": "last year",
        "no ano passado": "last year",
        "ano que vem": "next year",
        "próximo ano": "next year",
    },
    "zh": {
        "今天": "today",
        "昨晚": "last night",
        "昨天晚上": "last night",
        "前天": "day before yesterday",
        "昨天": "yesterday",
        "后天": "day after tomorrow",
        "明天": "tomorrow",
        "这周": "this week",
        "本周": "this week",
        "这个星期": "this week",
        "上周末": "last weekend",
        "上周": "last week",
        "上星期": "last week",
        "上个星期": "last week",
        "上个礼拜": "last week",
        "下周": "next week",
        "下个星期": "next week",
        "这个月": "this month",
        "本月": "this month",
        "上个月": "last month",
        "上月": "last month",
        "下个月": "next month",
        "今年": "this year",
        "去年": "last year",
        "明年": "next year",
    },
    "ja": {
        "今日": "today",
        "きょう": "today",
        "昨夜": "last night",
        "一昨日": "day before yesterday",
        "おととい": "day before yesterday",
        "昨日": "yesterday",
        "きのう": "yesterday",
        "明後日": "day after tomorrow",
        "明日": "tomorrow",
        "今週": "this week",
        "先週末": "last weekend",
        "先週": "last week",
        "来週": "next week",
        "今月": "this month",
        "先月": "last month",
        "来月": "next month",
        "昨年": "last year",
        "来年": "next year",
    },
}

# Month names (German, Spanish, French, Portuguese); Chinese and Japanese write "6月".
_MONTHS: dict[str, Sequence[str]] = {
    "de": "januar februar märz april mai juni juli august september oktober november dezember".split(),
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre".split(),
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre".split(),
    "pt": "janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro".split(),
}
_ENGLISH_MONTHS = "January February March April May June July August September October November December".split()

# "vor zwei Wochen", "hace dos semanas", "il y a deux semaines", "há duas semanas", "两周前".
_NUMBERS = {
    **dict.fromkeys(["ein", "einem", "einer", "un", "una", "une", "um", "uma", "一"], 1),
    **dict.fromkeys(["zwei", "dos", "deux", "dois", "duas", "二", "两"], 2),
    **dict.fromkeys(["drei", "tres", "trois", "três", "三"], 3),
    **dict.fromkeys(["vier", "cuatro", "quatre", "quatro", "四"], 4),
    **dict.fromkeys(["fünf", "cinco", "cinq", "五"], 5),
    **dict.fromkeys(["sechs", "seis", "six", "六"], 6),
    **dict.fromkeys(["sieben", "siete", "sept", "sete", "七"], 7),
    **dict.fromkeys(["acht", "ocho", "huit", "oito", "八"], 8),
    **dict.fromkeys(["neun", "nueve", "neuf", "nove", "九"], 9),
    **dict.fromkeys(["zehn", "diez", "dix", "dez", "十"], 10),
}
_UNITS = {
    "tag": "days", "tagen": "days", "día": "days", "días": "days", "jour": "days", "jours": "days",
    "dia": "days", "dias": "days", "天": "days", "日": "days",
    "woche": "weeks", "wochen": "weeks", "semana": "weeks", "semanas": "weeks", "semaine": "weeks",
    "semaines": "weeks", "周": "weeks", "週間": "weeks", "个星期": "weeks", "星期": "weeks",
    "monat": "months", "monaten": "months", "mes": "months", "meses": "months", "mois": "months",
    "个月": "months", "ヶ月": "months", "か月": "months",
    "jahr": "years", "jahren": "years", "año": "years", "años": "years", "an": "years", "ans": "years",
    "ano": "years", "anos": "years", "年": "years",
}  # fmt: skip

SUPPORTED = tuple(_PHRASES)

_NUMBER = r"\d+|" + "|".join(sorted(_NUMBERS, key=len, reverse=True))


def _alternatives(words: list[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


def _is_cjk(word: str) -> bool:
    return ord(word[0]) >= 0x3000


# "vor 2 Tagen", "hace 2 días", "il y a 2 jours", "há 2 dias"; "2天前", "3週間前".
_AGO_BEFORE = re.compile(
    rf"(?<!\w)(?:vor|hace|il y a|há|ha)\s+({_NUMBER})\s+({_alternatives([u for u in _UNITS if not _is_cjk(u)])})(?!\w)",
    re.I,
)
_AGO_AFTER = re.compile(rf"({_NUMBER})\s*({_alternatives([u for u in _UNITS if _is_cjk(u)])})(?:前|以前)")
_ALL_PHRASES = sorted({p for table in _PHRASES.values() for p in table}, key=len, reverse=True)
# Latin-script phrases match as whole words; Chinese and Japanese ones anywhere (no spaces).
_PHRASE = re.compile(
    "|".join(re.escape(p) if _is_cjk(p) else rf"(?<!\w){re.escape(p)}(?!\w)" for p in _ALL_PHRASES), re.I
)
_ENGLISH_OF = {p: e for table in _PHRASES.values() for p, e in table.items()}
_MONTH_OF = {name: _ENGLISH_MONTHS[i] for names in _MONTHS.values() for i, name in enumerate(names)}
_MONTH_NAMES = "|".join(sorted(_MONTH_OF, key=len, reverse=True))
# "5. Juni", "5 de junio de 2023", "5 juin", "5 de junho": a day of a month.
_DAY_MONTH = re.compile(rf"(?<!\w)(\d{{1,2}})\.?\s+(?:de\s+)?({_MONTH_NAMES})(?:\s+(?:de\s+)?(\d{{4}}))?(?!\w)", re.I)
# Not a month already read with its day ("11. November 1988" is "on 11 November 1988" by then:
# German and English share "November").
_MONTH = re.compile(
    r"(?<!\w)(?<!\d )(?:(?:im|in|en|em|au mois de|no mês de|de)\s+)?("
    + "|".join(sorted(_MONTH_OF, key=len, reverse=True))
    + r")(?:\s+(?:de\s+)?(\d{4}))?(?!\w)",
    re.I,
)
_CJK_MONTH = re.compile(r"(?:(\d{4})年)?(1[0-2]|[1-9])月(?:份)?")


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word.lower()]


# "por la mañana", "esta mañana": Spanish "mañana" after an article is the morning, not tomorrow.
_THE_MORNING = re.compile(r"(?<!\w)(?:la|esta|una|cada|toda la)\s+$", re.I)


def _english_phrase(m: re.Match[str]) -> str:
    # "esta mañana" is this morning, not tomorrow (see relative_phrases).
    if m.group(0).lower() == "mañana":
        before = _THE_MORNING.search(m.string, 0, m.start())
        if before:  # "this morning" is today; "por la mañana", "cada mañana" name no day
            return " today " if before.group(0).lower().startswith("esta") else m.group(0)
    return f" {_ENGLISH_OF[m.group(0).lower()]} "


def to_english(text: str) -> str:
    """``text`` with the time phrases of :data:`SUPPORTED` languages said in English (spaced
    apart, so that a word boundary holds next to Chinese or Japanese characters)."""
    text = _AGO_BEFORE.sub(lambda m: f" {_number(m.group(1))} {_UNITS[m.group(2).lower()]} ago ", text)
    text = _AGO_AFTER.sub(lambda m: f" {_number(m.group(1))} {_UNITS[m.group(2)]} ago ", text)
    text = _PHRASE.sub(_english_phrase, text)

    def month(m: re.Match[str]) -> str:
        name = _MONTH_OF[m.group(1).lower()]
        # A bare "mai", "mars", "março" is a month only with a preposition or a year: "Mai" is
        # also a name, "mars" a planet.
        if not m.group(2) and m.group(0).lower() == m.group(1).lower():
            return m.group(0)
        return f" in {name} {m.group(2)} " if m.group(2) else f" in {name} "

    text = _DAY_MONTH.sub(
        lambda m: f" on {m.group(1)} {_MONTH_OF[m.group(2).lower()]} {m.group(3) or ''} ".replace("  ", " "), text
    )
    text = _MONTH.sub(month, text)
    text = _CJK_MONTH.sub(
        lambda m: f" in {_ENGLISH_MONTHS[int(m.group(2)) - 1]} {m.group(1) or ''} ".replace("  ", " "), text
    )
    return text


def relative_phrases(text: str) -> list[tuple[int, int, str]]:
    """The relative time phrases of :data:`SUPPORTED` languages in ``text``: (start, end, the
    phrase in English), in order, none overlapping ("vor zwei Wochen" → "2 weeks ago", "昨天"
    → "yesterday"). Month names and dates are not relative: they are left out."""
    found: list[tuple[int, int, str]] = []
    for pattern, english in (
        (_AGO_BEFORE, lambda m: f"{_number(m.group(1))} {_UNITS[m.group(2).lower()]} ago"),
        (_AGO_AFTER, lambda m: f"{_number(m.group(1))} {_UNITS[m.group(2)]} ago"),
        (_PHRASE, lambda m: _ENGLISH_OF[m.group(0).lower()]),
    ):
        for m in pattern.finditer(text):
            if m.group(0).lower() == "mañana" and _THE_MORNING.search(text, 0, m.start()):
                continue
            if not any(m.start() < end and start < m.end() for start, end, _ in found):
                found.append((m.start(), m.end(), english(m)))
    return sorted(found)


def with_dates(text: str, ref: dt.date) -> str:
    """``text`` (a message in a :data:`SUPPORTED` language other than English, said on ``ref``)
    with each relative time in it followed by the date it means, in brackets, as
    :func:`localmem.text.times.with_dates` writes an English message's: "Ich war gestern [18
    March 2024] beim Arzt", "我上周 [the week before 19 March 2024] 去了北京"."""
    from .times import anchored  # times reads the settings' zone: not needed to translate words

    out, last = [], 0
    for start, end, english in relative_phrases(text):
        meaning = anchored(english, ref)
        if meaning:
            out += [text[last:end], f" [{meaning}]"]
            last = end
    return "".join(out) + text[last:]


_BRACKETED = re.compile(r"\s*\[([^\[\]]+)\]")


def absolute(answer: str, said_on: dt.date | None) -> str:
    """``answer`` (to a question in a :data:`SUPPORTED` language) with its relative times given
    as the dates they mean, as :func:`localmem.text.times.absolute` does for English: one
    followed by its meaning in brackets (copied from the evidence :func:`with_dates` wrote)
    becomes the meaning, "gestern [18 March 2024]" → "18 March 2024"; an answer that is only a
    relative time is read against ``said_on``: "ayer" → "18 March 2024". A count back ("vor
    zwei Wochen") answers "how long ago" and stays."""
    from .times import anchored

    out, last = [], 0
    for start, end, _english in relative_phrases(answer):
        bracket = _BRACKETED.match(answer, end)
        if bracket:
            out += [answer[last:start], bracket.group(1).strip()]
            last = bracket.end()
    text = "".join(out) + answer[last:]
    bare = text.strip(" .!¡。！")
    found = relative_phrases(bare)
    if said_on is not None and len(found) == 1 and found[0][:2] == (0, len(bare)) and not found[0][2].endswith("ago"):
        return anchored(found[0][2], said_on) or text
    return text
