"""Asking: evidence in time order with dates, supports checked, citations from the store, refusals."""

from __future__ import annotations

import json

import pytest

from localmem import Memory
from localmem.answer.evidence import evidence_line
from localmem.answer.fast import is_refusal
from localmem.cli import cli
from localmem.errors import LocalmemError
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory, runner

CHAT = [
    ("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful.", "2023-05-08T13:56:00", "D1:3"),
    ("Melanie", "I painted a lake sunrise last year, it is special to me.", "2023-05-08T14:01:00", "D1:4"),
    ("Caroline", "I am researching adoption agencies now.", "2023-05-25T10:00:00", "D2:1"),
]


def _memory(tmp_path, llm) -> Memory:
    mem = open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm)
    for speaker, text, when, ext in CHAT:
        mem.add(speaker, text, time=when, id=ext)
    return mem


def _items(prompt_messages) -> list[str]:
    user = prompt_messages[-1]["content"]
    return [line for line in user.splitlines() if line.startswith("[")]


def test_answer_cites_the_supporting_messages_and_drops_supports_that_point_nowhere(tmp_path):
    llm = ScriptedLLM(
        responder=lambda messages: {
            "answer": "7 May 2023",
            "supports": [next(i for i, line in enumerate(_items(messages), 1) if "support group" in line), 42],
            "confidence": 0.9,
        }
    )
    with _memory(tmp_path, llm) as mem:
        result = mem.ask("When did Caroline go to the support group?")
    assert result.answer == "7 May 2023" and not result.refused and result.confidence == 0.9
    assert len(result.supports) == 1  # 42 pointed past the evidence and was dropped
    assert [c.external_id for c in result.citations] == ["D1:3"]
    assert result.citations[0].speaker == "Caroline" and "support group" in result.citations[0].text
    system, user = llm.calls[0][0], llm.calls[0][-1]["content"]
    assert system["role"] == "system" and "not in memory" in system["content"]
    items = _items(llm.calls[0])
    # Melanie's message is left out: the question asks about Caroline (answer.focus).
    assert len(items) == 2 and "[1] 8 May 2023 - " in items[0] and items[-1].startswith("[2] 25 May 2023 - Caroline:")
    assert user.rstrip().endswith("Question: When did Caroline go to the support group?")
    assert "Today is 25 May 2023." in user  # default "now": the latest message
    assert result.tokens["prompt"] > 0 and set(result.timings) >= {"search", "answer", "total"}


def test_a_refusal_cites_nothing(tmp_path):
    llm = ScriptedLLM(replies=[{"answer": "Not in memory.", "supports": [1], "confidence": 0.8}])
    with _memory(tmp_path, llm) as mem:
        result = mem.ask("What is Melanie's sister called?", now="2023-06-01")
    assert result.refused and result.answer == "not in memory"
    assert result.citations == [] and result.supports == []
    assert "Today is 1 June 2023." in llm.calls[0][-1]["content"]


def test_a_number_alone_is_an_answer_not_a_refusal(tmp_path):
    # It was taken for an empty reply once: "2021" and "3" were refused with the answer cited.
    llm = ScriptedLLM(responder=lambda messages: {"answer": "2022", "supports": [1], "confidence": 0.9})
    with _memory(tmp_path, llm) as mem:
        result = mem.ask("What year did Melanie paint the lake sunrise?", now="2023-06-01")
    assert not result.refused and result.answer == "2022" and result.citations


def test_an_invalid_reply_after_the_repair_is_a_refusal_with_the_error_kept(tmp_path):
    llm = ScriptedLLM(replies=["{not json", '{"answer": ""}'])
    with _memory(tmp_path, llm) as mem:
        result = mem.ask("Where did Caroline go?")
    assert result.refused and result.error and result.calls == 2 and result.citations == []


def test_nothing_found_refuses_without_loading_a_model(tmp_path):
    class NoModel:
        model_id = "none"

        def complete_json(self, *args, **kwargs):  # pragma: no cover - must not be called
            raise AssertionError("the model was called")

        def count_tokens(self, text):
            return len(text.split())

    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=NoModel()) as mem:
        result = mem.ask("Anything at all?")
    assert result.refused and result.evidence == [] and result.calls == 0


