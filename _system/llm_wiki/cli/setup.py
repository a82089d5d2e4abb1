"""The `llm-wiki` commands that set the machinery up around a wiki: the scheduled jobs, the
agent skills and context, the MCP server, the HTTP server and its tokens (loaded only when one
of them runs, or for --help)."""

from __future__ import annotations

import sys
from typing import Any

import click

from llm_wiki.cli import (
    F,
    _Command,
    _Group,
    _json_option,
    _note,
    _print_json,
    _session,
    _wiki_option,
    _wiki_options,
)

# --------------------------------------------------------------------------- schedule


@click.group(name="schedule", cls=_Group)
def schedule_group() -> None:
    """Run the jobs unattended: launchd agents (macOS) or systemd user timers (Linux).

    Jobs: consolidate nightly, brief daily, archive monthly (catching up when a 1st was missed),
    lint weekly; with --jobs ingest,sync also the inbox ingest every 5 minutes and sync hourly.
    Each runs its _system/bin/ script and logs to <wiki>/.llm-wiki/logs/<job>.log (rotated past
    1 MiB). Job names carry the wiki (schedule.name in settings.yaml, else a hash of its path),
    so each wiki keeps its own. The API key and PATH additions go in ONE env file
    (~/.config/llm-wiki/env, mode 0600), never in a plist or unit. LLM_WIKI_LAUNCHCTL /
    LLM_WIKI_SYSTEMCTL replace the manager command.

    Example usage:

    \b
        llm-wiki schedule install
        llm-wiki schedule install --jobs ingest,sync
        llm-wiki schedule status
        llm-wiki schedule render --platform launchd --out ./agents
        llm-wiki schedule uninstall
    """


_jobs_option = click.option(
    "--jobs",
    metavar="LIST",
    help="Optional jobs too, comma-separated: ingest (inbox, every 5 min), sync (hourly), or all.",
)


def _schedule_options(func: F) -> F:
    for option in reversed(
        [
            _jobs_option,
            click.option(
                "--platform",
                type=click.Choice(["launchd", "systemd"]),
                help="Default: launchd on macOS, systemd elsewhere.",
            ),
            click.option(
                "--python",
                "python",
                metavar="PATH",
                help="The Python the jobs run (default: this one, absolute).",
            ),
            click.option(
                "--bin",
                "bin_dir",
                metavar="DIR",
                help="The job scripts (default: this checkout's _system/bin).",
            ),
            click.option(
                "--env-file",
                metavar="FILE",
                help="The env file (default: LLM_WIKI_ENV_FILE or ~/.config/llm-wiki/env).",
            ),
        ]
    ):
        func = option(func)
    return _wiki_option(func)


def _schedule_layout(
    wiki_path: str | None, python: str | None, bin_dir: str | None, env_file: str | None
) -> Any:
    from llm_wiki.schedule import layout  # deferred: start-up

    root = _session(wiki_path, None).root  # the reader plays no part: the jobs run for all
    return layout(root, python=python, bin_dir=bin_dir, env_file=env_file)


def _platform(platform: str | None) -> str:
    from llm_wiki.schedule import default_platform  # deferred: start-up

    return platform or default_platform()


@schedule_group.command(name="render")
@click.option("--out", metavar="DIR", help="Write the files into DIR instead of printing them.")
@_schedule_options
@_json_option
def schedule_render(
    out: str | None,
    jobs: str | None,
    platform: str | None,
    python: str | None,
    bin_dir: str | None,
    env_file: str | None,
    as_json: bool,
    wiki_path: str | None,
) -> None:
    """Print (or write to --out DIR) the plists or units for this wiki; install nothing.

    Example usage:

        llm-wiki schedule render --platform systemd
        llm-wiki schedule render --platform launchd --out ./agents
    """
    from pathlib import Path  # deferred: pathlib is not loaded for --help

    from llm_wiki.schedule import STANDARD, pick_jobs, render, write_rendered  # deferred: start-up

    where = _schedule_layout(wiki_path, python, bin_dir, env_file)
    files = render(_platform(platform), where, STANDARD + pick_jobs(jobs))
    if out is not None:
        paths = write_rendered(files, Path(out).expanduser())
        if as_json:
            _print_json({"files": [str(p) for p in paths], "layout": where.to_dict()})
        else:
            for path in paths:
                click.echo(f"Wrote {path}")
    elif as_json:
        _print_json({"files": [f.to_dict() for f in files], "layout": where.to_dict()})
    else:
        for item in files:
            click.echo(f"# ---- {item.name}")
            click.echo(item.text)


