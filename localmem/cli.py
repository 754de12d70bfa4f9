"""The command line: parse, call one method of a :class:`Memory` (or of its parts ``extraction``,
``browse``, ``admin``), format the result.

Errors are turned into one-line messages and exit codes in one place
(:class:`_Group.invoke`); ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterator

import click

from .config import (
    ALL_CHANNELS,
    ASK_MODES,
    CHANNELS,
    CONSOLIDATE_MODES,
    DEFAULT_AGENT_STEPS,
    DEFAULT_CONVERSATION,
    DEFAULT_K,
    DEFAULT_LIST_LIMIT,
    DEFAULT_SEARCH_MAX_TOKENS,
    FORMATS,
    RERANK_MODES,
    Config,
    Setting,
    StoreURL,
    as_location,
    describe,
    settings,
)
from .errors import ConfigError, InvalidTextError, LocalmemError, MissingDependencyError
from .files import open_private
from .redact import redact

if TYPE_CHECKING:
    from .memory import Memory

EXIT_INTERRUPTED = 130

# The options every command accepts, before or after its name: the settings declared
# `everywhere` (config.py), these three, and --version. Each command parses them itself
# (_Command), into the root context's meta, where _State reads them when the command runs.
_GLOBAL_FLAGS = (
    (("--quiet", "-q", "quiet"), "No progress bars or status lines."),
    (("--debug", "debug"), "Show tracebacks on errors."),
    (("--json", "as_json"), "Print JSON instead of text."),
)
_GIVEN = "localmem.given"  # ctx.meta key: the global options given, by name


def setting_option(name: str, help: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A command's option that sets setting ``name`` for this run: its flag, type, choices
    and help (with the default and the environment variable) come from the declaration."""
    spec = settings()[name]
    return click.option(*spec.flags, cls=SettingOption, setting=name, **_option_attrs(spec, help))


