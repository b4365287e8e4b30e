"""Run the public reference builder (`build_record` of the XHotpotQA toolkit) over one of our
benchmark releases, the way its own build does: every row from its source record and its
legacy view, checksummed and written through its own Parquet writer.

    python bench/reference_build.py TOOLKIT_DIR RELEASE.parquet SOURCE.json OUT_DIR

Run by bench/scan.py with an interpreter that has the toolkit's dependencies (pyarrow,
ijson); the toolkit itself is imported from its checkout, never copied here.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main() -> None:
    toolkit, release, source, out = map(Path, sys.argv[1:5])
    started = time.perf_counter()
    sys.path.insert(0, str(toolkit / "scripts"))
    import build_hf_public_v1 as reference
    import pyarrow.parquet as pq

    sources = {record["_id"]: (position, record) for position, record in
               enumerate(json.loads(source.read_text(encoding="utf-8")))}
    writer = reference.ShardedParquetWriter(out, "validation", 50_000)
    rows = pq.read_table(release).to_pylist()
    for position, row in enumerate(rows):
        source_position, record = sources[row["source_id"]]
        context = [[c["title"], c["sentences"], c["language"]] for c in row["candidates"]]
        legacy = reference.LegacyRow(context, row["question"], row["answer"],
                                     row["question_language_name"], "bench", position)
        writer.append(reference.build_record(record, legacy, split="validation",
                                             source_position=source_position,
                                             release_position=position, view_index=0))
    writer.close()
    print(json.dumps({"rows": len(rows), "seconds": time.perf_counter() - started}))


if __name__ == "__main__":
    main()
