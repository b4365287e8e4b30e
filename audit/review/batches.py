"""What a push needs, built per kind of review batch.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

import pyarrow as pa

from ..io.model import Release
from . import configs, kinds, maple, routing, sampling
from .schemas import ITEM_SCHEMA


@dataclass(frozen=True)
class ReviewBatch:
    """What a push needs: the config, one task payload per item, and the item table
    (with each item's routing group). `items` and `tasks` are in the same order."""

    batch_id: str
    config: str                      # a kind's config (kinds.py)
    items: pa.Table                  # ITEM_SCHEMA
    tasks: list[dict]                # task data (configs.task_payload), item_id first
    manifest: dict | None = None     # translation: the sampling manifest
    assignments: list[maple.RealismItem] | None = None   # realism: the blinding key
    pairs: list[dict] | None = None  # paired versions (paired.py): the version key
    plan: pa.Table | None = None     # post-edit (postedit.py): the repair units, one an item
    release: dict | None = None      # post-edit: the release's files and content digests

    @property
    def kind(self) -> str:
        return kinds.of_config(self.config).annotation

    @property
    def item_ids(self) -> list[str]:
        return [task["item_id"] for task in self.tasks]

    @property
    def groups(self) -> list[str]:
        return self.items.column("group").to_pylist()


def translation_batch(batch: sampling.Batch, release: Release,
                      batch_id: str | None = None) -> ReviewBatch:
    """A sampled batch of translation units; the cluster is the source row, the group the
    languages the unit shows. The batch id is the sample's unless `batch_id` is given."""
    kind = kinds.KINDS["translation"]
    batch_id = batch_id or batch.batch_id
    texts = sampling.unit_texts(release, batch.units)
    tasks = [configs.translation_payload(t, batch_id) for t in texts]
    units = batch.units
    n = units.num_rows
    groups = [routing.group_of(languages) for languages in units["languages"].to_pylist()]
    items = pa.table({
        "item_id": units["item_id"], "cluster_id": units["row_id"],
        "kind": pa.array([kind.annotation] * n, pa.string()),
        "language": units["language"], "unit": units["unit"],
        "setting": pa.nulls(n, pa.string()), "source_a": pa.nulls(n, pa.string()),
        "source_b": pa.nulls(n, pa.string()),
        "group": pa.array(groups, pa.string())}).cast(ITEM_SCHEMA)
    return ReviewBatch(batch_id, kind.config, items, tasks, manifest=batch.manifest)


def realism_batch(items: Sequence[maple.RealismItem], batch_id: str | None = None
                  ) -> ReviewBatch:
    """Blind query pairs (maple.assign_order); the cluster is the pair."""
    kind = kinds.KINDS["realism"]
    items = list(items)
    batch_id = batch_id or _content_id(kind.name, [i.item_id for i in items])
    tasks = [configs.realism_payload(item, batch_id) for item in items]
    table = pa.Table.from_pylist([
        {"item_id": i.item_id, "cluster_id": i.pair_id, "kind": kind.annotation, "language": None,
         "unit": None, "setting": i.setting, "source_a": i.shown_a_source,
         "source_b": i.shown_b_source, "group": routing.NO_LANGUAGE} for i in items],
        schema=ITEM_SCHEMA)
    return ReviewBatch(batch_id, kind.config, table, tasks, assignments=items)


def relevance_batch(pairs: Sequence[maple.RelevancePair], batch_id: str | None = None
                    ) -> ReviewBatch:
    """Query–paper pairs; the cluster is the query."""
    kind = kinds.KINDS["relevance"]
    pairs = list(pairs)
    batch_id = batch_id or _content_id(kind.name, [p.pair_id for p in pairs])
    tasks = [configs.relevance_payload(pair, batch_id) for pair in pairs]
    table = pa.Table.from_pylist([
        {"item_id": task["item_id"], "cluster_id": pair.query_id, "kind": kind.annotation,
         "language": None, "unit": None, "setting": None, "source_a": None, "source_b": None,
         "group": routing.NO_LANGUAGE}
        for pair, task in zip(pairs, tasks)], schema=ITEM_SCHEMA)
    return ReviewBatch(batch_id, kind.config, table, tasks)


def _content_id(prefix: str, ids: list[str]) -> str:
    return f"{prefix}-" + hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()[:12]
