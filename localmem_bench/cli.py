"""`localmem bench` and `localmem eval`: the benchmarks' commands, a command plugin of the core CLI.

bench/pyproject.toml declares :func:`register` in the entry-point group ``localmem.commands``, so
``pip install ./bench`` (or ``pip install -e ./bench`` in a checkout) adds these commands to
``localmem``; the core install does not carry them. They are built on the core CLI's plugin
surface (``localmem.cli``: CommandGroup, State, json_option, print_json, progress).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from localmem.cli import CommandGroup, State, json_option, print_json, progress
from localmem.config import ASK_MODES, CHANNELS, DEFAULT_K, EVAL_SYSTEMS, RERANK_MODES
from localmem.errors import LocalmemError


def register(cli: click.Group) -> None:
    """Add ``bench`` and ``eval`` to the top group (the entry point's function)."""
    cli.add_command(bench)
    cli.add_command(eval_)


@click.group(cls=CommandGroup)
def bench() -> None:
    """Benchmarks on synthetic data; they print measured numbers."""


@bench.command(name="ingest")
@click.option("--sizes", default="1000,10000", show_default=True, help="Comma-separated message counts.")
@click.option(
    "--workdir",
    type=click.Path(path_type=Path, readable=False),
    help="Where the bench stores live (kept for 'bench search').",
)
@click.option(
    "--compare-encrypted",
    is_flag=True,
    help="Measure each size on a plain store and on an encrypted twin (needs localmem[encrypt]).",
)
@click.option(
    "--messages",
    metavar="N",
    help="Instead: import a synthetic N-message WhatsApp export and compare its pace with the "
    "embedder alone over the same texts (each in a new process; peak memory is the import's).",
)
@json_option
@click.pass_obj
def bench_ingest(
    state: State, sizes: str, workdir: Path | None, compare_encrypted: bool, messages: str | None, as_json: bool
) -> None:
    """Ingest speed: messages/s with and without embedding, or (--messages) against the embedding floor."""
    if messages is not None:
        from . import ingest_pace

        (n,) = _sizes(messages)
        row = ingest_pace.bench_ingest_pace(n, workdir, state.config)
        if as_json:
            print_json(row)
        else:
            from localmem.text.labels import value

            click.echo("\n".join(f"{k}: {value(v)}" for k, v in row.items()))
        return
    from . import bench as bench_mod

    rows = bench_mod.bench_ingest(_sizes(sizes), workdir, state.config, compare_encrypted=compare_encrypted)
    _emit_rows(rows, as_json, bench_mod.INGEST_COLUMNS)


@bench.command(name="search")
@click.option("--sizes", default="1000,10000", show_default=True, help="Comma-separated message counts.")
@click.option("--workdir", type=click.Path(path_type=Path, readable=False), help="Where the bench stores live.")
@click.option("--queries", "n_queries", default=200, show_default=True, help="Queries per size.")
@click.option("--k", "-k", default=DEFAULT_K, show_default=True, help="Hits per query.")
@click.option(
    "--compare-encrypted",
    is_flag=True,
    help="Search a plain store and its encrypted twin, taking turns query by query.",
)
@json_option
@click.pass_obj
def bench_search(
    state: State, sizes: str, workdir: Path | None, n_queries: int, k: int, compare_encrypted: bool, as_json: bool
) -> None:
    """Search latency p50/p95 (query embedding included) per store size."""
    from . import bench as bench_mod

    rows = bench_mod.bench_search(
        _sizes(sizes), workdir, state.config, n_queries=n_queries, k=k, compare_encrypted=compare_encrypted
    )
    _emit_rows(rows, as_json, bench_mod.SEARCH_COLUMNS)


@bench.command(name="serve")
@click.option("--size", default="10000", show_default=True, help="Messages in the bench store.")
@click.option("--workdir", type=click.Path(path_type=Path, readable=False), help="Where the bench stores live.")
@click.option("--requests", default=50, show_default=True, help="Requests per row.")
@json_option
@click.pass_obj
def bench_serve(state: State, size: str, workdir: Path | None, requests: int, as_json: bool) -> None:
    """`localmem serve`'s server time (Server-Timing) and round trip: the first page, search, the
    timeline; against the budgets 300, 100 and 200 ms."""
    from . import bench_serve as mod

    if requests < 1:
        raise click.BadParameter("--requests must be at least 1")
    rows = mod.bench_serve(_sizes(size)[0], workdir, state.config, requests=requests)
    _emit_rows(rows, as_json, mod.COLUMNS)


@bench.command(name="memory")
@click.option("--sizes", default="10000,100000", show_default=True, help="Comma-separated unit counts.")
@click.option("--workdir", type=click.Path(path_type=Path, readable=False), help="Where the bench stores live.")
@click.option("--queries", "n_queries", default=100, show_default=True, help="Queries per size.")
@json_option
@click.pass_obj
def bench_memory(state: State, sizes: str, workdir: Path | None, n_queries: int, as_json: bool) -> None:
    """Search latency over synthetic built memory (units, entities, links): all channels and each."""
    from . import bench_memory as mod

    rows = mod.bench_memory_search(_sizes(sizes), workdir, state.config, n_queries=n_queries)
    _emit_rows(rows, as_json, mod.MEMORY_COLUMNS)


@bench.command(name="mcp")
@click.option("--runs", default=5, show_default=True, help="Cold starts of each server.")
@click.option("--workdir", type=click.Path(path_type=Path, readable=False), help="Where the bench store lives.")
@json_option
@click.pass_obj
def bench_mcp(state: State, runs: int, workdir: Path | None, as_json: bool) -> None:
    """Start-up of `localmem mcp` as a client sees it: spawn to tools listed, and the first remember
    (which loads the embedder), beside a bare MCP SDK server and `python -c pass` timed in the same run."""
    from . import bench_mcp as mod

    if runs < 1:
        raise click.BadParameter("must be at least 1", param_hint="--runs")
    _emit_rows(mod.bench_mcp_startup(runs, workdir, state.config), as_json, mod.MCP_COLUMNS)


@bench.command(name="llm")
@click.option("--prompt-tokens", default=512, show_default=True, help="Tokens to prefill.")
@click.option("--gen-tokens", default=128, show_default=True, help="Tokens to generate.")
@json_option
@click.pass_obj
def bench_llm(state: State, prompt_tokens: int, gen_tokens: int, as_json: bool) -> None:
    """The local LLM's prefill and generation speed (tokens/s) on this machine."""
    from localmem.models.protocols import SpeedMeter

    llm = state.memory("none").llm
    if not isinstance(llm, SpeedMeter):
        raise LocalmemError(f"the LLM backend {llm.model_id} cannot measure its speed")
    row = llm.measure_speed(prompt_tokens=prompt_tokens, gen_tokens=gen_tokens)
    _emit_rows([row], as_json, list(row))


@bench.command(name="ask")
@click.argument("questions_file", type=click.Path(path_type=Path))
@click.option(
    "--plain",
    is_flag=True,
    help="After each question, time a plain llama-cpp-python call with the same prompt and reply "
    "sizes (no reused prefix, no grammar) and give ask's time as a ratio of it.",
)
@json_option
@click.pass_obj
def bench_ask(state: State, questions_file: Path, plain: bool, as_json: bool) -> None:
    """Where ask's time goes over QUESTIONS_FILE (one question a line, or JSONL with 'query' and
    optionally 'namespace' and 'now'), on this store: model load, search, first answer text,
    prompt tokens, tokens reused from the cache, prompt evaluation, generated tokens and
    generation time, each as p50 and p90."""
    from . import bench_ask as mod

    questions = mod.read_questions(questions_file)
    report = mod.run(state.memory("read"), questions, plain=plain)
    if as_json:
        print_json(report)
    else:
        click.echo(mod.render(report))


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "").lower().replace("k", "000")) for part in text.split(",") if part]
    except ValueError:
        raise click.BadParameter(f"not a list of sizes: {text}") from None
    if not sizes or min(sizes) < 1:
        raise click.BadParameter("sizes must be positive")
    return sizes


