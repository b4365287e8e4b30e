"""The workbench's one state model: which release (with its HotpotQA sources and policy)
and which Browse filter a page works on, round-tripped through the URL.

Every page reads its view from the URL and every link, sidebar entry, "open" action and
previous/next writes it back, so reloading any URL in a new tab shows exactly what was
shown. The Browse page belongs to the view (a
reload or "back to Browse" returns to it). Page-local keys (`row`, `examples`, …) ride along beside it. No Streamlit here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from urllib.parse import urlencode

from audit.analysis.browse import FILTER_KEYS, Filters

SPLITS = ("train", "validation")
RELEASE_KEYS = ("release", "policy", *(f"source_{split}" for split in SPLITS))
VIEW_KEYS = frozenset(RELEASE_KEYS) | FILTER_KEYS | {"page"}


@dataclass(frozen=True)
class View:
    release: str | None = None              # a path, directory or glob; None = the demo
    sources: tuple[tuple[str, str], ...] = ()   # (split, HotpotQA JSON path)
    policy: str | None = None
    filters: Filters = field(default_factory=Filters)
    page: int | None = None                 # the Browse result page, from 1 (None = 1)

    @classmethod
    def from_query(cls, params: dict[str, str]) -> "View":
        def text(key: str) -> str | None:
            value = str(params.get(key) or "").strip()
            return value or None

        sources = tuple((split, path) for split in SPLITS
                        if (path := text(f"source_{split}")) is not None)
        page = text("page") or ""
        return cls(text("release"), sources, text("policy"), Filters.from_query(params),
                   int(page) if re.fullmatch(r"[1-9][0-9]{0,8}", page) else None)

    def release_query(self) -> dict[str, str]:
        query = {}
        if self.release:
            query["release"] = self.release
        query.update({f"source_{split}": path for split, path in self.sources})
        if self.policy:
            query["policy"] = self.policy
        return query

    def to_query(self) -> dict[str, str]:
        """The URL parameters that reproduce this view."""
        page = {"page": str(self.page)} if self.page and self.page > 1 else {}
        return {**self.release_query(), **self.filters.to_query(), **page}

    def with_filters(self, filters: Filters) -> "View":
        """Another filter, from its first page."""
        return replace(self, filters=filters, page=None)

    def href(self, page: str, **extra: object) -> str:
        """A relative link to a page of the workbench showing this view (plus page keys)."""
        query = {**self.to_query(), **{k: str(v) for k, v in extra.items() if v is not None}}
        return f"./{page}" + (f"?{urlencode(query)}" if query else "")

    def source_specs(self) -> list[str]:
        return [f"{split}={path}" for split, path in self.sources]

    def describe_filter(self) -> str:
        """The filter in words: "question_language fa, ur · stratum S4", or "no filter"."""
        parts = [f"{key} {value.replace(',', ', ')}"
                 for key, value in self.filters.to_query().items()]
        return " · ".join(parts) or "no filter"
