"""Listing what a question counts or adds up ("how many", "how often", "how much in total"), and
every value an item gives for what a question asks about now or before: the model reads, code
counts (:mod:`localmem.answer.tally`, :mod:`localmem.answer.latest`).

A 1.5B model reads well and counts badly: asked "how much have I spent on the lock and the
panniers?" it wrote "75 - 5 = 70" for 43 (issue 51). So the model only lists, one entry per
thing with the item that tells it, and code de-duplicates, drops what was sold or cancelled,
counts and adds up. Each entry is a few tokens (an item number, a short name, a status): the
reply is generated token by token, and a list costs more than the usual answer's 25 tokens.

Both prompts keep their instructions in the system message (the same for every question: the
backend evaluates them once) and the question and the items last.
"""

from __future__ import annotations

from typing import Any, Sequence

VERSION = "tally-v1"

MAX_ENTRIES = 10
MAX_WHAT_CHARS = 48
# Ten entries of about 20 tokens each, and the braces around them.
MAX_TOKENS = 260

# What became of a thing the items tell of. Only "counts" is counted.
STATUSES = ("counts", "gone", "cancelled", "other")

COUNT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entries": {
            "type": "array",
            "maxItems": MAX_ENTRIES,
            "items": {
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "minimum": 1, "maximum": 99},
                    "what": {"type": "string", "minLength": 1, "maxLength": MAX_WHAT_CHARS},
                    "amount": {"type": "string", "maxLength": 24},
                    "status": {"type": "string", "enum": list(STATUSES)},
                },
                "required": ["n", "what", "amount", "status"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["entries"],
    "additionalProperties": False,
}

COUNT_SYSTEM = """You list what a question counts or adds up, using only the numbered memory items given.
Rules:
- One entry for each thing, event, trip or payment the items tell of that the question asks about. The same thing told in several items is one entry: give the number of the item that first tells it.
- "n": that item's number. "what": a short name for the thing, in the items' words.
- "amount": when the question asks how much, the amount with its unit or currency as the item says it ("£95", "110 km"); otherwise "".
- "status": "counts" if it happened or is had; "gone" if an item says it was sold, returned, given away, stolen, lost or ended; "cancelled" if it was cancelled or only planned; "other" if it belongs to or was done by someone else than the person asked about.
- Leave out what no item tells. If no item tells of any, reply {"entries": []}.
Reply with JSON only.

Example items:
[1] 3 January 2023 - Noor: I bought a Brompton folding bike today, £1,200!
[2] 9 April 2023 - Noor: New bike day: a Whyte gravel bike for £1,500.
[3] 2 May 2023 - Noor: Sold the Brompton to a colleague.
[4] 5 May 2023 - Ben: I got myself a Trek last week.
Question: How many bikes have I bought this year?
{"entries": [{"n": 1, "what": "Brompton folding bike", "amount": "", "status": "counts"}, {"n": 2, "what": "Whyte gravel bike", "amount": "", "status": "counts"}, {"n": 4, "what": "Trek", "amount": "", "status": "other"}]}
Question: How many bikes do I have now?
{"entries": [{"n": 1, "what": "Brompton folding bike", "amount": "", "status": "gone"}, {"n": 2, "what": "Whyte gravel bike", "amount": "", "status": "counts"}, {"n": 4, "what": "Trek", "amount": "", "status": "other"}]}"""

VALUES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "values": {
            "type": "array",
            "maxItems": MAX_ENTRIES,
            "items": {
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "minimum": 1, "maximum": 99},
                    "value": {"type": "string", "minLength": 1, "maxLength": MAX_WHAT_CHARS},
                },
                "required": ["n", "value"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["values"],
    "additionalProperties": False,
}

VALUES_SYSTEM = """You find every value the numbered memory items give for what a question asks about (where someone lives or works, what they drive, a count, a relationship), old and new.
Rules:
- One entry for each item that states a value: "n", the item's number; "value", the value in a few words, in the item's words.
- Only values of the person and thing the question asks about: not someone else's, not a plan that did not happen.
- If no item states one, reply {"values": []}.
Reply with JSON only.

Example items:
[1] 3 January 2023 - Noor: I've lived in Lisbon for six years now.
[2] 20 February 2023 - Ben: My sister moved to Porto.
[3] 4 March 2023 - Noor: First night in our new flat in Leipzig!
Question: Where does Noor live now?
{"values": [{"n": 1, "value": "Lisbon"}, {"n": 3, "value": "Leipzig"}]}"""


def render(
    system: str, question: str, lines: Sequence[str], today: str | None, who: str = "", hint: str = ""
) -> list[dict[str, str]]:
    """The prompt ``system`` (:data:`COUNT_SYSTEM` or :data:`VALUES_SYSTEM`) for ``question``
    over ``lines`` (one dated evidence line each, in time order); ``who``: who "I" and "you"
    are, when the items are a user's chat with an assistant; ``hint``: what follows the question."""
    numbered = "\n".join(f"[{i}] {line}" for i, line in enumerate(lines, 1)) or "(no items)"
    head = f"Today is {today}.\n" if today else ""
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"{head}{who}Memory items (oldest first):\n{numbered}\nQuestion: {question}{hint}"},
    ]
