"""Benchmarks on synthetic chat data: ingest throughput and search latency.

Messages and queries are generated deterministically (seeded) from templates and
vocabulary lists, so runs are comparable. Every number in a row is what was
measured on this machine in this run; nothing is extrapolated. The functions
print nothing: the CLI (``localmem bench ingest|search``) formats the rows.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from localmem import Memory
from localmem.config import DEFAULTS, Config, Key, home_dir, user_cache_dir
from localmem.files import private_dir
from localmem.models.protocols import Embedder

__all__ = [
    "DEFAULT_SEED",
    "INGEST_COLUMNS",
    "QUERY_SEED",
    "SEARCH_COLUMNS",
    "bench_ingest",
    "bench_search",
    "default_workdir",
    "generate_messages",
    "generate_queries",
    "iter_messages",
    "store_path",
    "write_jsonl",
]

INGEST_COLUMNS: list[str] = [
    "messages",
    "encrypted",
    "stored",
    "total_s",
    "embed_s",
    "msgs_per_s",
    "msgs_per_s_excl_embed",
    "db_mb",
    "peak_rss_mb",
]
SEARCH_COLUMNS: list[str] = [
    "messages",
    "encrypted",
    "queries",
    "k",
    "p50_ms",
    "p95_ms",
    "mean_ms",
    "vector_p50_ms",
    "bm25_p50_ms",
    "embed_p50_ms",
]

DEFAULT_SEED = 20240501
QUERY_SEED = 777_001
WARMUP_QUERIES = 5
NAMESPACE = DEFAULTS.namespace
# The passphrase of the encrypted twin stores of ``compare_encrypted`` (synthetic data only).
BENCH_KEY = Key("localmem bench passphrase", "the bench's own passphrase")
_START = dt.datetime(2022, 1, 3, 8, 0, 0)

# -- vocabulary ------------------------------------------------------------------------------
SPEAKERS = ["Maya", "Liam", "Sofia", "Noah", "Aisha", "Kenji", "Elena", "Omar", "Priya", "Lucas"]
CITIES = [
    "Lisbon",
    "Tokyo",
    "Berlin",
    "Mexico City",
    "Nairobi",
    "Seoul",
    "Vancouver",
    "Marrakech",
    "Reykjavik",
    "Buenos Aires",
    "Istanbul",
    "Hanoi",
    "Edinburgh",
    "Cape Town",
    "Oslo",
    "Lima",
    "Prague",
    "Melbourne",
    "Montreal",
    "Bangkok",
    "Copenhagen",
    "Athens",
    "Dublin",
    "Kyoto",
]
RELATIVES = [
    "sister",
    "brother",
    "mom",
    "dad",
    "cousin",
    "best friend",
    "roommate",
    "grandmother",
    "neighbor",
    "partner",
    "aunt",
    "coworkers",
    "kids",
    "uncle",
]
HOBBIES = [
    "pottery",
    "rock climbing",
    "salsa dancing",
    "birdwatching",
    "chess",
    "surfing",
    "painting watercolors",
    "baking sourdough",
    "playing the guitar",
    "knitting",
    "yoga",
    "woodworking",
    "photography",
    "gardening",
    "cycling",
    "swimming",
]
DISHES = [
    "lasagna",
    "pad thai",
    "a mushroom risotto",
    "tacos al pastor",
    "banana bread",
    "chicken curry",
    "ramen from scratch",
    "a vegan chili",
    "paella",
    "dumplings",
    "shakshuka",
    "a lemon tart",
    "pierogi",
    "grilled salmon",
]
CUISINES = [
    "Thai",
    "Ethiopian",
    "Italian",
    "Korean",
    "Mexican",
    "Lebanese",
    "Japanese",
    "Peruvian",
    "Indian",
    "Greek",
    "Vietnamese",
]
AREAS = [
    "downtown",
    "the harbor",
    "the old town",
    "the university",
    "the train station",
    "the river",
    "your office",
    "the park",
]
EVENTS = [
    "concert",
    "wedding",
    "job interview",
    "birthday party",
    "book club",
    "team offsite",
    "family reunion",
    "art exhibition",
    "housewarming",
    "graduation",
    "hackathon",
    "farmers market",
    "film festival",
    "baby shower",
]
RACES = ["marathon", "half marathon", "10K run", "triathlon", "charity bike ride", "trail race"]
PROJECTS = [
    "quarterly report",
    "kitchen renovation",
    "thesis draft",
    "tax return",
    "website redesign",
    "grant application",
    "garden shed",
    "photo album",
    "podcast episode",
    "novel chapter",
]
PETS = ["dog", "cat", "parrot", "rabbit", "hamster", "turtle"]
PET_NAMES = ["Biscuit", "Luna", "Pepper", "Mochi", "Ziggy", "Olive", "Captain", "Noodle", "Waffles", "Juniper"]
OBJECTS = [
    "laptop",
    "phone",
    "bike",
    "umbrella",
    "coffee machine",
    "headphones",
    "car keys",
    "passport",
    "camera",
    "vase",
    "guitar",
    "wallet",
    "backpack",
]
VENUES = ["cafe", "gym", "library", "bakery", "bookstore", "museum", "pub", "climbing gym", "cinema", "beach bar"]
DRINKS = ["coffee", "tea", "a beer", "smoothies", "cocktails", "hot chocolate"]
JOBS = [
    "a nurse",
    "a data analyst",
    "an architect",
    "a chef",
    "a high school teacher",
    "a product designer",
    "a software engineer",
    "a paramedic",
    "a journalist",
    "a veterinarian",
]
COMPANIES = [
    "startup",
    "hospital",
    "design studio",
    "bank",
    "newspaper",
    "school",
    "museum",
    "bakery chain",
    "game studio",
    "law firm",
]
APPOINTMENTS = ["dentist", "doctor", "eye exam", "physiotherapy", "vet", "haircut", "visa"]
FEELINGS = ["excited", "nervous", "exhausted", "thrilled", "anxious", "relieved", "proud", "stressed"]
WEATHER = ["storm", "heatwave", "snow", "heavy rain", "fog", "wildfire smoke"]
TOPICS = [
    "climate change",
    "ancient Rome",
    "the deep ocean",
    "space exploration",
    "jazz history",
    "urban gardening",
    "artificial intelligence",
    "the Silk Road",
    "mushrooms",
    "volcanoes",
]
LANGUAGES = ["Portuguese", "Japanese", "German", "Spanish", "Korean", "Italian", "Arabic", "Greek"]
TEAMS = ["Tigers", "Rovers", "Falcons", "United", "Sharks", "Wolves"]
PAST = [
    "last weekend",
    "yesterday",
    "last night",
    "on Saturday",
    "two weeks ago",
    "last month",
    "this morning",
    "over the holidays",
    "on Friday",
]
FUTURE = [
    "next weekend",
    "tomorrow",
    "next month",
    "in the spring",
    "on Monday",
    "this summer",
    "next Friday",
    "after the holidays",
]

OPENERS = [
    "Honestly, ",
    "Guess what, ",
    "By the way, ",
    "So, ",
    "Okay so ",
    "Quick update: ",
    "Random thought, but ",
    "Oh, and ",
]
CLOSERS = [
    " Can't wait.",
    " It was so much fun.",
    " Long story.",
    " Fingers crossed.",
    " What do you think?",
    " Anyway, how are you?",
    " I'll tell you more later.",
    " Wild, right?",
]

# Each template is filled by str.format from the slots below (unused slots are ignored).
STATEMENTS = [
    "I visited {city} with my {rel} {past}.",
    "We finally booked the flights to {city} for {future}!",
    "My {rel} just started {hobby} and won't stop talking about it.",
    "I've been doing {hobby} every morning before work.",
    "Did you finish the {project}?",
    "I finally finished the {project} {past}, what a relief.",
    "How was the {event} {past}?",
    "I cooked {dish} for dinner {past} and it turned out great.",
    "The {event} got cancelled because of the {weather}.",
    "I'm reading a book about {topic} right now, it's fascinating.",
    "My {pet} {pet_name} knocked over the {obj} again.",
    "We adopted a {pet} named {pet_name}!",
    "I got a new job as {job} at a {company}.",
    "Can you recommend a good {cuisine} restaurant near {area}?",
    "There's a great {cuisine} place near {area}, try their {dish}.",
    "I'm so {feeling} about the {event} {future}.",
    "My {obj} broke so I ordered a new one.",
    "I have a {appt} appointment {future}.",
    "Did you finish the {race} training?",
    "Are you still training for the {race}?",
    "I finished the {race} in {hours} hours and {minutes} minutes!",
    "My {rel} is moving to {city} {future}.",
    "Let's grab {drink} at the {venue} {future}.",
    "I lost my {obj} at the {venue} {past}.",
    "I'm learning {language} before the trip to {city}.",
    "The {team} won the game {past}!",
    "I've been feeling {feeling} since the {event}.",
    "We watched a documentary about {topic} {past}.",
    "My {rel} surprised me with tickets to {city} for my birthday.",
    "The {weather} in {city} ruined our plans {past}.",
    "I signed up for a {hobby} class at the community center.",
    "Remember the {event} in {city}? I still think about it.",
    "I spent {past} helping my {rel} with the {project}.",
    "Do you want to join the {race} with me {future}?",
]
REPLIES = [
    "That sounds amazing!",
    "Oh no, I'm sorry to hear that.",
    "Haha, classic {pet_name}.",
    "Congrats, that's huge!",
    "Send me pictures!",
    "Good luck with the {event}!",
    "Wow, I had no idea you liked {hobby}.",
    "I'm jealous, {city} is on my list.",
    "Let me know how it goes.",
    "Same here, it's been a crazy week.",
    "That's so sweet of your {rel}.",
    "Ugh, the {weather} has been awful here too.",
    "Count me in!",
    "Sure, {future} works for me.",
]
QUESTIONS = [
    "Where did {speaker} travel with their {rel}?",
    "When is {speaker}'s {appt} appointment?",
    "What did {speaker} cook for dinner?",
    "Who adopted a {pet}?",
    "{race} finish time",
    "{cuisine} restaurant recommendation near {area}",
    "What language is {speaker} learning for the trip?",
    "What new job did {speaker} get?",
    "What happened to the {obj}?",
    "Is {speaker}'s {rel} moving to {city}?",
    "What book about {topic} is {speaker} reading?",
    "Did the {team} win their game?",
    "trip to {city} with {rel}",
    "What is the name of {speaker}'s {pet}?",
    "Why was the {event} cancelled?",
    "Which hobby did {speaker}'s {rel} pick up?",
    "How does {speaker} feel about the {event}?",
    "Has {speaker} finished the {project} yet?",
    "Where did {speaker} lose their {obj}?",
    "plans to get {drink} at the {venue}",
]


def _slots(rng: random.Random, speaker: str) -> dict[str, Any]:
    return {
        "speaker": speaker,
        "city": rng.choice(CITIES),
        "rel": rng.choice(RELATIVES),
        "hobby": rng.choice(HOBBIES),
        "dish": rng.choice(DISHES),
        "cuisine": rng.choice(CUISINES),
        "area": rng.choice(AREAS),
        "event": rng.choice(EVENTS),
        "race": rng.choice(RACES),
        "project": rng.choice(PROJECTS),
        "pet": rng.choice(PETS),
        "pet_name": rng.choice(PET_NAMES),
        "obj": rng.choice(OBJECTS),
        "venue": rng.choice(VENUES),
        "drink": rng.choice(DRINKS),
        "job": rng.choice(JOBS),
        "company": rng.choice(COMPANIES),
        "appt": rng.choice(APPOINTMENTS),
        "feeling": rng.choice(FEELINGS),
        "weather": rng.choice(WEATHER),
        "topic": rng.choice(TOPICS),
        "language": rng.choice(LANGUAGES),
        "team": rng.choice(TEAMS),
        "past": rng.choice(PAST),
        "future": rng.choice(FUTURE),
        "hours": rng.randint(1, 5),
        "minutes": rng.randint(1, 59),
    }


def _sentence(rng: random.Random, speaker: str, templates: Sequence[str], decorate: bool = False) -> str:
    """A filled template; with ``decorate``, sometimes a chatty opener and/or closer."""
    text = rng.choice(templates).format(**_slots(rng, speaker))
    if decorate and rng.random() < 0.3:
        keep_case = text.startswith(("I ", "I'"))
        text = rng.choice(OPENERS) + (text if keep_case else text[0].lower() + text[1:])
    if decorate and not text.endswith("?") and rng.random() < 0.3:
        text += rng.choice(CLOSERS)
    return text[0].upper() + text[1:]


# -- generation ------------------------------------------------------------------------------
def iter_messages(seed: int = DEFAULT_SEED) -> Iterator[dict[str, Any]]:
    """An endless, deterministic stream of chat messages as JSONL records.

    The 45 pairs of :data:`SPEAKERS` are the conversations; each session belongs
    to one random pair, has 6–30 mostly alternating turns (about one in four a
    short reply), and starts 1–20 hours after the previous session, so times
    increase through the whole stream. The first ``n`` messages are the same for
    every ``n``, so smaller bench sizes are prefixes of larger ones.
    """
    rng = random.Random(seed)
    pairs = [(a, b) for i, a in enumerate(SPEAKERS) for b in SPEAKERS[i + 1 :]]
    sessions_seen = [0] * len(pairs)
    clock = _START
    while True:
        c = rng.randrange(len(pairs))
        sessions_seen[c] += 1
        conv, session = f"conv-{c + 1:02d}", f"session_{sessions_seen[c]}"
        people = list(pairs[c])
        rng.shuffle(people)
        for turn in range(rng.randint(6, 30)):
            speaker = people[turn % 2] if rng.random() > 0.1 else people[(turn + 1) % 2]
            reply = turn > 0 and rng.random() < 0.25
            text = _sentence(rng, speaker, REPLIES if reply else STATEMENTS, decorate=not reply)
            yield {
                "conversation": conv,
                "session": session,
                "id": f"{session}-m{turn + 1}",
                "speaker": speaker,
                "text": text,
                "time": clock.isoformat(timespec="seconds"),
            }
            clock += dt.timedelta(seconds=rng.randint(15, 240))
        clock += dt.timedelta(hours=rng.randint(1, 20), minutes=rng.randint(0, 59))


def generate_messages(n: int, seed: int = DEFAULT_SEED) -> list[dict[str, Any]]:
    """The first ``n`` messages of :func:`iter_messages` (same seed, same messages)."""
    stream = iter_messages(seed)
    return [next(stream) for _ in range(n)]


def generate_queries(n: int, seed: int = QUERY_SEED) -> list[str]:
    """``n`` deterministic questions about the kind of facts the messages state."""
    rng = random.Random(seed)
    return [_sentence(rng, rng.choice(SPEAKERS), QUESTIONS) for _ in range(n)]


def write_jsonl(messages: Sequence[dict[str, Any]], path: Path) -> None:
    """Write ``messages`` one JSON object per line (the format ``localmem ingest`` reads)."""
    private_dir(path.parent)
    with path.open("w", encoding="utf-8") as fh:
        for m in messages:
            fh.write(json.dumps(m, ensure_ascii=False) + "\n")


# -- helpers ---------------------------------------------------------------------------------
def default_workdir() -> Path:
    """``<LOCALMEM_HOME or the user cache dir>/bench``."""
    return (home_dir() or user_cache_dir()) / "bench"


def store_path(workdir: Path, size: int, encrypted_twin: bool = False) -> Path:
    """The bench store for ``size`` messages: ``<workdir>/bench-<size>.db`` (its encrypted twin:
    ``bench-<size>-encrypted.db``)."""
    return workdir / f"bench-{size}{'-encrypted' if encrypted_twin else ''}.db"


def _variants(config: Config, compare_encrypted: bool) -> list[tuple[Config, Key | None, bool]]:
    """(config, key, twin) per store a size is measured on: the store as the config opens it
    (encrypted if it names a key); with ``compare_encrypted``, a plain one and an encrypted twin."""
    cfg = _bench_config(config)
    if not compare_encrypted:
        return [(cfg, cfg.key(), False)]
    plain = replace(cfg, key_env=None)
    return [(plain, None, False), (plain, BENCH_KEY, True)]


def _peak_rss_mb() -> float | None:
    """This process's peak resident set size so far (MB), or ``None`` where unsupported."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)  # bytes vs KiB