def test_the_evidence_budget_bounds_what_the_model_sees(tmp_path):
    llm = ScriptedLLM(responder=lambda messages: {"answer": "x", "supports": [1], "confidence": 0.5})
    with _memory(tmp_path, llm) as mem:
        small = mem.ask("Caroline support group adoption", max_tokens=14)
        assert 1 <= len(small.evidence) < 3
        assert sum(len(h.text.split()) for h in small.evidence) <= 14
        with pytest.raises(LocalmemError, match="unknown ask mode"):
            mem.ask("x", mode="psychic")
        with pytest.raises(LocalmemError, match="--now"):
            mem.ask("x", now="yesterday-ish")


def test_refusal_phrases():
    assert is_refusal("Not in memory.") and not is_refusal("No information available")  # see refusal_phrases
    assert is_refusal("") and not is_refusal("Lisbon")
    # A number alone is an answer (a year, a count, a ratio), not an empty reply.
    assert not any(is_refusal(a) for a in ("2021", "3", "1:5:5", "£215")) and is_refusal(" . ")
    # An answer in a script without a-z is an answer, not an empty reply (every Chinese answer was refused).
    assert not any(is_refusal(a) for a in ("北京", "做无人机的公司", "Москва", "Αθήνα", "東京")) and is_refusal("。")


def test_evidence_lines_carry_the_date_and_speaker(tmp_path):
    llm = ScriptedLLM(responder=lambda messages: {"answer": "x", "supports": [], "confidence": 0.5})
    with _memory(tmp_path, llm) as mem:
        hit = mem.search("lake sunrise", k=1)[0]
    assert evidence_line(hit) == "8 May 2023 - Melanie: I painted a lake sunrise last year, it is special to me."
    assert (
        evidence_line(hit, dates=True)
        == "8 May 2023 - Melanie: I painted a lake sunrise last year [2022], it is special to me."
    )


@pytest.mark.parametrize("dates", [True, False])
def test_the_model_reads_what_relative_times_mean_unless_turned_off(tmp_path, dates):
    from dataclasses import replace

    llm = ScriptedLLM(responder=lambda messages: {"answer": "7 May 2023", "supports": [1], "confidence": 0.9})
    with _memory(tmp_path, llm) as mem:
        mem.config = replace(mem.config, ask_dates=dates)
        mem.ask("When did Caroline go to the support group?")
    said = [line for line in _items(llm.calls[0]) if "support group" in line]
    assert said == [
        "[1] 8 May 2023 - Caroline: I went to a LGBTQ support group yesterday"
        + (" [7 May 2023]" if dates else "")
        + " and it was so powerful."
    ]


@pytest.mark.parametrize("dates", [True, False])
def test_a_message_in_another_language_has_its_relative_times_dated_too(tmp_path, dates):
    from dataclasses import replace

    llm = ScriptedLLM(responder=lambda messages: {"answer": "Am 18. März", "supports": [1], "confidence": 0.9})
    mem = open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm)
    with mem:
        mem.add(
            "Jonas",
            "Wir haben gestern einen Welpen aus dem Tierheim geholt, einen Beagle-Mix.",
            time="2024-03-19T20:40:00",
        )
        mem.config = replace(mem.config, ask_dates=dates)
        mem.ask("Wann hat Jonas den Welpen geholt?")
    items = _items(llm.calls[0])
    assert "[1] 19 March 2024 - Jonas: Wir haben gestern" + (" [18 March 2024]" if dates else "") + " einen Welpen" in (
        " ".join(items)
    )


@pytest.mark.parametrize("dates", [True, False])
def test_a_relative_answer_to_a_question_in_another_language_is_given_as_a_date(tmp_path, dates):
    from dataclasses import replace

    llm = ScriptedLLM(responder=lambda messages: {"answer": "gestern", "supports": [1], "confidence": 0.9})
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        mem.add("Jonas", "Wir haben gestern einen Welpen aus dem Tierheim geholt.", time="2024-03-19T20:40:00")
        mem.config = replace(mem.config, ask_dates=dates)
        result = mem.ask("Wann hat Jonas den Welpen geholt?")
    assert result.answer == ("18 March 2024" if dates else "gestern")


