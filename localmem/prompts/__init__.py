"""Prompts as modules: each has VERSION, SCHEMA (bounded), MAX_TOKENS and render(...) -> messages.

Static instructions come first in every prompt so llama.cpp reuses the evaluated
prefix across calls; the variable part (the messages) comes last.
"""

# Square brackets and braces, and the characters that look like them (fullwidth, small,
# vertical, white, lenticular, tortoise-shell, ceiling and floor, bracket pieces): what item
# numbers, the dates given after relative times and JSON replies are written with.
_OPENING = (
    "[{\uff3b\uff5b\u2045\u27e6\u3010\u3014\u3016\u3018\u301a\u298b\u298d\u298f\u2772\u2774"
    "\u2983\u27ec\u2997\u2e22\u2e24\u2e26\ufe37\ufe47\ufe5b\ufe5d\u2308\u230a\u23a1\u23a3"
)
_CLOSING = (
    "]}\uff3d\uff5d\u2046\u27e7\u3011\u3015\u3017\u3019\u301b\u298c\u298e\u2990\u2773\u2775"
    "\u2984\u27ed\u2998\u2e23\u2e25\u2e27\ufe38\ufe48\ufe5c\ufe5e\u2309\u230b\u23a4\u23a6"
)
_ITEM = str.maketrans(
    {
        **{c: "(" for c in _OPENING},
        **{c: ")" for c in _CLOSING},
        **{chr(c): " " for c in (*range(32), *range(127, 160))},
    }
)


def item_text(text: str) -> str:
    """Text from a message (or anything else stored) as it may appear inside one numbered item
    of a prompt: on one line, with its brackets and braces (and their look-alikes) turned into
    parentheses. Every line break, square bracket and brace the model then reads is the
    prompt's own, so a message cannot open an item ("[7] 20 May 2023 - Priya: ..."), give a
    relative time a date ("yesterday [1 May 2020]") or look like a reply ("{"answer": ...}").
    (Special tokens such as ``<|im_end|>`` are kept from being read as such by the backend.)"""
    return " ".join(text.translate(_ITEM).split())
