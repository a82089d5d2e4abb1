"""`llm-wiki import-adr`: real records in, with their own dates, statuses, options and
supersessions, nothing invented, and nothing added twice."""

from __future__ import annotations

import pytest

from conftest import CORPORA

TDR = CORPORA / "nationalarchives__tdr-dev-documentation"
MOJ = CORPORA / "ministryofjustice__cloud-platform"


def by_file(cli) -> dict[str, dict]:
    """adr file name -> the entry imported from it."""
    out = {}
    for entry in cli.json("list", "--limit", "500")["entries"]:
        for source in entry["sources"]:
            if source.startswith("adr:"):
                out[source[4:]] = entry
    return out


@pytest.fixture
def imported(cli):
    cli("import-adr", str(TDR), "--domain", "tdr")
    cli("import-adr", str(MOJ), "--domain", "cloud-platform")
    return by_file(cli)


def stem(entries: dict[str, dict], prefix: str) -> dict:
    (match,) = [e for name, e in entries.items() if name.startswith(prefix)]
    return match


def test_required_supersessions(imported):
    for new, old in [("0022-", "0007-"), ("0009-", "0008-"), ("0018-", "0015-"), ("036-", "021-")]:
        newer, older = stem(imported, new), stem(imported, old)
        assert newer["supersedes"] == [older["id"]], (new, old)
        assert older["status"] == "superseded" and older["superseded_by"] == [newer["id"]]
    superseding = sorted(name for name, e in imported.items() if e["supersedes"])
    assert superseding == [
        "0009-keycloak-user-administrators-configuration.md",
        "0018-govkuk-notify-staging-configuration.md",  # its link has a typo: resolved by number
        "0022-cloudfront-upload-proxy.md",
        "036-multi-cluster.md",
    ]


def test_fields_come_from_the_record(imported):
    terraform = stem(imported, "0001-")
    assert terraform["date"] == "2020-02-20"
    assert terraform["type"] == "decision" and terraform["origin"] == "imported"
    assert terraform["summary"].startswith("Use Terraform across multiple AWS accounts: Create")
    assert terraform["sources"] == ["adr:0001-multi-account-terraform.md"]
    assert terraform["alternatives_considered"] == []  # no options section: nothing invented
    assert stem(imported, "004-")["date"] == "2018-04-10"  # dd/mm/yy
    assert stem(imported, "001-")["date"] == "2018-02-05"  # dd/mm/yyyy
    assert stem(imported, "0004-")["date"] == "2020-03-03"  # **Date**: ISO
    assert stem(imported, "017-")["status"] == "proposed"
    assert stem(imported, "018-")["status"] == "rejected"
    assert stem(imported, "037-")["status"] == "rejected"
    assert stem(imported, "034-")["status"] == "proposed"  # "Incomplete"
    assert stem(imported, "033-Manager")["status"] == "active"  # "Accepted (documenting ...)"


def test_alternatives_are_the_options_not_chosen(imported):
    excel = stem(imported, "0031-")
    assert [a["id"] for a in excel["alternatives_considered"]] == ["apache-poi"]
    assert "Convoluted code" in excel["alternatives_considered"][0]["rejected_because"]
    xray = stem(imported, "0029-")
    assert [a["id"] for a in xray["alternatives_considered"]] == ["use-datadog", "use-logstash"]
    email = stem(imported, "0012-")  # "Other options considered": all of them were rejected
    assert [a["id"] for a in email["alternatives_considered"]] == [
        "aws-simple-email-service-ses",
        "sendgrid",
    ]
    assert email["alternatives_considered"][1]["rejected_because"] == "Rejected due to cost."


def test_a_record_without_a_date_says_where_its_date_came_from(cli, imported):
    dta = stem(imported, "0033-")
    assert dta["date"] == stem(imported, "0032-")["date"]
    text = cli.json("show", dta["id"])["text"]
    assert "date_note: the record has no date; this is the date of the previous record" in text