@schedule_group.command(name="install")
@click.option("--dest", metavar="DIR", help="Where the files go (default: the manager's folder).")
@_schedule_options
@_json_option
def schedule_install(
    dest: str | None,
    jobs: str | None,
    platform: str | None,
    python: str | None,
    bin_dir: str | None,
    env_file: str | None,
    as_json: bool,
    wiki_path: str | None,
) -> None:
    """Install and load the jobs; create the env file (mode 0600) if it is missing.

    launchd: ~/Library/LaunchAgents/com.llm-wiki.<wiki>.<job>.plist, then `launchctl
    bootstrap`. systemd: ~/.config/systemd/user/llm-wiki-<wiki>-<job>.{service,timer}, then
    `systemctl --user enable --now` the timers. Installing again replaces them and keeps the
    optional jobs installed before; the unnamed jobs of an earlier version that ran this wiki
    are removed.

    Example usage:

        llm-wiki schedule install
        llm-wiki schedule install --jobs ingest,sync
        llm-wiki schedule install --platform systemd --dest ~/.config/systemd/user
    """
    from pathlib import Path  # deferred: pathlib is not loaded for --help

    from llm_wiki.schedule import install, pick_jobs  # deferred: start-up

    where = _schedule_layout(wiki_path, python, bin_dir, env_file)
    result = install(
        _platform(platform),
        where,
        dest=Path(dest).expanduser() if dest else None,
        jobs=pick_jobs(jobs),
    )
    if as_json:
        _print_json(result.to_dict())
        return
    for path in result.replaced:
        click.echo(f"Removed {path} (an earlier version's job for this wiki)")
    for path in result.files:
        click.echo(f"Installed {path}")
    for command in result.commands:
        click.echo(f"Ran {command}")
    if result.env_created:
        click.echo(
            f"Created {result.env_file} (mode 0600): put ANTHROPIC_API_KEY or PATH additions there."
        )
    for note in result.notes:
        _note(f"warning: {note}")
    click.echo(f"Logs go to {where.log_dir}/<job>.log; check them with `llm-wiki schedule status`.")


@schedule_group.command(name="uninstall")
@click.option("--dest", metavar="DIR", help="Where the files are (default: the manager's folder).")
@click.option("--platform", type=click.Choice(["launchd", "systemd"]), help="Default: this OS's.")
@click.option("--jobs", metavar="LIST", help="Only these jobs, comma-separated (default: all).")
@_json_option
@_wiki_option
def schedule_uninstall(
    dest: str | None,
    platform: str | None,
    jobs: str | None,
    as_json: bool,
    wiki_path: str | None,
) -> None:
    """Unload and remove this wiki's jobs; the env file, the logs and other wikis' jobs stay.

    Example usage:

        llm-wiki schedule uninstall
        llm-wiki schedule uninstall --jobs sync
    """
    from pathlib import Path  # deferred: pathlib is not loaded for --help

    from llm_wiki.schedule import pick_jobs, uninstall, wiki_name  # deferred: start-up
    from llm_wiki.wiki import resolve_wiki  # deferred: start-up

    obj = click.get_current_context().find_root().obj or {}
    wiki = resolve_wiki(wiki_path or obj.get("wiki_path"))
    result = uninstall(
        _platform(platform),
        wiki_name(wiki.root),
        dest=Path(dest).expanduser() if dest else None,
        jobs=pick_jobs(jobs),
    )
    if as_json:
        _print_json(result.to_dict())
        return
    for path in result.removed:
        click.echo(f"Removed {path}")
    if not result.removed:
        click.echo(f"No llm-wiki jobs of this wiki installed in {result.dest}.")


