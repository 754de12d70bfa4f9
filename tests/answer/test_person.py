"""The wrong person is refused (issue 34 item 5): a question about Tim that only John's words
answer, while questions about John, and Tim's own news, are answered."""

from __future__ import annotations

from localmem.answer import checks
from localmem.types import Hit, HitSource
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory, read_first

asks_about_someone_else = read_first(checks.asks_about_someone_else)

SPEAKERS = {"Tim": ["Tim"], "John": ["John"]}


def _message(ext: str, speaker: str, text: str, when: str = "2022-05-08") -> Hit:
    source = HitSource(1, ext, "c", "s", speaker, when)
    return Hit.message(ext, speaker, text, when, [source], score=1.0)


POOL = [
    _message("a", "Tim", "Wow, your new surfboard looks amazing! What made you choose that colour?"),
    _message("b", "John", "Thanks! Bright yellow, so people see me in the waves."),
    _message("c", "Tim", "Wow John, signing that deal with the shoe brand must have been huge!"),
    _message("d", "John", "It was! Tell me about your week."),
    _message("e", "Tim", "I started pottery classes, and I love your idea of a garden too."),
    _message("f", "John", "I adopted a rescue dog from the shelter last week!", when="2022-04-20"),
]


def test_the_asked_persons_words_to_the_listener_are_about_the_listener():
    # Tim asks John about John's surfboard: the words are Tim's, the surfboard is John's.
    assert asks_about_someone_else("What colour did Tim choose for his surfboard?", POOL, SPEAKERS)
    assert not asks_about_someone_else("What colour did John choose for his surfboard?", POOL, SPEAKERS)


def test_a_sentence_that_names_the_listener_tells_their_news():
    # "Wow John, signing that deal ..." is Tim's sentence about John's deal.
    assert asks_about_someone_else("What deal did Tim sign with the shoe brand?", POOL, SPEAKERS)
    assert not asks_about_someone_else("What deal did John sign with the shoe brand?", POOL, SPEAKERS)


def test_the_persons_own_news_is_theirs_even_beside_a_word_to_the_listener():
    # "I started pottery classes ..." is Tim's, though the same message praises John's idea.
    assert not asks_about_someone_else("What classes did Tim start?", POOL, SPEAKERS)


def test_a_date_in_the_question_does_not_hide_the_message_it_asks_about():
    # "adopt" alone matches John's message; "April 2022" is its date, not its words.
    assert asks_about_someone_else("What did Tim adopt in April 2022?", POOL, SPEAKERS)
    assert not asks_about_someone_else("What did John adopt in April 2022?", POOL, SPEAKERS)


def test_a_question_to_the_wrong_person_is_refused_and_the_right_one_answered(tmp_path):
    chat = [
        ("Tim", "How was the beach? Do you still surf every morning?", "2022-05-08T09:00:00", "D1:1"),
        ("John", "Every morning! Surfing makes me feel free and super excited.", "2022-05-08T09:01:00", "D1:2"),
        ("Tim", "Wow John, surfing every morning sounds amazing.", "2022-05-08T09:02:00", "D1:3"),
        ("Tim", "I joined a chess club downtown last week.", "2022-05-08T09:03:00", "D1:4"),
    ]

    def reply(messages):
        items = [line for line in messages[-1]["content"].splitlines() if line.startswith("[")]
        n = next((i for i, line in enumerate(items, 1) if "free" in line or "chess" in line), 1)
        return {"answer": "free and super excited", "supports": [n], "confidence": 0.9}

    llm = ScriptedLLM(responder=reply)
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        for speaker, text, when, ext in chat:
            mem.add(speaker, text, time=when, id=ext)
        wrong = mem.ask("How does Tim feel while surfing every morning?")
        assert wrong.refused and wrong.refusal == "asks about someone else" and llm.calls == []
        right = mem.ask("How does John feel while surfing every morning?")
    assert not right.refused and right.answer == "free and super excited"
    assert [c.external_id for c in right.citations] == ["D1:2"]


