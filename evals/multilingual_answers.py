"""Answers and refusals per language on localmem's own multilingual set, with the real LLM.

The set is ``tests/fixtures/multilingual/conversations.json`` (written for localmem: German,
Spanish, French, Portuguese, Chinese, and one chat mixing Spanish and English; see
``evals/multilingual_recall.py``). Each conversation is one LoCoMo sample in its own namespace, its
history as written; each question is asked with ``Memory.ask`` (fast mode, the configured LLM;
"now" at the conversation's latest message), exactly as ``localmem eval locomo`` asks LoCoMo's
(:func:`localmem_bench.answers.locomo_answers`), then scored here. Two ways of asking:

- native: the question in the conversation's language, scored against its gold answer;
- english: the same question in English, scored against the English gold answer
  (cross-language: the memory stays in its language).

Besides the answerable questions (categories 1 and 4), each conversation has three written to
have no answer in it (``unanswerable``: a pet another person has, a detail no one gave), asked
as LoCoMo's category 5: the right reply is a refusal ("not in memory").

Scores, per conversation and pooled:

- **F1** (answerable questions; a refusal scores 0): token F1 between the answer and the gold
  answer after normalising both: Unicode NFKC, case folded, accents removed (NFKD, combining
  marks dropped: "Lissabon"/"lissabon", "Paçoca"/"pacoca"), every punctuation or symbol character
  made a space, then split on spaces; the articles and the word "and" of the expected answer's
  language dropped (LoCoMo drops a/an/the/and; here also der/die/das/ein.../und, el/la/los/un.../y,
  le/la/les/l/un/une/des/et, o/a/os/as/um/uma/e). No stemming (LoCoMo's Porter stemmer is
  English-only): "Dienstag" against "Dienstags" is 0 for that token. Chinese (and any Han or kana
  run) is scored **by character**: each Han/kana character is one token, so "北京" against
  "北京市" scores 0.8; Latin words and digits inside Chinese text stay whole tokens. Numbers
  written differently ("3小时52分钟" against "三小时五十二分钟") do not match. Category 1
  (several parts) follows LoCoMo: the gold answer split on commas (also "，" and "、"), each
  part's best F1 against any part of the answer, averaged.
- **Refusals**: unanswerable questions refused (right) or answered (wrong); answerable questions
  refused (wrong); refusal precision, recall and F1 as in LoCoMo's category 5.
- **Answer language**: each answer that is not a refusal goes through
  :func:`localmem.text.language.detect`: the question's language ("same"; for a native question
  in the mixed chat, Spanish, the language its questions are written in), another language
  ("other", listed), or too short to tell ("short": an answer of one or two words, unless
  Chinese or Japanese, is not judged: a detector calls "Knödel" Swedish and "Reederei" Dutch;
  also what the detector calls "und").

Usage (loads the LLM: wrap it in ``flock /tmp/llm.lock`` on a shared machine)::

    python evals/multilingual_answers.py [--embedders multilingual,minilm] [--ways native,english] \
        [--conversations ml-de,ml-zh] [--rows rows.jsonl]
    python evals/multilingual_answers.py --table --rows rows.jsonl   # the tables of a (partial) run
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from localmem.config import Config
from localmem.text.language import UNDETERMINED, detect
from localmem_bench.answers import locomo_answers

SET = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "multilingual" / "conversations.json"

# The words dropped before F1, by the expected answer's language (LoCoMo drops a/an/the/and).
ARTICLES = {
    "en": "a an the and",
    "de": "der die das den dem des ein eine einen einem einer eines und",
    "es": "el la los las un una unos unas y",
    "fr": "le la les l un une des et",
    "pt": "o a os as um uma uns umas e",
    "zh": "",
}
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
SHORT = 3  # answers of fewer words (not Chinese or Japanese) are too short to tell their language
_PARTS = re.compile(r"[,，、]")


def normalise(text: str) -> str:
    """NFKC, case folded, accents removed, punctuation and symbols made spaces."""
    text = unicodedata.normalize("NFKC", str(text)).casefold()
    text = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
    return "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in text)


def tokens(text: str, language: str) -> list[str]:
    """The scored tokens of ``text``: words, each Han or kana character its own token, the
    articles of ``language`` ("es+en": both) dropped."""
    drop = {w for lang in language.split("+") for w in ARTICLES.get(lang, "").split()}
    out: list[str] = []
    for word in normalise(text).split():
        if not _CJK.search(word):
            out.extend([] if word in drop else [word])
            continue
        run = ""
        for ch in word:  # a Latin name or a number inside Chinese text stays one token
            if _CJK.match(ch):
                out.extend([run] if run else [])
                run = ""
                out.append(ch)
            else:
                run += ch
        out.extend([run] if run else [])
    return out


def f1(prediction: str, gold: str, language: str) -> float:
    """Token F1 of ``prediction`` against ``gold`` (see the module's docstring)."""
    pred, ref = tokens(prediction, language), tokens(gold, language)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def score(category: int, prediction: str, gold: str, language: str) -> float:
    """F1 as LoCoMo scores a category: several parts (1) averaged over the gold parts."""
    if category != 1:
        return f1(prediction, gold, language)
    golds = [g.strip() for g in _PARTS.split(gold) if g.strip()]
    preds = [p.strip() for p in _PARTS.split(prediction) if p.strip()] or [""]
    return sum(max(f1(p, g, language) for p in preds) for g in golds) / len(golds)


def samples(doc: dict[str, Any], way: str, chosen: set[str] | None) -> list[dict[str, Any]]:
    """The set as LoCoMo samples: the history as written; the questions in its language
    (``way`` "native") or in English; the unanswerable ones last, as category 5."""
    out = []
    for conv in doc["conversations"]:
        if chosen and conv["id"] not in chosen:
            continue
        c: dict[str, Any] = {"speaker_a": conv["speaker_a"], "speaker_b": conv["speaker_b"]}
        for si, session in enumerate(conv["sessions"], 1):
            c[f"session_{si}_date_time"] = session["date_time"]
            c[f"session_{si}"] = [
                {"speaker": speaker, "dia_id": f"D{si}:{ti}", "text": text}
                for ti, (speaker, text, _english) in enumerate(session["turns"], 1)
            ]
        native = way == "native"
        qa = [
            {
                "question": item["question"] if native else item["question_en"],
                "answer": item["answer"] if native else item["answer_en"],
                "evidence": item["evidence"],
                "category": item["category"],
            }
            for item in conv["qa"]
        ] + [
            {"question": item["question"] if native else item["question_en"], "answer": "", "category": 5}
            for item in conv.get("unanswerable", [])
        ]
        out.append({"sample_id": conv["id"], "conversation": c, "qa": qa})
    return out


def expected_language(conv_language: str, way: str) -> str:
    """The language an answer should come in: the question's."""
    if way == "english":
        return "en"
    return conv_language.split("+")[0]  # the mixed chat's questions are in Spanish


def summarise(details: list[dict[str, Any]]) -> dict[str, Any]:
    """One conversation's (or the pool's) figures from ``eval locomo``'s report rows."""
    answerable = [d for d in details if d["category"] != 5]
    unanswerable = [d for d in details if d["category"] == 5]
    f1s = [
        0.0 if d["refused"] else score(d["category"], d["answer"] or "", d["gold"], d["_score_language"])
        for d in answerable
    ]
    refused_right = sum(d["refused"] for d in unanswerable)
    refused_wrong = sum(d["refused"] for d in answerable)
    refusals = refused_right + refused_wrong
    precision = refused_right / refusals if refusals else 0.0
    recall = refused_right / len(unanswerable) if unanswerable else 0.0
    langs = Counter()
    others: list[str] = []
    for d in details:
        if d["refused"]:
            continue
        answer = d["answer"] or ""
        found = detect(answer)
        if not _CJK.search(answer) and len(answer.split()) < SHORT:
            langs["short"] += 1  # "Knödel" is Swedish, "Reederei" Dutch to a detector: not judged
        elif found == UNDETERMINED:
            langs["und"] += 1
        elif found == d["_answer_language"]:
            langs["same"] += 1
        else:
            langs["other"] += 1
            others.append(found)
    return {
        "n": len(answerable),
        "f1": 100 * sum(f1s) / len(f1s) if f1s else None,
        "answerable_refused": refused_wrong,
        "unanswerable": len(unanswerable),
        "unanswerable_refused": refused_right,
        "refusal_precision": precision,
        "refusal_recall": recall,
        "refusal_f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "language": dict(langs),
        "other_languages": dict(Counter(others)),
        "ask_p50": statistics.median(d["seconds"] for d in details) if details else None,
    }


def run(
    doc: dict[str, Any], config: Config, folder: Path, way: str, sid: str, models: dict[str, Any]
) -> list[dict[str, Any]]:
    """Ask one conversation's questions one way, in the store of ``folder`` (the first call
    ingests all six conversations; later calls find them stored); ``eval locomo``'s report rows,
    with the languages. ``models``: the LLM and embedder, built by the first call and reused."""
    data = folder / f"{way}.json"
    if not data.exists():
        data.write_text(json.dumps(samples(doc, way, None), ensure_ascii=False), encoding="utf-8")
    if not models:
        from localmem.models.factory import Models

        built = Models(config)
        models.update(llm=built.llm, embedder=built.embedder)
    report = locomo_answers(data, config, conversations=[sid], llm=models["llm"], embedder=models["embedder"])
    languages = {c["id"]: c["language"] for c in doc["conversations"]}
    for d in report["details"]:
        d["_answer_language"] = expected_language(languages[d["conversation"]], way)
        d["_score_language"] = "en" if way == "english" else languages[d["conversation"]]
        d["way"] = way
    return report["details"]


def table(results: dict[str, dict[str, list[dict]]], languages: dict[str, str]) -> str:
    lines = []
    for way in ("native", "english"):
        runs = {e: r[way] for e, r in results.items() if way in r}
        if not runs:
            continue
        lines.append(
            f"\n{way} questions ({'in the conversation' + chr(39) + 's language' if way == 'native' else 'in English about the non-English memory'})"
        )
        head = "| conversation | language | embedder | n | F1 | answerable refused | unanswerable refused | refusal F1 | answer language same / other / short | ask p50 s |"
        lines += [head, "|---|---|---|---:|---:|---:|---:|---:|---|---:|"]
        for sid in [*languages, "pooled"]:
            for embedder, details in runs.items():
                rows = details if sid == "pooled" else [d for d in details if d["conversation"] == sid]
                if not rows:
                    continue
                s = summarise(rows)
                lang = s["language"]
                other = ", ".join(f"{k} {v}" for k, v in sorted(s["other_languages"].items()))
                lines.append(
                    f"| {'**pooled**' if sid == 'pooled' else sid} | {languages.get(sid, '')} | {embedder} | {s['n']} | "
                    f"{s['f1']:.1f} | {s['answerable_refused']} | {s['unanswerable_refused']} of {s['unanswerable']} | "
                    f"{s['refusal_f1']:.2f} | {lang.get('same', 0)} / {lang.get('other', 0)} / {lang.get('short', 0) + lang.get('und', 0)}"
                    f"{f' ({other})' if other else ''} | {s['ask_p50']:.2f} |"
                )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedders", default="multilingual,minilm")
    parser.add_argument("--ways", default="native,english")
    parser.add_argument("--conversations", help="comma-separated ids (default: all six)")
    parser.add_argument(
        "--rows",
        type=Path,
        help="append every answer here (JSON lines), one conversation at a time; with --table: read",
    )
    parser.add_argument("--table", action="store_true", help="only print the tables of the --rows file")
    args = parser.parse_args(argv)
    doc = json.loads(SET.read_text(encoding="utf-8"))
    chosen = args.conversations.split(",") if args.conversations else [c["id"] for c in doc["conversations"]]
    languages = {c["id"]: c["language"] for c in doc["conversations"] if c["id"] in chosen}
    results: dict[str, dict[str, list[dict]]] = {}
    if args.table:
        for line in args.rows.read_text(encoding="utf-8").splitlines():
            d = json.loads(line)
            results.setdefault(d["embedder"], {}).setdefault(d["way"], []).append(d)
        print(table(results, languages))
        return 0
    base = Config.load()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for embedder in args.embedders.split(","):
            folder = Path(tmp) / embedder
            folder.mkdir()
            config = replace(base, embed_backend=embedder, db_path=folder / "answers.db")
            models: dict[str, Any] = {}
            for way in args.ways.split(","):
                for sid in chosen:  # one conversation at a time: a stopped run keeps what it did
                    details = run(doc, config, folder, way, sid, models)
                    for d in details:
                        d["embedder"] = embedder
                        d["f1"] = (
                            None
                            if d["category"] == 5
                            else 0.0
                            if d["refused"]
                            else round(score(d["category"], d["answer"] or "", d["gold"], d["_score_language"]), 4)
                        )
                        d["answer_detected"] = detect(d["answer"] or "")
                        d.pop("timings", None)
                    results.setdefault(embedder, {}).setdefault(way, []).extend(details)
                    if args.rows:
                        with args.rows.open("a", encoding="utf-8") as fh:
                            fh.writelines(json.dumps(d, ensure_ascii=False, default=str) + "\n" for d in details)
                    print(f"{embedder} {way} {sid}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    print(table(results, languages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
