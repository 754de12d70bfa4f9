"""Full text in any language (migration 0013): each message's language is stored; English text is
stemmed by Porter, other text is not, and Chinese, Japanese, Korean and Thai runs are indexed as
bigrams, so BM25 finds "Lissabon" and "北京"; a forget leaves nothing in the new index."""

from __future__ import annotations

import datetime as dt

import pytest

from localmem.pipeline.ingest import language_advice
from localmem.prompts import answer as answer_prompt
from localmem.retrieval.query_time import asks_when, parse_query_time
from localmem.text.language import bigrams, fts_text


def _bm25(mem, query: str, k: int = 3) -> list[str]:
    return [hit.text for hit in mem.search(query, k=k, channels=["bm25"])]


@pytest.fixture
def chats(mem):
    for conversation, speaker, text in [
        ("de", "Lena", "Meine Schwester ist letzten Monat nach Lissabon gezogen."),
        ("de", "Jonas", "Ich laufe jeden Morgen an der Alster."),
        ("zh", "王芳", "我姐姐上个月搬到北京了，在一家做无人机的公司上班。"),
        ("ja", "由美", "姉が先月リスボンに引っ越したよ"),
        ("pt", "Bia", "Vou para São Paulo no próximo sábado."),
        ("en", "Ana", "I have been running every morning by the river."),
        ("en", "Ana", "ok"),
    ]:
        mem.add(speaker, text, conversation=conversation)
    return mem


def test_each_message_has_its_language(chats):
    langs = dict(chats.conn.execute("SELECT text, lang FROM messages"))
    assert langs["Meine Schwester ist letzten Monat nach Lissabon gezogen."] == "de"
    assert langs["我姐姐上个月搬到北京了，在一家做无人机的公司上班。"] == "zh"
    assert langs["姉が先月リスボンに引っ越したよ"] == "ja"
    assert langs["I have been running every morning by the river."] == "en"
    assert langs["ok"] == "und"


def test_bm25_finds_words_in_every_language(chats):
    assert "Lissabon" in _bm25(chats, "Lissabon")[0]
    assert "北京" in _bm25(chats, "北京")[0]  # two characters inside a run of twenty
    assert "无人机" in _bm25(chats, "无人机公司")[0]
    assert "リスボン" in _bm25(chats, "リスボン")[0]
    assert "São Paulo" in _bm25(chats, "Sao Paulo")[0]  # diacritics folded


def test_porter_stems_english_only(chats):
    assert "running" in _bm25(chats, "run")[0]  # English: stemmed, "run" finds "running"
    # German is not stemmed by an English stemmer: the index holds "gezogen" as written
    terms = {row[0] for row in chats.conn.execute("SELECT term FROM messages_fts_intl_vocab")}
    assert {"gezogen", "lissabon", "北京", "リス"} <= terms
    english = {row[0] for row in chats.conn.execute("SELECT term FROM messages_fts_vocab")}
    assert "run" in english and "lissabon" not in english


def test_forget_leaves_nothing_in_the_non_english_index(chats):
    (mid,) = chats.conn.execute("SELECT id FROM messages WHERE text LIKE '%Lissabon%'").fetchone()
    chats.forget(ids=[f"m:{mid}"])
    assert not [t for t in _bm25(chats, "Lissabon") if "Lissabon" in t]
    terms = {row[0] for row in chats.conn.execute("SELECT term FROM messages_fts_intl_vocab")}
    assert "lissabon" not in terms and "schwester" not in terms  # the follower's context too


def test_bigrams():
    assert bigrams("北京大学") == ["北京", "京大", "大学"]
    assert bigrams("猫") == ["猫"]
    assert fts_text("我在Lisbon住") == " 我在 Lisbon 住 "


def test_language_advice_is_said_once_for_a_mostly_foreign_store(mem):
    for i in range(25):
        mem.add("Lena", f"Heute habe ich mit meiner Schwester über die Reise Nummer {i} gesprochen.")
    advice = language_advice(mem.conn, "all-MiniLM-L6-v2-int8", chosen=False)
    assert advice and "de 100%" in advice and "--embedder multilingual" in advice
    assert language_advice(mem.conn, "all-MiniLM-L6-v2-int8", chosen=False) is None  # once


def test_no_language_advice_when_chosen_or_english(mem):
    for i in range(25):
        mem.add("Ana", f"Today I talked with my sister about trip number {i} and the weather.")
    assert language_advice(mem.conn, "all-MiniLM-L6-v2-int8", chosen=False) is None  # English
    for i in range(60):
        mem.add("Lena", f"Heute habe ich mit meiner Schwester über die Reise Nummer {i} gesprochen.")
    assert language_advice(mem.conn, "all-MiniLM-L6-v2-int8", chosen=True) is None  # chosen
    assert language_advice(mem.conn, "multilingual-e5-small-q4", chosen=False) is None  # multilingual


NOW = dt.date(2024, 5, 12)  # a Sunday


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("Was hat Jonas gestern gemacht?", "2024-05-11", "2024-05-11"),
        ("Was war letzte Woche?", "2024-04-29", "2024-05-05"),
        ("Wo war sie vor zwei Wochen?", "2024-04-22", "2024-04-28"),
        ("Was war im Juni 2023?", "2023-06-01", "2023-06-30"),
        ("¿Qué hizo Diego la semana pasada?", "2024-04-29", "2024-05-05"),
        ("¿Dónde estaba hace tres días?", "2024-05-09", "2024-05-09"),
        ("¿Qué pasó el 5 de junio de 2023?", "2023-06-05", "2023-06-05"),
        ("Qu'a fait Julien hier ?", "2024-05-11", "2024-05-11"),
        ("Où était-il l'année dernière ?", "2023-01-01", "2023-12-31"),
        ("O que ela fez ontem?", "2024-05-11", "2024-05-11"),
        ("Onde ele estava no mês passado?", "2024-04-01", "2024-04-30"),
        ("上周李明去了哪里？", "2024-04-29", "2024-05-05"),
        ("王芳三天前做了什么？", "2024-05-09", "2024-05-09"),
        ("2023年6月发生了什么？", "2023-06-01", "2023-06-30"),
        ("先週は何をした？", "2024-04-29", "2024-05-05"),
    ],
)
def test_time_words_in_other_languages(query, start, end):
    found = parse_query_time(query, NOW)
    assert found is not None and (str(found.start), str(found.end)) == (start, end)


@pytest.mark.parametrize("query", ["Mai hat angerufen", "mars est rouge", "Wie heißt der Hund?", "北京在哪里？"])
def test_no_time_where_none_is_named(query):
    assert parse_query_time(query, NOW) is None


def test_asks_when_in_other_languages():
    assert asks_when("Wann ist Miriam umgezogen?") and asks_when("¿Cuándo se mudó?") and asks_when("Quand ?")
    assert asks_when("李明什么时候搬家的？") and asks_when("いつ引っ越したの？")
    assert not asks_when("Wo wohnt Miriam?")


def test_the_answer_is_asked_for_in_the_language_of_the_question():
    english = answer_prompt.render("Where does Miriam live?", ["1 May 2024 - Lena: ..."], None)
    german = answer_prompt.render("Wo wohnt Miriam?", ["1 May 2024 - Lena: ..."], None, language="de")
    assert english == answer_prompt.render("Where does Miriam live?", ["1 May 2024 - Lena: ..."], None, language="en")
    assert "Answer in German" in german[1]["content"] and answer_prompt.REFUSAL in german[1]["content"]
    assert german[0] == english[0]  # the system prompt (the reused prefix) is the same
