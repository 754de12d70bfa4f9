"""Who an answer is about: a question about one person is answered from what they said and
what is said of them, and is refused when only someone else's messages answer it.

Questions that ask one person about what the other did ("What did Caroline see at the council
meeting?" when Melanie went) are answered by a small model with the other's words
(docs/decisions.md#who-checks). These checks read the speakers' own names and the words of the question,
the evidence and the reply; they call no model.
"""

from __future__ import annotations

import re
from typing import Sequence

from ..text.times import MONTH_NAMES
from ..text.words import content_words, stem
from ..types import Citation, Hit, Names, Speakers
from .question import Question


def _names(text: str, names: Sequence[str]) -> bool:
    return any(re.search(rf"\b{re.escape(n)}\b", text, re.I) for n in names if n)


# "Thanks, Mel!", "Hey Caroline,", "Woohoo Melanie!" -- a name that only addresses the listener
# says nothing about them: one after a greeting, after punctuation, or after the first word of
# the message (an interjection no list can hold: "Yay", "Whoa", "Ahh").
_GREETING = re.compile(
    r"(?:^|^\s*[\w']+|[,.!?]|\b(?:hey|hi|hello|thanks|thank you|wow|oh|yeah|yes|congrats|aw+))\s*$", re.I
)


def _is(speaker: str, who: str, names: Sequence[str]) -> bool:
    """Whether ``speaker`` is ``who``: the same speaker, or one going by one of ``who``'s names."""
    return speaker.lower() == who.lower() or speaker.lower() in (n.lower() for n in names)


def names_not_only_addressing(text: str, names: Sequence[str]) -> bool:
    """Whether ``text`` names the person other than by addressing them."""
    for name in names:
        for found in re.finditer(rf"\b{re.escape(name)}\b", text, re.I) if name else ():
            after = text[found.end() :].lstrip()
            if not (_GREETING.search(text[: found.start()]) and (not after or after[0] in ",.!?")):
                return True
    return False


def _words(hit: Hit) -> str:
    """A hit's text without the "Speaker: " a message starts with (:attr:`Hit.words`)."""
    return hit.words


_SENTENCE = re.compile(r"[^.!?]+[.!?]*")
_YOU = re.compile(r"\byou(?:r|rs|'re|'ve|'d|'ll)?\b", re.I)


def only_asks(text: str) -> bool:
    """Whether ``text`` only asks the listener about themselves: every sentence of three
    words or more is a question to "you" ("Tom! That's huge. Are you moving to Berlin then?").

    Such a message tells about the listener, not its writer (docs/decisions.md#who-checks).
    """
    sentences = [s.strip() for s in _SENTENCE.findall(text)]
    said = [s for s in sentences if len(s.split()) >= 3]
    return bool(said) and all(s.endswith("?") and _YOU.search(s) for s in said)


def about(hit: Hit, who: str, names: Sequence[str], chat: bool = False, replier: str | None = None) -> bool:
    """Whether ``hit`` is by or about ``who``: a message they wrote (unless it only asks the
    listener about themselves) or one naming them (not only addressing them), a unit whose
    text names them. In a user–assistant chat (``chat``) the other party's message that says
    "you" is about them too ("So your new job at Northwind starts Monday"), and every reply of
    ``replier`` (the assistant, when ``who`` is the store's owner: :func:`replier`) is: it
    is written to the owner, about what they asked ("Monday: lentil soup; Tuesday: ...")."""
    if hit.kind == "message":
        speaker = hit.sources[0].speaker if hit.sources else ""
        if chat and speaker.lower() != who.lower() and _YOU.search(_words(hit)):
            return True
        if replier is not None and speaker.lower() == replier.lower():
            return True
        return said_by_or_about(speaker, _words(hit), who, names)
    return _names(hit.text, names)


def _chat(speakers: Names) -> bool:
    return isinstance(speakers, Speakers) and speakers.chat


def replier(speakers: Names, who: str) -> str | None:
    """The assistant of a user–assistant chat when ``who`` is the store's owner: its replies are
    about the owner, whether or not they say "you"."""
    if isinstance(speakers, Speakers) and speakers.chat and who in speakers.owner:
        return speakers.assistant
    return None