class SettingOption(click.Option):
    """An option that sets a setting (``setting``: its name), so the docs can say which
    commands take it."""

    def __init__(self, *args: Any, setting: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.setting = setting


class _StoreLocation(click.Path):
    """``--db``: a path, or a ``postgresql://`` URL kept as it is (as a path, its '//' would
    become '/', and the URL a file name in the current directory)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        found = as_location(value if isinstance(value, Path) else str(value))
        if isinstance(found, StoreURL):
            return found
        return super().convert(value, param, ctx)


def _option_attrs(spec: Setting, help: str | None = None) -> dict[str, Any]:
    kind: Any = click.Path(path_type=Path, readable=False) if spec.kind is Path else spec.kind
    if spec.name == "db_path":
        kind = _StoreLocation(path_type=Path, readable=False)
    if spec.choices:
        kind = click.Choice(spec.choices)
    default = f" Default: {spec.shown_default()}." if spec.default is not None or spec.shown else ""
    return {"type": kind, "metavar": spec.metavar, "help": f"{help or spec.help}{default} Env: {spec.env_said()}."}


def _global_options(taken: Collection[str] = ()) -> list[click.Parameter]:
    """Fresh global options, without the flags in ``taken`` (a command's own ``--namespace``
    stays its own; ``-n`` after it is still the global one)."""
    made: list[click.Parameter] = []
    made += [
        SettingOption([*spec.flags, spec.name], setting=spec.name, **_option_attrs(spec))
        for spec in settings().values()
        if spec.everywhere
    ]
    made += [click.Option(list(flags), is_flag=True, help=help) for flags, help in _GLOBAL_FLAGS]
    for option in made:
        option.expose_value, option.callback = False, _remember
    made += click.version_option(package_name="localmem")(click.Command("")).params  # click's own --version
    for option in made:
        option.opts = [flag for flag in option.opts if flag not in taken]
    return [option for option in made if option.opts]


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Keep a global option given on the command line (the last one given wins)."""
    from click.core import ParameterSource

    if param.name and ctx.get_parameter_source(param.name) is ParameterSource.COMMANDLINE:
        ctx.find_root().meta.setdefault(_GIVEN, {})[param.name] = value
    return value


class _Command(click.Command):
    """A command that also takes the global options (hidden from its help: `localmem --help`
    lists them), and opens the run's configuration before it runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        taken = {flag for p in self.params for flag in (*p.opts, *p.secondary_opts)}
        for option in _global_options(taken):
            if isinstance(option, click.Option):
                option.hidden = True
            self.params.append(option)

    def invoke(self, ctx: click.Context) -> Any:
        state = ctx.find_object(_State)
        if state is not None:
            state.load()  # a bad setting fails here, before the command does anything
        return super().invoke(ctx)


class _SubGroup(click.Group):
    """A group under the top one (bench, eval): its commands take the global options too."""

    command_class = _Command


class _Group(click.Group):
    """The top-level group: every command takes the global options (_Command), and every
    error is handled in one place (one line, or JSON with ``--json``, and the error's exit code)."""

    command_class = _Command
    group_class = _SubGroup

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.plugins: dict[str, str] | None = None  # command name -> the plugin that added it, once loaded

    def load_plugins(self) -> dict[str, str]:
        """Let each installed command plugin (an entry point in PLUGIN_GROUP: a function given
        this group) add its commands, once; the commands added, by name, with their plugin's.
        A plugin that fails is named in one line on stderr, and the other commands work."""
        if self.plugins is not None:
            return self.plugins
        from importlib.metadata import entry_points

        self.plugins = {}
        for point in sorted(entry_points(group=PLUGIN_GROUP), key=lambda p: p.name):
            before = dict(self.commands)
            try:
                point.load()(self)
                taken = [name for name, command in before.items() if self.commands.get(name) is not command]
                if taken:
                    raise LocalmemError(f"it would replace the command {', '.join(sorted(taken))}")
            except Exception as exc:  # a plugin's bug must not stop the core commands
                self.commands = before
                reason = " ".join(str(exc).split()) or type(exc).__name__
                click.echo(
                    f"warning: the command plugin {point.name} ({point.value}) is not loaded: {reason}", err=True
                )
                continue
            self.plugins.update((name, point.name) for name in self.commands if name not in before)
        return self.plugins

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.load_plugins()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None:  # plugins are read only for a name the core lacks: a cold search pays nothing for them
            self.load_plugins()
            command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in BENCH_COMMANDS:
            raise LocalmemError(
                "localmem eval and localmem bench need the benchmarks, which are not installed", f"run: {BENCH_INSTALL}"
            )
        return command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_JSON_ERRORS] = "--json" in (args[: args.index("--")] if "--" in args else args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return self._invoke(ctx)
        except BaseException as exc:  # the command failed (and was not reported by _fail)
            if not (isinstance(exc, click.exceptions.Exit) and exc.exit_code == 0):
                ctx.meta[_FAILED] = True
            raise

    def _invoke(self, ctx: click.Context) -> Any:

        def debug() -> bool:  # asked once the command has parsed its own (--debug may follow it)
            return bool(ctx.meta.get(_GIVEN, {}).get("debug")) or "--debug" in sys.argv[1:]

        as_json = bool(ctx.meta.get(_JSON_ERRORS))
        try:
            return super().invoke(ctx)
        except LocalmemError as exc:
            if debug():
                raise
            _fail(ctx, as_json, exc.to_dict(), f"error: {exc}")
        except KeyboardInterrupt:
            _fail(
                ctx,
                as_json,
                {
                    "error": "interrupted",
                    "code": "interrupted",
                    "hint": "the store is consistent; re-run the command to finish",
                    "exit_code": EXIT_INTERRUPTED,
                },
                "interrupted: the store is consistent; re-run the command to finish",
            )
        except click.ClickException as exc:  # a usage error: click's own text, or JSON
            if not as_json:
                raise
            command = ctx.invoked_subcommand or ""
            _fail(
                ctx,
                True,
                {
                    "error": exc.format_message(),
                    "code": "usage",
                    "hint": f"see 'localmem {command} --help'".replace("  ", " "),
                    "exit_code": exc.exit_code,
                },
                "",
            )
        except (click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:  # output piped into `head` and the like
            sys.stderr.close()
            ctx.exit(0)
        except Exception as exc:  # an unexpected failure: one line unless --debug
            if debug():
                raise
            if isinstance(exc, UnicodeEncodeError) and "surrogates not allowed" in str(exc):
                # Python keeps an argument's bytes that are not UTF-8 as lone surrogates.
                _fail(
                    ctx,
                    as_json,
                    {
                        "error": "an argument is not valid UTF-8 text, so it cannot be stored or looked up",
                        "code": "invalid_text",
                        "hint": "retype it in UTF-8",
                        "exit_code": InvalidTextError.exit_code,
                    },
                    "error: an argument is not valid UTF-8 text, so it cannot be stored or looked up; "
                    "retype it in UTF-8",
                )
            _fail(
                ctx,
                as_json,
                {
                    "error": f"unexpected {type(exc).__name__}: {exc}",
                    "code": "unexpected",
                    "hint": "run with --debug for details",
                    "exit_code": 1,
                },
                f"error: unexpected {type(exc).__name__}: {exc} (run with --debug for details)",
            )


# Command plugins: each entry point in this group names a function that adds commands to the top
# group, as `llm` plugins do. The benchmarks (localmem_bench, built from bench/) are one: the core
# install does not carry `localmem bench` and `localmem eval`, and says how to get them.
PLUGIN_GROUP = "localmem.commands"
BENCH_COMMANDS = ("bench", "eval")
BENCH_INSTALL = "pip install ./bench (from a checkout of localmem; pip install -e ./bench for a development install)"

_JSON_ERRORS = "localmem.json_errors"
_FAILED = "localmem.failed"


def _fail(ctx: click.Context, as_json: bool, data: dict[str, Any], line: str) -> None:
    """Print an error on stderr (JSON with --json, else one line) and exit with its code."""
    ctx.meta[_FAILED] = True
    if isinstance(ctx.obj, _State):  # closed first: a store this command created is announced (or
        ctx.obj.close(failed=True)  # removed, if nothing went into it) before the error, the last word
    # An unexpected error's text is a library's, which may quote a connection string.
    data = {k: redact(v) if isinstance(v, str) else v for k, v in data.items()}
    click.echo(json.dumps(data, ensure_ascii=False) if as_json else redact(line), err=True)
    ctx.exit(int(data["exit_code"]))


class _State:
    """What the global options decided; loads the configuration and opens the Memory on demand."""

    def __init__(self, given: dict[str, Any]) -> None:
        self.given = given  # the global options given, by name (filled as the command line is parsed)
        self._config: Config | None = None
        self.namespace_given = False
        self._memory: "Memory | None" = None

    def load(self) -> Config:
        """The configuration: the global options given, over the environment and config file."""
        if self._config is None:
            self._config = Config.load(self.given)
            self.namespace_given = "namespace" in dict(self._config.origins)
        return self._config

    @property
    def config(self) -> Config:
        return self.load()

    @config.setter
    def config(self, config: Config) -> None:
        self._config = config

    @property
    def quiet(self) -> bool:
        return bool(self.given.get("quiet"))

    @property
    def debug(self) -> bool:
        return bool(self.given.get("debug"))

    def use_namespace(self, namespace: str) -> None:
        """Work in ``namespace`` (a command's own --namespace), before the store is opened."""
        from dataclasses import replace

        self.config = replace(self.config, namespace=namespace)
        self.namespace_given = True

    def memory(self, access: str = "read", keyless: bool = False) -> "Memory":
        """The Memory, opened once. ``access``: "read" (the store and the namespace must exist:
        nothing is ever created by reading), "open" (the store must exist), "write" (a new
        store is created, and stderr says so), "none" (an in-memory store: for commands that
        need only the models). ``keyless``: opened without a key whatever key_env says (to
        encrypt a plain store)."""
        if self._memory is None:
            from dataclasses import replace

            from .memory import Memory

            config = replace(self.config, db_path=Path(":memory:")) if access == "none" else self.config
            if keyless or access == "none":  # an in-memory store has no key
                config = replace(config, key_env=None)
            self._memory = Memory(config=config, create=access == "write" or access == "none")
            if access == "read":
                self._memory.require_namespace()
        return self._memory

    def close(self, failed: bool = False) -> None:
        """Close the store. A store this command created is announced on stderr, unless the
        command failed with nothing stored in it: then it is removed, as if never made (a
        mistyped --db path given to a failing import leaves nothing behind)."""
        mem, self._memory = self._memory, None
        if mem is None:
            return
        try:
            empty = mem.created and failed and not mem.namespaces()
        except LocalmemError:
            empty = False
        mem.close()
        if empty and isinstance(mem.path, Path):
            for leftover in (mem.path, Path(f"{mem.path}-wal"), Path(f"{mem.path}-shm")):
                leftover.unlink(missing_ok=True)
        elif mem.created:
            click.echo(f"created a new store at {mem.path}", err=True)


def _print_json(data: Any, indent: int | None = 2) -> None:
    from .text.files import without_surrogates  # an argument echoed back may hold some

    click.echo(without_surrogates(json.dumps(data, ensure_ascii=False, indent=indent, default=str)))


@contextmanager
def _progress(
    state: _State, label: str, next_labels: tuple[str, ...] = ()
) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr (done/total, percent, ETA, items a second), only on a terminal
    and without --quiet: on a pipe or a file nothing is written.

    A call whose ``done`` falls back below the bar's position starts the next phase
    (e.g. "extracting episodes" after "ingesting"), with the next label.
    """
    if state.quiet or not sys.stderr.isatty():
        yield None
        return
    bar: Any = None
    first = (0, 0.0)  # the phase's first call: (done, time)
    labels = [label, *next_labels]

    def update(done: int, total: int) -> None:
        nonlocal bar, first
        if bar is not None and (done < bar.pos or total != bar.length):
            bar.__exit__(None, None, None)
            bar = None
            labels.pop(0) if len(labels) > 1 else None
        if bar is None:
            bar = click.progressbar(
                length=total,
                label=labels[0],
                file=sys.stderr,
                show_pos=True,
                show_percent=True,
                item_show_func=lambda info: None if info is None else str(info),
            )
            bar.__enter__()
            first = (done, time.monotonic())
        bar.update(done - bar.pos, current_item=_pace(done, total, *first))

    try:
        yield update
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)


def _pace(done: int, total: int, first_done: int, first_time: float) -> str | None:
    """ "12.5/s, eta 0:01:20": the rate since a phase's first progress call (whose ``done`` may
    already be a whole batch: click's own ETA would count that batch as done in no time)."""
    elapsed = time.monotonic() - first_time
    if done <= first_done or elapsed <= 0:
        return None
    rate = (done - first_done) / elapsed
    left = round((total - done) / rate)
    return f"{rate:,.1f}/s, eta {left // 3600}:{left // 60 % 60:02d}:{left % 60:02d}"


class _StatusLine:
    """One line on stderr saying what a slow command waits for and for how long ("loading the
    model… 12 s"), rewritten in place every half second and erased once the result comes: only
    on a terminal and without --quiet (on a pipe or a file nothing at all is written). Stages
    arrive from any thread (:mod:`localmem.progress`'s listener, a server's progress events)."""

    TICK = 0.5

    def __init__(self, state: _State) -> None:
        import threading

        self.enabled = not state.quiet and sys.stderr.isatty()
        self.started = time.monotonic()
        self.words = ""
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown = False

    def __call__(self, stage: str, words: str) -> None:
        """A stage starts (the progress listener's signature)."""
        if not self.enabled or self._done.is_set():
            return
        import threading

        with self._lock:
            self.words = words
            self._draw()
        if self._thread is None:
            self._thread = threading.Thread(target=self._tick, name="localmem-status", daemon=True)
            self._thread.start()

    def _tick(self) -> None:
        while not self._done.wait(self.TICK):
            with self._lock:
                if not self._done.is_set():
                    self._draw()

    def _draw(self) -> None:  # with the lock held
        import shutil

        seconds = int(time.monotonic() - self.started)
        line = f"{self.words}… {seconds} s" if seconds else f"{self.words}…"
        width = shutil.get_terminal_size((80, 24)).columns
        sys.stderr.write("\r\x1b[2K" + line[: max(width - 1, 10)])
        sys.stderr.flush()
        self._shown = True

    def aside(self, fn: Callable[..., None], *args: Any) -> None:
        """Call ``fn`` (which writes to the terminal) with the line erased; it comes back at the
        next tick."""
        with self._lock:
            self._erase()
            fn(*args)

    def _erase(self) -> None:
        if self._shown:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()
            self._shown = False

    def close(self) -> None:
        """The result is here: erase the line for good."""
        self._done.set()
        with self._lock:
            self._erase()
        if self._thread is not None:
            self._thread.join()


def _json_given(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    """A command's --json, or the one given before the command ('localmem --json stats')."""
    return bool(value or ctx.find_root().meta.get(_GIVEN, {}).get("as_json"))


json_option = click.option("--json", "as_json", is_flag=True, callback=_json_given, help="Print JSON instead of text.")


@click.group(
    cls=_Group,
    context_settings={"help_option_names": ["-h", "--help"]},
    params=_global_options(),
    epilog="The options above may also follow the command: 'localmem stats --db X' is 'localmem --db X stats'.",
)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """localmem: long-term memory for LLM agents in one SQLite file, fully offline.

    To begin: 'localmem ingest FILE' (a chat export), then 'localmem serve' to search, ask and
    browse it in your web browser, or 'localmem ask QUESTION' here."""
    state = _State(ctx.meta.setdefault(_GIVEN, {}))
    ctx.obj = state
    ctx.call_on_close(lambda: state.close(failed=bool(ctx.meta.get(_FAILED))))


@cli.command()
@click.argument("file", type=click.Path(path_type=Path, readable=False))
@click.option(
    "--format",
    "fmt",
    metavar=f"[{'|'.join(FORMATS)}]",
    help="Input format (default: detected; in a folder, forced on every file).",
)
@click.option("--conversation", help="Conversation name for inputs that carry none (default: file name).")
@setting_option("date_order")
@setting_option("extract")
@setting_option("consolidate")
@setting_option("llm_workers")
@json_option
@click.pass_obj
def ingest(
    state: _State,
    file: Path,
    fmt: str | None,
    conversation: str | None,
    date_order: str | None,
    extract: str | None,
    consolidate: str | None,
    workers: int | None,
    as_json: bool,
) -> None:
    """Store the messages of FILE: a ChatGPT or Claude.ai export, a WhatsApp chat, a Slack export,
    a Discord channel (DiscordChatExporter JSON), notes, LoCoMo JSON, JSONL, chat JSON or a text
    transcript. A folder or .zip is read file by file; '-' reads standard input.

    Re-ingesting adds nothing; an edited file adds only what is new. LoCoMo conversations each
    go to a namespace named by their sample_id unless --namespace is given.
    """
    forced = state.config.namespace if state.namespace_given else None
    with _progress(state, f"ingesting {file.name or file}", ("extracting episodes",)) as progress:
        report = state.memory("write").ingest(
            file,
            format=fmt,
            conversation=conversation,
            namespace=forced,
            extract=extract,
            consolidate=consolidate,
            date_order=date_order,
            progress=progress,
            workers=workers,
        )
    if as_json:
        _print_json(report.to_dict())
        return
    from .text.labels import plural

    for nsr in report.namespaces:
        if nsr.already_loaded:
            click.echo(f"{nsr.namespace}: already ingested ({plural(nsr.messages, 'message')}), nothing to do")
            continue
        line = f"{nsr.namespace}: {nsr.added} added, {nsr.skipped} already stored"
        if nsr.conflicts:
            line += f", {nsr.conflicts} stored with different text (kept the stored version)"
        click.echo(line)
    if len(report.sources) > 1:
        _echo_sources(report)
    for source in report.sources:
        for note in source.notes:
            click.echo(f"note: {source.name}: {note}" if len(report.sources) > 1 else f"note: {note}")
    _echo_not_read(report.not_read)
    for advice in report.advice:
        click.echo(f"note: {advice}")
    click.echo(f"{report.format}, {report.seconds:.1f}s (embedding {report.embed_seconds:.1f}s)")
    for ns, count in report.episodes.items():
        if count:
            click.echo(
                f"{ns}: {plural(count, 'episode')} segmented without an LLM "
                "(extracted by a later 'localmem flush' with a model)"
            )
    for ns, build in (report.build or {}).items():
        _echo_build(ns, build)


def _echo_sources(report: Any, limit: int = 20) -> None:
    """One line per file of a folder that added or changed something; a count for the rest."""
    from .text.labels import plural

    changed = [s for s in report.sources if not s.already_loaded]
    for s in changed[:limit]:
        line = f"  {s.name} ({s.format}): {s.added} added of {s.messages}"
        if s.conflicts:
            line += f", {s.conflicts} stored with different text"
        click.echo(line)
    if len(changed) > limit:
        click.echo(f"  … and {plural(len(changed) - limit, 'more file')} with new messages")
    unchanged = len(report.sources) - len(changed)
    if unchanged:
        click.echo(f"  {plural(unchanged, 'file')} already ingested")


def _echo_not_read(not_read: list[dict[str, Any]], limit: int = 10) -> None:
    from .text.labels import plural

    for item in [i for i in not_read if i["failed"]]:
        click.echo(f"warning: could not read {item['path']}: {item['why']}", err=True)
    others = [i for i in not_read if not i["failed"]]
    if not others:
        return
    click.echo(f"not read: {plural(len(others), 'file')}")
    for item in others[:limit]:
        click.echo(f"  {item['path']}: {item['why']}")
    if len(others) > limit:
        kinds: dict[str, int] = {}
        for item in others[limit:]:
            kinds[item["why"]] = kinds.get(item["why"], 0) + 1
        click.echo(
            f"  … and {plural(len(others) - limit, 'more file')} ("
            + ", ".join(f"{n} {why}" for why, n in sorted(kinds.items(), key=lambda kv: -kv[1])[:4])
            + ")"
        )


def _echo_build(ns: str, build: dict[str, Any]) -> None:
    from .text.labels import plural

    units = ", ".join(plural(v, k) for k, v in build["units"].items()) or "no units"
    links = ", ".join(f"{v} {k}" for k, v in build["links"].items()) or "none"
    click.echo(
        f"{ns}: {plural(build['episodes'], 'episode')} extracted ({build['failed']} failed): {units}; "
        f"{plural(build['entities'], 'new entity', 'new entities')}; links: {links}"
    )
    for row in build["llm"]:
        click.echo(
            f"  {row['stage']}: {plural(row['calls'], 'LLM call')}, {row['prompt_tokens']} prompt + "
            f"{plural(row['completion_tokens'], 'generated token')}, {row['seconds']:.0f}s, "
            f"{row['failures']} invalid after repair"
        )
    if build.get("consolidation"):
        _echo_consolidation(build["consolidation"])
    click.echo(
        "  time: "
        + ", ".join(f"{k} {v:.1f}s" for k, v in build["seconds"].items())
        + (f" ({build['workers']} episodes at once)" if build.get("workers", 1) > 1 else "")
    )


def _echo_consolidation(done: dict[str, Any]) -> None:
    from .text.labels import plural

    click.echo(
        f"  consolidation: {plural(done['episodes'], 'episode')} ({done['failed']} failed): "
        f"{plural(done['added'], 'knowledge statement')} added, {done['reinforced']} repeated (a source added), "
        f"{done['superseded']} replacing an older one, {done['dropped']} dropped; {done['seconds']:.1f}s"
    )


@cli.command()
@click.argument("speaker")
@click.argument("text")
@click.option("--time", "when", help="When it was said (ISO 8601 or a common date format; default now).")
@click.option("--role", help="user / assistant / system …")
@click.option("--conversation", help=f"Conversation name (default: '{DEFAULT_CONVERSATION}').")
@click.option("--id", "external_id", help="Your id for the message (makes re-adding a no-op).")
@click.option(
    "--meta",
    "meta",
    multiple=True,
    metavar="KEY=VALUE",
    help="Metadata stored with the message (repeatable); search and ask filter on it.",
)
@json_option
@click.pass_obj
def add(
    state: _State,
    speaker: str,
    text: str,
    when: str | None,
    role: str | None,
    conversation: str | None,
    external_id: str | None,
    meta: tuple[str, ...],
    as_json: bool,
) -> None:
    """Append one message said by SPEAKER; it is searchable at once.

    Each conversation's added messages are a source of their own ('forget --conversation C'
    or 'forget --source ID' forgets one chat)."""
    added = state.memory("write").add(
        speaker, text, time=when, role=role, conversation=conversation, id=external_id, meta=_meta(meta)
    )
    if as_json:
        _print_json(added.to_dict())
    else:
        from .text.labels import quote

        click.echo(
            f"{'added' if added.added else 'already stored'}: {added.ref}, said by {speaker} "
            f"in {quote(added.conversation)}"
        )


@cli.command()
@click.argument("item")
@click.argument("text")
@json_option
@click.pass_obj
def correct(state: _State, item: str, text: str, as_json: bool) -> None:
    """Replace message ITEM (m:ID) with TEXT: stored as a new message that search and ask show
    first; the old one stays, marked replaced."""
    added = state.memory("read").correct(item, text)
    if as_json:
        _print_json(added.to_dict())
    else:
        from .text.labels import quote

        click.echo(
            f"stored {added.ref} in {quote(added.conversation)}, replacing message m:{added.replaces} "
            "(kept, marked replaced)"
        )


def _meta(pairs: tuple[str, ...]) -> dict[str, str] | None:
    """``("k=v", …)`` → ``{"k": "v"}``."""
    out = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--meta")
        out[key.strip()] = value
    return out or None


def _filter_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--since, --until, --speaker, --conversation, --meta: what search and ask look among."""
    for option in reversed(
        [
            click.option("--since", help="Only what was said at or after this date or time."),
            click.option("--until", help="Only what was said until this date (all of it) or time."),
            click.option(
                "--as-of",
                "as_of",
                help="What was known then: only what was said until this date or time, and 'now' is that day.",
            ),
            click.option("--speaker", help="Only what this speaker said (any case)."),
            click.option("--conversation", "in_conversation", help="Only this conversation."),
            click.option(
                "--meta",
                "meta",
                multiple=True,
                metavar="KEY=VALUE",
                help="Only messages whose metadata has this value (repeatable: all must).",
            ),
        ]
    ):
        command = option(command)
    return command


def _filters(
    since: str | None,
    until: str | None,
    speaker: str | None,
    in_conversation: str | None,
    meta: tuple[str, ...],
    as_of: str | None = None,
) -> dict[str, Any]:
    out = {"since": since, "until": until, "speaker": speaker, "conversation": in_conversation, "meta": _meta(meta)}
    return {**out, "as_of": as_of} if as_of is not None else out


def _format_hit(rank: int, hit: Any) -> str:
    """A search hit in words: its id, who said it, when and where (a unit: its kind and the
    messages it rests on), why it was found, then its text."""
    from .text import labels

    src = hit.sources[0] if hit.sources else None
    if hit.kind == "message":
        head = labels.message(
            hit.id,
            speaker=hit.speaker or (src.speaker if src else None),
            time=hit.time,
            conversation=src.conversation if src else None,
        )
    else:
        head = f"{hit.id}, the {hit.kind}, {labels.when(hit.time)}"
        if src:
            rest = f" and {labels.plural(len(hit.sources) - 1, 'more')}" if len(hit.sources) > 1 else ""
            head += f", from {labels.message(f'm:{src.message_id}', speaker=src.speaker, time=src.sent_at, conversation=src.conversation)}{rest}"
    notes = ([f"replaced by the newer {hit.superseded_by}"] if hit.superseded_by else []) + (
        [f"replaces the older {', '.join(hit.supersedes)}"] if hit.supersedes else []
    )
    why = labels.why(hit.channels)
    tail = "; ".join(([why] if why else []) + notes)
    return f"{rank:>2}. {head}" + (f" ({tail})" if tail else "") + f"\n    {hit.text}"


def _print_step(step: Any) -> None:
    from .text.labels import plural

    args = ", ".join(
        f"{k}={json.dumps(v, ensure_ascii=False, default=str)}"
        for k, v in step.args.items()
        if v not in (None, "", False)
    )
    click.echo(
        f"step {step.number}: {step.tool}({args}) -> {plural(len(step.results), 'result')}"
        + (f"; {step.note}" if step.note else ""),
        err=True,
    )
    for line in step.results:
        click.echo(f"    {_clip(line, 150)}", err=True)


def _clip(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _read_queries(path: Path) -> list[str]:
    """The questions of a ``--queries`` or ``--questions`` file (text/questions.py), read whole
    before the first is run; a line's 'namespace' and 'now' are for 'bench ask'."""
    from .text.questions import read_questions

    return [question.query for question in read_questions(path)]


@cli.command()
@click.argument("query", required=False)
@click.option("--k", "-k", default=DEFAULT_K, show_default=True, help="Number of hits.")
@setting_option("channel_budget")
@click.option(
    "--channels",
    help=f"Comma-separated ways of finding messages, of {', '.join(ALL_CHANNELS)}: vector by meaning, "
    "bm25 by their words, temporal by the time asked about, graph by linked memories, entity by the people "
    f"and things named (default: {','.join(CHANNELS)}).",
)
@click.option(
    "--promote",
    is_flag=True,
    help="Move ahead the hits from the episodes that best match the people and time asked about.",
)
@click.option(
    "--rerank",
    type=click.Choice(RERANK_MODES),
    default=RERANK_MODES[0],
    show_default=True,
    help="auto: the configured cross-encoder, if any; llm: the local LLM judges the top 20 (slow).",
)
@click.option(
    "--max-tokens",
    type=int,
    default=DEFAULT_SEARCH_MAX_TOKENS,
    show_default=True,
    help="Keep whole hits in rank order while their text fits (counted with the embedder's tokenizer, or the LLM's once it is loaded).",
)
@click.option(
    "--queries",
    "queries_file",
    type=click.Path(path_type=Path, readable=False),
    help="Run every query in this file (one per line, or JSONL with 'query'); prints JSONL.",
)
@_filter_options
@json_option
@click.pass_obj
def search(
    state: _State,
    query: str | None,
    k: int,
    budget: int | None,
    channels: str | None,
    promote: bool,
    rerank: str,
    max_tokens: int,
    queries_file: Path | None,
    since: str | None,
    until: str | None,
    as_of: str | None,
    speaker: str | None,
    in_conversation: str | None,
    meta: tuple[str, ...],
    as_json: bool,
) -> None:
    """Search memory for QUERY: messages found by their meaning and by their words, the two
    rankings merged (no LLM; fast).

    Every hit has its id (m:ID a message, u:ID a unit) for 'show', 'forget' and 'correct'."""
    chosen = [c.strip() for c in channels.split(",") if c.strip()] if channels else None
    filters = _filters(since, until, speaker, in_conversation, meta, as_of)
    mem = state.memory("read")
    if queries_file is not None:
        queries = _read_queries(queries_file)
        for q_text, hits in zip(
            queries,
            mem.search_many(queries, k=k, budget=budget, channels=chosen, promote=promote, rerank=rerank, **filters),
        ):
            _print_json({"query": q_text, "hits": [h.to_dict() for h in hits]}, indent=None)
        return
    if not query or not query.strip():
        raise click.UsageError("give a QUERY or --queries FILE")
    if max_tokens < 1:
        raise click.BadParameter("must be at least 1", param_hint="--max-tokens")
    hits = mem.search(
        query, k=k, budget=budget, channels=chosen, promote=promote, max_tokens=max_tokens, rerank=rerank, **filters
    )
    if as_json:
        _print_json({"query": query, "hits": [h.to_dict() for h in hits]})
    elif not hits:
        click.echo(f"nothing found in namespace '{mem.namespace}'")
    else:
        click.echo("\n".join(_format_hit(i, h) for i, h in enumerate(hits, 1)))


@cli.command()
@click.argument("question", required=False)
@click.option(
    "--mode",
    type=click.Choice(ASK_MODES),
    default=ASK_MODES[0],
    show_default=True,
    help="fast: one search, then the model answers from the best messages found; agentic: the model "
    "searches several times, choosing where to look, before it answers (slower).",
)
@click.option(
    "--steps", default=DEFAULT_AGENT_STEPS, show_default=True, help="Agentic mode: at most this many tool calls."
)
@click.option("--trace", is_flag=True, help="Agentic mode: print every step on stderr.")
@click.option("--now", help="The date relative questions count from (default: the latest message time).")
@setting_option("ask_max_tokens")
@click.option("--channels", help=f"Search channels (default: {','.join(CHANNELS)}); see `localmem search --help`.")
@click.option(
    "--questions",
    "questions_file",
    type=click.Path(path_type=Path, readable=False),
    help="Answer every question in this file (one per line, or JSONL with 'query'); prints JSONL.",
)
@click.option("--evidence", "show_evidence", is_flag=True, help="Also print the evidence the model saw.")
@click.option(
    "--stream/--no-stream",
    default=True,
    show_default=True,
    help="Print the answer as the model writes it, then its citations (text output only).",
)
@setting_option("user_name")
@click.option(
    "--local",
    is_flag=True,
    help="Answer in this process even when a running 'localmem serve' of this store could (see use_server).",
)
@_filter_options
@json_option
@click.pass_obj
def ask(
    state: _State,
    question: str | None,
    mode: str,
    steps: int,
    trace: bool,
    now: str | None,
    max_tokens: int | None,
    channels: str | None,
    questions_file: Path | None,
    show_evidence: bool,
    stream: bool,
    user_name: str | None,
    local: bool,
    since: str | None,
    until: str | None,
    as_of: str | None,
    speaker: str | None,
    in_conversation: str | None,
    meta: tuple[str, ...],
    as_json: bool,
) -> None:
    """Answer QUESTION from memory with the messages it rests on, or say it is not in memory.

    When 'localmem serve' runs on the same store and namespace with the same settings, the
    question goes to it, where the model is already loaded (--local: never)."""
    if user_name is not None:
        from dataclasses import replace

        state.config = replace(state.config, user_name=user_name.strip() or None)
    chosen = [c.strip() for c in channels.split(",") if c.strip()] if channels else None
    filters = _filters(since, until, speaker, in_conversation, meta, as_of)
    if max_tokens is not None and max_tokens < 1:
        raise click.BadParameter("must be at least 1", param_hint="--max-tokens")
    if questions_file is None and (not question or not question.strip()):
        state.memory("read")  # no store, no namespace: said first, as before
        raise click.UsageError("give a QUESTION or --questions FILE")
    # A first answer may wait minutes for the model (assembled once, then loaded): a status line
    # on the terminal says what it waits for, and goes when the answer comes.
    status = _StatusLine(state)
    show = (lambda step: status.aside(_print_step, step)) if trace else None
    options = {"mode": mode, "now": now, "max_tokens": max_tokens, "channels": chosen, "steps": steps, **filters}
    served = None if local else _server(state)
    status("open", "opening memory")
    if served is None:
        state.memory("read")  # no store, no namespace: said before anything else, as always
    streamed: list[str] = []

    def answer(text: str, on_text: Callable[[str], None] | None) -> tuple[dict[str, Any], list[Any]]:
        """The answer as JSON (timings say where it ran) and its evidence as hits."""
        nonlocal served
        if served is not None:
            data = _ask_served(served, {"question": text, **options}, on_text, show, status)
            if data is not None:
                return data, [_hit(h) for h in data["evidence"]] if show_evidence else []
            served.close()
            served = None
            streamed.clear()  # what the server wrote before it failed is not the answer
        result = state.memory("read").ask(text, trace=show, on_text=on_text, on_progress=status, **options)
        data = result.to_dict()
        data["timings"]["via"] = "local"
        return data, result.evidence

    try:
        if questions_file is not None:
            for text in _read_queries(questions_file):
                click.echo(json.dumps(answer(text, None)[0], ensure_ascii=False))
            return
        assert question is not None

        def show_text(piece: str) -> None:  # the answer appears as the model writes it
            status.close()
            streamed.append(piece)
            click.echo(piece, nl=False)

        data, evidence = answer(question, None if as_json or not stream else show_text)
    finally:
        status.close()
        if served is not None:
            served.close()
    if as_json:
        _print_json(data)
        return
    _echo_answer(data, "".join(streamed) if streamed else None, evidence if show_evidence else None, state)


def _server(state: _State) -> Any:
    """A connection to the running `localmem serve` of this store and namespace, when there is
    one with the same answer settings; else None, with a line on stderr when the user should know
    why (a discovery file not trusted, other settings, a server that did not answer)."""
    config = state.config
    if not config.use_server:
        return None
    from .serve import client, discovery

    try:
        found = discovery.find(config.resolved_db_path(), config.namespace)
    except discovery.Untrusted as exc:
        _notice(f"not using a running server: {exc}")
        return None
    if found is None:
        return None
    other = discovery.differing(discovery.answer_settings(config), found.settings)
    if other:
        _notice(f"the server at {found.address} runs with other settings ({', '.join(other)}); answering here")
        return None
    try:
        return client.Served(found)
    except client.Unavailable as exc:
        if exc.gone:  # it died without removing its file: nothing to say, just clean up
            discovery.forget(discovery.path_of(found), found)
        else:
            _notice(f"not using the server: {exc}; answering here")
        return None


def _ask_served(
    served: Any,
    body: dict[str, Any],
    on_text: Callable[[str], None] | None,
    trace: Callable[[Any], None] | None,
    on_progress: Callable[[str, str], None] | None = None,
) -> dict[str, Any] | None:
    """The answer from the server as JSON, its timings saying so; None (with a line on stderr)
    when the server failed, so that the question is answered here instead."""
    from types import SimpleNamespace

    from .serve import client

    wrote: list[str] = []

    def text(piece: str) -> None:
        wrote.append(piece)
        if on_text is not None:
            on_text(piece)

    try:
        data, took = served.ask(
            body,
            on_text=text if on_text is not None else None,
            on_step=(lambda step: trace(SimpleNamespace(**step))) if trace is not None else None,
            on_progress=on_progress,
        )
    except client.Unavailable as exc:
        if wrote:
            click.echo("")
        if isinstance(on_progress, _StatusLine):
            on_progress.aside(_notice, f"the server failed: {exc}; answering here")
        else:
            _notice(f"the server failed: {exc}; answering here")
        return None
    data["timings"] = {**data.get("timings", {}), "via": "serve", "server": served.found.address, "round_trip": took}
    return data


def _notice(text: str) -> None:
    click.echo(f"localmem: {text}", err=True)


def _hit(data: dict[str, Any]) -> Any:
    """A hit back from its JSON (``Hit.to_dict()``)."""
    from .types import Hit

    return Hit.from_dict(data)


def _echo_answer(data: dict[str, Any], streamed: str | None, evidence: list[Any] | None, state: _State) -> None:
    """An answer (``Answer.to_dict()``) as text: the answer unless it was streamed, its
    citations, the evidence if asked, and the time on stderr."""
    final = data["answer"] if not data["refused"] else "Not in memory."
    if data.get("refusal") == "no citation":
        final = "Not in memory: the model's answer cited none of the evidence."
    if streamed is not None:
        click.echo("")
        if streamed.strip() != data["answer"]:  # a repaired or refused reply: say what counts
            click.echo(final)
    else:
        click.echo(final)
    from .text import labels

    for c in data["citations"]:
        click.echo(f"  [{labels.message_of(c)}]: {_clip(c['text'], 160)}")
    if evidence is not None:
        from .answer.evidence import evidence_line

        click.echo("evidence:")
        for i, hit in enumerate(evidence, 1):
            click.echo(f"  {i}. {_clip(evidence_line(hit, state.config.ask_dates), 160)}")
    timings, tokens = data.get("timings", {}), data.get("tokens", {})
    where = f"; via localmem serve at {timings['server']}" if timings.get("via") == "serve" else ""
    click.echo(
        f"({timings.get('total', 0.0):.1f} s; {tokens.get('prompt', 0)} prompt + "
        f"{labels.plural(tokens.get('completion', 0), 'generated token')}{where})",
        err=True,
    )


@cli.command()
@click.option("--sources", "show_sources", is_flag=True, help="Also list the ingested sources.")
@json_option
@click.pass_obj
def stats(state: _State, show_sources: bool, as_json: bool) -> None:
    """Counts for the namespace: messages, conversations, units, entities, links."""
    mem = state.memory("read")
    data = mem.stats().to_dict()
    if show_sources:
        data["source_list"] = [s.to_dict() for s in mem.browse.sources()]
    if as_json:
        _print_json(data)
        return
    _echo_stats(data)


def _echo_stats(data: dict[str, Any]) -> None:
    """``Stats.to_dict()`` (and its ``source_list``) as sentences."""
    from .text import labels

    store = describe(data["db_path"])
    click.echo(
        f"namespace {labels.quote(data['namespace'])} in {data['db_path']} ({store} of "
        f"{labels.size(data['db_bytes'])}, {'encrypted' if data['encrypted'] else 'not encrypted'}, "
        f"schema {data['schema_version']})"
    )
    click.echo(
        f"{labels.plural(data['sources'], 'source')}, {labels.plural(data['messages'], 'message')} in "
        f"{labels.plural(data['conversations'], 'conversation')} "
        f"({labels.plural(data['sessions'], 'session')})"
    )
    if data["first_message_at"]:
        click.echo(f"said from {labels.when(data['first_message_at'])} to {labels.when(data['last_message_at'])}")
    if data["unfinished_sources"]:
        click.echo(
            f"{labels.plural(data['unfinished_sources'], 'import')} stopped before the end: "
            "ingest the same file again to finish"
        )
    units = data["units"]
    click.echo(
        "memory built from them: " + ", ".join(labels.plural(n, kind) for kind, n in units.items())
        if units
        else "memory built from them: nothing yet (ingest with --extract llm, or run 'localmem flush')"
    )
    click.echo(f"{labels.plural(data['entities'], 'entity')}, {labels.plural(data['links'], 'link')}")
    if data["embedder"]:
        index = ", ".join(
            f"{table} by {'exact search' if how == 'exact' else 'binary codes'}"
            for table, how in data["vector_index"].items()
        )
        click.echo(
            f"embedder: {data['embedder']} ({data['embed_dim']} dimensions)" + (f"; vectors: {index}" if index else "")
        )
    if data.get("owner"):
        click.echo(f"owner: {_owner_words(data['owner'])}")
    if data.get("background_extraction"):
        click.echo("background extraction: " + labels.value(data["background_extraction"]))
    if "source_list" in data:
        click.echo("sources:")
        for src in data["source_list"]:
            state = "" if src["status"] in ("done", "loaded") else f", stopped while {src['status']}"
            click.echo(
                f"  {labels.source(src['id'], src['uri'], src['kind'])}: {labels.plural(src['messages'], 'message')}{state}"
            )


def _owner_words(data: dict[str, Any]) -> str:
    from .store.results import Owner

    return Owner(**data).describe()


@cli.group(invoke_without_command=True)
@json_option
@click.pass_context
def owner(ctx: click.Context, as_json: bool) -> None:
    """Who "I" is in the namespace: the names you go by as a speaker (WhatsApp, Slack...).

    First-person questions ("where do I work?", "¿dónde vivo?") are about your messages in
    every source. An import suggests a name where the export tells (the sender of a WhatsApp
    chat other than the one it is named after); confirm it, or set yours. The user of ChatGPT
    and Claude exports is you without a name. Without a subcommand: show the owner."""
    if ctx.invoked_subcommand is None:
        _show_owner(ctx.obj.memory("open").owner(), as_json)


def _show_owner(found: Any, as_json: bool) -> None:
    if as_json:
        _print_json(found.to_dict())
        return
    click.echo(f"namespace {found.namespace}: the owner is {found.describe()}")
    if found.origin == "suggested":
        click.echo("  confirm with 'localmem owner confirm', or set with 'localmem owner set NAME...'")
    elif not found.known:
        click.echo("  set with 'localmem owner set NAME...' (several names, one person)")


@owner.command(name="set")
@click.argument("names", nargs=-1, required=True)
@click.option("--add", is_flag=True, help="Keep the names already there.")
@json_option
@click.pass_obj
def owner_set(state: _State, names: tuple[str, ...], add: bool, as_json: bool) -> None:
    """Set the names you go by (several names, one person): localmem owner set 'Daniel Ruiz' Dani."""
    _show_owner(state.memory("write").set_owner(list(names), add=add), as_json)


@owner.command(name="confirm")
@json_option
@click.pass_obj
def owner_confirm(state: _State, as_json: bool) -> None:
    """Confirm the names an import suggested."""
    _show_owner(state.memory("open").confirm_owner(), as_json)


@owner.command(name="clear")
@json_option
@click.pass_obj
def owner_clear(state: _State, as_json: bool) -> None:
    """Forget the names (the user of assistant chats stays you)."""
    _show_owner(state.memory("open").clear_owner(), as_json)


@cli.command()
@json_option
@click.pass_obj
def namespaces(state: _State, as_json: bool) -> None:
    """List the namespaces in the store."""
    from .text import labels

    rows = [r.to_dict() for r in state.memory("open").namespaces()]
    if as_json:
        _print_json(rows)
    elif not rows:
        click.echo("the store is empty")
    else:
        for r in rows:
            span = (
                f", said from {labels.when(r['first_message_at'])} to {labels.when(r['last_message_at'])}"
                if r["first_message_at"]
                else ""
            )
            click.echo(
                f"{r['namespace']}: {labels.plural(r['messages'], 'message')} in "
                f"{labels.plural(r['conversations'], 'conversation')}, {labels.plural(r['units'], 'unit')} built{span}"
            )


@cli.command()
@click.option("--output", "-o", type=click.Path(path_type=Path, readable=False), help="Write here (default: stdout).")
@click.option("--no-vectors", is_flag=True, help="Leave vectors out (import re-embeds).")
@json_option
@click.pass_obj
def export(state: _State, output: Path | None, no_vectors: bool, as_json: bool) -> None:
    """Export everything (or only --namespace) as JSONL that 'import' restores exactly. The
    export is plain text, even of an encrypted store (a warning says so)."""
    mem = state.memory("read" if state.namespace_given else "open")
    chosen = [state.config.namespace] if state.namespace_given else None
    if mem.admin.encrypted:  # said before a byte is written: the user can still stop it
        click.echo(
            f"warning: the store is encrypted, but this export is not: {output or 'standard output'} will hold "
            "everything exported as plain text; keep it as safe as the key, and delete it once imported",
            err=True,
        )
    if output is None:
        counts = mem.admin.export(sys.stdout, namespaces=chosen, vectors=not no_vectors).to_dict()
    else:
        tmp = output.with_name(output.name + ".partial")
        try:
            with open_private(tmp) as fh:
                counts = mem.admin.export(fh, namespaces=chosen, vectors=not no_vectors).to_dict()
        except BaseException:
            tmp.unlink(missing_ok=True)  # no half-written file left behind
            raise
        tmp.replace(output)
    summary = {"output": str(output) if output else "-", "records": counts}
    if as_json:
        click.echo(json.dumps(summary), err=output is None)
    else:
        from .text import labels

        click.echo(f"exported {labels.counts(counts)}", err=True)


@cli.command(name="import")
@click.argument("file", type=click.Path(path_type=Path, readable=False))
@click.option(
    "--force",
    is_flag=True,
    help="Import a file whose trailer is missing or does not match (an export made before "
    "localmem wrote one), with a warning.",
)
@json_option
@click.pass_obj
def import_(state: _State, file: Path, force: bool, as_json: bool) -> None:
    """Restore a file written by 'export' (in one transaction); a file cut short or edited is refused."""
    counts = state.memory("write").admin.restore(file, force=force).to_dict()
    unchecked = counts.pop("unchecked", None)
    if unchecked:
        click.echo(f"warning: {file}: {unchecked}; imported without knowing that it is whole (--force)", err=True)
    if as_json:
        _print_json({"imported": counts, **({"unchecked": unchecked} if unchecked else {})})
    else:
        from .text import labels

        click.echo(f"imported {labels.counts(counts)}")


@cli.command()
@click.argument("items", nargs=-1, metavar="[m:ID|u:ID]...")
@click.option("--conversation", help="Forget this conversation (of the namespace worked in).")
@click.option("--before", help="Forget the messages said before this date or time.")
@click.option(
    "--match", "match_text", metavar="TEXT", help="Forget the messages and units whose text contains TEXT (any case)."
)
@click.option("--source", "source_id", type=int, help="Forget this source (its id in 'stats --sources').")
@click.option(
    "--namespace", "target_ns", help="Forget this whole namespace; with another target, the namespace to work in."
)
@click.option("--yes", is_flag=True, help="Really delete (otherwise only list what would go).")
@json_option
@click.pass_obj
def forget(
    state: _State,
    items: tuple[str, ...],
    conversation: str | None,
    before: str | None,
    match_text: str | None,
    source_id: int | None,
    target_ns: str | None,
    yes: bool,
    as_json: bool,
) -> None:
    """Delete exactly one target, with what rests only on it, and clear it from the file.

    The target: memory ids (m:ID messages, u:ID units), --conversation, --before, --match,
    --source or --namespace. A unit (episode, gist, fact, knowledge) resting only on deleted
    messages goes too; one that also rests on other messages stays, with those. Without --yes
    nothing is deleted: it lists what would go, and exits 0.
    """
    given: dict[str, Any] = {
        name: value
        for name, value in (
            ("ids", list(items) or None),
            ("conversation", conversation),
            ("before", before),
            ("match", match_text),
            ("source_id", source_id),
        )
        if value is not None
    }
    if target_ns is not None and not given:
        given = {"namespace": target_ns}
        state.use_namespace(target_ns)  # what would go is described from the namespace it is in
    elif target_ns is not None:
        state.use_namespace(target_ns)
    if len(given) != 1:
        raise click.UsageError(
            "pass exactly one of: ids (m:ID u:ID ...), --conversation C, --before DATE, "
            "--match TEXT, --source ID, --namespace NS"
        )
    mem = state.memory("open" if "namespace" in given else "read")
    # What would go is described before it goes (a deleted message has no words left to show);
    # with --json, the ids alone.
    described: dict[str, str] = {}
    preview = None if as_json else mem.forget(**given, dry_run=True).to_dict()
    if preview is not None:
        shown = [item for kind in ("messages", "units", "kept_units", "sources") for item in preview[kind][:20]]
        described = mem.browse.describe(shown)
    result = preview if preview is not None and not yes else mem.forget(**given, dry_run=not yes).to_dict()
    target = dict(given) if "namespace" in given else {**given, "in_namespace": mem.namespace}
    if as_json:
        _print_json({"target": target, **result})
    else:
        _echo_forget(result, yes, described)
    _warn_wal(result["file"])


def _echo_forget(result: dict[str, Any], yes: bool, described: dict[str, str]) -> None:
    """What a forget took (or would take), each memory with words beside its id."""
    from .text import labels

    click.echo(f"{'would forget' if not yes else 'forgot'} {labels.counts(result['counts'], skip_zero=True)}")
    for kind, one in (("messages", "message"), ("units", "unit"), ("entities", "entity"), ("sources", "source")):
        if result[kind]:
            click.echo(f"  {labels.plural(len(result[kind]), one)}:")
            _echo_described(result[kind], described, one)
    if result["kept_units"]:
        click.echo(
            f"  kept: {labels.plural(len(result['kept_units']), 'unit')} that also rest on other messages "
            "(their text may repeat what went):"
        )
        _echo_described(result["kept_units"], described, "unit")
    if not yes:
        click.echo("nothing was deleted; re-run with --yes to delete")
    elif result["file"] and result["file"]["vacuumed"]:
        click.echo(f"  the file was written anew: {result['file']['vacuum_reason']}")


def _echo_described(ids: list[Any], described: dict[str, str], kind: str, most: int = 20) -> None:
    """One line per id, with its words (``described``: Browse.describe), then a count of the rest."""
    for item in ids[:most]:
        ident = f"source {item}" if kind == "source" else str(item)
        article = "an" if kind == "entity" else "a"
        click.echo(f"    {described.get(str(item)) or f'{ident} ({article} {kind})'}")
    if len(ids) > most:
        from .text.labels import plural

        click.echo(f"    … and {plural(len(ids) - most, 'more ' + kind)}")


def _warn_wal(scrubbed: dict[str, Any] | None) -> None:
    """What a forget says when another connection kept the WAL from being emptied, or (PostgreSQL)
    what it could not rewrite or remove."""
    if scrubbed is not None and "; skipped: " in (scrubbed["vacuum_reason"] or ""):
        # PostgreSQL: what the forget could not rewrite or remove, named with why
        said = scrubbed["vacuum_reason"].split("; skipped: ", 1)[1]
        click.echo(f"warning: the server's files may still hold what was deleted: {said}", err=True)
    elif scrubbed is not None and not scrubbed["wal_emptied"]:
        click.echo(
            "warning: another connection is still reading this store, so its write-ahead log "
            "keeps earlier copies of the deleted pages; run 'localmem vacuum' once it is done",
            err=True,
        )


@cli.command()
@json_option
@click.pass_obj
def vacuum(state: _State, as_json: bool) -> None:
    """Compact the store: merge the full-text indexes, rewrite the file without free pages, empty the WAL."""
    result = state.memory("open").admin.vacuum().to_dict()
    if as_json:
        _print_json(result)
    else:
        click.echo(
            f"vacuumed: {result['bytes_before']:,} -> {result['bytes_after']:,} bytes "
            f"({result['reclaimed_bytes']:,} reclaimed) in {result['seconds']} s"
        )
    if result.get("skipped"):
        click.echo(f"warning: the server's files may still hold deleted rows: {', '.join(result['skipped'])}", err=True)
    elif not result["wal_emptied"]:
        click.echo(
            "warning: another connection is still reading this store; its write-ahead log "
            "could not be emptied: run 'localmem vacuum' again once it is done",
            err=True,
        )


@cli.command()
@json_option
@click.pass_obj
def reembed(state: _State, as_json: bool) -> None:
    """Re-embed every message and unit with the configured embedder (--embedder multilingual
    switches a store to the multilingual one). The old vectors serve until the new ones are
    swapped in at once; stopped half-way, run it again: it goes on where it stopped."""
    with _progress(state, "re-embedding") as progress:
        result = state.memory("open").admin.reembed(progress).to_dict()
    if as_json:
        _print_json(result)
    else:
        from .text.labels import plural

        click.echo(
            f"re-embedded {plural(result['messages'], 'message')} and {plural(result['units'], 'unit')} "
            f"with {result['embedder']} ({result['dim']} dimensions)"
        )


@cli.command()
@json_option
@click.pass_obj
def doctor(state: _State, as_json: bool) -> None:
    """Versions, SQLite / FTS5 / sqlite-vec, which models resolve from where, the config file,
    llama.cpp's CPU features against this CPU's (and how to rebuild it when they fall short), and
    the disk the models take."""
    path = state.config.resolved_db_path()
    # A store that does not exist yet is reported as such, not created: versions come from an
    # in-memory store.
    report = state.memory("open" if path.exists() else "none").admin.doctor().to_dict()
    if not path.exists():
        report["db"] = {
            "path": str(path),
            "exists": False,
            "note": "no store yet; 'localmem ingest' or 'localmem add' creates it",
        }
    if as_json:
        _print_json(report)
        return
    _echo_doctor(report)


def _echo_doctor(report: dict[str, Any]) -> None:
    """The doctor's report as lines for people: the config file, llama.cpp's build against the
    CPU and the models' disk first, then every other part."""
    from .text import labels

    config_file = report.pop("config_file", {})
    if config_file:
        said = (
            f"sets {', '.join(config_file['settings'])}"
            if config_file["settings"]
            else ("sets nothing" if config_file["exists"] else "not there: create it to change a default")
        )
        click.echo(f"config file: {config_file['path']} ({said})")
    cpu = report.pop("llama_cpp_cpu", {})
    if cpu:
        click.echo(f"llama.cpp and this CPU: {cpu['status']}")
        for key in ("built with", "this CPU has"):
            if key in cpu:
                click.echo(f"  {key}: {labels.value(cpu[key])}")
        if "rebuild" in cpu:
            click.echo(f"  rebuild for this CPU: {cpu['rebuild']}")
    disk = report.pop("models_disk", {})
    if disk:
        click.echo(
            f"models on disk: {labels.size(disk['total'])}" if disk["models"] else "models on disk: none installed"
        )
        for model, row in disk["models"].items():
            line = f"  {model}: {labels.size(row['packages'])} in its installed packages"
            if row.get("assembled"):
                line += f", and {labels.size(row['assembled'])} put together at {row['assembled at']}"
            elif "assembled" in row:
                line += ", and as much again once put together on first use"
            click.echo(line)
    for line in labels.lines(report):
        click.echo(line)


def _new_key(var: str | None, option: str) -> Any:
    from .config import read_key

    if not var:
        raise click.UsageError(f"name the environment variable holding the new passphrase with {option} VAR")
    return read_key(var)


def _echo_key_change(report: dict[str, Any], as_json: bool, done: str) -> None:
    if as_json:
        _print_json(report)
    else:
        click.echo(
            f"{report['path']}: {done} ({report['rows']} rows in {report['tables']} tables checked; "
            f"{report['bytes_before']:,} -> {report['bytes_after']:,} bytes, {report['seconds']:.1f} s)"
        )


def _phases(state: _State) -> Callable[[str], None] | None:
    if state.quiet or not sys.stderr.isatty():
        return None
    return lambda phase: click.echo(f"{phase}…", err=True)


@cli.command()
@click.option(
    "--new-key-env",
    metavar="VAR",
    help="The environment variable holding the passphrase to encrypt with (default: the one "
    "--key-env / LOCALMEM_KEY_ENV names).",
)
@json_option
@click.pass_obj
def encrypt(state: _State, new_key_env: str | None, as_json: bool) -> None:
    """Encrypt the store in place: a new encrypted file is written, checked, then moved over it.

    Needs the cipher build (pip install 'localmem[encrypt]') and no other process using the store.
    """
    from .errors import KeyRequiredError

    key = _new_key(new_key_env or state.config.key_env, "--new-key-env")
    try:
        mem = state.memory("open", keyless=True)
    except KeyRequiredError:
        raise LocalmemError(
            f"{state.config.resolved_db_path()} is already encrypted; change its "
            "passphrase with 'localmem rekey --new-key-env VAR'"
        ) from None
    _echo_key_change(mem.admin.encrypt(key, _phases(state)).to_dict(), as_json, "encrypted")


@cli.command()
@click.option("--new-key-env", metavar="VAR", help="The environment variable holding the new passphrase.")
@json_option
@click.pass_obj
def rekey(state: _State, new_key_env: str | None, as_json: bool) -> None:
    """Change the passphrase of the encrypted store (opened with --key-env) the same safe way."""
    key = _new_key(new_key_env, "--new-key-env")
    _echo_key_change(state.memory("open").admin.rekey(key, _phases(state)).to_dict(), as_json, "passphrase changed")


@cli.command()
@json_option
@click.pass_obj
def decrypt(state: _State, as_json: bool) -> None:
    """Write the encrypted store (opened with --key-env) back as a plain file, the same safe way."""
    _echo_key_change(state.memory("open").admin.decrypt(_phases(state)).to_dict(), as_json, "decrypted")


@cli.command()
@setting_option("llm_workers")
@json_option
@click.pass_obj
def flush(state: _State, workers: int | None, as_json: bool) -> None:
    """Close open episode buffers and extract them with the local LLM."""
    mem = state.memory("read")
    with _progress(state, "extracting episodes") as progress:
        report = mem.extraction.flush(progress, workers=workers)
    if as_json:
        _print_json(report.to_dict())
    else:
        _echo_build(mem.namespace, report.to_dict())


@cli.command()
@click.option(
    "--mode",
    type=click.Choice(CONSOLIDATE_MODES[1:]),
    default=CONSOLIDATE_MODES[1],
    show_default=True,
    help="fast: one LLM call per episode; full: predict, then calibrate (two).",
)
@json_option
@click.pass_obj
def consolidate(state: _State, mode: str, as_json: bool) -> None:
    """Learn lasting knowledge about people from the extracted episodes not consolidated yet."""
    with _progress(state, "consolidating episodes") as progress:
        report = state.memory("read").extraction.consolidate(mode=mode, progress=progress)
    if as_json:
        _print_json(report.to_dict())
    else:
        _echo_consolidation(report.to_dict())


@cli.command()
@click.argument("name")
@click.option(
    "--summary",
    is_flag=True,
    help="Also a few sentences written by the model (kept, and rewritten when knowledge changes).",
)
@json_option
@click.pass_obj
def profile(state: _State, name: str, summary: bool, as_json: bool) -> None:
    """NAME's timeline (episodes, with their role) and what memory knows about them, by aspect."""
    prof = state.memory("read").profile(name, summary=summary)
    if as_json:
        _print_json(prof.to_dict())
        return
    from .text import labels

    also = [a for a in prof.aliases if a.lower() != prof.name.lower()]
    click.echo(f"{prof.name} ({prof.type})" + (f", also: {', '.join(also)}" if also else ""))
    if prof.summary:
        click.echo(f"Summary ({(prof.summary_at or '')[:10]}): {prof.summary}")
    click.echo(f"Timeline: {labels.plural(len(prof.episodes), 'episode')}")
    for ep in prof.episodes:
        click.echo(
            f"  {(ep.time or 'date unknown')[:10]:<12} {ep.role:<10} "
            f"{labels.unit(f'u:{ep.episode_id}', 'episode', ep.title)}"
        )
    if not prof.knowledge:
        click.echo("Knowledge: none yet (run 'localmem consolidate' after extraction)")
        return
    click.echo("Knowledge:")
    for aspect, lines in prof.knowledge.items():
        click.echo(f"  {aspect}")
        for st in lines:
            when = (st.time or "date unknown")[:10]
            sources = f" [from {labels.external_ids(st.sources)}]" if st.sources else ""
            state_note = (
                "" if st.current else f" (until {(st.until or '?')[:10]}, replaced by the newer u:{st.superseded_by})"
            )
            click.echo(f"    {when:<12} {st.text}{sources}{state_note}")


@cli.command()
@click.option("--limit", default=DEFAULT_LIST_LIMIT, show_default=True, help="At most this many rows.")
@json_option
@click.pass_obj
def episodes(state: _State, limit: int, as_json: bool) -> None:
    """The episodes of the namespace in time order."""
    rows = [r.to_dict() for r in state.memory("read").browse.episodes(limit)]
    if as_json:
        _print_json(rows)
        return
    from .text.labels import plural

    for r in rows:
        when = (r["start"] or "")[:16].replace("T", " ")
        click.echo(
            f"{r['id']:<8} {when}  [{r['stage']}] {r['title'] or '(not extracted)'} ({plural(r['messages'], 'message')})"
        )


@cli.command()
@click.option("--entity", help="Only facts mentioning this entity (name or alias).")
@click.option("--from", "start", help="Only facts at or after this date (YYYY-MM-DD).")
@click.option("--to", "end", help="Only facts at or before this date.")
@click.option("--limit", default=DEFAULT_LIST_LIMIT, show_default=True, help="At most this many rows.")
@json_option
@click.pass_obj
def facts(state: _State, entity: str | None, start: str | None, end: str | None, limit: int, as_json: bool) -> None:
    """Facts (subject – predicate – object) with their times."""
    rows = [r.to_dict() for r in state.memory("read").browse.facts(entity=entity, start=start, end=end, limit=limit)]
    if as_json:
        _print_json(rows)
        return
    for r in rows:
        when = r["occurred_start"] or f"said {str(r['mentioned_at'])[:10]}"
        click.echo(f"{r['id']:<8} {when:<12} {r['subject']} | {r['predicate']} | {r['object']}")


@cli.command()
@click.option("--limit", default=DEFAULT_LIST_LIMIT, show_default=True, help="At most this many rows.")
@json_option
@click.pass_obj
def entities(state: _State, limit: int, as_json: bool) -> None:
    """Resolved entities with their aliases and how often they are mentioned."""
    rows = [r.to_dict() for r in state.memory("read").browse.entities(limit)]
    if as_json:
        _print_json(rows)
        return
    from .text.labels import plural, value

    for r in rows:
        # the store joins them with ", " (a list where a backend gives one)
        given = r["aliases"].split(", ") if isinstance(r["aliases"], str) else r["aliases"] or []
        also = [a for a in given if a and a != r["name"]]
        click.echo(
            f"e:{r['id']:<5} {r['name']} ({r['type']}), in {plural(r['units'], 'unit')}"
            + (f"; also called {value(also)}" if also else "")
        )


@cli.command()
@click.argument("item", metavar="m:ID|u:ID")
@json_option
@click.pass_obj
def show(state: _State, item: str, as_json: bool) -> None:
    """One memory in full: a message (m:ID) with its source, metadata, corrections and the units
    resting on it, or a unit (u:ID) with its source messages, entities and links."""
    found = state.memory("read").browse.get(item).to_dict()
    if as_json:
        _print_json(found)
    elif found["kind"] == "message":
        _echo_message(found)
    else:
        _echo_unit(found)


def _echo_message(m: dict[str, Any]) -> None:
    from .text import labels

    click.echo(f"{labels.message_of(m)} (a message)")
    click.echo(f"  {m['speaker']}{' (' + m['role'] + ')' if m['role'] else ''}: {m['text']}")
    if m["meta"]:
        click.echo("  meta: " + ", ".join(f"{k}={labels.value(v)}" for k, v in m["meta"].items()))
    if m["replaced_by"]:
        click.echo(f"  replaced by the correction {m['replaced_by']}")
    if m["replaces"]:
        click.echo(f"  corrects the message {m['replaces']}")
    src = m["source"]
    click.echo(f"  from {labels.source(src['id'], src['uri'], src['kind'])}")
    if m["units"]:
        click.echo(f"  what rests on it ({len(m['units'])}):")
    for unit in m["units"]:
        click.echo(f"    {labels.unit(unit['id'], unit['kind'], text=unit['text'], width=100)}")


def _echo_unit(unit: dict[str, Any]) -> None:
    from .text import labels

    click.echo(labels.unit(unit["id"], unit["kind"], unit["title"]) + f"\n  {unit['text']}")
    if unit["occurred_start"] or unit["occurred_end"]:
        span = labels.when(unit["occurred_start"], "?")
        if unit["occurred_end"] and unit["occurred_end"] != unit["occurred_start"]:
            span += f" to {labels.when(unit['occurred_end'])}"
        click.echo(f"  when it happened: {span}" + (f" (to the {unit['precision']})" if unit["precision"] else ""))
    if unit["mentioned_at"]:
        click.echo(f"  said {labels.when(unit['mentioned_at'])}")
    if unit["sources"]:
        click.echo(f"  it rests on {labels.plural(len(unit['sources']), 'message')}:")
    for src in unit["sources"]:
        click.echo(f"    {labels.message_of(src)}: {_clip(src['text'], 120)}")
    for ent in unit["entities"]:
        click.echo(f"  names e:{ent['id']} {ent['name']} ({ent['role']}{', ' + ent['tag'] if ent['tag'] else ''})")
    for ln in unit["links"]:
        click.echo(
            f"  {ln['direction']} link ({ln['type']}, weight {ln['weight']:.2f}): "
            f"{labels.unit(ln['id'], ln['kind'], text=ln['text'])}"
        )


@cli.command()
@click.option("--verify", is_flag=True, help="Also check every file's sha256 (reads every byte).")
@json_option
@click.pass_obj
def models(state: _State, verify: bool, as_json: bool) -> None:
    """The models localmem knows: installed or not, where, size and checksum status."""
    from .models import catalog as models_mod

    rows = models_mod.status(state.config, verify=verify)
    if as_json:
        _print_json(rows)
        return
    for r in rows:
        click.echo(
            f"{r['id']} ({r['role']}): {r['status']}, {r['size'] / 1e6:.0f} MB, "
            f"checksum {r['checksum']}\n    {r['path'] or r['install']}"
        )


def _listen_address(
    value: str,
    allow_remote: bool,
    flag: str = "--http",
    risk: str = "the server has no authentication (whoever reaches it can read and delete this memory)",
    any_port: bool = False,
) -> tuple[str, int]:
    """HOST:PORT (or PORT alone, on 127.0.0.1) from --http; a host other machines can reach only
    with --allow-remote. ``any_port``: port 0 (any free port) is allowed."""
    import ipaddress

    host, sep, port_text = value.rpartition(":")
    host = host.strip("[]") if sep else "127.0.0.1"
    low = 0 if any_port else 1
    try:
        port = int(port_text)
        if not low <= port <= 65535:
            raise ValueError
    except ValueError:
        raise ConfigError(
            f"{flag} {value}: expected HOST:PORT with a port from {low} to 65535, such as 127.0.0.1:8765"
            + (" (0: any free port)" if any_port else "")
        ) from None
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False  # a host name other than localhost may resolve to any address
    if not loopback and not allow_remote:
        raise ConfigError(
            f"{flag} {value}: {host} is not a loopback address, and {risk}",
            f"use 127.0.0.1:{port}, or add --allow-remote if you mean it",
        )
    return host, port


@cli.command(name="mcp")
@click.option(
    "--http",
    "http_address",
    metavar="HOST:PORT",
    help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (a loopback address "
    "such as 127.0.0.1:8765, unless --allow-remote).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow --http on an address other machines can reach (there is no authentication).",
)
@setting_option(
    "extract",
    "'llm': episodes closed by remember are extracted with the local LLM in the background and flushed at shutdown.",
)
@click.option("--log-file", type=click.Path(path_type=Path, readable=False), help="Log to this file instead of stderr.")
@click.pass_context
def mcp_command(
    ctx: click.Context, http_address: str | None, allow_remote: bool, extract: str | None, log_file: Path | None
) -> None:
    """Serve this store and namespace to MCP assistants (Claude Desktop, Cursor, VS Code, Claude
    Code...): tools remember, search, ask, profile, recent, forget, stats. Stdio by default."""
    state: _State = ctx.obj
    address = _listen_address(http_address, allow_remote) if http_address else None
    try:
        from . import mcp_server
    except ImportError as exc:
        if (exc.name or "").split(".")[0] in ("mcp", "mcp_types", "pydantic", "anyio", "uvicorn", "starlette"):
            raise MissingDependencyError("mcp", "mcp") from exc
        raise
    if extract:
        state.config = replace(state.config, extract=extract)
    mcp_server.serve(state.memory("write"), http=address, log_file=log_file, debug=state.debug)


@cli.command(name="serve")
@click.option(
    "--address",
    default="127.0.0.1:8770",
    show_default=True,
    metavar="HOST:PORT",
    help="Where to listen: a loopback address, unless --allow-remote; port 0 takes any free port.",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow an address other machines can reach (they still need the token; the traffic is not encrypted).",
)
@setting_option(
    "extract",
    "'llm': messages added or imported are built into memory by the local LLM in the background, flushed at shutdown.",
)
@setting_option("serve_token_env")
@click.option("--log-file", type=click.Path(path_type=Path, readable=False), help="Log to this file instead of stderr.")
@click.pass_context
def serve_command(
    ctx: click.Context,
    address: str,
    allow_remote: bool,
    extract: str | None,
    token_env: str | None,
    log_file: Path | None,
) -> None:
    """See and curate this memory in a browser, with a JSON API (/api) and MCP (/mcp) for programs.
    Once it listens, prints the URL to open, with its token; Ctrl-C stops."""
    state: _State = ctx.obj
    host, port = _listen_address(
        address,
        allow_remote,
        "--address",
        "its traffic, the token included, is plain HTTP that others can read",
        any_port=True,
    )
    try:
        from .serve import app as serve_app
    except ImportError as exc:
        if (exc.name or "").split(".")[0] in ("mcp", "mcp_types", "pydantic", "anyio", "uvicorn", "starlette"):
            raise MissingDependencyError(exc.name or "starlette", "mcp") from exc
        raise
    if extract:
        state.config = replace(state.config, extract=extract)
    if token_env:
        state.config = replace(state.config, serve_token_env=settings()["serve_token_env"].parse(token_env))
    state.config.serve_token()  # a token variable that is not set stops here, before the store opens
    serve_app.serve(
        state.memory("write"),
        host,
        port,
        allow_remote=allow_remote,
        log_file=log_file,
        debug=state.debug,
        announce=lambda link: click.echo(f"localmem: open {link}"),
    )


@cli.group(name="postgres")
def postgres_() -> None:
    """A local PostgreSQL server (with pgvector) for a store: --db postgresql://... (pip install 'localmem[postgres]')."""


_pg_data = click.option(
    "--data",
    "data_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The server's data directory; without it, a folder named postgres in the user data dir.",
)


def _pg_state(state: Any, as_json: bool, export: bool = False) -> None:
    """``export``: also the line to paste into a shell (postgres start)."""
    import shlex

    data = {"data_dir": state.data_dir, "running": state.running, "pid": state.pid, "url": state.url}
    if state.stopped:
        data["stopped"] = True
    if as_json:
        _print_json(data)
    elif state.running:
        if export:  # the URL, as the line to paste: every command in that shell then uses it
            click.echo(f"running (pid {state.pid}); to use it as the store, paste:")
            click.echo(f"export LOCALMEM_DB={shlex.quote(state.url)}")
        else:
            click.echo(f"running (pid {state.pid}): --db '{state.url}'")
    else:
        click.echo(f"{'stopped' if state.stopped else 'not running'} ({state.data_dir})")


def _pg_dir(data_dir: Path | None) -> Path:
    from .config import home_dir, user_data_dir

    return data_dir or (home_dir() or user_data_dir()) / "postgres"


@postgres_.command(name="start")
@_pg_data
@json_option
def postgres_start(data_dir: Path | None, as_json: bool) -> None:
    """Start the local server (made on first use) on a Unix socket; print the store's URL."""
    from .store import pgserver

    _pg_state(pgserver.start(_pg_dir(data_dir)), as_json, export=True)


@postgres_.command(name="stop")
@_pg_data
@json_option
def postgres_stop(data_dir: Path | None, as_json: bool) -> None:
    """Stop the local server."""
    from .store import pgserver

    _pg_state(pgserver.stop(_pg_dir(data_dir)), as_json)


@postgres_.command(name="status")
@_pg_data
@json_option
def postgres_status(data_dir: Path | None, as_json: bool) -> None:
    """Whether the local server runs, and its URL."""
    from .store import pgserver

    _pg_state(pgserver.status(_pg_dir(data_dir)), as_json)


@postgres_.command(name="grant")
@click.argument("role")
@click.argument("namespaces", nargs=-1, required=True)
@click.option(
    "--password-env",
    metavar="VAR",
    help="Set the role's password from this environment variable (never an argument); without it, the "
    "role's password is left as it is (none for a new role: the server's other authentication applies). "
    "A server that trusts the connection (localmem postgres start's socket) asks for no password at all: "
    "grant warns when it can tell.",
)
@json_option
@click.pass_obj
def postgres_grant(
    state: _State, role: str, namespaces: tuple[str, ...], password_env: str | None, as_json: bool
) -> None:
    """Let login role ROLE (made if missing) use this PostgreSQL store's NAMESPACES and no other:
    the server's row-level security hides and protects every other namespace's rows from it.
    Run as the store's owner (--db with the owner's URL)."""
    password = None
    if password_env:
        password = os.environ.get(password_env, "")
        if not password:
            raise ConfigError(f"the password environment variable {password_env} is not set or is empty")
    mem = state.memory("open")
    done = mem.admin.grant(role, list(namespaces), password=password)
    if as_json:
        _print_json(done)
        return
    click.echo(f"role {done['role']} may use namespace(s): {', '.join(done['namespaces'])}")
    for warning in done["warnings"]:
        click.echo(f"warning: {warning}", err=True)
    if not done["may_vacuum"]:
        click.echo("its forgets delete rows; the owner's 'localmem vacuum' removes their bytes (PostgreSQL < 17)")


# The surface a command plugin builds on (see PLUGIN_GROUP and localmem_bench/cli.py): a group whose
# commands take the global options, the state they are given (click.pass_obj), and the printers.
CommandGroup = _SubGroup
State = _State
print_json = _print_json
progress = _progress


def main() -> None:
    cli(prog_name="localmem")


if __name__ == "__main__":  # pragma: no cover
    main()
