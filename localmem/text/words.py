"""Words: the one stop-word list, word splitting, content words and the two stemmers.

Two stemmers, for two jobs:

- :func:`stem` is a cheap, kinship-aware prefix ("mom" and "mother", "painting" and
  "paintings" meet): used to compare the words of questions, answers and messages;
- :func:`porter` is SQLite FTS5's own Porter tokenizer, the one the full-text indexes use,
  so query terms match the indexed vocabulary (and the eval's scorer, which stems with Porter).
"""

from __future__ import annotations

import functools
import re
import weakref
from typing import Any, Callable, Protocol, cast

import apsw


class Tokenizers(Protocol):
    """What gives FTS5's tokenizers: a store (:meth:`localmem.store.engine.Store.tokenizer`)."""

    def tokenizer(self, name: str, args: list[str]) -> Callable[..., Any]: ...


# Function words that match nearly every message: dropping them keeps BM25 fast and focused.
STOPWORDS = frozenset(
    """
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves ever did does what's it's i'm
""".split()
)

# Kinship words in their canonical form, so "my mom" and "Caroline's mother" meet.
KIN = {
    "mom": "mother",
    "mum": "mother",
    "mommy": "mother",
    "mama": "mother",
    "ma": "mother",
    "dad": "father",
    "daddy": "father",
    "papa": "father",
    "pa": "father",
    "grandma": "grandmother",
    "granny": "grandmother",
    "grandpa": "grandfather",
    "bro": "brother",
    "sis": "sister",
    "hubby": "husband",
    "kids": "children",
    "kid": "child",
}

WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    """The word tokens of ``text``, each lower-cased, in order."""
    return [w.lower() for w in WORD.findall(text)]


def content_words(text: str) -> set[str]:
    """The distinct words of ``text`` that carry meaning: three letters or more, no stopwords."""
    return {w for w in WORD.findall(text.lower()) if len(w) > 2 and w not in STOPWORDS}


def stem(word: str) -> str:
    """Kinship-canonical prefix: "mom" and "mother", "painting" and "paintings" meet."""
    return KIN.get(word, word)[:5]


_PORTERS: "weakref.WeakKeyDictionary[Tokenizers, Callable[[str], list[str]]]" = weakref.WeakKeyDictionary()


def porter(conn: Tokenizers) -> Callable[[str], list[str]]:
    """The FTS tables' own tokenizer on ``conn`` (porter over unicode61, diacritics removed),
    as a function from a query word to its index terms."""
    if conn not in _PORTERS:
        tokenize = conn.tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
        # Without offsets and colocated tokens, apsw's tokenizer returns a plain list of str.
        _PORTERS[conn] = lambda word: cast(
            "list[str]",
            tokenize(
                word.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None, include_offsets=False, include_colocated=False
            ),
        )
    return _PORTERS[conn]


_PLAINS: "weakref.WeakKeyDictionary[Tokenizers, Callable[[str], list[str]]]" = weakref.WeakKeyDictionary()


def plain(conn: Tokenizers) -> Callable[[str], list[str]]:
    """The non-English full-text index's tokenizer on ``conn`` (unicode61, diacritics removed,
    no stemming: migration 0013), as a function from a query word to its index terms."""
    if conn not in _PLAINS:
        tokenize = conn.tokenizer("unicode61", ["remove_diacritics", "2"])
        _PLAINS[conn] = lambda word: cast(
            "list[str]",
            tokenize(
                word.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None, include_offsets=False, include_colocated=False
            ),
        )
    return _PLAINS[conn]


@functools.lru_cache(maxsize=1)
def porter_stemmer() -> Callable[[str], list[str]]:
    """FTS5's Porter tokenizer over plain unicode61 (as the eval's scorer stems), made on first use: a
    function from text to its stemmed tokens."""
    tokenize = apsw.Connection(":memory:").fts5_tokenizer("porter", ["unicode61"])

    def stems(text: str) -> list[str]:
        tokens = tokenize(
            text.encode("utf-8"), apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=False, include_colocated=False
        )
        return cast("list[str]", tokens)  # a plain list of str, as in porter()

    return stems
