"""Agent skills: the SKILL.md folders that teach an agent to write to and ask the wiki.

The repo's ``skills/`` is the one source; the package reaches it through ``llm_wiki/skills``, a
symlink that packaging copies into the wheel, so an installed package can install them too.
:func:`check_skill` validates a SKILL.md against the Agent Skills specification
(https://agentskills.io/specification): only its six frontmatter fields, ``name`` equal to the
folder name (lowercase letters, digits and single hyphens, at most 64 characters),
``description`` of 1 to 1024 characters, ``compatibility`` at most 500, ``metadata`` a map of
strings to strings, ``allowed-tools`` a space-separated string.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_wiki.entries import split_frontmatter
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.files import atomic_write
from llm_wiki.yaml_input import load_yaml

SKILLS = Path(__file__).parent / "skills"
FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def skill_dirs(root: Path = SKILLS) -> list[Path]:
    """Every skill folder (one holding a SKILL.md), by name."""
    if not root.is_dir():
        raise WikiError(
            f"the skills are missing from {root}; reinstall llm-wiki (pip install -e a checkout)."
        )
    return sorted(p.parent for p in root.glob("*/SKILL.md"))


def read_skill(path: Path) -> tuple[dict[str, Any], str]:
    """The frontmatter mapping and the markdown body of ``path``/SKILL.md."""
    text = (path / "SKILL.md").read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        return {}, text
    head, body = split_frontmatter(text)
    data = load_yaml(head, str(path / "SKILL.md"))
    return (data if isinstance(data, dict) else {}), body


def check_skill(path: Path) -> list[str]:
    """What in ``path``/SKILL.md breaks the Agent Skills specification (empty: nothing)."""
    problems: list[str] = []
    try:
        data, body = read_skill(path)
    except (OSError, InvalidInput) as exc:
        return [f"cannot read SKILL.md: {exc}"]
    if not data:
        return [
            "SKILL.md must start with YAML frontmatter (--- ... ---) holding name and description"
        ]
    extra = sorted(set(data) - set(FIELDS))
    if extra:
        problems.append(f"frontmatter fields outside the spec: {', '.join(extra)}")
    name = data.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name) or len(name) > 64:
        problems.append(
            "name must be 1-64 lowercase letters, digits and single hyphens, not starting or "
            "ending with a hyphen"
        )
    elif name != path.name:
        problems.append(f"name {name!r} must equal the folder name {path.name!r}")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        problems.append("description is required: what the skill does and when to use it")
    elif len(description) > 1024:
        problems.append(f"description is {len(description)} characters; the limit is 1024")
    if "license" in data and not isinstance(data["license"], str):
        problems.append("license must be a string")
    compatibility = data.get("compatibility")
    if "compatibility" in data and (
        not isinstance(compatibility, str) or not 1 <= len(compatibility) <= 500
    ):
        problems.append("compatibility must be a string of 1-500 characters")
    metadata = data.get("metadata")
    if "metadata" in data and not (
        isinstance(metadata, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        problems.append("metadata must map strings to strings")
    if "allowed-tools" in data and not isinstance(data["allowed-tools"], str):
        problems.append("allowed-tools must be a space-separated string")
    if not body.strip():
        problems.append("the body (the instructions) is empty")
    return problems


@dataclass(frozen=True)
class InstalledSkills:
    dest: str
    skills: tuple[str, ...]
    files: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"dest": self.dest, "skills": list(self.skills), "files": list(self.files)}


def default_dest() -> Path:
    return Path.home() / ".claude" / "skills"


def install_skills(dest: Path | None = None) -> InstalledSkills:
    """Copy every skill folder into ``dest`` (default ``~/.claude/skills``), replacing earlier
    copies of its files; other skills there are left alone."""
    folder = (dest or default_dest()).expanduser()
    dirs = skill_dirs()
    for skill in dirs:
        problems = check_skill(skill)
        if problems:
            raise WikiError(f"{skill / 'SKILL.md'} is not a valid skill: {problems[0]}.")
    files: list[str] = []
    for skill in dirs:
        for src in sorted(p for p in skill.rglob("*") if p.is_file()):
            target = folder / skill.name / src.relative_to(skill)
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, src.read_bytes())
            shutil.copymode(src, target)
            files.append(str(target))
    return InstalledSkills(str(folder), tuple(s.name for s in dirs), tuple(files))
