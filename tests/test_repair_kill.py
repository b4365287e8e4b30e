"""`kill -9` during apply leaves no partial output: a real `repair apply` child is killed
while it writes the corrected shards; the target directory never appears half-written, and
the next apply to it removes the dead run's staging directory and writes it whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import realdata_release
import repair_helpers as rh

from audit.engine import scan
from audit.io import release as readers
from audit.io.digests import file_sha256
from audit.repair import plan

SHARDS = 40


def test_kill_during_apply_leaves_no_partial_output(tmp_path, realdata):
    info = realdata_release.build(tmp_path / "built")
    # The same rows in 40 shards: the child spends most of its writing time among them.
    rows = pa.concat_tables(pq.read_table(p) for p in sorted(info["release"].glob("*.parquet")))
    schema = pq.read_schema(next(info["release"].glob("*.parquet")))
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    size = -(-rows.num_rows // SHARDS)
    for k in range(SHARDS):
        pq.write_table(rows.slice(k * size, size).cast(schema),
                       sharded / f"validation-{k:05d}.parquet", compression="zstd")
    release = readers.open_release(sharded)
    scanned = scan.run(release, skip=frozenset(rh.HEURISTICS))
    fixes = rh.write_lines(tmp_path / "fixes.jsonl",
                           rh.restoring(plan.work_list(scanned).to_pylist(),
                                        rh.pristine_views()))
    out = tmp_path / "corrected"
    command = [sys.executable, "-m", "audit", "repair", "apply", str(sharded),
               "--corrections", str(fixes), "--out", str(out), *rh.SKIP_HEURISTICS]
    child = subprocess.Popen(command, cwd=rh.REPO, stderr=subprocess.PIPE, text=True,
                             stdout=subprocess.DEVNULL)
    seen = []
    for line in child.stderr:               # wait on content: the third shard is begun
        seen.append(line)
        if f"(3 of {SHARDS})" in line:
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL, "".join(seen)
    assert any(f"writing validation-00001.parquet (2 of {SHARDS})" in s for s in seen)
    assert not out.exists()
    staging = list(tmp_path.glob(".corrected.*"))
    assert len(staging) == 1
    written = sorted(p.name for p in staging[0].iterdir())
    assert "repair_manifest.json" not in written and "validation-00000.parquet" in written
    again = subprocess.run(command, cwd=rh.REPO, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert list(tmp_path.glob(".corrected.*")) == []
    manifest = json.loads((out / "repair_manifest.json").read_text())
    assert len(manifest["release_files"]) == SHARDS
    assert manifest["counts"]["applied"] == 31
    for name, entry in manifest["outputs"].items():
        assert file_sha256(out / name) == entry["sha256"]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*manifest["release_files"], "corrections.parquet", "repair_manifest.json",
         "CHANGELOG.md"])
