"""The static site: ``llm-wiki site`` (see DESIGN.md, "The site").

Three surfaces built for one reader — the wiki (what the archive knows: domains, subjects, home),
the evidence (one page per entry, its sources and its supersession chain) and the inspector (what
the machinery did) — as plain HTML with inline SVG pictures and an offline search, rebuilt
incrementally from a manifest of page fingerprints.
"""

from llm_wiki.site.build import SiteResult, build_site, default_out, site_folder

__all__ = ["SiteResult", "build_site", "default_out", "site_folder"]
