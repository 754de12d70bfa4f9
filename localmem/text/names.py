"""Entity names as they are compared: lower-case, unpunctuated, kinship-canonical.

Every layer that looks an entity up by name (resolution when memory is built, the entity channel,
browsing, profiles, the agentic tools) normalises it here, so they all agree on what a name is.
"""

from __future__ import annotations

import re

from .words import KIN


def normalise(name: str, speaker: str | None = None) -> str:
    """Lower-case, unpunctuated, kinship-canonical; "my X" from a speaker is "<speaker>'s X"."""
    text = name.strip().lower().replace("’", "'")
    text = re.sub(r"^(the|a|an)\s+", "", text)
    if speaker and re.match(r"^(my|our)\s+", text):
        text = f"{speaker.strip().lower()}'s " + re.sub(r"^(my|our)\s+", "", text)
    tokens: list[str] = re.findall(r"[\w']+", text)
    words = [KIN.get(w, w) for w in tokens]
    return " ".join(words)
