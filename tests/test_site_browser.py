"""The site in a real browser: what a person sees, in headless Chromium (Debian's, driven by
Playwright: it cannot download its own browsers here, so it is pointed at /usr/bin/chromium).

Sites are opened from file:// (the harder case: no server, fetch() blocked). Three wikis: the
example wiki, the two imported shared corpora (Nygard ADR folders), and one whose entry text is
HTML and <script>.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from conftest import CORPORA, REPO, Cli, write_args

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
OLD = "2026-04-02-ledger-postgres"
NEW = "2026-06-15-move-the-ledger-to-a-single-postings-table-partitioned-by-c75c"
HOSTILE = '<b>bold</b> claim <script>window.pwned = "summary"</script> qzhostile'

if not os.path.exists(CHROMIUM) and not os.environ.get("CI"):
    pytest.skip(
        "needs Debian's chromium (apt-get install chromium; .ci/run installs it)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[test]'")


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


def _site(wiki: Path, out: Path) -> Path:
    got = Cli(wiki).json("site", "--out", str(out))
    assert got["pages"] > 0
    return out


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    base = tmp_path_factory.mktemp("sites")
    example = base / "example"
    shutil.copytree(REPO / "llm-wiki", example, ignore=shutil.ignore_patterns(".llm-wiki", "graph"))
    corpora = base / "corpora"
    cli = Cli(corpora)
    cli("init", str(corpora))
    for folder in ("ministryofjustice__cloud-platform", "nationalarchives__tdr-dev-documentation"):
        cli("import-adr", str(CORPORA / folder))
    hostile = base / "hostile"
    cli = Cli(hostile)
    cli("init", str(hostile))
    cli(
        *write_args(
            HOSTILE,
            body='<script>window.pwned = "body"</script>\n\n<img src="x" onerror="window.pwned=2">',
            alias=["<i>aka</i> qzalias"],
        )
    )
    return {
        "example": _site(example, base / "example-site"),
        "corpora": _site(corpora, base / "corpora-site"),
        "hostile": _site(hostile, base / "hostile-site"),
        "wikis": {"example": example, "corpora": corpora},
    }


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    """The example wiki after an ingest (a raw source and the entries quoting it) and its site."""
    base = tmp_path_factory.mktemp("ingested")
    wiki = base / "wiki"
    shutil.copytree(REPO / "llm-wiki", wiki, ignore=shutil.ignore_patterns(".llm-wiki", "graph"))
    mock = {"LLM_WIKI_MOCK_FILE": str(REPO / "tests" / "mock_ingest.py")}
    chat = REPO / "tests" / "data" / "ingest" / "team-chat.txt"
    Cli(wiki)("ingest", str(chat), "--backend", "mock", env=mock)
    return _site(wiki, base / "site")


def url(site: Path, page: str) -> str:
    return (site / page).as_uri()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    pg = context.new_page()
    yield pg
    context.close()


LINKS = """() => {
  const out = [];
  const add = (v) => { if (v) out.push(new URL(v, location.href).href); };
  document.querySelectorAll("a[href]").forEach(a => add(a.getAttribute("href")));
  document.querySelectorAll("script[src], img[src]").forEach(s => add(s.getAttribute("src")));
  document.querySelectorAll("link[href]").forEach(l => add(l.getAttribute("href")));
  document.querySelectorAll("form[action]").forEach(f => add(f.getAttribute("action")));
  return out;
}"""


@pytest.mark.parametrize("name", ["example", pytest.param("corpora", marks=pytest.mark.slow)])
def test_a_crawl_from_the_home_page_finds_every_page_and_no_missing_one(sites, page, name):
    site = sites[name]
    todo, seen, missing = [url(site, "index.html")], set(), []
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        page.goto(current, wait_until="domcontentloaded")  # (the links are in the HTML)
        for link in page.evaluate(LINKS):
            parsed = urlparse(link)
            if parsed.scheme != "file":
                continue  # a link out (an ADR's web page) is followed only by a person
            target = Path(unquote(parsed.path))
            if not target.is_file():
                missing.append(f"{current} -> {link}")
            elif target.suffix == ".html":
                todo.append(target.as_uri())
    assert missing == []
    every = {p.as_uri() for p in site.rglob("*.html")}
    assert every - seen == set()  # no page is unreachable


def search(page, site: Path, words: str) -> list[str]:
    """Type into the header's search box on the home page, as a person would."""
    page.goto(url(site, "index.html"))
    page.fill("form.find input[name=q]", words)
    page.press("form.find input[name=q]", "Enter")
    page.wait_for_selector("#search-status:not(:empty)")
    return [
        Path(unquote(urlparse(h).path)).stem
        for h in page.eval_on_selector_all("#results a", "els => els.map(a => a.href)")
    ]


