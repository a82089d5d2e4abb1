"""The ``llm-wiki`` command: a thin adapter over the library (the cli package is the only code
importing click).

Each command resolves the wiki and reader, calls one Session method, and prints human text or
``--json``. This module holds the root group, the options and helpers every command shares, and
where each command is defined (:data:`COMMANDS`): ``write`` in :mod:`.write`, ``show`` and
``list`` in :mod:`.reads`, ``query`` in :mod:`.query`, the jobs, skills, agents, mcp, serve and
token commands in :mod:`.setup`, the rest in :mod:`.commands`, each module imported only when one
of its commands runs, so ``write``, ``show``, ``list`` and ``query`` load nothing else. Library
modules are imported inside the commands (each marked ``# deferred: start-up``) for the same
reason.
"""

from __future__ import annotations

import functools
import gc
import inspect
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

from llm_wiki.errors import InvalidInput, WikiError, storage_failure

F = TypeVar("F", bound=Callable[..., Any])


class _ExampleHelp:
    """Help whose ``Example usage:`` lines are printed as written, not re-wrapped."""

    help: str | None

    def get_short_help_str(self, limit: int = 45) -> str:
        """The whole first sentence in a group's command list (wrapped), never cut off."""
        return super().get_short_help_str(limit=500)  # type: ignore[misc]

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        import textwrap  # deferred: start-up (only --help formats text)

        text, _, examples = inspect.cleandoc(self.help or "").partition("Example usage:")
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(text.strip())
            if examples.strip():
                formatter.write_paragraph()
                formatter.write_text("Example usage:")
                formatter.write_paragraph()
                lines = [ln for ln in examples.splitlines() if ln.strip() != "\b"]
                for line in textwrap.dedent("\n".join(lines)).strip("\n").splitlines():
                    formatter.write(f"{'':>{formatter.current_indent + 4}}{line}\n".rstrip(" "))


class _UsageError(click.UsageError):
    """A usage error as one line, like every other error (click prints three)."""

    def show(self, file: Any = None) -> None:
        click.echo(f"Error: {self.message}", file=file, err=True)


def _one_line(exc: click.UsageError) -> click.UsageError:
    """``Error: <what>; see `llm-wiki CMD --help`.`` in place of click's usage block."""
    if isinstance(exc, _UsageError | click.exceptions.NoArgsIsHelpError):
        return exc
    text = exc.format_message().strip()
    where = exc.ctx.command_path if exc.ctx is not None else "llm-wiki"
    if text.rstrip(")").endswith("?"):  # "No such option: --bodyy. (Did you mean ...?)"
        return _UsageError(f"{text} See `{where} --help`.", exc.ctx)
    return _UsageError(f"{text.rstrip('.')}; see `{where} --help`.", exc.ctx)


MAX_ARGS = 5_000  # click's parser takes quadratic time in the number of arguments


