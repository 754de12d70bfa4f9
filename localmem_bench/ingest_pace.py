"""Ingest's pace against the embedding floor, on a large synthetic WhatsApp export.

``localmem bench ingest --messages N`` writes a group chat of exactly ``N`` messages in the
format WhatsApp's "Export chat" writes on Android (the shapes of the import fixtures: system
lines, multi-line messages, ``<Media omitted>``, deleted and edited messages), deterministic
from a seed, its text drawn from :mod:`.bench`'s templates and vocabulary (so the texts vary
as a chat's do: FTS and duplicate ids behave as on real data), then measures:

- the **floor**: the embedder alone over exactly the texts ingest embeds (each message, and
  each long sentence of a message of several, and each message with the turn before it in its
  session, see :func:`~localmem.models.embedding.embed_messages`),
  sorted by length and in batches of ``embed_batch`` as ingest does, in one call: no parsing,
  no store, no transactions;
- the **import**: :meth:`Memory.ingest` of the file into a new store, the default path
  (``extract="none"``: parse, embed, insert, index; no LLM), then the same file again (a no-op
  that must add nothing).

Each runs in a new process (so its peak RSS is its own, with the model loaded) after the model
has been loaded and run once; the clock covers only the call. ``ratio`` compares wall-clock
rates, ``cpu_ratio`` the CPU seconds each process spent (every thread's): on a machine others
share, the wall-clock floor and import run minutes apart under different loads, while the CPU
time a piece of work takes moves much less. Every number is measured in this run on this
machine.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os
import random
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable, TextIO

from localmem import Memory
from localmem.config import Config
from localmem.files import private_dir
from localmem.importers import formats
from localmem.models.embedding import embed_messages, message_text
from localmem.models.protocols import Embedder

from . import bench

__all__ = ["bench_ingest_pace", "write_whatsapp_export"]

GROUP = "Weekend crew"
FILE_NAME = f"WhatsApp Chat with {GROUP}.txt"  # the conversation is named after the file
_SURNAMES = ["Chen", "Okafor", "Rossi", "Haddad", "Tanaka", "Novak", "Ibrahim", "Patel", "Moreau", "Silva"]
MEMBERS = [f"{first} {last}" for first, last in zip(bench.SPEAKERS, _SURNAMES)][:8] + ["+44 7700 900456"]
REACTIONS = [
    "ok",
    "Ok 👍",
    "haha",
    "lol 😂",
    "😂😂😂",
    "yes!",
    "nope",
    "omw",
    "on my way",
    "thanks!",
    "Thank you 🙏",
    "sure",
    "brb",
    "❤️",
    "same",
    "good night all",
    "morning!",
]
_START = dt.datetime(2019, 1, 5, 9, 0)


def write_whatsapp_export(path: Path, messages: int, seed: int = bench.DEFAULT_SEED) -> int:
    """Write a WhatsApp (Android) group chat export of exactly ``messages`` messages to ``path``.

    Besides them it holds what an import skips: the encryption notice, members added and
    leaving, deleted messages. About 8% of messages are reactions ("ok", emoji), 55% one
    statement (sometimes with an opener or a closer), 20% a reply, 8% two to four statements
    (sentences long enough to be embedded as parts too), 4% several lines, 3% media without
    the file, and 2% end in ``<This message was edited>``. Bursts of messages a few minutes
    apart are separated by hours. Same seed, same file; returns the bytes written."""
    private_dir(path.parent)
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        clock = _START
        _line(fh, clock, None, "Messages and calls are end-to-end encrypted. No one outside of this chat, not even "
              "WhatsApp, can read or listen to them. Tap to learn more.")  # fmt: skip
        _line(fh, clock, None, f'{MEMBERS[0]} created group "{GROUP}"')
        for member in MEMBERS[1:]:
            _line(fh, clock, None, f"{MEMBERS[0]} added {member}")
        written = 0
        while written < messages:
            for _ in range(min(rng.randint(3, 40), messages - written)):
                clock += dt.timedelta(seconds=rng.randint(5, 600))
                speaker = rng.choice(MEMBERS)
                if rng.random() < 0.005:
                    _line(fh, clock, speaker, "This message was deleted")  # skipped by the importer
                _line(fh, clock, speaker, _text(rng, speaker))
                written += 1
            clock += dt.timedelta(hours=rng.randint(1, 30), minutes=rng.randint(0, 59))
            if rng.random() < 0.002:
                _line(fh, clock, None, f"{rng.choice(MEMBERS[1:])} left")
        return fh.tell()


def _line(fh: TextIO, when: dt.datetime, speaker: str | None, text: str) -> None:
    stamp = when.strftime("%d/%m/%Y, %H:%M")
    fh.write(f"{stamp} - {speaker}: {text}\n" if speaker else f"{stamp} - {text}\n")


def _text(rng: random.Random, speaker: str) -> str:
    first = speaker.split()[0]
    kind = rng.random()
    if kind < 0.08:
        return rng.choice(REACTIONS)
    if kind < 0.28:
        return bench._sentence(rng, first, bench.REPLIES)
    if kind < 0.36:
        return " ".join(bench._sentence(rng, first, bench.STATEMENTS) for _ in range(rng.randint(2, 4)))
    if kind < 0.40:
        return "\n".join(bench._sentence(rng, first, bench.STATEMENTS, decorate=True) for _ in range(rng.randint(2, 3)))
    if kind < 0.43:
        return "<Media omitted>"
    text = bench._sentence(rng, first, bench.STATEMENTS, decorate=True)
    return text + " <This message was edited>" if kind < 0.45 else text


# -- measuring -------------------------------------------------------------------------------
def bench_ingest_pace(
    messages: int,
    workdir: Path | None,
    config: Config,
    embedder: Embedder | None = None,
    seed: int = bench.DEFAULT_SEED,
    isolate: bool = True,
) -> dict[str, Any]:
    """Import a ``messages``-message WhatsApp export (:func:`write_whatsapp_export`) into a new
    ``<workdir>/pace-<N>.db`` and compare its pace with the embedding floor (see the module).

    ``isolate``: run the floor and the import each in a new process (``peak_rss_mb`` is then
    the import's own); otherwise in this one (for tests: ``peak_rss_mb`` is this process's).
    ``embedder``: the model (default: the config's, loaded in each process)."""
    workdir = Path(workdir) if workdir is not None else bench.default_workdir()
    private_dir(workdir)
    export = workdir / f"pace-{messages}" / FILE_NAME
    size = write_whatsapp_export(export, messages, seed)
    store = workdir / f"pace-{messages}.db"
    bench._remove_store(store)
    cfg = bench._bench_config(config)
    load_before = os.getloadavg()[0]
    floor = _run(isolate, _floor, export, cfg, embedder)
    done = _run(isolate, _import, store, export, cfg, embedder)
    load_after = os.getloadavg()[0]
    n = done["parsed"]
    import_rate = n / done["import_s"]
    floor_rate = n / floor["floor_s"]
    return {
        "messages": n,
        "stored": done["stored"],
        "added": done["added"],
        "import_s": round(done["import_s"], 2),
        "import_msgs_per_s": round(import_rate, 1),
        "embed_s": round(done["embed_s"], 2),
        "floor_s": round(floor["floor_s"], 2),
        "floor_msgs_per_s": round(floor_rate, 1),
        "ratio": round(import_rate / floor_rate, 3),
        "import_cpu_s": round(done["import_cpu_s"], 2),
        "floor_cpu_s": round(floor["floor_cpu_s"], 2),
        "cpu_ratio": round(floor["floor_cpu_s"] / done["import_cpu_s"], 3) if done["import_cpu_s"] > 0 else None,
        "embedded_texts": floor["texts"],
        "peak_rss_mb": done["peak_rss_mb"],
        "floor_peak_rss_mb": floor["peak_rss_mb"],
        "reingest_s": round(done["reingest_s"], 2),
        "reingest_added": done["reingest_added"],
        "wall_s": round(done["wall_s"] + floor["wall_s"], 2),
        "file_mb": round(size / 1_000_000, 1),
        "db_mb": bench._file_mb(store),
        "model": floor["model"],
        "embed_batch": cfg.embed_batch,
        "ingest_batch": cfg.ingest_batch,
        "cpus": os.cpu_count(),
        "load_avg": f"{load_before:.2f}->{load_after:.2f}",
        "isolated": isolate,
    }


def _run(isolate: bool, fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """``fn(*args)`` here, or in a new process (spawned: nothing inherited from this one)."""
    if not isolate:
        return fn(*args)
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def _floor(export: Path, config: Config, embedder: Embedder | None) -> dict[str, Any]:
    """The embedder alone over the texts an ingest of ``export`` embeds."""
    started = time.perf_counter()
    parsed = formats.parse(export, None, None, None, options=formats.Options.from_config(config))
    messages = [m for _, group in parsed.groups for m in group]
    triples = [(m.speaker, m.text, m.attachments) for m in messages]
    # As ingest gives them: the turn before each message in its session (context parts).
    before: list[str | None] = [None] * len(messages)
    for i in range(1, len(messages)):
        p, m = messages[i - 1], messages[i]
        if m.session and (p.conversation, p.session) == (m.conversation, m.session):
            before[i] = message_text(p.speaker, p.text, p.attachments)
    model = embedder or _model(config)
    model.embed(["warm-up"])
    counted = [0]
    t0, cpu0 = time.perf_counter(), time.process_time()
    embed_messages(
        model,
        triples,
        config.embed_batch,
        on_batch=lambda k: counted.__setitem__(0, counted[0] + k),
        before=before,
        context=config.context_parts,
    )
    floor, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {
        "floor_s": floor,
        "floor_cpu_s": cpu,
        "texts": counted[0],
        "model": model.model_id,
        "peak_rss_mb": bench._peak_rss_mb(),
        "wall_s": time.perf_counter() - started,
    }


def _model(config: Config) -> Embedder:
    from localmem.models import factory

    return factory.create("embedder", config)


def _import(store: Path, export: Path, config: Config, embedder: Embedder | None) -> dict[str, Any]:
    """Ingest ``export`` into the new store at ``store``, twice (the second adds nothing)."""
    started = time.perf_counter()
    with Memory(store, namespace=bench.NAMESPACE, config=config, embedder=embedder) as mem:
        mem.embedder.embed(["warm-up"])
        t0, cpu0 = time.perf_counter(), time.process_time()
        report = mem.ingest(export, extract="none")
        import_s, import_cpu_s = time.perf_counter() - t0, time.process_time() - cpu0
        t0 = time.perf_counter()
        again = mem.ingest(export, extract="none")
        reingest_s = time.perf_counter() - t0
        stored = int(mem.stats().messages)
    return {
        "parsed": sum(n.messages for n in report.namespaces),
        "stored": stored,
        "added": report.added,
        "import_s": import_s,
        "import_cpu_s": import_cpu_s,
        "embed_s": report.embed_seconds,
        "reingest_s": reingest_s,
        "reingest_added": again.added,
        "peak_rss_mb": bench._peak_rss_mb(),
        "wall_s": time.perf_counter() - started,
    }
