"""Answering from retrieved memory (REMem-S: one retrieval, one answer call).

The evidence is numbered and ordered by time, each item with its absolute date, and a
message's relative times are followed by the dates they mean ("yesterday [7 May 2023]",
written by :func:`localmem.times.with_dates`: the 1.5B model mostly answered with the
message's own date rather than count back from it). The reply names
the items it rests on (``supports``); the caller keeps only numbers that exist. When the
items do not hold the answer the model must say exactly ``not in memory`` (REMem's
refusal convention, R:226) instead of guessing, also when the items say it of someone
else than the person asked about (a question can swap the speaker: docs/refusals.md).
Everything static (rules and worked examples with made-up people, none of whom appear in
the shipped sample chat) comes first, so llama.cpp reuses it across questions.

v6: a shared image's caption is shown as "(image description: ...)", and a rule says what it is.

v4: an item's text is given on one line with its own brackets and braces as parentheses
(:func:`localmem.prompts.item_text`), so the only square brackets are the item numbers and
the dates after relative times, both written here: a message cannot open a new item.
"""

from __future__ import annotations

from typing import Any, Sequence

from . import item_text

VERSION = "answer-v6"
# What an image's caption is called in an item: "... (image description: a photo of a dog)".
IMAGE_DESCRIPTION = "image description"
REFUSAL = "not in memory"
MAX_SUPPORTS = 6
MAX_ANSWER_CHARS = 120
# Covers the longest reply the schema allows (a test checks it); a typical reply is ~25 tokens.
MAX_TOKENS = 220

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "minLength": 1, "maxLength": MAX_ANSWER_CHARS},
        "supports": {
            "type": "array",
            "maxItems": MAX_SUPPORTS,
            "items": {"type": "integer", "minimum": 1, "maximum": 99},
        },
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["answer", "supports", "confidence"],
    "additionalProperties": False,
}

SYSTEM = f"""You answer questions about people's past conversations, using only the numbered memory items given.
Rules:
- Answer in as few words as possible, in the items' own words: a name, a date, a number or a short phrase. Answer yes/no questions with "Yes" or "No" and at most a few words.
- Every item starts with its date. A relative time may be followed by the date it means in brackets, "yesterday [7 May 2023]": answer a "when" question with what the brackets say. Otherwise count from the item's own date: "yesterday" in an item of 8 May 2023 is 7 May 2023, "last year" is 2022.
- Answer about the person the question names. What someone else did or said is not an answer.
- "(image description: ...)" describes a photo the speaker shared, written by a program that only saw the photo. It tells what the photo shows, not what the speaker said or did: answer from the speaker's own words.
- When items disagree, the later item replaces the earlier one: for how things are now, answer from the latest item; for how they were before, from the earlier one.
- If the items do not say the answer, reply with the answer "{REFUSAL}". Never guess.
- "supports": the numbers of the items your answer rests on.
- "confidence": from 0 to 1, how sure you are that the items say it.
Reply with JSON only.

Example items:
[1] 2 March 2022 - Noor: We adopted a puppy yesterday [1 March 2022]! His name is Biscuit.
[2] 20 April 2022 - Ben: Work has been busy since last week [the week before 20 April 2022], I'm moving to Oslo in June.
Question: When did Noor adopt her dog?
{{"answer": "1 March 2022", "supports": [1], "confidence": 0.9}}
Question: When did Ben's work get busy?
{{"answer": "the week before 20 April 2022", "supports": [2], "confidence": 0.9}}
Question: What is Ben's sister called?
{{"answer": "{REFUSAL}", "supports": [], "confidence": 0.9}}
Question: Where is Noor moving in June?
{{"answer": "{REFUSAL}", "supports": [], "confidence": 0.8}}"""


# After a question whose count or order the rules work out (answer.dates): the model, which
# otherwise refuses because no item states the number, only has to find the events.
DATES_HINT = "(Answer with the dates of the events it names; the counting is done for you.)"


# The languages a question may be in (ISO 639-1, as localmem.text.language.detect gives them)
# and their English names: the answer is asked for in the question's language.
LANGUAGE_NAMES = {
    "de": "German", "es": "Spanish", "fr": "French", "pt": "Portuguese", "it": "Italian", "nl": "Dutch",
    "ca": "Catalan", "pl": "Polish", "cs": "Czech", "sv": "Swedish", "da": "Danish", "no": "Norwegian",
    "fi": "Finnish", "ro": "Romanian", "hu": "Hungarian", "tr": "Turkish", "id": "Indonesian",
    "vi": "Vietnamese", "ru": "Russian", "uk": "Ukrainian", "el": "Greek", "ar": "Arabic", "he": "Hebrew",
    "hi": "Hindi", "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "th": "Thai",
}  # fmt: skip


def language_hint(language: str | None) -> str:
    """What follows a question in another language than English: answer in it (the refusal
    stays the fixed phrase the caller recognises). After the question, not in the system
    message: an English question's prompt, and the reused prefix, stay as they were."""
    name = LANGUAGE_NAMES.get(language or "")
    return f' (Answer in {name}, the language of the question; a refusal stays "{REFUSAL}".)' if name else ""


def who_line(chat: tuple[str, str] | None) -> str:
    """Who "I" and "you" are in a question about a chat between a user and an assistant
    (``chat``: their names), as a line of the prompt; "" otherwise."""
    if chat is None:
        return ""
    user, assistant = (item_text(name) for name in chat)
    return (
        f'{user} is the user asking: "I", "me", "my" and "we" in the question mean {user}; '
        f'"you" means {assistant}, the assistant.\n'
    )


def render(
    question: str,
    items: Sequence[str],
    today: str | None,
    chat: tuple[str, str] | None = None,
    dated: bool = False,
    language: str | None = None,
) -> list[dict[str, str]]:
    """``items``: one line per piece of evidence, already dated and in time order. ``chat``:
    the (user, assistant) names when the items are a chat between a user and an assistant.
    ``dated``: the question counts or orders dates (:data:`DATES_HINT` follows it).
    ``language``: the question's language (ISO 639-1), when not English: the answer is asked
    for in it (:func:`language_hint`)."""
    numbered = "\n".join(f"[{i}] {line}" for i, line in enumerate(items, 1)) or "(no items)"
    head = f"Today is {today}.\n" if today else ""
    hint = (f" {DATES_HINT}" if dated else "") + language_hint(language)
    head += who_line(chat)
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{head}Memory items (oldest first):\n{numbered}\nQuestion: {question}{hint}"},
    ]