def _store_mb(mem: Memory) -> float:
    """The store's size in MB (10^6 bytes), as its stats say: the file plus any WAL, or the
    database's size on a PostgreSQL server."""
    return round(mem.stats().db_bytes / 1_000_000, 1)


def _file_mb(path: Path) -> float:
    """The store's size on disk (file plus any WAL) in MB (10^6 bytes)."""
    size = sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.is_file())
    return round(size / 1_000_000, 1)


def _remove_store(path: Path) -> None:
    """Delete a store and its WAL/SHM side files, if present."""
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        p.unlink(missing_ok=True)


def _stored_messages(path: Path, config: Config, embedder: Embedder | None, key: Key | None) -> int | None:
    """How many messages the bench namespace of the store at ``path`` holds (``None``: no store)."""
    if not path.is_file():
        return None
    with Memory(path, namespace=NAMESPACE, config=config, embedder=embedder, key=key) as mem:
        return int(mem.stats().messages)


def _bench_config(config: Config) -> Config:
    """The caller's config, in the bench namespace whatever ``--namespace`` / env said."""
    return replace(config, namespace=NAMESPACE)


def _ms_stats(samples: Sequence[float]) -> tuple[float, float, float]:
    """(p50, p95, mean) in ms of samples in seconds; percentiles by linear interpolation."""
    ms = sorted(s * 1000 for s in samples)
    return round(_percentile(ms, 50), 2), round(_percentile(ms, 95), 2), round(statistics.fmean(ms), 2)


