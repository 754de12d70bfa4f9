"""First-person questions are about the store's owner in every source (issue 51): a store holding
the owner's WhatsApp chats and their ChatGPT export answers "I" and "my" from both, prefers the
owner's messages to other people's, and keeps an answer found in the assistant's reply."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from localmem import Config
from localmem.answer.question import Question
from localmem.types import Speakers
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory

# The owner, Daniel, writes to his sister in Spanish; a running club's group chat, in English,
# has Tom's rent on the same street; Daniel's ChatGPT chats are in English.
SISTER = [
    ("14/06/2024, 20:10", "Daniel Ruiz", "Me cogen en La Fe!! Empiezo el 1 de julio en La Fe"),
    ("14/06/2024, 20:11", "Carmen Ruiz", "Enhorabuena!!!"),
    ("30/08/2024, 09:50", "Daniel Ruiz", "El casero del piso de Russafa me sube el alquiler a 820 € desde septiembre"),
    ("30/08/2024, 09:51", "Carmen Ruiz", "Bienvenido al club, el mío sigue en 900"),
]
CLUB = [
    ("02/09/2024, 19:00", "Tom Becker", "My rent in Russafa is going up to 950 euros, my landlord is the worst"),
    ("02/09/2024, 19:01", "Ana Soler", "Ugh, Russafa rents are crazy now"),
    ("02/09/2024, 19:02", "Tom Becker", "Anyway, long run on Sunday at 8?"),
    ("02/09/2024, 19:03", "Daniel Ruiz", "Sí, allí estaré"),
]
CHATS = [
    (
        "2024-07-20T19:00:00",
        "Knee pain rehab",
        [
            ("user", "Three weeks into the new job at La Fe, in the sports medicine unit. Summarise knee pain rehab."),
            ("assistant", "Hip and knee strengthening together works better than knee exercises alone."),
        ],
    ),
    (
        "2024-03-05T19:20:00",
        "Meal plan",
        [
            ("user", "Plan my dinners for the week, I'm vegetarian and I cook for one."),
            ("assistant", "Monday: lentil soup. Tuesday: mushroom risotto. Wednesday: chickpea curry."),
        ],
    ),
]


def _whatsapp(path: Path, lines: list[tuple[str, str, str]]) -> None:
    path.write_text("".join(f"{when} - {who}: {text}\n" for when, who, text in lines), encoding="utf-8")


def _chatgpt(path: Path) -> None:
    conversations = []
    for k, (start, title, turns) in enumerate(CHATS):
        t0 = dt.datetime.fromisoformat(start).replace(tzinfo=dt.timezone.utc).timestamp()
        mapping: dict = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
        parent = "root"
        for i, (role, text) in enumerate(turns):
            node = f"c{k}m{i}"
            mapping[parent]["children"].append(node)
            message = {"id": node, "author": {"role": role}, "create_time": t0 + 60 * i, "recipient": "all"}
            message["content"] = {"content_type": "text", "parts": [text]}
            mapping[node] = {"id": node, "message": message, "parent": parent, "children": []}
            parent = node
        conversations.append({"title": title, "create_time": t0, "mapping": mapping, "current_node": parent})
    path.write_text(json.dumps(conversations), encoding="utf-8")


@pytest.fixture
def exports(tmp_path: Path) -> Path:
    folder = tmp_path / "exports"
    folder.mkdir()
    _whatsapp(folder / "WhatsApp Chat with Carmen Ruiz.txt", SISTER)
    _whatsapp(folder / "WhatsApp Chat with Running Club.txt", CLUB)
    _chatgpt(folder / "conversations.json")
    return folder


def _lines(llm: ScriptedLLM) -> list[str]:
    return [line for line in llm.calls[-1][-1]["content"].splitlines() if line.startswith("[")]


def _citing(*needles: str):
    """A model that answers with the first needle found in the evidence, citing every line
    holding one of them (as a model reading the right lines would)."""

    def respond(messages):
        lines = [line for line in messages[-1]["content"].splitlines() if line.startswith("[")]
        cited = [int(line[1 : line.index("]")]) for line in lines if any(n in line for n in needles)]
        said = next((n for n in needles if any(n in line for line in lines)), None)
        if said is None:
            return {"answer": "not in memory", "supports": [], "confidence": 0.1}
        return {"answer": said, "supports": cited, "confidence": 0.9}

    return respond


def test_a_first_person_question_is_answered_from_the_owners_messages_in_both_sources(tmp_path, exports):
    llm = ScriptedLLM(responder=_citing("La Fe"))
    with open_memory(tmp_path / "m.db", namespace="daniel", embedder=HashEmbedder(), llm=llm) as mem:
        mem.ingest(exports)
        assert mem.owner().names == ["Daniel Ruiz"]
        result = mem.ask("When did I start at La Fe?", now="2024-11-05")
    lines = _lines(llm)
    assert any("Empiezo el 1 de julio" in line for line in lines), lines  # the WhatsApp chat
    assert any("Three weeks into the new job at La Fe" in line for line in lines), lines  # the ChatGPT export
    assert not result.refused
    cited = {c.text for c in result.citations}
    assert SISTER[0][2] in cited and CHATS[0][2][0][1] in cited, cited
    # One person in the prompt: the chat's "user" is called by the owner's name.
    assert 'Daniel Ruiz is the user asking: "I", "me", "my"' in llm.calls[-1][-1]["content"]


def test_an_english_question_about_the_owners_spanish_chat_is_not_lost_to_someone_elses_english(tmp_path, exports):
    llm = ScriptedLLM(responder=_citing("820 €", "950 euros"))
    with open_memory(tmp_path / "m.db", namespace="daniel", embedder=HashEmbedder(), llm=llm) as mem:
        mem.ingest(exports)
        result = mem.ask("How much is my rent in Russafa now?", now="2024-11-05")
    lines = _lines(llm)
    assert any("me sube el alquiler a 820 €" in line for line in lines), lines
    assert not any("950 euros" in line for line in lines), lines  # Tom's rent: not the owner's
    assert result.answer == "820 €" and not result.refused


def test_search_prefers_the_owners_message_to_another_persons_for_a_first_person_query(tmp_path, exports):
    question = "How much is my rent in Russafa?"
    # present_first off: Tom's message is the newer, and this test is about the scores
    with open_memory(
        tmp_path / "m.db", namespace="daniel", embedder=HashEmbedder(), config=Config(present_first=0)
    ) as mem:
        mem.ingest(exports)

        def rank(text: str) -> int:
            hits = [h.text for h in mem.search(question, k=20) if h.kind == "message"]
            return next(i for i, t in enumerate(hits) if text in t)

        mem.clear_owner()
        before = rank("me sube el alquiler"), rank("950 euros")
        mem.set_owner("Daniel Ruiz")
        after = rank("me sube el alquiler"), rank("950 euros")
    assert after[0] < before[0], (before, after)  # the owner's message moves up
    assert after[0] < after[1], (before, after)  # and above Tom's, which led before
    assert before[0] > before[1], (before, after)


def test_an_answer_from_the_assistants_reply_is_kept_when_the_question_says_my(tmp_path, exports):
    llm = ScriptedLLM(responder=_citing("mushroom risotto"))
    with open_memory(tmp_path / "m.db", namespace="daniel", embedder=HashEmbedder(), llm=llm) as mem:
        mem.ingest(exports / "conversations.json")
        result = mem.ask("What is on my dinner plan for Tuesday?", now="2024-11-05")
    assert not result.refused, (result.refusal, result.details)
    assert result.answer == "mushroom risotto"
    assert [c.speaker for c in result.citations] == ["assistant"]


SPEAKERS = Speakers(
    {"user": ["user"], "assistant": ["assistant"], "Daniel Ruiz": ["Daniel Ruiz"], "Carmen Ruiz": ["Carmen Ruiz"]},
    "user",
    "assistant",
    ["Daniel Ruiz"],
)
WHATSAPP_ONLY = Speakers({"Daniel Ruiz": ["Daniel Ruiz"], "Carmen Ruiz": ["Carmen Ruiz"]}, owner=["Daniel Ruiz"])


@pytest.mark.parametrize(
    "question",
    [
        "Where do I work now?",
        "Wo arbeite ich jetzt?",
        "¿Qué coche tengo ahora?",
        "¿Dónde vivo?",
        "Où est-ce que je travaille maintenant ?",
        "Onde eu trabalho agora?",
        "我现在在哪里工作？",
        "私は今どこで働いていますか？",
    ],
)
def test_a_first_person_question_in_any_supported_language_is_about_the_owner(question):
    assert Question.parse(question, SPEAKERS).person == "user"
    assert Question.parse(question, WHATSAPP_ONLY).person == "Daniel Ruiz"


@pytest.mark.parametrize("question", ["Where does Carmen Ruiz work?", "¿Dónde trabaja Carmen Ruiz?"])
def test_a_question_naming_someone_else_is_about_them(question):
    assert Question.parse(question, WHATSAPP_ONLY).person == "Carmen Ruiz"


def test_without_an_owner_a_chat_between_people_has_no_i():
    nobody = Speakers({"Daniel Ruiz": ["Daniel Ruiz"], "Carmen Ruiz": ["Carmen Ruiz"]})
    assert Question.parse("Where do I work now?", nobody).person is None


def test_every_speaker_with_the_user_role_is_the_owner(tmp_path):
    from localmem.retrieval.speakers import speakers
    from tests.helpers import write_jsonl

    rows = [
        {"conversation": "c", "time": "2024-01-01T10:00", "speaker": "user", "role": "user", "text": "Plan my week."},
        {"conversation": "c", "time": "2024-01-01T10:01", "speaker": "assistant", "role": "assistant", "text": "Ok."},
        {"conversation": "w", "time": "2024-01-02T10:00", "speaker": "Dani", "role": "user", "text": "hola"},
        {"conversation": "w", "time": "2024-01-02T10:01", "speaker": "Bea", "text": "hola Dani"},
    ]
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.ingest(write_jsonl(tmp_path / "c.jsonl", rows))
        found = speakers(mem.conn, mem.namespace)
    assert set(found.owner) == {"user", "Dani"} and "Bea" not in found.owner
    assert Question.parse("Where do I live?", found).person == found.me
