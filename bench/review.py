"""Benchmark the review loop's analysis side: agreement and reports over 5,520 annotations.

    .venv/bin/python bench/review.py

The synthetic review mirrors the paper's translation-audit design (Table 10): 460 source
instances x (4 paragraphs + 1 question + 1 answer) = 2,760 units balanced over the 23 target
languages, each rated by two bilingual annotators on the seven translation criteria, with a
third annotator adjudicating 90% of the items in disagreement (so the reports also meet
unresolved labels). Agreement is realistic, not perfect: ratings are a latent quality plus
annotator noise, yes/no labels flip now and then, and consequences are sometimes misjudged
(seeded, so every run times the same table).

Timed: agreement() (2,000 source-clustered bootstrap replicates per statistic) plus
all_reports() (2,000 replicates per mean and rate), from the pulled table to pyarrow tables.
Target: < 5 s.

Push and pull against a real Label Studio (bench_push_pull): a 2,760-item translation batch
pushed to its two annotator projects (5,520 tasks, chunks of 100; target < 60 s), and a pull
of 5,520 annotations (2,760 per annotator project, all eight controls, parsed into 44,160
rows of the annotations table; target < 30 s). The server is LABEL_STUDIO_URL when set,
else one started by scripts/labelstudio.sh on a free port and a fresh data dir, stopped and
removed afterwards. The pull's annotations are imported with their tasks (untimed setup:
Label Studio's free edition creates annotations one request each, ~0.1 s apiece); push()
then finds that batch complete and only records it. Skipped when label-studio is missing.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from audit.languages import CODES  # noqa: E402
from audit.review import agreement as ag  # noqa: E402
from audit.review import reports  # noqa: E402
from audit.review import configs  # noqa: E402

SEED = 20261130
SOURCES = 460
UNITS = ("paragraph",) * 4 + ("question", "answer")
TARGETS = tuple(code for code in CODES if code != "en")


def synthesise(n_sources: int = SOURCES, seed: int = SEED) -> pa.Table:
    """Two initial annotations per unit on every criterion, adjudication where they differ."""
    rng = np.random.default_rng(seed)
    n = n_sources * len(UNITS)
    item = np.arange(n)
    language = np.array(TARGETS)[item % len(TARGETS)]
    truth = {
        "adequacy": rng.choice(5, n, p=[0.02, 0.05, 0.13, 0.35, 0.45]),
        "fluency": rng.choice(5, n, p=[0.01, 0.04, 0.15, 0.40, 0.40]),
        **{c: rng.choice(2, n, p=[0.08, 0.92]) for c in reports.PRESERVATION},
        "consequence": rng.choice(4, n, p=[0.70, 0.15, 0.10, 0.05]),
    }
    columns: dict[str, list] = {name: [] for name in ag.REQUIRED}
    stamp = dt.datetime(2026, 11, 30, 12, 0)

    def add(criterion: str, labels: tuple[str, ...], codes: np.ndarray, who: np.ndarray,
            role: str, rows: np.ndarray, slot: int) -> None:
        columns["item_id"] += [f"u{i:05d}" for i in rows]
        columns["cluster_id"] += [f"s{i // len(UNITS):04d}" for i in rows]
        columns["kind"] += ["translation"] * len(rows)
        columns["language"] += language[rows].tolist()
        columns["unit"] += [UNITS[i % len(UNITS)] for i in rows]
        columns["setting"] += [None] * len(rows)
        columns["annotator"] += who.tolist()
        columns["role"] += [role] * len(rows)
        columns["criterion"] += [criterion] * len(rows)
        columns["value"] += [labels[c] for c in codes]
        columns["annotation_id"] += (rows * 3 + slot - 1).tolist()   # one id per annotation
        columns["updated_at"] += [stamp] * len(rows)

    adjudicated = rng.random(n) < 0.9   # the third annotator has not finished the queue
    for criterion, scale in ag.CRITERIA["translation"].items():
        k = len(scale.labels)
        given = []
        for slot in (1, 2):
            if scale.ordinal:   # latent rating +- 1 with probability 0.3
                noise = rng.choice([-1, 0, 1], n, p=[0.15, 0.70, 0.15])
                codes = np.clip(truth[criterion] + noise, 0, k - 1)
            else:               # occasionally a different category
                slip = rng.random(n) < (0.05 if k == 2 else 0.15)
                codes = np.where(slip, rng.integers(0, k, n), truth[criterion])
            given.append(codes)
            add(criterion, scale.labels, codes, np.char.add(language, f"-{slot}"), "initial",
                item, slot)
        differ = item[(given[0] != given[1]) & adjudicated]
        add(criterion, scale.labels, truth[criterion][differ],
            np.char.add(language[differ], "-3"), "adjudication", differ, 3)
    return pa.table(columns)


def run(table: pa.Table) -> tuple[float, float]:
    """Wall and CPU seconds of agreement + all reports (CPU time is the figure to trust on a
    shared machine: it does not count time spent waiting for a core)."""
    wall, cpu = time.perf_counter(), time.process_time()
    ag.agreement(table)
    reports.all_reports(table)
    return time.perf_counter() - wall, time.process_time() - cpu


# ------------------------------------------------------------------ push and pull, real server

PUSH_ITEMS = SOURCES * len(UNITS)     # 2,760 items, 5,520 tasks over two projects
ANNOTATORS = ("bench-annotator-1@example.org", "bench-annotator-2@example.org")
SENTENCE = ("The river rises in the mountains and flows for several hundred kilometres "
            "before it reaches the sea near the old harbour town. ")


def synthetic_batch(batch_id: str, n_items: int = PUSH_ITEMS):
    """A translation review batch shaped like the paper's: paragraphs of five sentences,
    questions and answers, over the 23 target languages."""
    from audit.review import loop
    tasks, items = [], []
    for i in range(n_items):
        unit, source = UNITS[i % len(UNITS)], f"s{i // len(UNITS):04d}"
        language = TARGETS[i % len(TARGETS)]
        text = SENTENCE * 5 if unit == "paragraph" else SENTENCE[:90]
        item_id = f"{source}:{unit}:{'p%d' % (i % len(UNITS)) if unit == 'paragraph' else '-'}"
        tasks.append(configs.task_payload(
            "translation_review", item_id=item_id, batch_id=batch_id, unit=unit,
            language=language, question=SENTENCE[:80], source_question=SENTENCE[:80],
            answer="the sea", source_answer="the sea", title="River", source_title="River",
            source_text=text, translation_text=text))
        items.append({"item_id": item_id, "cluster_id": source, "kind": "translation",
                      "language": language, "unit": unit, "setting": None, "source_a": None,
                      "source_b": None})
    table = pa.Table.from_pylist(items, schema=loop.ITEM_SCHEMA)
    return loop.ReviewBatch(batch_id, "translation_review", table, tasks)


def _result(rng: np.random.Generator) -> list[dict]:
    def control(name: str, kind: str, value: dict) -> dict:
        return {"from_name": name, "to_name": "translation", "type": kind, "value": value}
    result = [control(c, "rating", {"rating": int(rng.integers(3, 6))})
              for c in ("adequacy", "fluency")]
    result += [control(c, "choices", {"choices": [str(rng.choice(["yes", "yes", "no"]))]})
               for c in reports.PRESERVATION]
    result.append(control("consequence", "choices", {"choices": ["cosmetic"]}))
    result.append(control("comment", "textarea", {"text": ["fine"]}))
    return result


def _server():
    """(server, local) — LABEL_STUDIO_URL, or a fresh local server (local is then set)."""
    from audit.review import labelstudio as ls
    if os.environ.get("LABEL_STUDIO_URL"):
        return ls.connect(), None
    local = ls.LocalServer(ls.DATA_ROOT / f"bench-{uuid.uuid4().hex[:8]}", ls.free_port())
    local.start()
    return ls.connect(local.url), local


def bench_push_pull() -> None:
    """Print the push and pull timings against a real Label Studio."""
    if not os.environ.get("LABEL_STUDIO_URL") and importlib.util.find_spec("label_studio") is None:
        print("push / pull against Label Studio: skipped (label-studio is not installed)")
        return
    from audit.review import loop
    server, local = _server()
    workspace = Path(tempfile.mkdtemp(prefix="bench-reviews-"))
    run = uuid.uuid4().hex[:6]
    created: list[int] = []
    try:
        batch = synthetic_batch(f"bench-push-{run}")
        wall = time.perf_counter()
        report = loop.push(server, batch, ANNOTATORS, workspace=workspace)
        push_seconds = time.perf_counter() - wall
        created += [p.project_id for p in report.projects]
        print(f"push {len(batch.tasks):,} tasks (2 annotator projects, {report.sent:,} Label "
              f"Studio tasks): {push_seconds:.1f} s (target < 60 s)")
        wall = time.perf_counter()
        again = loop.push(server, batch, ANNOTATORS, workspace=workspace)
        print(f"re-push of the complete batch: {time.perf_counter() - wall:.1f} s, "
              f"{again.sent} sent")

        annotated = synthetic_batch(f"bench-pull-{run}")
        rng = np.random.default_rng(SEED)
        for slot, email in zip(loop.SLOTS, ANNOTATORS):   # untimed: the annotators' work
            user = server.ensure_user(email)
            project = server.ensure_project(
                loop.project_title(annotated.batch_id, slot),
                configs.load_config(annotated.config),
                loop.project_description(annotated.batch_id, annotated.kind, slot, email))
            created.append(project.id)
            server.import_tasks(project.id, annotated.tasks, chunk_size=500,
                                annotations=[[{"result": _result(rng), "completed_by": user.id}]
                                             for _ in annotated.tasks])
        loop.push(server, annotated, ANNOTATORS, workspace=workspace)   # records, sends 0
        wall = time.perf_counter()
        pulled = loop.pull(server, annotated.batch_id, workspace=workspace)
        pull_seconds = time.perf_counter() - wall
        n = sum(p.accepted for p in pulled.projects)
        print(f"pull {n:,} annotations ({pulled.rows_total:,} rows): {pull_seconds:.1f} s "
              f"(target < 30 s)")
    finally:
        if local is None:
            for project_id in created:
                server.delete_project(project_id)
        else:
            local.stop()
            shutil.rmtree(local.data_dir, ignore_errors=True)
        shutil.rmtree(workspace, ignore_errors=True)


def main() -> None:
    table = synthesise()
    initial = table.filter(pc.equal(table["role"], "initial"))
    annotations = len(set(zip(initial["item_id"].to_pylist(), initial["annotator"].to_pylist())))
    wall, cpu = run(table)
    print(f"agreement and reports over {annotations:,} annotations: {wall:.2f} s "
          f"({cpu:.2f} s CPU; target < 5 s)")
    bench_push_pull()


if __name__ == "__main__":
    main()