def test_reimport_adds_nothing(cli, wiki_path, imported):
    log = (wiki_path / "log.md").read_bytes()
    again = cli.json("import-adr", str(TDR), "--domain", "tdr")
    assert again["created"] == 0 and again["skipped"] == 39
    assert (wiki_path / "log.md").read_bytes() == log
    assert (
        "Imported 0 records into domain cloud-platform; 49 already there."
        in cli("import-adr", str(MOJ), "--domain", "cloud-platform").stdout
    )


def test_imported_entries_are_written_oldest_first(cli, wiki_path):
    cli("import-adr", str(MOJ))
    lines = [ln for ln in (wiki_path / "log.md").read_text().splitlines() if " write " in ln]
    ids = [ln.split(" write ")[1].split()[0] for ln in lines]
    assert ids == sorted(ids, key=lambda i: i[:10])
    assert (
        cli.json("list", "--limit", "1")["entries"][0]["domain"]
        == "ministryofjustice-cloud-platform"
    )


def test_madr_and_frontmatter_records(cli, tmp_path):
    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "0001-use-markdown-adrs.md").write_text(
        "# Use Markdown Architectural Decision Records\n\n"
        "* Status: superseded by [ADR-0002](0002-use-yaml-frontmatter.md)\n"
        "* Date: 12 March 2021\n\n"
        "## Context and Problem Statement\n\nWe want to record decisions.\n\n"
        "## Considered Options\n\n* MADR 2.1.2\n* Nygard's template\n* Formless notes\n\n"
        "## Decision Outcome\n\n"
        'Chosen option: "MADR 2.1.2", because it is lean and structured.\n\n'
        "### Pros and Cons of the Options\n\n"
    )
    (folder / "0002-use-yaml-frontmatter.md").write_text(
        "---\nstatus: accepted\ndate: 2022-01-05\ntags: [docs, ADR]\n---\n"
        "# Use YAML frontmatter in ADRs\n\n## Decision Outcome\n\nWe add frontmatter.\n"
    )
    (folder / "README.md").write_text("# Decisions\n\nAn index.\n")
    (folder / "template.md").write_text("# Title\n\nDate: YYYY-MM-DD\n")
    out = cli.json("import-adr", str(folder), "--domain", "docs")
    assert [r["file"] for r in out["records"]] == [
        "0001-use-markdown-adrs.md",
        "0002-use-yaml-frontmatter.md",
    ]
    first, second = (cli.json("show", r["id"]) for r in out["records"])
    assert first["date"] == "2021-03-12" and first["written_status"] == "active"
    assert first["status"] == "superseded" and second["supersedes"] == [first["id"]]
    assert [a["id"] for a in first["alternatives_considered"]] == [
        "nygard-s-template",
        "formless-notes",
    ]
    assert (
        first["summary"] == "Use Markdown Architectural Decision Records: Chosen option: MADR 2.1.2"
    )
    assert second["date"] == "2022-01-05" and second["tags"] == ["docs", "adr"]
    assert second["body"].startswith("---\nstatus: accepted")


def test_an_undated_folder_is_refused(cli, tmp_path):
    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "0001-x.md").write_text("# Something\n\nNo date here.\n")
    result = cli("import-adr", str(folder), code=2)
    assert "refuses to invent them" in result.stderr
    assert cli.json("list")["total"] == 0


def test_a_domain_with_a_trailing_newline_is_refused(cli, wiki_path, tmp_path):
    """It would name index/<domain>.md with a newline in it, and the entry file (where YAML
    strips the newline) would disagree with the catalog row."""
    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "0001-x.md").write_text("# Use Postgres\n\nDate: 2024-01-02\n\nWe use it.\n")
    result = cli("import-adr", str(folder), "--domain", "platform\n", code=2)
    assert "must be lowercase letters" in result.stderr
    assert cli.json("list")["total"] == 0
    assert not [p for p in wiki_path.rglob("*") if "\n" in p.name]
