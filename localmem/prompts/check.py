"""Answer check: does the cited evidence state this answer to the question? (yes/no).

Asked once before a fast-mode answer is returned, scored from the next-token logits of "yes"
against "no" (nothing is generated: a few hundred tokens of prefill). The evidence comes
first, so candidates checked against the same items share the evaluated prefix. A small model
answering from evidence sometimes takes the words of a nearby item, of someone else, or of
its own guess; this second look at the answer next to the items it cites catches part of that.
"""

from __future__ import annotations

from typing import Sequence

from . import item_text

VERSION = "check-v1"

SYSTEM = ("You check answers to questions about a person's chat history. Answer yes only if the "
          "messages state the answer to the question: about the right person, and nothing in the "
          "answer that the messages do not say (a date or number worked out from what they say "
          "counts as stated). Answer with one word: yes or no.")


def build(lines: Sequence[str], question: str, answer: str) -> list[dict[str, str]]:
    """``lines``: the cited evidence, one dated line each."""
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Messages:\n" + "\n".join(item_text(line) for line in lines) +
                                        f"\nQuestion: {item_text(question)}\nAnswer: {item_text(answer)}\n"
                                        "Do the messages state this answer?"}]
