"""Importing architecture decision records: Nygard / adr-tools, MADR 2-4, log4brains, records
with YAML frontmatter.

Each record becomes one ``decision`` entry with ``origin: imported`` that keeps what the record
says: its title (the id is made from it) and first decision sentence as the summary; its date,
and where that came from (``date_source``: the record, the commit that added the file, a date
in the file name, the file's mtime); its status; every link it states (supersession both ways,
typed relations as ``relates``, links to missing files reported); its rejected options with the
record's own reasons; its people with their roles; its number and file name as aliases; the
whole text as the body; and ``sources: [adr:<repository>/<path>]``.

Modules: :mod:`.markdown` (taking markdown apart), :mod:`.dates`, :mod:`.links`,
:mod:`.options`, :mod:`.parse` (one file to a record), :mod:`.run` (the import and its report).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llm_wiki.adr.dates import parse_date
    from llm_wiki.adr.options import PLACEHOLDER
    from llm_wiki.adr.parse import Record, parse_record, parse_status
    from llm_wiki.adr.run import Imported, ImportResult, import_adr, read_records

# Loaded on first use (PEP 562): `query` reads .markdown for its answers, and importing that
# runs this file; the import flow (.run, .parse, .links, .dates) is ~10 ms it need not pay.
_HOME = {
    "parse_date": "dates",
    "PLACEHOLDER": "options",
    "Record": "parse",
    "parse_record": "parse",
    "parse_status": "parse",
    "Imported": "run",
    "ImportResult": "run",
    "import_adr": "run",
    "read_records": "run",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)


__all__ = [
    "PLACEHOLDER",
    "ImportResult",
    "Imported",
    "Record",
    "import_adr",
    "parse_date",
    "parse_record",
    "parse_status",
    "read_records",
]