def test_search_finds_an_entry_by_an_alias_and_by_a_word_of_its_body(sites, page):
    site = sites["example"]
    assert search(page, site, "postings table")[0] == NEW  # its alias
    assert OLD in search(page, site, "serializable")  # a word of its body only
    sqs = "2026-03-04-queue-sqs"
    assert search(page, site, "Warteschlange") == [sqs]  # an alias, in no other field
    assert search(page, site, "aws") == [sqs]  # a tag, in no other field
    assert search(page, site, "database holds")[0] == OLD  # its question's words only
    assert "search.html?q=" in page.url


def test_search_results_follow_the_words_as_they_are_typed(sites, page):
    page.goto(url(sites["example"], "search.html") + "?q=serializable")
    page.wait_for_selector("#results a")
    page.fill("#q", "Warteschlange")  # no Enter: the list must not stay the last query's
    page.wait_for_function(
        "document.getElementById('search-status').textContent.includes('Warteschlange')"
    )
    hrefs = page.eval_on_selector_all("#results a", "els => els.map(a => a.href)")
    assert [Path(unquote(urlparse(h).path)).stem for h in hrefs] == ["2026-03-04-queue-sqs"]


def test_the_monthly_counts_can_be_read_without_hovering(sites, page):
    """A bar's tooltip is no way to read its number on a phone: the numbers are in a table
    folded under the picture, one row per period with an entry."""
    page.goto(url(sites["example"], "index.html"))
    page.click("details.counts summary")
    rows = page.eval_on_selector_all(
        "details.counts tbody tr", "rs => rs.map(r => r.innerText.split('\\t'))"
    )
    assert rows[0] == ["2026-09", "1", "0", "0"]  # newest first: the canary proposal
    assert sum(int(n) for r in rows for n in r[1:]) == 7  # every entry of the example wiki


def test_search_works_on_the_imported_corpora(sites, page):
    corpora = sites["wikis"]["corpora"]
    rows = Cli(corpora).json("list", "--limit", "500")["entries"]
    target = next(r for r in rows if "elasticsearch" in r["summary"].lower())
    assert target["id"] in search(page, sites["corpora"], "elasticsearch")
    body = Cli(corpora).json("show", target["id"])["body"]
    assert "Kibana" in body and target["id"] in search(page, sites["corpora"], "kibana")


def test_a_superseded_decision_page_says_what_replaced_it(sites, page):
    page.goto(url(sites["example"], f"entries/{OLD}.html"))
    banner = page.inner_text(".banner.superseded")
    assert "Superseded." in banner
    assert "Replaced by Move the ledger to a single postings table partitioned by month" in banner
    page.click(".banner.superseded a")
    assert page.url.endswith(f"entries/{NEW}.html")
    assert "It replaced:" in page.inner_text("main")
    corpora = sites["wikis"]["corpora"]
    old = Cli(corpora).json("list", "--status", "superseded", "--limit", "500")["entries"]
    assert old
    for row in old:
        page.goto(url(sites["corpora"], f"entries/{row['id']}.html"))
        text = page.inner_text(".banner.superseded")
        for newer in row["superseded_by"]:
            summary = Cli(corpora).json("show", newer)["summary"]
            assert summary.split(":")[0] in text