def _said(n: int, speaker: str, text: str, session: str = "s1") -> Hit:
    """Message number ``n`` of a chat between Ann and Bea (its id says what came before it)."""
    source = HitSource(n, f"D:{n}", "c", session, speaker, "2022-06-01")
    return Hit.message(f"m:{n}", speaker, text, "2022-06-01", [source], score=1.0)


PAIR = {"Ann": ["Ann"], "Bea": ["Bea"]}
NEWS = [
    _said(10, "Ann", "Guess what, I ran a charity race last Saturday for the animal shelter."),
    _said(11, "Bea", "That charity race sounds great! Making a difference is so rewarding."),
    _said(20, "Ann", "It was scary. After the accident I hugged my kids a lot."),
    _said(21, "Bea", "Poor things. How did they handle the accident?"),
]


def test_a_reply_to_the_others_news_is_about_their_news():
    # Bea's "That charity race sounds great!" answers Ann's "I ran a charity race": the race is Ann's.
    assert asks_about_someone_else("Which charity race did Bea run?", NEWS, PAIR)
    assert not asks_about_someone_else("Which charity race did Ann run?", NEWS, PAIR)


def test_a_question_back_about_the_others_news_is_about_their_news():
    assert asks_about_someone_else("How did Bea's kids handle the accident?", NEWS, PAIR)
    assert not asks_about_someone_else("How did Ann's kids handle the accident?", NEWS, PAIR)


def test_a_reply_that_tells_its_writers_own_news_stays_theirs():
    pool = [NEWS[0], _said(11, "Bea", "Ha, I ran a charity race too, last spring!")]
    assert not asks_about_someone_else("Which charity race did Bea run?", pool, PAIR)


def test_only_the_message_just_before_in_the_same_session_is_answered():
    later = _said(12, "Bea", "That charity race sounds great! Making a difference is so rewarding.")
    other_day = _said(11, "Bea", "That charity race sounds great! Making a difference is so rewarding.", "s2")
    assert not asks_about_someone_else("Which charity race did Bea run?", [NEWS[0], later], PAIR)
    assert not asks_about_someone_else("Which charity race did Bea run?", [NEWS[0], other_day], PAIR)


def test_a_reply_whose_words_are_mostly_its_own_is_not_an_answer():
    # Bea shares a tart after Ann's mousse: one shared word ("chocolate") does not make the tart Ann's.
    pool = [
        _said(30, "Ann", "I love a dairy-free chocolate mousse."),
        _said(31, "Bea", "My favourite is this tart. It has an almond crust, chocolate ganache and fresh raspberries."),
    ]
    assert not asks_about_someone_else(
        "Which tart with an almond crust and fresh raspberries does Bea love?", pool, PAIR
    )


def test_what_someone_said_about_the_others_news_is_theirs_to_be_asked():
    assert not asks_about_someone_else("What did Bea say about the charity race?", NEWS, PAIR)


def test_what_is_congratulated_is_the_listeners_news():
    pool = [
        _said(40, "Bea", "Guess what, my episode aired last night!"),
        _said(
            42, "Ann", "Way to go! Congrats on the cooking show, I'll be tuning in! What's your favorite dish from it?"
        ),
    ]
    assert asks_about_someone_else("What is Ann's favorite dish from the cooking show she hosts?", pool, PAIR)
    assert not asks_about_someone_else("What is Bea's favorite dish from the cooking show she hosts?", pool, PAIR)


def test_a_question_without_i_asks_after_the_listeners_life():
    pool = [
        _said(50, "Ann", "Love the necklace, any special meaning to it?"),
        _said(52, "Bea", "It was my grandmother's; it stands for love and courage."),
    ]
    assert asks_about_someone_else("What does Ann's necklace mean?", pool, PAIR)
    assert not asks_about_someone_else("What does Bea's necklace mean?", pool, PAIR)
    mine = [_said(50, "Ann", "Should I wear my new necklace to the gala?")]
    assert not asks_about_someone_else("Which necklace did Ann wear?", mine, PAIR)