@schedule_group.command(name="status")
@click.option("--dest", metavar="DIR", help="Where the files are (default: the manager's folder).")
@_schedule_options
@_json_option
def schedule_status(
    dest: str | None,
    jobs: str | None,
    platform: str | None,
    python: str | None,
    bin_dir: str | None,
    env_file: str | None,
    as_json: bool,
    wiki_path: str | None,
) -> None:
    """For each job: installed, current, loaded, and how its last run ended.

    The last run's exit code and, when it failed, its failure line. Exits 1 when a job is
    missing, out of date, not loaded, or its last run failed, or when the env file is missing or
    readable by others; on Linux it warns when lingering is off (timers stop at logout).

    Example usage:

        llm-wiki schedule status
        llm-wiki schedule status --json
    """
    from pathlib import Path  # deferred: pathlib is not loaded for --help

    from llm_wiki.schedule import pick_jobs, status  # deferred: start-up

    where = _schedule_layout(wiki_path, python, bin_dir, env_file)
    result = status(
        _platform(platform),
        where,
        dest=Path(dest).expanduser() if dest else None,
        jobs=pick_jobs(jobs),
    )
    if as_json:
        _print_json(result.to_dict())
    else:
        click.echo(f"Jobs of {where.wiki} (named {result.name}) in {result.dest}:")
        for job in result.jobs:
            state = (
                "not installed"
                if not job.installed
                else ("installed" if job.current else "installed, out of date (install again)")
            )
            if job.loaded is False:
                state += ", not loaded"
            last = f"last run {job.last_run} exit {job.last_exit}" if job.last_run else "never run"
            if job.last_error:
                last += f": {job.last_error}"
            click.echo(f"{job.job:<12} {state}; {job.when}; {last}")
        for note in result.notes:
            click.echo(f"note: {note}")
    if not result.ok:
        sys.exit(1)


@click.group(name="skills", cls=_Group)
def skills_group() -> None:
    """Agent skills that teach an agent (Claude Code, ...) to write to and ask the wiki.

    wiki-write: when to write (and when not), the fields, alternatives_considered, superseding
    instead of editing. wiki-query: asking, reading the sources, --json.

    Example usage:

        llm-wiki skills install
        llm-wiki skills install --dest .claude/skills
    """


@skills_group.command(name="install")
@click.option(
    "--dest",
    metavar="DIR",
    help="Where skills go (default ~/.claude/skills; a project's .claude/skills works too).",
)
@_json_option
def skills_install(dest: str | None, as_json: bool) -> None:
    """Copy the skills (wiki-write, wiki-query) into DIR/<name>/SKILL.md.

    Installing again replaces their files; other skills in DIR are left alone.

    Example usage:

        llm-wiki skills install
        llm-wiki skills install --dest ~/project/.claude/skills --json
    """
    from pathlib import Path  # deferred: pathlib is not loaded for --help

    from llm_wiki.skills import install_skills  # deferred: start-up

    result = install_skills(Path(dest) if dest else None)
    if as_json:
        _print_json(result.to_dict())
        return
    for name in result.skills:
        click.echo(f"Installed {Path(result.dest) / name / 'SKILL.md'}")


@click.group(name="agents", cls=_Group)
def agents_group() -> None:
    """The Claude Code plugin: skills, the MCP server, and hooks that capture without asking.

    At session start the agent is given the current decisions of the domains its working folder
    maps to (agents.folders in settings.yaml) and their open incidents, in a few hundred tokens;
    before compaction and at session end the transcript goes into the wiki's inbox for
    `llm-wiki ingest --inbox`. The hooks call no LLM and never block the agent.

    Example usage:

    \b
        llm-wiki agents install
        llm-wiki agents context --cwd ~/src/billing-service
        llm-wiki agents uninstall
    """