@pytest.mark.parametrize("name", ["example", "corpora"])
def test_each_domains_timeline_has_one_mark_per_decision(sites, page, name):
    cli = Cli(sites["wikis"][name])
    domains = {r["domain"] for r in cli.json("list", "--limit", "1000")["entries"]}
    for domain in sorted(domains):
        decisions = cli.json("list", "--type", "decision", "--domain", domain, "--limit", "1000")
        page.goto(url(sites[name], f"domains/{domain}.html"))
        marks = page.eval_on_selector_all(
            "svg.timeline a.mark", "els => els.map(e => e.getAttribute('data-id'))"
        )
        assert sorted(marks) == sorted(e["id"] for e in decisions["entries"]), domain
        statuses = page.eval_on_selector_all(
            "svg.timeline a.mark", "els => els.map(e => e.getAttribute('data-status'))"
        )
        assert sorted(statuses) == sorted(e["status"] for e in decisions["entries"])


def test_pages_render_with_javascript_off(sites, browser):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    site = sites["example"]
    page.goto(url(site, "index.html"))
    assert "Use Amazon SQS for the payment events queue" in page.inner_text("#new ~ ul")
    page.goto(url(site, f"entries/{OLD}.html"))
    assert "Postgres gives us that with serializable" in page.inner_text(".body")
    assert page.is_visible("svg.relations")
    page.goto(url(site, "domains/ledger.html"))
    assert page.eval_on_selector_all("svg.timeline a.mark", "els => els.length") == 2
    page.goto(url(site, "inspector/log-2026-06.html"))
    assert NEW in page.inner_text("table.log")
    page.goto(url(site, "search.html"))
    assert "needs JavaScript" in page.inner_text("main")
    context.close()


@pytest.mark.slow  # opens some 100 pages of two sites
def test_no_request_leaves_the_site(sites, browser):
    context = browser.new_context()
    requests: list[str] = []

    def route(r):
        requests.append(r.request.url)
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    for name in ("example", "corpora"):
        site = sites[name]
        pages = ["index.html", "inspector/index.html", "search.html?q=decision"]
        pages += sorted(p.relative_to(site).as_posix() for p in site.glob("domains/*.html"))
        pages += sorted(p.relative_to(site).as_posix() for p in site.glob("entries/*.html"))[:40]
        for rel in pages:
            page.goto(
                url(site, rel.split("?")[0]) + ("?" + rel.split("?")[1] if "?" in rel else "")
            )
    context.close()
    assert requests and all(r.startswith("file://") for r in requests), [
        r for r in requests if not r.startswith("file://")
    ]


def test_entry_text_that_holds_html_or_script_is_shown_as_text(sites, page):
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    site = sites["hostile"]
    entry = next(p for p in (site / "entries").glob("*.html"))
    page.goto(entry.as_uri())
    assert page.evaluate("window.pwned") is None
    assert page.inner_text("h1").strip().endswith(HOSTILE)
    assert '<script>window.pwned = "body"</script>' in page.inner_text(".body")
    assert page.eval_on_selector_all(".body img, .body script, h1 b", "els => els.length") == 0
    assert "<i>aka</i> qzalias" in page.inner_text("dl.card")
    found = search(page, site, "qzhostile")
    assert found == [entry.stem]
    assert HOSTILE in page.inner_text("#results")
    assert page.eval_on_selector_all("#results b, #results script", "els => els.length") == 0
    assert page.evaluate("window.pwned") is None and dialogs == []


def test_pages_fit_a_phone(sites, browser):
    context = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True)
    page = context.new_page()
    site = sites["example"]
    for rel in ("index.html", "domains/platform.html", f"entries/{NEW}.html"):
        page.goto(url(site, rel))
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 360, (rel, width)
        for box in page.eval_on_selector_all(
            "svg.picture", "els => els.map(e => e.getBoundingClientRect().width)"
        ):
            assert 300 <= box <= 360, (rel, box)
    context.close()