def _emit_rows(rows: list[dict[str, Any]], as_json: bool, columns: list[str]) -> None:
    if as_json:
        print_json(rows)
        return
    from localmem.text.labels import value

    click.echo(" | ".join(columns))
    click.echo(" | ".join("---" for _ in columns))
    for row in rows:
        click.echo(" | ".join(value(row[c]) if c in row else "" for c in columns))


@click.group(cls=CommandGroup, name="eval")
def eval_() -> None:
    """Evaluation harnesses (LoCoMo, LongMemEval)."""


@eval_.command(name="locomo")
@click.argument("file", type=click.Path(path_type=Path, readable=False))
@click.option("--retrieval-only", is_flag=True, help="Measure evidence recall@k of search (no LLM).")
@click.option(
    "--mode",
    type=click.Choice(ASK_MODES),
    default=ASK_MODES[0],
    show_default=True,
    help="The ask mode answering the questions (without --retrieval-only).",
)
@click.option(
    "--system",
    type=click.Choice(EVAL_SYSTEMS),
    default=EVAL_SYSTEMS[0],
    show_default=True,
    help="localmem: the memory as built; raw-hybrid: whole raw turns by vector + BM25, same model "
    "and budget (with --retrieval-only: the raw-turn hybrid recall); full-context: the "
    "newest turns that fit the model's context window.",
)
@click.option(
    "--ask-filters",
    is_flag=True,
    help="Give a baseline system localmem's focus on the person asked, its someone-else "
    "check and the dates after relative times (plain by default).",
)
@click.option("--k", "ks", default="5,10,20", show_default=True, help="Comma-separated k values.")
@click.option("--conversations", help="Comma-separated sample_ids (default: all).")
@click.option("--limit", type=int, help="At most this many questions per conversation.")
@click.option(
    "--every",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Answer every Nth question of each conversation (a sample spread over all categories; answers only).",
)
@click.option("--channels", help=f"Comma-separated search channels (default: {','.join(CHANNELS)}).")
@click.option(
    "--promote",
    is_flag=True,
    help="Move ahead the candidates from the episodes that best match the people and time asked about.",
)
@click.option(
    "--rerank",
    type=click.Choice(RERANK_MODES),
    default=RERANK_MODES[0],
    show_default=True,
    help="Rerank with the configured cross-encoder (auto), not at all, or the local LLM.",
)
@click.option(
    "--out", "out_dir", type=click.Path(path_type=Path, readable=False), help="Write report.json and report.md here."
)
@json_option
@click.pass_obj
def eval_locomo(
    state: State,
    file: Path,
    retrieval_only: bool,
    mode: str,
    system: str,
    ask_filters: bool,
    ks: str,
    conversations: str | None,
    limit: int | None,
    every: int,
    channels: str | None,
    promote: bool,
    rerank: str,
    out_dir: Path | None,
    as_json: bool,
) -> None:
    """Evaluate on a LoCoMo file; each conversation is ingested into its own namespace.

    Without --retrieval-only every question is answered with `ask` and scored (F1, BLEU-1,
    evidence recall, refusal on category 5, latency, tokens)."""
    from . import retrieval as evaluate

    chosen = [c.strip() for c in conversations.split(",")] if conversations else None
    if retrieval_only:
        if system == "full-context":
            raise LocalmemError(
                "--system full-context retrieves nothing", "with --retrieval-only use localmem or raw-hybrid"
            )
        report = evaluate.locomo_retrieval(
            file,
            state.config,
            ks=_sizes(ks),
            conversations=chosen,
            limit=limit,
            channels=[c.strip() for c in channels.split(",")] if channels else None,
            promote=promote,
            rerank=rerank,
            raw=system == "raw-hybrid",
        )
        write, render = evaluate.write_report, evaluate.render_markdown
    else:
        from . import answers as eval_answers

        with progress(state, "answering") as on_progress:
            report = eval_answers.locomo_answers(
                file,
                state.config,
                conversations=chosen,
                limit=limit,
                every=every,
                mode=mode,
                system=system,
                ask_filters=ask_filters,
                progress=on_progress,
            )
        write, render = eval_answers.write_report, eval_answers.render_markdown
    if out_dir is not None:
        write(report, out_dir)
    if as_json:
        print_json(report)
    else:
        click.echo(render(report))


