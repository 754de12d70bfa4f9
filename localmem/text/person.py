"""Whether a question speaks in the first person ("where do I work?", "¿dónde vivo?", "wo wohne
ich?"): such a question is about the store's owner (localmem.store.owner), in every source.

Words, not grammar, in the languages the answer stage reads (English, German, Spanish, French,
Portuguese, Chinese, Japanese). Spanish and Portuguese drop the pronoun ("¿qué coche tengo?"),
so their frequent first-person verb forms count too; a form that is first and third person alike
("tenía") does not. An undetermined language ("und": too short to tell) is read as English.
"""

from __future__ import annotations

import re

_WORDS = {
    "en": r"i|me|my|mine|myself|i'm|i've|i'd|i'll|im|ive",
    "de": r"ich|mich|mir|mein|meine|meinen|meinem|meiner|meines|meins",
    "es": (
        r"yo|me|mi|mis|mío|mía|míos|mías|conmigo|tengo|vivo|trabajo|soy|estoy|he|hice|fui|pago|"
        r"llevo|gasto|gasté|compré|vendí|llegué|hago|tuve|viví|trabajé|pagué|empecé"
    ),
    "fr": r"je|moi|me|mon|ma|mes|suis|ai",
    "pt": r"eu|meu|minha|meus|minhas|comigo|tenho|moro|trabalho|sou|estou|fiz|paguei|comprei",
    "it": r"io|mio|mia|miei|mie|ho|sono",
    "nl": r"ik|mij|mijn|me",
}
_PATTERNS = {lang: re.compile(rf"(?<![\w'])(?:{words})(?!\w)", re.I) for lang, words in _WORDS.items()}
# French elides je and me before a vowel: "j'habite", "m'appelle".
_PATTERNS["fr"] = re.compile(rf"{_PATTERNS['fr'].pattern}|(?<!\w)[jm]['’]\w", re.I)
# Chinese and Japanese: the pronoun inside a run of characters (我 also in 我的, 我们).
_CJK = {"zh": re.compile(r"我"), "ja": re.compile(r"私|僕|俺|わたし|あたし")}


def first_person(text: str, language: str = "en") -> bool:
    """Whether ``text`` (in ``language``, an ISO 639-1 code; "und" read as English) speaks of
    its writer: "I", "my", "ich", "mi", "je", "eu", "我", "私"..."""
    if language in _CJK:
        return bool(_CJK[language].search(text))
    pattern = _PATTERNS.get(language) or (_PATTERNS["en"] if language in ("und", "") else None)
    return bool(pattern and pattern.search(text))
