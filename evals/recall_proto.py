"""Eval-only prototypes of search changes, measured without an LLM by the two recall scripts.

The product's search runs as it is; a prototype is put in place of one of its functions for
the run (nothing is stored, no store is changed):

- ``--context MODE``: a second vector per message, the message embedded with the turn it
  answers (the turn before it in its session: "Melanie: What's its name?\nCaroline: Scout").
  The vectors are computed in memory (cached under ``--cache``) and searched by brute force.
  ``channel``: they rank messages in an extra RRF list ("context"); ``max``: a message's vector
  similarity is the better of its own and its contextual one, in the vector channel.
  ``--window prev|both|next``: the turn before; the turns before and after; the message then
  the turn after. ``--short N``: only messages of at most N words; ``--questions``: only
  replies to a turn with a question mark. (The product's context parts are ``max`` with
  ``prev``: on a store that has them, these add a further vector.)
- ``--query MODE``: the query rewritten from its own words (see :func:`rewrites`), its
  vector ranking an extra RRF list ("vector2"), or with ``--replace`` the vector channel's.

Every other argument goes to ``evals/locomo_prompt_recall.py`` or
``evals/assistant/long_haystack.py``. Usage::

    python evals/recall_proto.py locomo FILE1 FILE2 [--context channel] [--params JSON]
    python evals/recall_proto.py assistant --pad FILE [--context channel] [--params JSON]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "assistant"))

from localmem.models.embedding import embed_batched, message_text  # noqa: E402
from localmem.retrieval import search as search_mod  # noqa: E402

STATE: dict[str, Any] = {"embedder": None, "mode": None, "window": "prev", "cache": Path("/tmp"), "vectors": {}}


def _db_name(conn: Any) -> str:
    return conn.db_filename("main")


def context_texts(rows: list[tuple[int, str, str, str, str | None]], window: str) -> tuple[list[int], list[str]]:
    """Each message's id and its text with the turn before it (``window`` "both": and after it)
    in the same session; a message without a session, or the first of one, alone."""
    ids, texts = [], []
    for i, (mid, conv, session, speaker_text, _att) in enumerate(rows):
        parts = []
        if window == "next":  # the message, then the turn after it
            if session and i + 1 < len(rows) and rows[i + 1][1:3] == (conv, session):
                parts = [speaker_text, rows[i + 1][3]]
            ids.append(mid)
            texts.append("\n".join(parts or [speaker_text]))
            continue
        if session and i > 0 and rows[i - 1][1:3] == (conv, session):
            parts.append(rows[i - 1][3])
        parts.append(speaker_text)
        if window == "both" and session and i + 1 < len(rows) and rows[i + 1][1:3] == (conv, session):
            parts.append(rows[i + 1][3])
        ids.append(mid)
        texts.append("\n".join(parts))
    return ids, texts


def vectors_of(conn: Any, ns: str) -> tuple[np.ndarray, np.ndarray]:
    key = (_db_name(conn), ns, STATE["window"], STATE.get("short"), STATE.get("questions"))
    if key in STATE["vectors"]:
        return STATE["vectors"][key]
    rows = []
    for mid, conv, session, speaker, text, attachments in conn.execute(
        "SELECT id, conversation, session, speaker, text, attachments FROM messages WHERE ns = ? "
        "ORDER BY conversation, seq, id",
        (ns,),
    ):
        rows.append((mid, conv, session, message_text(speaker, text, json.loads(attachments or "[]")), None))
    ids, texts = context_texts(rows, STATE["window"])
    if STATE.get("questions"):  # only replies to a question (the turn before asks something)
        asked = [i for i, t in enumerate(texts) if "\n" in t and "?" in t.split("\n")[0]]
        ids, texts = [ids[i] for i in asked], [texts[i] for i in asked]
    if STATE.get("short"):  # only messages of at most this many words get a context vector
        words = {mid: len(t.split(": ", 1)[-1].split()) for mid, _c, _s, t, _a in rows}
        kept = [i for i, mid in enumerate(ids) if words[mid] <= STATE["short"]]
        ids, texts = [ids[i] for i in kept], [texts[i] for i in kept]
    digest = hashlib.sha1(("\x00".join(texts)).encode()).hexdigest()[:16]
    path = STATE["cache"] / f"ctx-{digest}.npy"
    if path.exists():
        vecs = np.load(path)
    else:
        vecs = embed_batched(STATE["embedder"], texts, 32)
        np.save(path, vecs)
    out = (np.asarray(ids, dtype=np.int64), vecs.astype(np.float32))
    STATE["vectors"][key] = out
    return out


_original_run_channels = search_mod.run_channels


def run_channels(conn, ns, query, query_vec, params, when=None, allowed=None):  # type: ignore[no-untyped-def]
    rankings, raw = _original_run_channels(conn, ns, query, query_vec, params, when, allowed)
    if STATE["mode"] is None or query_vec is None or "vector" not in params.channels:
        return rankings, raw
    ids, vecs = vectors_of(conn, ns)
    if not len(ids):
        return rankings, raw
    sims = vecs @ np.asarray(query_vec, dtype=np.float32)
    if allowed is not None:
        keep = np.array([int(i) in allowed.messages for i in ids])
        sims = np.where(keep, sims, -2.0)
    order = np.argsort(-sims, kind="stable")[: params.budget]
    found = [(("m", int(ids[i])), float(sims[i])) for i in order if sims[i] > -2.0]
    if STATE["mode"] == "channel":
        rankings["context"] = [key for key, _ in found]
        for key, sim in found:
            raw.setdefault(key, {})["context"] = round(sim, 4)
    elif STATE["mode"] == "max":
        best = {key: raw[key]["vector"] for key in rankings.get("vector", [])}
        for key, sim in found:
            if sim > best.get(key, -2.0):
                best[key] = sim
        ranked = sorted(best.items(), key=lambda kv: -kv[1])[: params.budget]
        rankings["vector"] = [key for key, _ in ranked]
        for key, sim in ranked:
            raw.setdefault(key, {})["vector"] = round(sim, 4)
    return rankings, raw


# Question words and auxiliaries: what a question says about its form, not its subject.
_FORM = re.compile(
    r"\b(what|which|who|whom|whose|when|where|why|how|did|does|do|is|are|was|were|has|have|had|"
    r"can|could|would|will|should|kind|of|type|sort|the|a|an)\b",
    re.IGNORECASE,
)


def rewrites(query: str, mode: str) -> str:
    """``statement``: the question without its question words, auxiliaries and articles
    ("What kind of car did Evan buy?" -> "car Evan buy"); ``keywords``: its content words."""
    if mode == "statement":
        out = " ".join(_FORM.sub(" ", query).replace("?", " ").split())
        return out or query
    from localmem.text.words import content_words

    return " ".join(content_words(query)) or query


def _query_vec(text: str) -> np.ndarray:
    cache = STATE.setdefault("qvecs", {})
    if text not in cache:
        cache[text] = STATE["embedder"].embed([text], role="query")[0]
    return cache[text]


_wrapped = run_channels


def run_channels_q(conn, ns, query, query_vec, params, when=None, allowed=None):  # type: ignore[no-untyped-def]
    rankings, raw = _wrapped(conn, ns, query, query_vec, params, when, allowed)
    mode = STATE.get("query")
    if mode is None or query_vec is None:
        return rankings, raw
    from localmem.retrieval.batch import SpeakerNames
    from localmem.retrieval.query_text import without_names

    names = STATE.setdefault("names", {})
    if ns not in names:
        names[ns] = SpeakerNames()(conn, ns, None)
    text = rewrites(without_names(query, names[ns]), mode)
    vec = _query_vec(text)
    extra, _ = _original_run_channels(conn, ns, text, vec, replace(params, channels=("vector",)), when, allowed)
    if STATE.get("query_replace"):  # the rewritten query's vector ranking instead of the question's
        rankings["vector"] = extra.get("vector", [])
    else:
        rankings["vector2"] = extra.get("vector", [])
    return rankings, raw


search_mod.run_channels = run_channels_q


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("which", choices=("locomo", "assistant"))
    parser.add_argument("--context", choices=("channel", "max"))
    parser.add_argument("--window", choices=("prev", "both", "next"), default="prev")
    parser.add_argument("--query", choices=("statement", "keywords"))
    parser.add_argument("--replace", action="store_true", help="--query: in place of the vector channel")
    parser.add_argument("--short", type=int, help="--context: only for messages of at most this many words")
    parser.add_argument("--questions", action="store_true", help="--context: only replies to a question")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/recall3-out"))
    args, rest = parser.parse_known_args(argv)
    STATE.update(
        mode=args.context,
        window=args.window,
        cache=args.cache,
        query=args.query,
        query_replace=args.replace,
        short=args.short,
        questions=args.questions,
    )
    args.cache.mkdir(parents=True, exist_ok=True)
    from localmem.config import Config
    from localmem.models import factory

    if args.context or args.query:
        STATE["embedder"] = factory.create("embedder", Config.load())
    if args.which == "locomo":
        import locomo_prompt_recall

        return locomo_prompt_recall.main(rest)
    import long_haystack

    return long_haystack.main(rest)


if __name__ == "__main__":
    sys.exit(main())