@eval_.command(name="longmemeval")
@click.argument("file", type=click.Path(path_type=Path, readable=False))
@click.option(
    "--mode",
    type=click.Choice(ASK_MODES),
    default=ASK_MODES[0],
    show_default=True,
    help="The ask mode answering the questions.",
)
@click.option(
    "--system",
    type=click.Choice(EVAL_SYSTEMS),
    default=EVAL_SYSTEMS[0],
    show_default=True,
    help="localmem, or a plain baseline with the same model (see `eval locomo --help`).",
)
@click.option("--ask-filters", is_flag=True, help="Give a baseline system localmem's answer-side filters.")
@click.option("--questions", help="Comma-separated question_ids (default: all).")
@click.option("--limit", type=int, help="At most this many items.")
@click.option(
    "--out", "out_dir", type=click.Path(path_type=Path, readable=False), help="Write answers.json and answers.md here."
)
@json_option
@click.pass_obj
def eval_longmemeval(
    state: State,
    file: Path,
    mode: str,
    system: str,
    ask_filters: bool,
    questions: str | None,
    limit: int | None,
    out_dir: Path | None,
    as_json: bool,
) -> None:
    """Answer every item of a LongMemEval JSON file, each haystack in its own namespace, "now" at
    its question date; scored by whether the answer contains the gold answer, and token F1
    (an abstention item is right when refused). For retrieval recall, use `eval locomo FILE
    --retrieval-only`, which reads LongMemEval files too."""
    from . import longmemeval

    chosen = [c.strip() for c in questions.split(",")] if questions else None
    with progress(state, "answering") as on_progress:
        report = longmemeval.longmemeval_answers(
            file,
            state.config,
            questions=chosen,
            limit=limit,
            mode=mode,
            system=system,
            ask_filters=ask_filters,
            progress=on_progress,
        )
    if out_dir is not None:
        longmemeval.write_report(report, out_dir)
    if as_json:
        print_json(report)
    else:
        click.echo(longmemeval.render_markdown(report))
