"""The Arrow schemas of a batch's items and pulled annotations (others import them),
and the progress callback of push and pull.
"""

from __future__ import annotations

from typing import Callable

import pyarrow as pa

ITEM_SCHEMA = pa.schema([
    ("item_id", pa.string()), ("cluster_id", pa.string()), ("kind", pa.string()),
    ("language", pa.string()), ("unit", pa.string()), ("setting", pa.string()),
    ("source_a", pa.string()), ("source_b", pa.string()), ("group", pa.string()),
])


ANNOTATION_SCHEMA = pa.schema([
    ("item_id", pa.string()), ("cluster_id", pa.string()), ("kind", pa.string()),
    ("language", pa.string()), ("unit", pa.string()), ("setting", pa.string()),
    ("annotator", pa.string()), ("role", pa.string()), ("criterion", pa.string()),
    ("value", pa.string()), ("annotation_id", pa.int64()),
    ("updated_at", pa.timestamp("us", tz="UTC")),
    ("source_a", pa.string()), ("source_b", pa.string()),
    ("project_id", pa.int64()), ("task_id", pa.int64()),
])


Progress = Callable[[str, int, int], None]   # (project title, done, to do)