@agents_group.command(name="install")
@click.option(
    "--dest",
    metavar="DIR",
    help="Where the plugin goes (default ~/.claude/skills/llm-wiki, loaded at the next session).",
)
@_json_option
@_wiki_options
def agents_install(
    dest: str | None, as_json: bool, wiki_path: str | None, reader: str | None
) -> None:
    """Write the llm-wiki plugin for Claude Code: skills, MCP server, session hooks.

    The plugin runs this Python (absolute path) on this wiki, as the reader given by --as, else
    the one in LLM_WIKI_READER when a hook runs; install again after moving either. Installing again
    replaces the plugin. With --dest, load it for one session: claude --plugin-dir DIR.

    Example usage:

    \b
        llm-wiki agents install
        llm-wiki agents install --as alice
        llm-wiki agents install --dest ./llm-wiki-plugin
    """
    result = _session(wiki_path, reader).install_agents(dest)
    if as_json:
        _print_json(result.to_dict())
        return
    click.echo(f"Installed the llm-wiki plugin in {result.dest}")
    who = f" as {result.reader}" if result.reader else ""
    click.echo(f"Its hooks and MCP server use {result.wiki}{who}, run by {result.python}.")
    click.echo("Claude Code loads it at the next session (`/plugin` lists it as llm-wiki).")
    for note in result.notes:
        _note(f"note: {note}")


@agents_group.command(name="uninstall")
@click.option(
    "--dest", metavar="DIR", help="Where the plugin is (default ~/.claude/skills/llm-wiki)."
)
def agents_uninstall(dest: str | None) -> None:
    """Remove the llm-wiki plugin.

    Example usage:

        llm-wiki agents uninstall
    """
    from pathlib import Path  # deferred: pathlib is not loaded for --help

    from llm_wiki.agents import default_dest, uninstall_plugin  # deferred: start-up

    removed = uninstall_plugin(Path(dest) if dest else None)
    click.echo(f"Removed {removed}" if removed else f"No plugin in {dest or default_dest()}.")


@agents_group.command(name="context")
@click.option("--cwd", metavar="DIR", help="The agent's working folder (default: this one).")
@click.option("--compact", is_flag=True, help="As after a compaction (one more line).")
@_json_option
@_wiki_options
def agents_context(
    cwd: str | None, compact: bool, as_json: bool, wiki_path: str | None, reader: str | None
) -> None:
    """Print what the session-start hook adds to an agent's context in a folder.

    The domains come from agents.folders in settings.yaml (else the domain named like the
    folder); --json also says which domains, how many decisions and incidents, and the tokens.

    Example usage:

        llm-wiki agents context --cwd ~/src/billing-service
        llm-wiki agents context --json
    """
    context = _session(wiki_path, reader).agent_context(cwd, compact=compact)
    if as_json:
        _print_json(context.to_dict())
    else:
        click.echo(context.text, nl=False)


@click.command(name="mcp", cls=_Command)
@_wiki_options
def wiki_mcp(wiki_path: str | None, reader: str | None) -> None:
    """Serve the wiki to an agent over MCP (stdio) as the reader given by --as.

    Tools: wiki_write, wiki_query, wiki_show, wiki_list (paged) and wiki_brief. The wiki and the
    reader are fixed when it starts; every tool sees only what that reader may see.

    Example usage:

    \b
        llm-wiki mcp --wiki ~/llm-wiki
        claude mcp add llm-wiki -- llm-wiki mcp --wiki ~/llm-wiki
    """
    from llm_wiki.mcp_server import serve  # deferred: start-up

    serve(_session(wiki_path, reader))


