"""The agent skills: valid under the Agent Skills spec, and every command they show works."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib

import pytest

from conftest import REPO, SRC
from llm_wiki.skills import FIELDS, check_skill, install_skills, read_skill, skill_dirs

SKILLS = sorted(p.parent for p in (REPO / "skills").glob("*/SKILL.md"))
NOW = "2026-10-01T09:00:00Z"


def test_there_are_the_two_skills_and_the_package_reaches_them():
    assert [p.name for p in SKILLS] == ["wiki-query", "wiki-write"]
    assert (SRC / "llm_wiki" / "skills").resolve() == (REPO / "skills").resolve()  # one source
    assert [p.name for p in skill_dirs()] == [p.name for p in SKILLS]
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "skills/**/*" in pyproject["tool"]["setuptools"]["package-data"]["llm_wiki"]


@pytest.mark.parametrize("skill", SKILLS, ids=lambda p: p.name)
def test_skill_follows_the_spec(skill):
    assert check_skill(skill) == []
    data, body = read_skill(skill)
    assert set(data) <= set(FIELDS) and data["name"] == skill.name
    assert len(data["description"]) <= 1024 and "Use it" in data["description"]
    assert len(body.splitlines()) < 500  # the spec's advice: keep SKILL.md under 500 lines


def test_the_validator_catches_what_the_spec_forbids(tmp_path):
    def skill(folder, frontmatter, body="Do this.\n"):
        path = tmp_path / folder
        path.mkdir()
        (path / "SKILL.md").write_text(f"---\n{frontmatter}---\n{body}")
        return check_skill(path)

    assert skill("ok", "name: ok\ndescription: Does x. Use it when y.\n") == []
    assert "must equal the folder name" in skill("a", "name: b\ndescription: x\n")[0]
    assert "lowercase" in skill("Bad_Name", "name: Bad_Name\ndescription: x\n")[0]
    assert "lowercase" in skill("a--b", "name: a--b\ndescription: x\n")[0]
    assert "outside the spec: version" in skill("c", "name: c\ndescription: x\nversion: 1\n")[0]
    assert "1024" in skill("d", f"name: d\ndescription: {'x' * 1025}\n")[0]
    assert "description is required" in skill("e", "name: e\n")[0]
    assert "strings to strings" in skill("f", "name: f\ndescription: x\nmetadata: {v: 1}\n")[0]
    assert "body" in skill("g", "name: g\ndescription: x\n", body="")[0]


def sh_blocks(skill):
    text = (skill / "SKILL.md").read_text()
    return re.findall(r"```sh\n(.*?)```", text, re.S)


@pytest.fixture
def example_wiki(tmp_path):
    wiki = tmp_path / "wiki"
    shutil.copytree(REPO / "llm-wiki", wiki, ignore=shutil.ignore_patterns(".llm-wiki"))
    return wiki


@pytest.fixture
def shell_env(tmp_path, example_wiki):
    """`llm-wiki` on PATH (this checkout's package), the example wiki as LLM_WIKI_DIR."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "llm-wiki"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m llm_wiki "$@"\n')
    wrapper.chmod(0o755)
    return {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "PYTHONPATH": str(SRC),
        "LLM_WIKI_DIR": str(example_wiki),
        "LLM_WIKI_NOW": NOW,
        "LC_ALL": "C.UTF-8",
        "LLM_WIKI_EMBEDDINGS": "off",  # as conftest's subprocess_env: lexical, extra or not
    }


@pytest.mark.parametrize("skill", SKILLS, ids=lambda p: p.name)
def test_every_command_a_skill_shows_runs(skill, shell_env, example_wiki):
    blocks = sh_blocks(skill)
    assert blocks, f"{skill.name} shows no commands"
    for block in blocks:
        assert re.search(r"^llm-wiki ", block, re.M), block
        proc = subprocess.run(
            ["sh", "-e", "-c", block], env=shell_env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, f"{skill.name}:\n{block}\n{proc.stdout}\n{proc.stderr}"
    verify = subprocess.run(
        ["sh", "-c", "llm-wiki verify && llm-wiki index --check"],
        env=shell_env,
        capture_output=True,
        text=True,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_wiki_write_teaches_the_rule_the_fields_and_superseding(shell_env, example_wiki):
    _, body = read_skill(REPO / "skills" / "wiki-write")
    schema = (example_wiki / "schema.md").read_text()
    for kind in ("decision", "incident", "reflection", "synthesis"):
        assert f"**{kind}**" in body
    assert "raw tool traces, in-progress plans" in body and "raw tool traces" in schema
    for flag in ("--alt", "--supersedes", "--source", "--question", "--alias", "--json"):
        assert f"`{flag}" in body, flag
    assert "alternatives_considered" in body and "Never edit" in body
    for block in sh_blocks(REPO / "skills" / "wiki-write"):
        subprocess.run(["sh", "-e", "-c", block], env=shell_env, check=True, capture_output=True)
    listed = subprocess.run(
        ["sh", "-c", "llm-wiki show 2026-03-04-queue-sqs --json"],
        env=shell_env,
        capture_output=True,
        text=True,
    )
    assert '"status": "superseded"' in listed.stdout  # the skill's supersede example took effect


def test_wiki_query_teaches_asking_reading_and_json():
    _, body = read_skill(REPO / "skills" / "wiki-query")
    for text in ("llm-wiki query", "--json", "llm-wiki show", "superseded_by", "nothing-found"):
        assert text in body


def test_skills_install(cli, tmp_path):
    out = cli("skills", "install", "--dest", tmp_path / "skills").stdout
    assert out.splitlines() == [
        f"Installed {tmp_path}/skills/wiki-query/SKILL.md",
        f"Installed {tmp_path}/skills/wiki-write/SKILL.md",
    ]
    for skill in SKILLS:
        installed = tmp_path / "skills" / skill.name / "SKILL.md"
        assert installed.read_bytes() == (skill / "SKILL.md").read_bytes()
        assert check_skill(installed.parent) == []
    (tmp_path / "skills" / "mine").mkdir()
    result = install_skills(tmp_path / "skills")  # again: replaced, others left alone
    assert (tmp_path / "skills" / "mine").is_dir() and len(result.files) == 2


def test_skills_install_defaults_to_claude_skills(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    data = cli.json("skills", "install")
    assert data["dest"] == str(tmp_path / ".claude" / "skills")
    assert (tmp_path / ".claude/skills/wiki-write/SKILL.md").is_file()