def _percentile(sorted_values: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile of ascending values, interpolating linearly (NaN if empty)."""
    if not sorted_values:
        return float("nan")
    pos = (len(sorted_values) - 1) * pct / 100
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _timed(fn: Callable[[str], object], queries: Sequence[str]) -> list[float]:
    """Seconds each ``fn(query)`` call took, one call at a time."""
    out = []
    for query in queries:
        t0 = time.perf_counter()
        fn(query)
        out.append(time.perf_counter() - t0)
    return out


# -- benchmarks ------------------------------------------------------------------------------
def bench_ingest(
    sizes: list[int],
    workdir: Path | None,
    config: Config,
    embedder: Embedder | None = None,
    seed: int = DEFAULT_SEED,
    compare_encrypted: bool = False,
) -> list[dict[str, Any]]:
    """Ingest ``N`` synthetic messages into a fresh ``<workdir>/bench-<N>.db`` for each size.

    Only raw-message ingest is measured (``extract="none"``, whatever the config
    says). The embedder is loaded (and run once) before the clock starts, so model
    loading is not counted; generating and writing the JSONL file is not counted
    either. ``total_s`` is the wall time of :meth:`Memory.ingest` (read, parse,
    embed, insert, index); ``embed_s`` is the part spent embedding. ``db_mb`` is
    the store's size after closing (the file plus any WAL; on PostgreSQL, the database's);
    ``peak_rss_mb`` is this process's peak RSS so far (it never decreases across sizes). The stores are
    kept for :func:`bench_search`. ``compare_encrypted``: each size is ingested twice,
    into a plain store and into an encrypted twin (``bench-<N>-encrypted.db``), one after
    the other; ``encrypted`` says which a row measured.
    """
    workdir = Path(workdir) if workdir is not None else default_workdir()
    private_dir(workdir)
    rows = []
    for n in sizes:
        data = workdir / f"bench-{n}.jsonl"
        write_jsonl(generate_messages(n, seed), data)
        for cfg, key, twin in _variants(config, compare_encrypted):
            path = store_path(workdir, n, twin)
            _remove_store(path)
            with Memory(path, namespace=NAMESPACE, config=cfg, embedder=embedder, key=key) as mem:
                embedder = mem.embedder
                embedder.embed(["warm-up"])  # load the model and initialise the runtime first
                t0 = time.perf_counter()
                report = mem.ingest(data, format="jsonl", extract="none")  # raw messages only, no LLM
                total = time.perf_counter() - t0
                stored = mem.stats().messages
            with Memory(path, namespace=NAMESPACE, config=cfg, embedder=embedder, key=key) as mem:
                size_mb = _store_mb(mem)  # after closing: an SQLite store's WAL is checkpointed
            rest = total - report.embed_seconds
            rows.append(
                {
                    "messages": n,
                    "encrypted": key is not None,
                    "stored": stored,
                    "total_s": round(total, 2),
                    "embed_s": round(report.embed_seconds, 2),
                    "msgs_per_s": round(n / total, 1),
                    "msgs_per_s_excl_embed": round(n / rest, 1) if rest > 0 else None,
                    "db_mb": size_mb,
                    "peak_rss_mb": _peak_rss_mb(),
                }
            )
    return rows


def bench_search(
    sizes: list[int],
    workdir: Path | None,
    config: Config,
    n_queries: int = 200,
    k: int = 10,
    embedder: Embedder | None = None,
    seed: int = DEFAULT_SEED,
    compare_encrypted: bool = False,
) -> list[dict[str, Any]]:
    """Search latency on ``<workdir>/bench-<N>.db`` per size (built first if missing).

    After :data:`WARMUP_QUERIES` untimed searches, each of ``n_queries`` queries
    is timed alone (``time.perf_counter``) in four passes: the full hybrid
    :meth:`Memory.search` (``p50/p95/mean_ms``, query embedding included), the
    vector channel only (``vector_p50_ms``, embedding included), the BM25 channel
    only (``bm25_p50_ms``, no embedding) and the query embedding alone
    (``embed_p50_ms``). Searches run in the namespace the bench ingested into.
    ``compare_encrypted``: the plain store and its encrypted twin are both open and take turns
    query by query, so a slower minute of the machine falls on both.
    """
    workdir = Path(workdir) if workdir is not None else default_workdir()
    queries = generate_queries(WARMUP_QUERIES + n_queries)
    warmup, timed = queries[:WARMUP_QUERIES], queries[WARMUP_QUERIES:]
    rows = []
    for n in sizes:
        mems = []
        try:
            for cfg, key, twin in _variants(config, compare_encrypted):
                path = store_path(workdir, n, twin)
                if _stored_messages(path, cfg, embedder, key) != n:  # missing, partial or another size
                    bench_ingest(
                        [n], workdir, config, embedder=embedder, seed=seed, compare_encrypted=compare_encrypted
                    )
                mems.append(Memory(path, namespace=NAMESPACE, config=cfg, embedder=embedder, key=key))
                embedder = mems[-1].embedder
            rows += _search_rows(mems, warmup, timed, k)
        finally:
            for mem in mems:
                mem.close()
    return rows


def _search_rows(mems: Sequence[Memory], warmup: Sequence[str], timed: Sequence[str], k: int) -> list[dict[str, Any]]:
    """One :func:`bench_search` row per open store in ``mems``, the stores taking turns."""
    model = mems[0].embedder
    for mem in mems:
        for query in warmup:
            mem.search(query, k=k)

    def turns(search: Callable[[Memory, str], object]) -> list[list[float]]:
        times: list[list[float]] = [[] for _ in mems]
        for query in timed:
            for i, mem in enumerate(mems):
                times[i] += _timed(lambda q: search(mem, q), [query])
        return times

    full = turns(lambda mem, query: mem.search(query, k=k))
    vector = turns(lambda mem, query: mem.search(query, k=k, channels=["vector"]))
    bm25 = turns(lambda mem, query: mem.search(query, k=k, channels=["bm25"]))
    embed = _timed(lambda query: model.embed([query], role="query"), timed)
    rows = []
    for i, mem in enumerate(mems):
        p50, p95, mean = _ms_stats(full[i])
        rows.append(
            {
                "messages": mem.stats().messages,
                "encrypted": mem.admin.encrypted,
                "queries": len(timed),
                "k": k,
                "p50_ms": p50,
                "p95_ms": p95,
                "mean_ms": mean,
                "vector_p50_ms": _ms_stats(vector[i])[0],
                "bm25_p50_ms": _ms_stats(bm25[i])[0],
                "embed_p50_ms": _ms_stats(embed)[0],
            }
        )
    return rows