@click.command(name="serve", cls=_Command)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    metavar="ADDRESS",
    help="Where to listen; any address but loopback needs walls (access.yaml) and tokens.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="0: any free one.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="A Host name a TLS reverse proxy passes on (repeatable), e.g. wiki.example.com.",
)
@_wiki_options
def wiki_serve(
    host: str, port: int, allow_hosts: tuple[str, ...], wiki_path: str | None, reader: str | None
) -> None:
    """Serve the team: MCP over HTTP at /mcp, the site and sign-in, one token per reader.

    Every request proves its reader with a token (`llm-wiki token add`): MCP clients send it as
    `Authorization: Bearer TOKEN`, a browser signs in at /login. Each reader sees only what
    access.yaml lets it read; revoking a token or editing access.yaml holds on the next request.
    The access log (stderr) names readers, never tokens. Runs until Ctrl-C.

    Example usage:

    \b
        llm-wiki serve
        llm-wiki serve --port 9000
        claude mcp add --transport http llm-wiki http://127.0.0.1:8765/mcp --header "Authorization: Bearer $TOKEN"
    """
    from llm_wiki.server import serve  # deferred: the MCP SDK and uvicorn

    serve(
        _session(wiki_path, reader),
        host=host,
        port=port,
        allow_hosts=allow_hosts,
        on_start=lambda url: click.echo(
            f"Serving {url} (MCP at {url}mcp, sign in at {url}login; Ctrl-C to stop)", err=True
        ),
    )


@click.group(name="token", cls=_Group)
def token_group() -> None:
    """Tokens for `llm-wiki serve`, one per reader: add, list, revoke.

    The wiki keeps only each token's hash (access-tokens.json beside access.yaml, mode 0600).

    Example usage:

        llm-wiki token add alice
        llm-wiki token list
        llm-wiki token revoke alice
    """


@token_group.command(name="add")
@click.argument("name", metavar="READER")
@click.option("--rotate", is_flag=True, help="Replace the token the reader has.")
@_json_option
@_wiki_options
def token_add(
    name: str, rotate: bool, as_json: bool, wiki_path: str | None, reader: str | None
) -> None:
    """Issue a token for READER and print it once (it cannot be shown again).

    Under walls READER must be in access.yaml. Run it without --as, or as an admin.

    Example usage:

        llm-wiki token add bob
        llm-wiki token add bob --rotate --json
    """
    issued = _session(wiki_path, reader).add_token(name, rotate=rotate)
    if as_json:
        _print_json(issued.to_dict())
        return
    click.echo(issued.token)
    click.echo(
        f"Token {issued.record.id} for {issued.record.reader}: shown once, keep it secret "
        "(MCP: Authorization: Bearer TOKEN; a browser: /login).",
        err=True,
    )


@token_group.command(name="list")
@_json_option
@_wiki_options
def token_list(as_json: bool, wiki_path: str | None, reader: str | None) -> None:
    """The tokens issued: reader, id, when created and when last used (never a token).

    Example usage:

        llm-wiki token list
    """
    tokens = _session(wiki_path, reader).tokens()
    if as_json:
        _print_json({"tokens": [t.to_dict() for t in tokens]})
        return
    for t in tokens:
        click.echo(
            f"{t.reader:<16} {t.id}  created {t.created}  last used {t.last_used or 'never'}"
        )
    if not tokens:
        click.echo("No tokens yet; issue one with `llm-wiki token add READER`.")


@token_group.command(name="revoke")
@click.argument("who", metavar="READER|ID")
@_json_option
@_wiki_options
def token_revoke(who: str, as_json: bool, wiki_path: str | None, reader: str | None) -> None:
    """Revoke a reader's token (or the token with that id); the server refuses it at once.

    Example usage:

        llm-wiki token revoke bob
    """
    gone = _session(wiki_path, reader).revoke_token(who)
    if as_json:
        _print_json({"revoked": [t.to_dict() for t in gone]})
        return
    for t in gone:
        click.echo(f"Revoked token {t.id} of {t.reader}.")
