"""Answering from retrieved memory (REMem-S: one retrieval, one answer call).

The evidence is numbered and ordered by time, under the absolute date of the day it was
said (one date line per day rather than one per item: the same evidence in ~15% fewer
prompt tokens, which is most of an answer's latency), so the model can turn "yesterday"
into a date by reading the date above the item. The reply names
the items it rests on (``supports``); the caller keeps only numbers that exist. When the
items do not hold the answer the model must say exactly ``not in memory`` (REMem's
refusal convention, R:226) instead of guessing, also when the items say it of someone
else than the person asked about (LoCoMo's adversarial questions swap the speaker).
Everything static (rules and worked examples with made-up people, none of whom appear in
the shipped sample chat) comes first, so llama.cpp reuses it across questions.
"""

from __future__ import annotations

from typing import Any, Sequence

VERSION = "answer-v3"
REFUSAL = "not in memory"
MAX_SUPPORTS = 6
MAX_ANSWER_CHARS = 120
# Covers the longest reply the schema allows (a test checks it); a typical reply is ~25 tokens.
MAX_TOKENS = 220

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "minLength": 1, "maxLength": MAX_ANSWER_CHARS},
        "supports": {"type": "array", "maxItems": MAX_SUPPORTS,
                     "items": {"type": "integer", "minimum": 1, "maximum": 99}},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["answer", "supports", "confidence"],
    "additionalProperties": False,
}

SYSTEM = f"""You answer questions about people's past conversations, using only the numbered memory items given.
Rules:
- Answer in as few words as possible, in the items' own words: a name, a date, a number or a short phrase. Answer yes/no questions with "Yes" or "No" and at most a few words.
- Items are listed under the date they were said. Turn relative times into dates with that date: "yesterday" in an item under 8 May 2023 is 7 May 2023, "last year" is 2022.
- Answer about the person the question names. What someone else did or said is not an answer.
- If the items do not say the answer, reply with the answer "{REFUSAL}". Never guess.
- "supports": the numbers of the items your answer rests on.
- "confidence": from 0 to 1, how sure you are that the items say it.
Reply with JSON only.

Example items:
2 March 2022:
[1] Noor: We adopted a puppy yesterday! His name is Biscuit.
20 April 2022:
[2] Ben: Work has been busy, I'm moving to Oslo in June.
Question: When did Noor adopt her dog?
{{"answer": "1 March 2022", "supports": [1], "confidence": 0.9}}
Question: What is Ben's sister called?
{{"answer": "{REFUSAL}", "supports": [], "confidence": 0.9}}
Question: Where is Noor moving in June?
{{"answer": "{REFUSAL}", "supports": [], "confidence": 0.8}}"""


def build(question: str, days: Sequence[tuple[str, Sequence[str]]], today: str | None) -> list[dict[str, str]]:
    """``days``: (date, the lines said that day), in time order; items are numbered across days."""
    lines: list[str] = []
    number = 0
    for day, items in days:
        lines.append(f"{day}:")
        for item in items:
            number += 1
            lines.append(f"[{number}] {item}")
    numbered = "\n".join(lines) if number else "(no items)"
    head = f"Today is {today}.\n" if today else ""
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"{head}Memory items (oldest first):\n{numbered}\nQuestion: {question}"}]
