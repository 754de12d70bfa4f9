"""Model backends. Heavy libraries (onnxruntime, tokenizers, llama_cpp) are imported only here,
lazily, and only through :func:`library`, which first turns off everything in them that
would reach the network or write outside localmem's own files.

Measured here with onnxruntime 1.32 under ``strace -f -e trace=network`` and a fresh ``$HOME``:
on its first session, onnxruntime writes a device id and an event database under
``~/.cache/Microsoft/DeveloperTools/.onnxruntime/`` and, a few seconds later, looks up
``mobile.events.data.microsoft.com`` (9 sockets, 6 of them DNS lookups, in 40 s of one idle
session, ``tests/trials/ort_telemetry.py``; 12 to 15 sockets during one ``localmem ask``,
``tests/trials/offline.py``). ``ORT_DISABLE_TELEMETRY=1`` set before the import stops both; set
after the import, or ``onnxruntime.disable_telemetry_events()``, stopped neither.
tokenizers only reads ``tokenizer.json`` (``Tokenizer.from_file``); its ``from_pretrained``,
which localmem never calls, would import huggingface_hub: ``HF_HUB_OFFLINE=1`` makes such a
call fail instead of downloading. llama.cpp opened no socket in the same trials.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from types import ModuleType

# Forced: localmem never sends telemetry, whatever the environment says.
FORCED = {"ORT_DISABLE_TELEMETRY": "1"}
# Defaults: an application that embeds localmem and sets these itself keeps its own choice
# (its hub downloads are its business; localmem makes none).
DEFAULTS = {"HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}

# onnxruntime imported before localmem set the variable (by an application embedding localmem)
# has its telemetry on for the life of the process.
_ort_telemetry_on = False


def offline() -> None:
    """Set the environment variables that keep the model libraries off the network."""
    os.environ.update(FORCED)
    for name, value in DEFAULTS.items():
        os.environ.setdefault(name, value)


def library(name: str) -> ModuleType:
    """Import the model library ``name`` with its telemetry and downloads off (raises
    ``ImportError`` when it is not installed)."""
    global _ort_telemetry_on
    if "onnxruntime" in sys.modules and os.environ.get("ORT_DISABLE_TELEMETRY") != "1":
        _ort_telemetry_on = True
    offline()
    module = importlib.import_module(name)
    if name == "onnxruntime" and _ort_telemetry_on:
        _warn_ort_telemetry(module)
    return module


_warned = False


def _warn_ort_telemetry(ort: ModuleType) -> None:
    global _warned
    try:
        ort.disable_telemetry_events()  # not enough on its own (see above), but all that is left
    except AttributeError:  # pragma: no cover - a build without telemetry
        return
    if not _warned:
        _warned = True
        warnings.warn(
            "onnxruntime was imported before localmem without ORT_DISABLE_TELEMETRY=1, so "
            "its telemetry stays on in this process; set ORT_DISABLE_TELEMETRY=1 before "
            "importing onnxruntime",
            RuntimeWarning,
            stacklevel=3,
        )


def onnx_providers() -> list[str]:
    """The execution providers of the installed onnxruntime (none when it is missing)."""
    try:
        return list(library("onnxruntime").get_available_providers())
    except ImportError:
        return []
