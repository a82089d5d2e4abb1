"""A simulated stretch of days driven through the job scripts (used by test_soak and the bench).

Each simulated day (``LLM_WIKI_NOW`` advanced one day at a time):

- 09:00-17:00 entries are written: one through ``_system/bin/wiki-write`` (dash, ``env -i`` plus
  the env file), the rest through the library; some decisions supersede older ones, some
  reflections close incidents by naming them in ``resolves``, some incidents are superseded;
- Mondays 07:00 ``wiki-lint``;
- 23:00 ``wiki-consolidate`` with the mock model (``tests/mock_llm.py``); on chosen days the
  model invents a citation for one domain, so that day's synthesis fails and is recorded;
- 23:15 ``wiki-archive --monthly`` (it archives on the first run of each month);
- 23:30 ``wiki-brief``.

After every day the invariants are checked: ``verify`` clean; every entry ever written (each
``write`` line of log.md) still readable with ``show``, with the bytes it was written with;
``index --check`` clean; every domain's synthesis current, or a failure recorded for it that day;
every job exited 0 with timestamped log lines; the day's briefing written.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from conftest import REPO

BIN = REPO / "_system" / "bin"
MOCK = REPO / "tests" / "mock_llm.py"
DOMAINS = ("ledger", "ops", "platform")
TAGS = {
    "ledger": ("database", "reports"),
    "ops": ("disks", "alerts"),
    "platform": ("queues", "deploys"),
}

FLAKY = """
import json, os, runpy
_mock = runpy.run_path({mock!r})
FLAG = {flag!r}

def respond(prompt, purpose):
    if purpose.startswith("consolidate") and os.path.exists(FLAG):
        domain = open(FLAG).read().strip()
        if f"Domain: {{domain}} " in prompt:
            return json.dumps({{"title": "x", "summary": "x", "statements": [
                {{"text": "An invented finding.", "cites": ["2020-01-01-invented-0000"]}}]}})
    return _mock["respond"](prompt, purpose)