def test_a_chinese_answer_is_given_not_refused(tmp_path):
    llm = ScriptedLLM(responder=lambda messages: {"answer": "北京", "supports": [1], "confidence": 0.9})
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        mem.add("李明", "挺好的！我上个月搬到北京了，在一家做无人机的公司上班。", time="2024-01-12T20:30:00")
        result = mem.ask("李明搬到了哪个城市？")
    assert not result.refused and result.answer == "北京" and result.refusal is None


@pytest.mark.parametrize("dates", [True, False])
def test_a_relative_answer_is_given_as_a_date_counted_from_the_message_it_rests_on(tmp_path, dates):
    from dataclasses import replace

    llm = ScriptedLLM(responder=lambda messages: {"answer": "yesterday", "supports": [1], "confidence": 0.9})
    with _memory(tmp_path, llm) as mem:
        mem.config = replace(mem.config, ask_dates=dates)
        result = mem.ask("When did Caroline go to the support group?")
    assert [c.external_id for c in result.citations] == ["D1:3"]
    assert result.answer == ("7 May 2023" if dates else "yesterday")


def test_cli_ask_prints_the_answer_and_its_citations(tmp_path, use_models):
    llm = ScriptedLLM(
        responder=lambda messages: {"answer": "Adoption agencies", "supports": [1, 2, 3], "confidence": 0.7}
    )
    fake = HashEmbedder()
    use_models(embedder=fake, llm=llm)
    db = tmp_path / "cli.db"
    with open_memory(db, namespace="default", embedder=fake) as mem:
        for speaker, text, when, ext in CHAT:
            mem.add(speaker, text, time=when, id=ext)
    result = runner().invoke(cli, ["--db", str(db), "ask", "What did Caroline research?"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "Adoption agencies"
    assert "[m:3 Caroline, 2023-05-25 10:00, in “default”]: I am researching" in result.stdout
    assert "llama" not in result.output
    as_json = runner().invoke(cli, ["--db", str(db), "ask", "What did Caroline research?", "--json"])
    data = json.loads(as_json.stdout)
    # Supports 1-2 of the two items shown (Melanie's message is not evidence about Caroline).
    assert data["answer"] == "Adoption agencies" and {c["external_id"] for c in data["citations"]} == {"D1:3", "D2:1"}
    empty = runner().invoke(cli, ["--db", str(db), "ask"])
    assert empty.exit_code != 0 and "QUESTION" in empty.output


def test_number_settings_come_from_the_environment_as_numbers():
    from localmem.config import Config
    from localmem.errors import ConfigError

    cfg = Config.load({}, env={"LOCALMEM_VERIFY_FACTS": "0.5", "LOCALMEM_ASK_MAX_TOKENS": "600"}, config_file=None)
    assert cfg.verify_facts == 0.5 and cfg.ask_max_tokens == 600
    with pytest.raises(ConfigError, match="verify_facts must be a number"):
        Config.load({}, env={"LOCALMEM_VERIFY_FACTS": "high"})


def test_the_answer_streams_as_it_is_generated(tmp_path):
    from localmem.models.structured import JsonFieldStream

    llm = ScriptedLLM(responder=lambda m: {"answer": 'Lisbon, "the" city', "supports": [1], "confidence": 0.9})
    pieces: list[str] = []
    with _memory(tmp_path, llm) as mem:
        result = mem.ask("Where?", on_text=pieces.append)
    assert len(pieces) > 1 and "".join(pieces) == result.answer == 'Lisbon, "the" city'
    out: list[str] = []
    stream = JsonFieldStream("answer", out.append)
    for part in ['{"supports": [1], "ans', 'wer": "caf\\u00', 'e9 \\\\ ok", "confidence": 1}']:
        stream(part)
    assert "".join(out) == "café \\ ok"


def test_an_answer_about_one_speaker_resting_only_on_another_is_refused(tmp_path):
    from localmem.answer import checks
    from localmem.types import Citation
    from tests.helpers import read_first

    about_someone_else = read_first(checks.about_someone_else)

    def pick(word):
        def respond(messages):
            items = [line for line in messages[-1]["content"].splitlines() if line.startswith("[")]
            return {
                "answer": "a lake sunrise",
                "confidence": 0.9,
                "supports": [i for i, line in enumerate(items, 1) if word in line],
            }

        return respond

    with _memory(tmp_path, ScriptedLLM(responder=pick("sunrise"))) as mem:
        wrong = mem.ask("What is Caroline's best artwork?")  # the model answers with Melanie's
        right = mem.ask("What did Melanie paint last year?")
    assert wrong.refused and wrong.refusal == "someone else" and wrong.citations == []
    assert not right.refused and [c.external_id for c in right.citations] == ["D1:4"]
    speakers = {"Caroline": ["Caroline"], "Melanie": ["Melanie", "Mel"]}
    said_of = Citation(1, "x", "c", "Melanie", None, "I love the painting Caroline gave me")
    addressed = Citation(2, "y", "c", "Melanie", None, "Thanks, Caroline! I painted it myself.")
    assert not about_someone_else("What did Caroline paint?", "Yes", [], [said_of], speakers)
    assert about_someone_else("What did Caroline paint?", "Yes", [], [addressed], speakers)
    assert not about_someone_else("What did they paint?", "Yes", [], [addressed], speakers)


def _message(ext, speaker, text, kind="message"):
    from localmem.types import Hit, HitSource

    source = HitSource(1, ext, "c", "s", speaker, "2023-05-08")
    if kind == "message":
        return Hit.message(ext, speaker, text, "2023-05-08", [source], score=1.0)
    return Hit(ext, kind, text, 1.0, {}, "2023-05-08", [source])


SPEAKERS = {"Caroline": ["Caroline"], "Melanie": ["Melanie", "Mel"]}


def test_a_question_about_one_speaker_reads_what_they_said_and_what_is_said_of_them():
    from localmem.answer import checks
    from tests.helpers import read_first

    focus = read_first(checks.focus)

    hits = [
        _message("a", "Melanie", "I ran a charity race last Saturday."),
        _message("b", "Caroline", "That race sounds great, Mel!"),  # only addresses Melanie
        _message("c", "Caroline", "Mel told me her race was for mental health."),
        _message("d", "Caroline", "I went to a support group."),
        _message("e", "Caroline", "Melanie ran a race; Caroline cheered.", kind="episode"),
    ]
    assert [h.id for h in focus("When did Mel run a race?", hits, SPEAKERS)] == ["a", "c", "e"]
    assert [h.id for h in focus("When did Caroline run a race?", hits, SPEAKERS)] == ["b", "c", "d", "e"]
    # Both speakers, or neither: nothing is left out.
    assert len(focus("Did Caroline and Melanie meet?", hits, SPEAKERS)) == 5
    assert len(focus("Who ran a race?", hits, SPEAKERS)) == 5


def test_an_answer_whose_words_come_from_another_speaker_is_about_someone_else():
    from localmem.answer import checks
    from tests.helpers import read_first

    about_someone_else = read_first(checks.about_someone_else)

    pool = [
        _message("a", "Melanie", "I've been running farther to de-stress, it's great for my headspace."),
        _message("b", "Caroline", "Hey Melanie! Just wanted to say hi!"),
    ]
    # The reply's words ("de-stress", "headspace") are Melanie's; the greeting Caroline wrote
    # (and the model cited) does not make it an answer about Caroline.
    assert about_someone_else("Why does Caroline run?", "to de-stress", pool, [], SPEAKERS)
    assert not about_someone_else("Why does Melanie run?", "to de-stress", pool, [], SPEAKERS)
    # An episode's summary names both speakers: it does not make Melanie's words Caroline's.
    summary = _message("s", "", "Melanie told Caroline she runs to de-stress; Caroline listened.", kind="episode")
    assert about_someone_else("Why does Caroline run?", "to de-stress", [summary, *pool], [], SPEAKERS)
    # No words of its own to match ("Yes"): the cited messages decide.
    assert not about_someone_else("Does Caroline run?", "Yes", pool, [], SPEAKERS)


def test_a_name_after_an_opening_interjection_only_addresses_the_listener():
    from localmem.answer import checks
    from localmem.answer.checks import names_not_only_addressing
    from tests.helpers import read_first

    about_someone_else = read_first(checks.about_someone_else)

    news = _message("a", "Caroline", "Woohoo Melanie! I passed the adoption agency interviews last Friday!")
    # Caroline's own news, told to Melanie: an answer from it is not about Melanie.
    assert about_someone_else(
        "What is Melanie excited about in her adoption process?",
        "passing the adoption agency interviews",
        [news],
        [],
        SPEAKERS,
    )
    assert not about_someone_else(
        "What is Caroline excited about in her adoption process?",
        "passing the adoption agency interviews",
        [news],
        [],
        SPEAKERS,
    )
    for addressed in ("Yay Mel, congrats!", " Whoa Melanie! That's huge.", "Ahh Melanie, thanks"):
        assert not names_not_only_addressing(addressed, ["Melanie", "Mel"])
    for named in ("I met Melanie at the park", "Melanie got a cat!", "Told Melanie about it", "So Melanie ran"):
        assert names_not_only_addressing(named, ["Melanie", "Mel"])


def test_a_message_that_only_asks_the_listener_is_not_about_its_writer():
    from localmem.answer import checks
    from localmem.answer.checks import only_asks
    from tests.helpers import read_first

    about_someone_else = read_first(checks.about_someone_else)
    focus = read_first(checks.focus)

    assert only_asks("Tom! That's huge. Are you moving to Berlin then?")
    assert only_asks("Wow! What got you into running?")
    assert not only_asks("I adopted a puppy! Do you want to see him?")  # a statement about the writer
    assert not only_asks("Are we there yet?")  # no "you": not a question about the listener
    assert not only_asks("Wow!")
    hits = [
        _message("a", "Caroline", "Wow, Mel! Are you moving to Berlin then?"),
        _message("b", "Melanie", "Yes, I start at a startup in Berlin in June."),
        _message("c", "Caroline", "I got the offer from the Lisbon studio! Will you visit?"),
    ]
    assert [h.id for h in focus("Where did Caroline move?", hits, SPEAKERS)] == ["c"]
    # "Berlin" is in Caroline's question to Melanie and in Melanie's own news: it is Melanie's.
    assert about_someone_else("Where did Caroline move?", "Berlin", hits, [], SPEAKERS)
    assert not about_someone_else("Where did Caroline move?", "Lisbon", hits, [], SPEAKERS)
    assert not about_someone_else("Where did Melanie move?", "Berlin", hits, [], SPEAKERS)


def test_an_answer_from_what_its_writer_told_the_listener_is_about_the_listener():
    from localmem.answer import checks
    from localmem.answer.checks import tells_listener
    from tests.helpers import read_first

    about_someone_else = read_first(checks.about_someone_else)
    focus = read_first(checks.focus)

    congrats = _message(
        "a", "Caroline", "Congrats, Mel! That's awesome news about the fashion internship. So stoked for you."
    )
    glad = _message("b", "Caroline", "Glad your son is okay, Melanie. Family's everything.")
    own_news = _message("c", "Caroline", "Just started doing aerial yoga, it's great. Have you tried it?")
    mine = _message("d", "Caroline", "You know what? I got a fashion internship too!")
    assert tells_listener(congrats, "Caroline") and tells_listener(glad, "Caroline")
    assert not tells_listener(own_news, "Caroline")  # "you" only in a question: her own news
    assert not tells_listener(mine, "Caroline")  # she says "I": about herself
    assert not tells_listener(congrats, "Melanie")  # someone else's message: not this rule's
    assert about_someone_else("What internship did Caroline get?", "a fashion internship", [congrats], [], SPEAKERS)
    assert about_someone_else("How is Caroline's son after the accident?", "okay", [glad], [], SPEAKERS)
    assert not about_someone_else("What class did Caroline start?", "aerial yoga", [own_news], [], SPEAKERS)
    assert not about_someone_else(
        "What internship did Caroline get?", "a fashion internship", [congrats, mine], [], SPEAKERS
    )
    # The evidence keeps such messages: a question about the listener may rest on them.
    assert [h.id for h in focus("What internship did Caroline get?", [congrats], SPEAKERS)] == ["a"]


def test_focus_can_be_turned_off(tmp_path):
    from dataclasses import replace

    from localmem.config import Config

    llm = ScriptedLLM(responder=lambda messages: {"answer": "not in memory", "supports": [], "confidence": 0.9})
    with _memory(tmp_path, llm) as mem:
        mem.ask("What did Caroline do?")
        mem.config = replace(mem.config, ask_focus=False)
        mem.ask("What did Caroline do?")
    assert [len(_items(call)) for call in llm.calls] == [2, 3]
    assert Config.load({}, env={"LOCALMEM_ASK_FOCUS": "off"}, config_file=tmp_path / "none.toml").ask_focus is False
    with pytest.raises(LocalmemError, match="true or false"):
        Config.load({}, env={"LOCALMEM_ASK_FOCUS": "maybe"}, config_file=tmp_path / "none.toml")


def _fact(mem, text, when, sources):
    """A fact unit resting on the messages with external ids ``sources``, indexed like extraction's."""

    conn = mem.conn
    vec = mem.embedder.embed([text])[0]
    with conn:
        uid = conn.execute(
            "insert into units (ns, kind, text, occurred_start, occurred_end, created_at) "
            "values ('t', 'fact', ?, ?, ?, '2024') returning id",
            (text, when, when),
        ).fetchone()[0]
        for ext in sources:
            conn.execute("insert into unit_sources select ?, id from messages where external_id = ?", (uid, ext))
        conn.run("vec_unit_insert", {"id": uid, "ns": "t", "kind": "fact", "embedding": vec.tobytes()})
    return uid


@pytest.mark.parametrize("evidence", ["messages", "units"])
def test_facts_reach_the_model_as_their_messages_or_as_themselves(tmp_path, evidence):
    from dataclasses import replace

    llm = ScriptedLLM(responder=lambda messages: {"answer": "7 May 2023", "supports": [1], "confidence": 0.9})
    with _memory(tmp_path, llm) as mem:
        mem.config = replace(mem.config, ask_evidence=evidence)
        _fact(mem, "Caroline attended an LGBTQ support group", "2023-05-07", ["D1:3"])
        result = mem.ask("When did Caroline attend the support group?", channels=["vector", "bm25"])
    items = _items(llm.calls[0])
    joined = "\n".join(items)
    if evidence == "messages":  # the fact became its message, shown once though both were found
        assert "attended an LGBTQ support group" not in joined
        assert sum("Caroline: I went to a LGBTQ support group yesterday" in line for line in items) == 1
        assert all(h.kind == "message" for h in result.evidence)
    else:
        assert "7 May 2023 - Caroline attended an LGBTQ support group" in joined
    assert [c.external_id for c in result.citations] == ["D1:3"]


def test_summaries_come_after_every_message_so_a_budget_keeps_what_was_said(tmp_path):
    from localmem.answer.evidence import as_messages
    from localmem.retrieval.search import fit_budget

    with _memory(tmp_path, ScriptedLLM()) as mem:
        episode = _message("e1", "", "Caroline and Melanie talked about a support group and art.", kind="episode")
        said = [_message(f"m{i}", "Caroline", f"I went to the support group number {i}.") for i in range(3)]
        ordered = as_messages(mem.conn, [said[0], episode, said[1], said[2]])
        assert [h.id for h in ordered] == ["m0", "m1", "m2", "e1"]  # messages keep their rank order
        one_line = lambda text: len(text.split())  # noqa: E731
        kept = fit_budget(ordered, sum(one_line(h.text) for h in said) + 1, one_line)
        assert [h.id for h in kept] == ["m0", "m1", "m2"]


def test_ask_evidence_setting_is_checked():
    from localmem.config import Config
    from localmem.errors import ConfigError

    assert Config.load(env={"LOCALMEM_ASK_EVIDENCE": "units"}, config_file=None).ask_evidence == "units"
    with pytest.raises(ConfigError, match="ask_evidence must be one of"):
        Config.load(env={"LOCALMEM_ASK_EVIDENCE": "gists"}, config_file=None)


def test_full_context_gives_the_newest_messages_that_fit_the_same_for_every_question(tmp_path):
    from dataclasses import replace

    llm = ScriptedLLM(responder=lambda messages: {"answer": "x", "supports": [], "confidence": 0.5})
    with _memory(tmp_path, llm) as mem:
        for i in range(300):
            mem.add(
                "Ann",
                f"note number {i} about the garden and the weather",
                time=f"2023-06-{1 + i // 20:02d}T10:{i % 60:02d}",
            )
        mem.config = replace(mem.config, n_ctx=1200)
        first = mem.answer("Where?", mem.recent(mem.config.n_ctx))
        second = mem.answer(
            "What did Ann say about the garden in June, and how often did she say it?", mem.recent(mem.config.n_ctx)
        )
    items = _items(llm.calls[0])
    assert items == _items(llm.calls[1])  # same evidence: one cached prefix
    assert "note number 299" in items[-1]  # the newest kept, the oldest cut
    assert all("Caroline" not in line for line in items) and len(items) < 300
    words = sum(len(m["content"].split()) for m in llm.calls[0])
    assert words <= 1200 - 220  # the prompt and the reply fit the window (the fake counts words)
    assert [h.time for h in first.evidence] == sorted(h.time for h in first.evidence)
    assert [h.id for h in second.evidence] == [h.id for h in first.evidence]


def test_a_question_about_one_speaker_that_only_another_answers_is_refused_without_the_model(tmp_path):
    llm = ScriptedLLM(responder=lambda messages: {"answer": "a lake sunrise", "confidence": 0.9, "supports": [1]})
    with _memory(tmp_path, llm) as mem:
        wrong = mem.ask("What did Caroline paint last year?")  # Melanie painted it
        assert wrong.refused and wrong.refusal == "asks about someone else" and llm.calls == []
        right = mem.ask("What did Melanie paint last year?")
    assert not right.refused and len(llm.calls) == 1


def test_asks_about_someone_else_reads_questions_to_the_listener_as_about_them():
    from localmem.answer import checks
    from tests.helpers import read_first

    asks_about_someone_else = read_first(checks.asks_about_someone_else)

    pool = [
        _message("a", "Caroline", "Wow! How long have you been married?"),
        _message("b", "Melanie", "Five years already!"),
        _message("c", "Caroline", "Last Friday I went to a council meeting for adoption."),
        _message("d", "Melanie", "Great that you're prioritizing self-care, Caroline."),
    ]
    # Caroline's own news, asked of Melanie: someone else's.
    assert asks_about_someone_else("What did Melanie see at the council meeting for adoption?", pool, SPEAKERS)
    assert not asks_about_someone_else("What did Caroline see at the council meeting for adoption?", pool, SPEAKERS)
    # Caroline asking Melanie ("you") is about Melanie, the listener: no refusal.
    assert not asks_about_someone_else("How long has Melanie been married?", pool, SPEAKERS)
    assert not asks_about_someone_else("How does Caroline prioritize self-care?", pool, SPEAKERS)
    # Asked of Caroline, her own question to Melanie is not about her.
    assert asks_about_someone_else("How long has Caroline been married?", pool, SPEAKERS)
    # Words nothing matches, no one speaker asked about, or no words of its own: no check.
    assert not asks_about_someone_else("What is Melanie's favorite movie?", pool, SPEAKERS)
    assert not asks_about_someone_else("Who went to a council meeting for adoption?", pool, SPEAKERS)
    assert not asks_about_someone_else("What did Melanie do?", pool, SPEAKERS)


def test_cli_ask_streams_the_answer_then_its_citations_and_no_stream_prints_the_same(tmp_path, use_models):
    pieces: list[bool] = []

    class Counting(ScriptedLLM):
        def complete_json(self, messages, schema, max_tokens, on_text=None):
            pieces.append(on_text is not None)
            return super().complete_json(messages, schema, max_tokens, on_text=on_text)

    llm = Counting(responder=lambda messages: {"answer": "Adoption agencies", "supports": [1], "confidence": 0.7})
    fake = HashEmbedder()
    use_models(embedder=fake, llm=llm)
    db = tmp_path / "cli.db"
    with open_memory(db, namespace="default", embedder=fake) as mem:
        for speaker, text, when, ext in CHAT:
            mem.add(speaker, text, time=when, id=ext)
    streamed = runner().invoke(cli, ["--db", str(db), "ask", "What did Caroline research?", "--stream"])
    whole = runner().invoke(cli, ["--db", str(db), "ask", "What did Caroline research?", "--no-stream"])
    assert streamed.exit_code == 0 and whole.exit_code == 0, streamed.output + whole.output
    assert pieces == [True, False]
    assert streamed.stdout == whole.stdout
    lines = streamed.stdout.splitlines()
    assert lines[0] == "Adoption agencies" and lines[1].startswith("  [m:")
