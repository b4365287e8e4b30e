"""What a push needs of a review batch, whatever its kind (audit/review/kinds/ builds them).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pyarrow as pa

from .maple import RealismItem


@dataclass(frozen=True)
class ReviewBatch:
    """What a push needs: the config, one task payload per item, and the item table
    (with each item's routing group). `items` and `tasks` are in the same order."""

    batch_id: str
    config: str                      # a kind's config (kinds/)
    items: pa.Table                  # ITEM_SCHEMA
    tasks: list[dict]                # task data (LabelConfig.payload), item_id first
    manifest: dict | None = None     # translation: the sampling manifest
    assignments: list[RealismItem] | None = None   # realism: the blinding key
    pairs: list[dict] | None = None  # paired versions (kinds/paired.py): the version key
    plan: pa.Table | None = None     # post-edit (kinds/post_edit.py): the repair units
    release: dict | None = None      # post-edit: the release's files and content digests
    settings: dict | None = None     # the kind's spec options (spans: protocol, prefill…)
    tables: dict[str, pa.Table] | None = None   # kept beside the items (spans: prefill)
    predictions: dict[str, list[dict]] | None = None   # pre-filled regions per item

    @property
    def kind(self) -> str | None:
        """The annotation kind its items carry (None for a batch without items)."""
        kinds = self.items.column("kind")
        return kinds[0].as_py() if len(kinds) else None

    @property
    def item_ids(self) -> list[str]:
        return [task["item_id"] for task in self.tasks]

    @property
    def groups(self) -> list[str]:
        return self.items.column("group").to_pylist()


def content_id(prefix: str, ids: list[str]) -> str:
    """A batch id from its items: the same items make the same id."""
    return f"{prefix}-" + hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()[:12]