def said_by_or_about(speaker: str, text: str, who: str, names: Sequence[str]) -> bool:
    """Whether a message ``text`` written by ``speaker`` is by ``who`` (unless it only asks
    the listener about themselves) or names them other than by addressing them. A speaker who
    goes by one of ``who``'s names is ``who`` (the owner as "user" in a ChatGPT export and as
    "Daniel Ruiz" in a WhatsApp chat: one person)."""
    same = speaker.lower() == who.lower() or speaker.lower() in (n.lower() for n in names)
    return (same and not only_asks(text)) or names_not_only_addressing(text, names)


def focus(question: Question, hits: Sequence[Hit], speakers: Names) -> list[Hit]:
    """When ``question`` asks about one speaker of the conversation, the hits by or about
    them; otherwise ``hits`` as they are.

    What one person did is nearly always said in their own words, while a question may ask
    about one person with what another did: a small model given the other's words answers
    with them (docs/decisions.md#who-checks).
    """
    who = question.person
    if who is None:
        return list(hits)
    names = speakers[who]
    kept = [h for h in hits if about(h, who, names, _chat(speakers), replier(speakers, who))]
    if _chat(speakers):
        # Their own words first: the user's "I've got three of them" before the assistant's
        # restatement of it; what the assistant itself said before what the user said of it.
        kept = sorted(kept, key=lambda h: not (h.sources and _is(h.sources[0].speaker, who, names)))
    return kept


def about_someone_else(
    question: Question, reply: str, pool: Sequence[Hit], cited: Sequence[Citation], speakers: Names
) -> bool:
    """True when ``question`` asks about one speaker and the reply rests on someone else:
    the messages whose words best match the reply's own words (those not in the question)
    are none of them by or about that speaker, or, when no message has those words (or the
    reply has none: a date, "Yes"), no cited message is.

    Only messages are matched: they say who did what in the speakers' own words, while an
    episode's summary names both speakers whatever it tells (docs/decisions.md#who-checks).

    (A small model answers "What did Caroline realize after her race?" with Melanie's race.)
    """
    who = question.person
    if who is None:
        return False
    names = speakers[who]
    chat, replies = _chat(speakers), replier(speakers, who)
    known = question.words | _all_names(speakers)
    best = best_matching(({stem(w) for w in content_words(reply)} - known), pool)
    if best:
        return not any(about(h, who, names, chat, replies) and (chat or not tells_listener(h, who)) for h in best)
    if not cited:
        return False
    return not any(said_by_or_about(c.speaker, c.text, who, names) for c in cited)


# Words that shape a question rather than say what it is about.
_ASKING = frozenset(stem(w) for w in ("kind type like likely many much recent recently favorite think feel".split()))
# A date in a question ("in April 2022", "on Monday") says when, which a message's own date tells,
# not its words: matched against the words it would keep the message asked about from being found.
_DATE_WORDS = frozenset(
    stem(w.lower()) for w in (*MONTH_NAMES, *"monday tuesday wednesday thursday friday saturday sunday".split())
)
_YEAR = re.compile(r"(?:1[89]|2[01])\d\d")


def _not_dates(words: set[str]) -> set[str]:
    return {w for w in words if w not in _DATE_WORDS and not _YEAR.fullmatch(w)}


def asks_about_someone_else(question: Question, pool: Sequence[Hit], speakers: Names) -> bool:
    """True when ``question`` asks about one speaker something only someone else's messages
    tell: the messages whose words best match the question's own (its words other than
    names and question words) are none of them by or about that speaker.

    A message by someone else counts as about the speaker asked when the sentence with those
    words asks something or addresses "you" ("How long have you been married?"): in a
    conversation it is the listener's life it asks about. Each best-matching message is read in
    its sentences that hold the most of those words (:func:`_tells_of`): the asked person's "What made you choose
    that shade?" is about the listener. Dates in the question are left out of its words: a
    message says when by its own date. A message answering the other's news told just before
    it, a congratulation, and the asked person's question without "I" are about the listener's
    news (:func:`_tells_of`), unless the question asks what someone said. What it refuses, and
    its measured effect: docs/decisions.md#who-checks, docs/answering.md.
    """
    who = question.person
    if who is None:
        return False
    words = _not_dates(set(question.words) - _all_names(speakers) - _ASKING)
    best = best_matching(words, pool)
    if not best:
        return False
    # A question about what someone said ("What did Jon say about ...") asks for their words,
    # whoever's news they answer; in a user–assistant chat the replies are the assistant's.
    before = None if _chat(speakers) or question.asks_words else _messages_by_id(pool)
    return not any(_tells_of(h, who, speakers, words, before) for h in best)