"""


@dataclasses.dataclass
class SoakResult:
    days: int
    entries: int
    authored: int
    syntheses: int
    archived: int
    archives: int
    failures_recorded: int
    superseded: int
    llm_calls: int
    broken: list[str]
    seconds: float
    day_seconds: list[float]  # each simulated day, all of it
    job_seconds: list[float]  # each day's job scripts alone (without the invariant checks)

    def report(self) -> str:
        return (
            f"soak: {self.days} days, {self.entries} entries ({self.authored} authored, "
            f"{self.syntheses} syntheses, {self.superseded} superseded, {self.archived} archived "
            f"in {self.archives} archives), {self.failures_recorded} synthesis failures recorded, "
            f"{self.llm_calls} LLM calls, invariants broken: {len(self.broken)}, "
            f"{self.seconds:.1f} s ({self.day_seconds[0]:.2f} s the first day, "
            f"{self.day_seconds[-1]:.2f} s the last)"
        )


class Soak:
    def __init__(self, root: Path, *, start: str, per_day: int, fail_days: dict[int, str]) -> None:
        from llm_wiki.create import init_wiki

        self.root = root
        self.wiki_path = root / "wiki"
        init_wiki(self.wiki_path)
        settings = self.wiki_path / "settings.yaml"
        data = yaml.safe_load(settings.read_text())
        data["backend"] = "mock"
        data["consolidate"]["retry_wait_seconds"] = 0
        data["archive"]["older_than_days"] = 5  # short, so the month boundary really archives
        settings.write_text(yaml.safe_dump(data))
        self.flag = root / "fail-domain"
        responder = root / "model.py"
        responder.write_text(FLAKY.format(mock=str(MOCK), flag=str(self.flag)))
        self.home = root / "home"
        env_file = self.home / ".config" / "llm-wiki" / "env"
        env_file.parent.mkdir(parents=True)
        env_file.write_text(
            f"LLM_WIKI_DIR={self.wiki_path}\nLLM_WIKI_PYTHON={sys.executable}\n"
            f"LLM_WIKI_MOCK_FILE={responder}\n"
        )
        env_file.chmod(0o600)
        self.start = dt.date.fromisoformat(start)
        self.per_day = per_day
        self.fail_days = fail_days
        self.written: dict[str, str] = {}  # id -> sha256 when written
        self.active_decisions: dict[str, list[str]] = {d: [] for d in DOMAINS}
        self.open_incidents: dict[str, list[str]] = {d: [] for d in DOMAINS}
        self.broken: list[str] = []
        self.counter = 0
        self.job_time = 0.0

    # -- running the jobs
    def job(
        self, day: dt.date, clock: str, script: str, *args: str
    ) -> subprocess.CompletedProcess[str]:
        now = f"{day.isoformat()}T{clock}:00Z"
        cmd = [
            "env",
            "-i",
            f"HOME={self.home}",
            f"LLM_WIKI_NOW={now}",
            "dash",
            str(BIN / script),
            *args,
        ]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        self.job_time += time.perf_counter() - t0
        if proc.returncode != 0:
            self.broken.append(f"{day} {script} exited {proc.returncode}: {proc.stderr[-500:]}")
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        if script != "wiki-write" and not all(_stamped(ln, script) for ln in lines):
            self.broken.append(f"{day} {script} wrote an unstamped log line: {proc.stderr[-300:]}")
        return proc

    # -- writing the day's entries
    def write_day(self, index: int, day: dt.date) -> None:
        from llm_wiki.access import Viewer
        from llm_wiki.entries import draft
        from llm_wiki.wiki import Wiki
        from llm_wiki.write import write_entry

        wiki = Wiki(self.wiki_path)
        for n in range(self.per_day):
            self.counter += 1
            domain = DOMAINS[(index + n) % len(DOMAINS)]
            tag = TAGS[domain][self.counter % 2]
            os.environ["LLM_WIKI_NOW"] = f"{day.isoformat()}T{9 + n % 8:02d}:{n % 60:02d}:00Z"
            kind = ("decision", "incident", "decision", "reflection")[self.counter % 4]
            fields: dict[str, object] = {
                "type": kind,
                "domain": domain,
                "tag": [tag],
                "summary": f"{kind.title()} {self.counter} on {tag} in {domain}, day {index + 1}",
                "body": f"Context for entry {self.counter}.",
            }
            if kind == "decision":
                fields["alt"] = [f"option-{self.counter}: cost {self.counter * 10} more"]
                active = self.active_decisions[domain]
                if len(active) >= 3:  # replace the oldest active decision
                    fields["supersedes"] = [active.pop(0)]
            elif kind == "reflection" and self.open_incidents[domain]:
                incident = self.open_incidents[domain].pop(0)
                fields["source"] = [incident]
                fields["resolves"] = [incident]  # closes it (citing alone does not)
            elif kind == "incident" and len(self.open_incidents[domain]) >= 2:
                fields["supersedes"] = [self.open_incidents[domain].pop(0)]
            if n == 0:
                entry_id, sha = self._write_with_script(day, fields)
            else:
                result = write_entry(wiki, draft(**fields), viewer=Viewer.everyone())
                entry_id, sha = result.id, result.sha256
            self.written[entry_id] = sha
            if kind == "decision":
                self.active_decisions[domain].append(entry_id)
            elif kind == "incident":
                self.open_incidents[domain].append(entry_id)
        os.environ.pop("LLM_WIKI_NOW", None)

    def _write_with_script(self, day: dt.date, fields: dict[str, object]) -> tuple[str, str]:
        args: list[str] = []
        for key, value in fields.items():
            for item in value if isinstance(value, list) else [value]:
                args += [f"--{key}", str(item)]
        proc = self.job(day, "09:00", "wiki-write", *args, "--json")
        data = json.loads(proc.stdout)
        return data["id"], data["sha256"]

    # -- one day
    def day(self, index: int) -> None:
        day = self.start + dt.timedelta(days=index)
        self.write_day(index, day)
        if day.weekday() == 0:
            self.job(day, "07:00", "wiki-lint")
        fail = self.fail_days.get(index)
        if fail:
            self.flag.write_text(fail)
        self.job(day, "23:00", "wiki-consolidate")
        self.flag.unlink(missing_ok=True)
        self.job(day, "23:15", "wiki-archive", "--monthly")
        self.job(day, "23:30", "wiki-brief")
        self.check(index, day, failed_domain=fail)

    # -- the invariants
    def check(self, index: int, day: dt.date, failed_domain: str | None) -> None:
        from llm_wiki import store
        from llm_wiki.access import Viewer
        from llm_wiki.catalog import check_index
        from llm_wiki.consolidate import domain_states
        from llm_wiki.errors import WikiError
        from llm_wiki.failures import failure_records
        from llm_wiki.reads import show_entry
        from llm_wiki.verify import verify
        from llm_wiki.wiki import Wiki

        os.environ["LLM_WIKI_NOW"] = f"{day.isoformat()}T23:45:00Z"
        try:
            wiki = Wiki(self.wiki_path)
            everyone = Viewer.everyone()
            result = verify(wiki, everyone)
            if not result.ok:
                self.broken.append(f"{day} verify: {[f.detail for f in result.findings][:3]}")
            logged = {
                line.subject: line.fields.get("sha256")
                for _, line in store.read_log(wiki)
                if line.op == "write"
            }
            missing = set(self.written) - set(logged)
            if missing:
                self.broken.append(f"{day} written but not logged: {sorted(missing)[:3]}")
            for entry_id, sha in logged.items():
                try:
                    shown = show_entry(wiki, entry_id, everyone)
                except WikiError as exc:
                    self.broken.append(f"{day} lost {entry_id}: {exc.message}")
                    continue
                if hashlib.sha256(shown.text.encode()).hexdigest() != sha:
                    self.broken.append(f"{day} {entry_id} reads back different bytes")
            index_state = check_index(wiki)
            if index_state.stale or index_state.problems:
                self.broken.append(
                    f"{day} index --check: {index_state.stale} {index_state.problems}"
                )
            failed_today = {
                (r.scope, r.domain) for r in failure_records(wiki) if r.time[:10] == day.isoformat()
            }
            for state in domain_states(wiki, everyone):
                why = state.out_of_date(llm=True)
                if why and (state.scope, state.domain) not in failed_today:
                    self.broken.append(f"{day} {state.key} out of date, no failure recorded: {why}")
            if failed_domain and ("shared", failed_domain) not in failed_today:
                self.broken.append(
                    f"{day} the injected failure of {failed_domain} was not recorded"
                )
            briefing = self.wiki_path / "briefings" / f"{day.isoformat()}.md"
            if not briefing.is_file():
                self.broken.append(f"{day} no briefing written")
            elif (
                failed_domain and f"shared/{failed_domain}: unknown-id" not in briefing.read_text()
            ):
                self.broken.append(f"{day} the briefing does not show the failure")
        finally:
            os.environ.pop("LLM_WIKI_NOW", None)

    def run(self, days: int, progress: Callable[[str], None] | None = None) -> SoakResult:
        from llm_wiki.access import Viewer
        from llm_wiki.backends import read_calls
        from llm_wiki.catalog import read_catalog
        from llm_wiki.failures import failure_records
        from llm_wiki.wiki import Wiki

        began = time.perf_counter()
        day_seconds, job_seconds = [], []
        for index in range(days):
            t0, self.job_time = time.perf_counter(), 0.0
            self.day(index)
            day_seconds.append(time.perf_counter() - t0)
            job_seconds.append(self.job_time)
            if progress:
                progress(f"day {index + 1}: {len(self.broken)} broken")
        wiki = Wiki(self.wiki_path)
        with read_catalog(wiki) as catalog:
            rows = catalog.rows(Viewer.everyone())
        return SoakResult(
            days=days,
            entries=len(rows),
            authored=sum(1 for r in rows if r.origin == "authored"),
            syntheses=sum(1 for r in rows if r.type == "synthesis"),
            archived=sum(1 for r in rows if r.archive),
            archives=len(list((self.wiki_path / "archive").glob("*.tar.zst"))),
            failures_recorded=len(failure_records(wiki)),
            superseded=sum(1 for r in rows if r.superseded_by),
            llm_calls=len(read_calls(wiki)),
            broken=self.broken,
            seconds=time.perf_counter() - began,
            day_seconds=day_seconds,
            job_seconds=job_seconds,
        )


def _stamped(line: str, script: str) -> bool:
    import re

    return re.match(rf"^\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ {re.escape(script)} ", line) is not None