OVERFLOW = """() => { const out = []; document.querySelectorAll("svg.picture").forEach(svg => {
  const width = svg.viewBox.baseVal.width;
  svg.querySelectorAll("text").forEach(t => {
    const b = t.getBBox();
    if (b.x < -0.5 || b.x + b.width > width + 0.5) out.push(["picture", t.textContent]);
    const node = t.closest(".node");
    if (node) {
      const r = node.querySelector("rect").getBBox();
      if (b.x < r.x - 0.5 || b.x + b.width > r.x + r.width + 0.5) out.push(["box", t.textContent]);
    }
  });
}); return out; }"""


@pytest.mark.parametrize("name", ["example", pytest.param("corpora", marks=pytest.mark.slow)])
def test_every_word_of_a_picture_is_inside_it(sites, page, name):
    """A label cut by the picture's edge (or a box's) loses what it ends with: the ellipsis
    that says it was shortened, or the status word that says what became of a decision."""
    site = sites[name]
    cut = []
    for html in sorted(site.glob("domains/*.html")) + sorted(site.glob("entries/*.html")):
        page.goto(html.as_uri())
        cut += [(html.name, *text) for text in page.evaluate(OVERFLOW)]
    assert cut == []


def test_the_log_table_fits_the_page_with_raw_sources_in_it(ingested, browser):
    """A raw source's name (raw/<sha256>.txt) has nowhere to break: without one, the log's
    table ran past the page and hid its details column behind a scroll bar, even on a desktop."""
    site = ingested
    for width in (1280, 800):  # a phone scrolls the four columns in their box, as designed
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        for rel in [
            "inspector/index.html",
            *(p.relative_to(site).as_posix() for p in site.glob("inspector/log-*.html")),
        ]:
            page.goto(url(site, rel))
            if rel == "inspector/index.html":
                assert "raw/" in page.inner_text("table.log")
            wide = page.eval_on_selector_all(
                "div.scroll", "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).length"
            )
            assert wide == 0, (width, rel)
        context.close()


def test_pages_of_the_imported_corpora_and_of_an_ingest_fit_a_phone(
    sites, ingested, browser, tmp_path
):
    """Long words with nowhere to break (an ADR file's path, a raw source's sha256 name, a URL
    in an alternative's reason) must wrap, not widen the page past a phone's screen."""
    madr = tmp_path / "madr"
    Cli(madr)("init", str(madr))
    Cli(madr)("import-adr", "--recursive", str(CORPORA / "adr__madr"))
    context = browser.new_context(viewport={"width": 375, "height": 800}, is_mobile=True)
    page = context.new_page()
    wide = []
    corpora, s1, s2 = sites["corpora"], ingested, _site(madr, tmp_path / "s2")
    pages = [
        *sorted(corpora.glob("entries/*.html"))[:25],  # each names its ADR file's path
        *corpora.glob("domains/*.html"),
        *s1.glob("entries/*-payout*.html"),  # a raw source's name
        *s1.glob("raw/*.html"),
        *s1.glob("inspector/*.html"),
        *s2.glob("domains/*.html"),  # URLs in the alternatives' reasons
    ]
    for site in (corpora, s1, s2):
        for html in sorted(p for p in pages if site in p.parents):
            page.goto(html.as_uri())
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > 375:
                wide.append((html.relative_to(site).as_posix(), width))
    context.close()
    assert wide == []


def test_the_manifest_is_not_needed_to_browse(sites):
    """The manifest only serves rebuilds: its pages are exactly the folder's files."""
    site = sites["example"]
    manifest = json.loads((site / ".site-manifest.json").read_text())
    files = {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}
    assert set(manifest["pages"]) == files - {".site-manifest.json"}