# "I", "my" or "we", "our": what the writer says of themselves (and of those they did it with).
_WE = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll|we|us|our|ours|we're|we've|we'd|we'll)\b", re.I)


def _messages_by_id(pool: Sequence[Hit]) -> dict[int, Hit]:
    return {h.sources[0].message_id: h for h in pool if h.kind == "message" and h.sources}


def answers_news(hit: Hit, before: Hit | None, words: set[str]) -> str | None:
    """The speaker whose news ``hit`` answers, if any: ``before``, the message just before it
    in the same session, is by someone else and says in the first person ("I", "my", "we")
    some of ``words`` (stems) that ``hit``'s sentences holding the most of them say too,
    without "I", "me" or "my".

    In a conversation the one who brings up their own news tells it ("I ran a charity race
    last Saturday"), and the listener answers with the same words about it ("That charity
    race sounds great!", "How did they handle the accident?"): the reply's words are about
    the one it answers, though neither "you" nor a name says so.
    """
    if hit.kind != "message" or not hit.sources or before is None or not before.sources:
        return None
    this, that = hit.sources[0], before.sources[0]
    if (that.conversation, that.session) != (this.conversation, this.session) or that.speaker == this.speaker:
        return None
    said = _sentences_holding(_words(hit), words)
    if not said or any(_I.search(s) for s in said):
        return None
    echoed = words & {stem(w) for s in said for w in content_words(s)}
    told = {stem(w) for s in _SENTENCE.findall(_words(before)) if _WE.search(s) for w in content_words(s)}
    return that.speaker if echoed and 2 * len(echoed & told) >= len(echoed) else None


def _tells_of(hit: Hit, who: str, speakers: Names, words: set[str], before: dict[int, Hit] | None = None) -> bool:
    """Whether ``hit``, one of the messages best matching a question's ``words``, tells about
    ``who``, read in its sentences that hold the most of those words:

    - a message by ``who`` does, unless those sentences all speak of the listener ("you",
      "your" and no "I", "me", "my": "Wow, your new hair color looks amazing! What made you
      choose that shade?" asks about the listener's hair, whoever writes it); in a
      user–assistant chat the assistant's words are "you" to the user, so there it does;
    - a message by someone else does when it is about them (:func:`about`), asks or tells the
      listener about those words (:func:`_asks_listener`), or one of those sentences names
      them and not its writer ("Wow John, organizing that tournament for charity must have
      been a ton of effort": "Wow John" addresses him, but what follows is his news);
    - either way, a message answering news told in the message ``before`` it (its id less one;
      :func:`answers_news`) tells of the one whose news it answers, and one whose sentences
      with those words congratulate (:func:`congratulates`) tells of the listener; so does a
      message by ``who`` whose sentences with those words are questions without "I" ("Any fun
      plans for the summer?").

    ``before`` is ``None`` when only the words are read: in a user–assistant chat, or for a
    question about what someone said.
    """
    names, chat = speakers[who], _chat(speakers)
    if hit.kind != "message" or not hit.sources:
        return about(hit, who, names, chat)
    if (replies := replier(speakers, who)) is not None and hit.sources[0].speaker.lower() == replies.lower():
        return True  # the assistant's reply to the owner (about())
    said = _sentences_holding(_words(hit), words)
    mine = _is(hit.sources[0].speaker, who, names)
    if before is not None:
        answered = answers_news(hit, before.get(hit.sources[0].message_id - 1), words)
        if answered is not None:
            return answered.lower() == who.lower()
        if congratulates(said):
            return not mine
        if mine and said and all(s.strip().endswith("?") and not _I.search(s) for s in said):
            # "Love the necklace, any special meaning to it?": a question asks after the listener's life.
            return False
    if mine:
        others = [n for person, ns in speakers.items() if person != who for n in ns]
        if not chat and said and all((_YOU.search(s) or _names(s, others)) and not _I.search(s) for s in said):
            return False
        return about(hit, who, names, chat)
    return (
        about(hit, who, names, chat)
        or _asks_listener(hit, who, words)
        or any(_names(s, names) and not _I.search(s) for s in said)
    )


