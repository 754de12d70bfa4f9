"""Answer check: do the items an answer cites state it? (yes/no).

Asked once before a fast-mode answer is returned, scored from the next-token logits of "yes"
against "no": nothing is generated. The question continues the answer's own conversation (the
answer prompt, then the model's reply), so the evidence the model just read is the evaluated
prefix and only the reply and the question are new: about 60 tokens, not the evidence again.
Checks of other items as the support share that prefix too. A small model answering from
evidence sometimes takes the words of a nearby item, of someone else, or of its own guess;
this second look at the answer against the items it names catches part of that.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from . import item_text

VERSION = "check-v1"


def render(
    answer_messages: Sequence[dict[str, str]], reply: dict[str, Any], items: Sequence[int], answer: str
) -> list[dict[str, str]]:
    """``answer_messages``: the answer prompt as sent; ``reply``: the model's parsed reply;
    ``items``: the item numbers whose support is checked."""
    named = ", ".join(f"[{n}]" for n in items)
    which = f"item {named} state" if len(items) == 1 else f"items {named} state"
    return [
        *answer_messages,
        {"role": "assistant", "content": json.dumps(reply, ensure_ascii=False)},
        {
            "role": "user",
            "content": f"Check your answer. Does {which} that the answer to the question is "
            f'"{item_text(answer)}": about the right person, with nothing the item '
            "does not say? Answer with one word: yes or no.",
        },
    ]
