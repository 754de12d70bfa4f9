"""Fact verification: do the cited messages state this extracted fact? (yes/no).

The small extractor sometimes turns an offer into an act ("want to see a pic?" → "showed
her"), adds to what was said, or garbles a sentence. A second, cheap look at each fact
against its own messages catches part of that. It is scored from the next-token logits
of "yes" against "no", so nothing is generated; the messages come before the fact, so
facts citing the same messages share the evaluated prefix. The fact is shown without the
dates the rules appended, which the model otherwise tries (and fails) to check.
"""

from __future__ import annotations

from typing import Sequence

from . import item_text

VERSION = "verify-v2"  # v2: each message on one line, its brackets as parentheses (item_text)

SYSTEM = (
    "You check facts that were extracted from a chat. Answer yes only if the messages say the fact "
    "is true: the right person, something that really happened or holds (not only offered, asked, "
    "wished or planned, unless the fact says so), and nothing added that the messages do not say. "
    "Answer with one word: yes or no."
)


def render(lines: Sequence[str], fact: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": "Messages:\n"
            + "\n".join(item_text(line) for line in lines)
            + f"\nFact: {fact}\nDo the messages state this fact?",
        },
    ]