_CONGRATULATE = re.compile(r"\bcongrat\w*", re.I)


def congratulates(sentences: Sequence[str]) -> bool:
    """Whether ``sentences`` congratulate the listener: one says "congrats" and the others
    speak to "you" without "I" ("Congrats on the cooking show, I'll be tuning in! What's
    your favorite dish from the show?"). What is congratulated is the listener's news."""
    return any(_CONGRATULATE.search(s) for s in sentences) and all(
        _CONGRATULATE.search(s) or (_YOU.search(s) and not _I.search(s)) for s in sentences
    )


def _sentences_holding(text: str, words: set[str]) -> list[str]:
    """The sentences of ``text`` that hold the most of ``words`` (stems); none when none does."""
    sentences = _SENTENCE.findall(text)
    counts = [len(words & {stem(w) for w in content_words(s)}) for s in sentences]
    top = max(counts, default=0)
    return [s for s, n in zip(sentences, counts) if n == top and n > 0]


_I = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll)\b", re.I)


def tells_listener(hit: Hit, who: str) -> bool:
    """Whether a message by ``who`` speaks of the listener's life, not its writer's: it tells
    "you" something (a statement, not a question, says "you" or "your") and never says "I",
    "me" or "my" ("Congrats, Gina! That's awesome news about the fashion internship. So
    stoked for you.", "Glad your son is okay, Melanie."). A reply whose words come from such
    a message is about the listener. ("Just started doing aerial yoga, it's great. Have you
    tried any?" is the writer's own news: its "you" is only in a question.) Only the reply
    is checked this way: the evidence keeps these messages, since a question about the
    listener may rest on them."""
    if hit.kind != "message" or not hit.sources or hit.sources[0].speaker.lower() != who.lower():
        return False
    text = _words(hit)
    return not _I.search(text) and any(_YOU.search(s) and not s.strip().endswith("?") for s in _SENTENCE.findall(text))


def _asks_listener(hit: Hit, who: str, words: set[str]) -> bool:
    """Whether a message by someone other than ``who`` asks or tells the listener about
    ``words``: a sentence holding some of them is a question or addresses "you"."""
    if not hit.sources or hit.sources[0].speaker.lower() == who.lower():
        return False
    return any(
        words & {stem(w) for w in content_words(s)} and (s.strip().endswith("?") or _YOU.search(s))
        for s in _SENTENCE.findall(_words(hit))
    )


def best_matching(words: set[str], pool: Sequence[Hit]) -> list[Hit]:
    """The messages of ``pool`` sharing the most of ``words`` (stems), when they share at
    least half of them; else none."""
    if not words:
        return []
    said = [h for h in pool if h.kind == "message"]
    scores = [len(words & {stem(w) for w in content_words(_words(h))}) for h in said]
    best = max(scores, default=0)
    if best < max(1, (len(words) + 1) // 2):
        return []
    return [h for h, score in zip(said, scores) if score == best]


def _all_names(speakers: Names) -> set[str]:
    return {stem(n.lower()) for names in speakers.values() for n in names}


def from_image_descriptions(question: Question, reply: str, evidence: Sequence[Hit], speakers: Names) -> bool:
    """True when most of the reply's own words (those not in the question, nor a speaker's
    name) are found in the captions of images shared in ``evidence`` and in nothing said
    there: more of them only in captions than in what was said. The answer then rests on
    what a captioner said an image shows, not on what anyone said. A question that asks about
    a photo or picture may be answered from its description.

    (Captions are a captioning model's: docs/decisions.md#image-description.)
    """
    if question.asks_image:
        return False
    words = {stem(w) for w in content_words(reply)} - question.words - _all_names(speakers)
    if not words:
        return False
    said: set[str] = set()
    shown: set[str] = set()
    for hit in evidence:
        body, captions = (hit.said, hit.captions) if hit.kind == "message" and hit.said is not None else (hit.text, [])
        said |= {stem(w) for w in content_words(body)}
        shown |= {stem(w) for c in captions for w in content_words(c)}
    only_shown = (words & shown) - said
    return len(only_shown) > len(words & said)