class _OneLineErrors:
    """Parse errors (bad flags, missing arguments) as one line on stderr, exit 2."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        argv = args[1] if len(args) > 1 else kwargs.get("args", ())
        if len(argv) > MAX_ARGS:
            raise _UsageError(
                f"{len(argv)} command-line arguments, over {MAX_ARGS}; put the entry in a file "
                "and pass --from FILE."
            )
        try:
            return super().make_context(*args, **kwargs)  # type: ignore[misc]
        except click.UsageError as exc:
            raise _one_line(exc) from None


_QUIET, _VERBOSE = "llm_wiki.quiet", "llm_wiki.verbose"


def _remember(key: str) -> Callable[[click.Context, click.Parameter, bool], None]:
    def callback(ctx: click.Context, param: click.Parameter, value: bool) -> None:
        if value:
            ctx.find_root().meta[key] = True

    return callback


def _show_help(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(ctx.get_help(), color=ctx.color)
        ctx.exit()


class _Verbosity:
    """``-q/--quiet`` and ``-v/--verbose`` on every command and group (before the command name
    too); what they change is read through :func:`_quiet`, :func:`_verbose` and
    :func:`_progress`. And ``-h/--help``, last, as click would add it: click's asks gettext for
    its help text at every run, and gettext's first question loads and asks the locale module
    (~1 ms of every command); click adds none of its own where a parameter holds the names."""

    params: list[click.Parameter]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.append(
            click.Option(
                ["-q", "--quiet"],
                is_flag=True,
                expose_value=False,
                callback=_remember(_QUIET),
                help="No progress, notes or warnings on stderr: results and errors only.",
            )
        )
        self.params.append(
            click.Option(
                ["-v", "--verbose"],
                is_flag=True,
                expose_value=False,
                callback=_remember(_VERBOSE),
                help="On stderr: a line per step of a long run (terminal or not), and at the "
                "end what the command took.",
            )
        )
        self.params.append(
            click.Option(
                ["-h", "--help"],
                is_flag=True,
                is_eager=True,
                expose_value=False,
                callback=_show_help,
                help="Show this message and exit.",
            )
        )


def _flag(key: str) -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.find_root().meta.get(key))


def _quiet() -> bool:
    return _flag(_QUIET) and not _flag(_VERBOSE)


def _note(text: str) -> None:
    """A note or warning on stderr, unless -q."""
    if not _quiet():
        click.echo(text, err=True)


def _progress(as_json: bool = False) -> Any:
    """What a long run shows on stderr: with -v a line per step; on a terminal (not --json,
    not -q) one line rewritten in place; else nothing (None)."""
    from llm_wiki.progress import TerminalProgress  # deferred: start-up

    if _flag(_VERBOSE):
        return TerminalProgress(sys.stderr, verbose=True)
    if _quiet() or as_json or not _isatty(sys.stderr):
        return None
    return TerminalProgress(sys.stderr)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class _Command(_Verbosity, _OneLineErrors, _ExampleHelp, click.Command):
    pass


class _Group(_Verbosity, _OneLineErrors, _ExampleHelp, click.Group):
    """Turns every WikiError into one line on stderr and its exit code; with -v, says at the
    end how long the command took."""

    command_class = _Command

    def invoke(self, ctx: click.Context) -> Any:
        if ctx.parent is not None:
            return self._invoke(ctx)
        import time  # deferred: cheap, kept beside its one use

        start, cpu = time.monotonic(), time.process_time()
        try:
            return self._invoke(ctx)
        finally:
            if ctx.meta.get(_VERBOSE) and ctx.invoked_subcommand:
                took, used = time.monotonic() - start, time.process_time() - cpu
                name = ctx.invoked_subcommand
                click.echo(f"llm-wiki {name}: {took:.2f} s ({used:.2f} s of CPU)", err=True)

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except WikiError as exc:
            click.echo(f"Error: {exc.message}", err=True)
            ctx.exit(exc.exit_code)
        except BrokenPipeError:  # `llm-wiki list | head`
            sys.stderr.close()
            ctx.exit(1)
        except KeyboardInterrupt:  # Ctrl-C: one line, as every error (click said "Aborted!")
            click.echo("Error: interrupted; run the command again to finish its work.", err=True)
            ctx.exit(130)
        except click.UsageError as exc:  # an unknown command
            raise _one_line(exc) from None
        except Exception as exc:  # a full disk, a read-only folder, a file-size limit: not a bug
            failure = storage_failure(exc)
            if failure is None:
                raise
            click.echo(f"Error: {failure.message}", err=True)
            ctx.exit(1)


def _wiki_options(func: F) -> F:
    """``--wiki`` and ``--as`` on a command (they may also come before the command name)."""
    func = click.option(
        "--as",
        "reader",
        metavar="READER",
        default=None,
        help="Who is reading (walls); else LLM_WIKI_READER.",
    )(func)
    return _wiki_option(func)


def _wiki_option(func: F) -> F:
    """``--wiki`` alone, for commands that read no entries (schedule)."""
    return click.option(
        "--wiki",
        "wiki_path",
        metavar="PATH",
        default=None,
        help="The wiki folder; else LLM_WIKI_DIR, the nearest wiki upward, or ~/llm-wiki.",
    )(func)


def _session(wiki_path: str | None, reader: str | None) -> Any:
    """The Session for this invocation (command flags win over group flags): the wiki, and the
    reader it reads as; which viewer, which backend and the disk-command policy are its to
    decide."""
    from llm_wiki.session import open as open_session  # deferred: start-up

    obj = click.get_current_context().find_root().obj or {}
    return open_session(wiki_path or obj.get("wiki_path"), reader or obj.get("reader"))


class _BackendOption(click.Option):
    """``--backend``, its help naming the backends the registry offers, looked up only when
    help is shown (the registry's module is not loaded for --help)."""

    def __init__(self, *args: Any, template: str, llm_only: bool, **kwargs: Any) -> None:
        kwargs["help"] = template
        super().__init__(*args, **kwargs)
        self.template = template
        self.llm_only = llm_only

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        from llm_wiki.backends import backend_names  # deferred: start-up

        self.help = self.template.format(names=" | ".join(backend_names(llm_only=self.llm_only)))
        return super().get_help_record(ctx)


def _backend_options(what: str = "The backend", *, llm_only: bool = False) -> Callable[[F], F]:
    """``--backend NAME`` and ``--model``, the same on every command that asks an LLM."""

    def decorate(func: F) -> F:
        func = click.option(
            "--model", help="The backend's model; else LLM_WIKI_MODEL, settings.yaml."
        )(func)
        return click.option(
            "--backend",
            metavar="NAME",
            cls=_BackendOption,
            template=f"{what}: {{names}}; else LLM_WIKI_BACKEND, settings.yaml.",
            llm_only=llm_only,
        )(func)

    return decorate


def _collector_held(func: F) -> F:
    """A command that runs with the cyclic garbage collector held off (and on again after, as
    it was): for a command whose work is short and bounded, such as ``write``, whose passes over
    the modules it loads (~18 ms of imports) cost more than its catalog work. Reference counting
    frees what it makes as before; only cycles wait for the collector's next pass."""

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        was = gc.isenabled()
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            if was:
                gc.enable()

    return run  # type: ignore[return-value]


def _print_json(data: Any) -> None:
    import json  # deferred: start-up (only --json prints it)

    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


_json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for agents.")


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from llm_wiki.version import __version__  # deferred: cheap, but only --version needs it

        click.echo(f"llm-wiki, version {__version__}", color=ctx.color)
        ctx.exit()


# click.version_option, as it prints and describes itself, without its gettext (see _Verbosity)
_version_option = click.option(
    "--version",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=_show_version,
    help="Show the version and exit.",
)


# Each command is defined in the module named here and imported only when it runs (or when
# --help lists them all): defining ~45 commands' options costs more than some commands' work.
COMMANDS = {  # in the order of the help examples (write before show)
    "init": "llm_wiki.cli.commands:wiki_init",
    "write": "llm_wiki.cli.write:entry_write",
    "show": "llm_wiki.cli.reads:entry_show",
    "list": "llm_wiki.cli.reads:entry_list",
    "index": "llm_wiki.cli.commands:index_build",
    "site": "llm_wiki.cli.commands:wiki_site",
    "verify": "llm_wiki.cli.commands:wiki_verify",
    "stats": "llm_wiki.cli.commands:wiki_stats",
    "consolidate": "llm_wiki.cli.commands:wiki_consolidate",
    "archive": "llm_wiki.cli.commands:wiki_archive",
    "sync": "llm_wiki.cli.commands:wiki_sync",
    "lint": "llm_wiki.cli.commands:wiki_lint",
    "query": "llm_wiki.cli.query:wiki_query",
    "import-adr": "llm_wiki.cli.commands:adr_import",
    "eval": "llm_wiki.cli.commands:wiki_eval",
    "ingest": "llm_wiki.cli.commands:wiki_ingest",
    "brief": "llm_wiki.cli.commands:wiki_brief",
    "schedule": "llm_wiki.cli.setup:schedule_group",
    "skills": "llm_wiki.cli.setup:skills_group",
    "agents": "llm_wiki.cli.setup:agents_group",
    "mcp": "llm_wiki.cli.setup:wiki_mcp",
    "serve": "llm_wiki.cli.setup:wiki_serve",
    "token": "llm_wiki.cli.setup:token_group",
}


class _LazyCommands(dict):  # type: ignore[type-arg]
    """A group's commands, each imported from its module the first time it is looked up
    (click's "lazily loading subcommands" pattern, kept in ``Group.commands`` so that
    ``cli.commands[name]`` and listing every command work as they do on a plain group)."""

    def __init__(self, where: dict[str, str]) -> None:
        super().__init__()
        self._where = dict(where)
        self._order = list(where)

    def _load(self, name: str) -> None:
        import importlib  # deferred: cheap, kept beside its one use

        module, _, attr = self._where.pop(name).partition(":")
        command = getattr(importlib.import_module(module), attr)
        super().__setitem__(name, command)

    def __getitem__(self, name: str) -> Any:
        if name in self._where:
            self._load(name)
        return super().__getitem__(name)

    def __setitem__(self, name: str, command: Any) -> None:  # Group.add_command
        self._where.pop(name, None)
        super().__setitem__(name, command)

    def get(self, name: str, default: Any = None) -> Any:
        if name in self._where:
            self._load(name)
        return super().get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._where or super().__contains__(name)

    def __iter__(self) -> Iterator[str]:
        return iter([*self._order, *(n for n in dict.__iter__(self) if n not in self._order)])

    def __len__(self) -> int:
        return len(self._where) + super().__len__()

    def keys(self) -> Any:
        return list(self)

    def values(self) -> Any:
        return [self[name] for name in self]

    def items(self) -> Any:
        return [(name, self[name]) for name in self]


@click.group(
    name="llm-wiki",
    cls=_Group,
    commands=_LazyCommands(COMMANDS),
    context_settings={"help_option_names": ["-h", "--help"]},
)
@_version_option
@_wiki_options
@click.pass_context
def cli(ctx: click.Context, wiki_path: str | None, reader: str | None) -> None:
    """A compounding memory for people and AI agents.

    An append-only archive of typed, immutable markdown entries (decisions with the alternatives
    they rejected, incidents, syntheses, reflections), a generated INDEX.md, and an LLM that
    answers questions from it with citations.

    Example usage:

        llm-wiki init ~/llm-wiki
        llm-wiki write --type decision --domain platform --summary "Use Postgres" \\
            --alt "mysql: weaker JSON support"
        llm-wiki list --domain platform
    """
    ctx.obj = {"wiki_path": wiki_path, "reader": reader}


def _read_input(name: str, flag: str, cap: int) -> str:
    """A file's (or stdin's) text, read no further than ``cap`` bytes (``--from /dev/zero``)."""
    from llm_wiki.entries import decode_text  # deferred: start-up

    try:
        if name == "-":
            raw = sys.stdin.buffer.read(cap + 1)
        else:
            with open(name, "rb") as fh:
                raw = fh.read(cap + 1)
    except OSError as exc:
        raise InvalidInput(f"{flag} {name}: {exc.strerror}; check the path.") from None
    if len(raw) > cap:
        raise InvalidInput(
            f"{flag} {name} is over {cap} bytes (schema.md limits.max_input_bytes); write a "
            "shorter entry, and store big sources with `llm-wiki ingest`."
        )
    return decode_text(raw, f"{flag} {name}")


def _short(text: str, limit: int = 110) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def main() -> None:
    try:  # the C module: `signal` wraps it in enums, ~0.7 ms of every command
        import _signal as signal  # deferred: start-up (only the real command line needs it)
    except ImportError:  # pragma: no cover - not CPython
        import signal  # type: ignore[no-redef]  # deferred: as above

    if hasattr(signal, "SIGXFSZ"):  # a file-size limit (ulimit -f): an error, not a kill
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    # What start-up made (the modules, click's classes, the root group) lives as long as the
    # process: frozen, the cyclic collector no longer walks it on each of the command's passes
    # (~6-8% of `write`'s CPU, as much as its catalog work). It still collects all the command
    # makes; a cycle already garbage here (a few, from imports) is kept until exit.
    gc.freeze()
    cli(prog_name="llm-wiki")


if __name__ == "__main__":  # pragma: no cover
    main()
