"""The package's floors: every import points down, and no import circle hides in a function.

Each module has a floor (``LAYERS``). A module may import, at module level, only modules on its
own floor or below; the graph of *all* imports, function-level ones included, has no cycle. An
edge is what the project's AST circle check counts as one: ``from A import b`` imports ``A`` and,
when it is a module, ``A.b``; ``import A.b`` imports ``A.b``. The floors and why each module
stands where it does: DESIGN.md, "The shape of the code".
"""

from __future__ import annotations

import ast
import functools

from conftest import SRC

PACKAGE = SRC / "llm_wiki"

LAYERS = {
    "llm_wiki.version": 1,
    "llm_wiki.errors": 1,
    "llm_wiki.records": 1,  # frozen records by hand: a dataclass's methods without its exec
    "llm_wiki.progress": 1,  # what a long run has done; the reporter of the current context
    "llm_wiki.clock": 2,
    "llm_wiki.yaml_input": 2,  # YAML and JSON read exactly as written, within bounds
    "llm_wiki.slugs": 1,
    "llm_wiki.entries": 2,
    "llm_wiki.schema": 2,  # schema.md as rules, check_entry (only what checks entries loads it)
    "llm_wiki.files": 3,
    "llm_wiki.citations": 3,
    "llm_wiki.wiki": 4,
    "llm_wiki.skills": 4,
    "llm_wiki.agents": 5,  # the Claude Code plugin: rendered files, skills copied in
    "llm_wiki.access": 5,
    "llm_wiki.tokens": 6,  # the token file of llm-wiki serve: access (who), store (its lock)
    "llm_wiki.budgets": 6,  # daily LLM query budgets per reader (store's lock)
    "llm_wiki.store": 5,
    "llm_wiki.archive_file": 5,
    "llm_wiki.backends": 5,
    "llm_wiki.prompts": 5,
    "llm_wiki.catalog.db": 6,
    "llm_wiki.catalog.index_md": 6,
    "llm_wiki.catalog.refresh": 6,
    "llm_wiki.catalog.result": 6,  # IndexResult, loaded by index only
    "llm_wiki.catalog.fresh": 6,  # the freshness check every read makes (refresh loads lazily)
    "llm_wiki.catalog": 6,
    "llm_wiki.failures": 6,
    "llm_wiki.chunking": 6,
    "llm_wiki.schedule": 6,
    "llm_wiki.ranking": 7,  # a package: question, lexical, minilm, vectors
    "llm_wiki.ranking.question": 7,
    "llm_wiki.ranking.lexical": 7,
    "llm_wiki.ranking.pool": 7,  # execution shortcuts for lexical: the same results, cheaper
    "llm_wiki.ranking.minilm": 7,  # numpy: imported only by vectors, inside functions
    "llm_wiki.ranking.vectors": 7,
    "llm_wiki.write": 7,
    "llm_wiki.stats": 7,
    "llm_wiki.archive": 7,
    "llm_wiki.sync": 7,
    "llm_wiki.verify": 7,
    "llm_wiki.create": 7,
    "llm_wiki.hooks": 7,  # the plugin's hooks: read the catalog, copy transcripts
    "llm_wiki.reads": 8,
    "llm_wiki.domain_state": 8,  # each domain's consolidation state: the job and the site read it
    "llm_wiki.adr": 8,  # a package: markdown, dates, links, options, parse, run
    "llm_wiki.adr.markdown": 8,
    "llm_wiki.adr.dates": 8,
    "llm_wiki.adr.links": 8,
    "llm_wiki.adr.options": 8,
    "llm_wiki.adr.parse": 8,
    "llm_wiki.adr.run": 8,
    "llm_wiki.answers": 8,  # offline answer composition, called from retrieve's extractive path
    "llm_wiki.retrieve": 9,
    "llm_wiki.consolidate": 9,
    "llm_wiki.lint": 9,
    "llm_wiki.brief": 10,
    "llm_wiki.ingest": 10,
    "llm_wiki.evaluation": 10,
    # the static site reads through catalog, reads, verify, stats, failures and domain_state
    "llm_wiki.site": 10,
    "llm_wiki.site.view": 10,
    "llm_wiki.site.text": 10,
    "llm_wiki.site.html": 10,
    "llm_wiki.site.pictures": 10,
    "llm_wiki.site.obsidian": 10,
    "llm_wiki.site.pages": 10,
    "llm_wiki.site.build": 10,
    "llm_wiki.site.serve": 10,
    "llm_wiki.site.state": 10,
    "llm_wiki.site.follow": 10,
    "llm_wiki.site.jinja": 10,
    "llm_wiki.session": 11,  # the front door the adapters share
    "llm_wiki": 11,  # the package: the front door's names (loaded when first used), __version__
    "llm_wiki.mcp_server": 12,
    "llm_wiki.server": 12,  # llm-wiki serve: the MCP tools over HTTP and the site, per token
    "llm_wiki.cli": 13,  # a package: the root group and shared options; write, reads, query, commands, setup
    "llm_wiki.cli.write": 13,
    "llm_wiki.cli.reads": 13,
    "llm_wiki.cli.query": 13,
    "llm_wiki.cli.commands": 13,
    "llm_wiki.cli.setup": 13,
    "llm_wiki.__main__": 13,
}


@functools.cache
def modules():
    """Dotted name -> path of every module in the package."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        found[".".join(parts).removesuffix(".__init__")] = path
    return found


@functools.cache
def parsed(path):
    return ast.parse(path.read_text())


def imports(name, path, known):
    """(imported module, import node, inside a function?) for each import of a package module."""
    tree = parsed(path)
    out = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.ImportFrom) and child.module:
                base = child.module
                if child.level:
                    base = ".".join([*name.split(".")[: -child.level], child.module])
                targets = [base] + [f"{base}.{a.name}" for a in child.names]
            elif isinstance(child, ast.Import):
                targets = [a.name for a in child.names]
            else:
                targets = []
            for target in targets:
                if target in known and target != name:
                    out.append((target, child, inside))
            visit(child, inside)

    visit(tree, False)
    return out


def graph(*, module_level_only=False):
    known = modules()
    return {
        name: {
            target
            for target, _, inside in imports(name, path, known)
            if not (module_level_only and inside)
        }
        for name, path in known.items()
    }


def cycles(edges):
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return found


def test_every_module_has_a_floor():
    assert sorted(modules()) == sorted(LAYERS)


def test_no_module_imports_a_higher_floor_at_module_level():
    upward = [
        f"{name} (floor {LAYERS[name]}) imports {target} (floor {LAYERS[target]})"
        for name, targets in sorted(graph(module_level_only=True).items())
        for target in sorted(targets)
        if LAYERS[target] > LAYERS[name]
    ]
    assert upward == []


def test_no_import_circle_even_through_function_level_imports():
    assert cycles(graph()) == []


def test_every_function_level_import_says_why_it_is_deferred():
    """An import inside a function is there for start-up cost (a heavy library, or the CLI
    loading only the command it runs), and says so: ``# deferred: <cost>``."""
    silent = set()
    for path in PACKAGE.rglob("*.py"):
        lines = path.read_text().splitlines()
        for func in ast.walk(parsed(path)):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    text = "\n".join(lines[node.lineno - 1 : node.end_lineno])
                    if "# deferred:" not in text:
                        silent.add(f"{path.relative_to(SRC)}:{node.lineno}")
    assert sorted(silent) == []


def test_the_circle_check_is_not_vacuous():
    """A made-up graph with a circle is caught; one without passes."""
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
