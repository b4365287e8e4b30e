"""Benchmark releases built from real text, in the XHotpotQA+ shape.

Skeletons are the real HotpotQA dev records in ../shared/realdata (the official dev head and
the HippoRAG subset: 201 distinct records), reused round-robin under new source ids: their
titles, paragraph and sentence counts, supporting facts and question types. The text is
NTREX-128, whose files are line-aligned human translations: each paragraph's English
sentences are consecutive lines of the English source and its translation the same lines in
the paragraph's independently drawn language; each source's question is one English line,
translated by the same line in each of the 24 views, which share the context and differ in
the question language, as XHotpotQA+ does. So sources and translations really correspond:
the translation-quality heuristics see what they would see on a real release.
Flags, status and record hashes come from `devkit.synth.build_v11_record`, so every row ships
what the reference builder would. The third-party text is read at build time; only the
scratch directory under bench/data/ receives copies.

    release("real")     # 990 sources x 24 = 23,760 rows
    release("plus")     # 23,066 x 24 = 553,584 views (XHotpotQA+), ~0.5 M findings
    release("copies")   # the same, two sentences per context untranslated: ~2.3 M findings
    release("heavy")    # four sentences per context untranslated: ~4.0 M findings
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import realdata_release as real  # noqa: E402

from audit.io.layouts import v11  # noqa: E402
from audit.languages import BY_NAME, VIEW_ORDER  # noqa: E402
from devkit import synth  # noqa: E402

DATA = REPO / "bench" / "data"
SEED = 20261201
CHUNK = 20_480   # rows per write (row groups of 2,048)


def skeletons() -> list[dict]:
    sources = real.load_sources()
    return sources["validation"] + sources["train"]


def _aligned(skeleton: dict, source_id: str, english: list[str], rng: random.Random) -> tuple:
    """The source record with NTREX English text in HotpotQA's shape, and for each
    paragraph and for the question and answer the NTREX line numbers it was taken from."""
    context, starts = [], []
    for title, sentences in skeleton["context"]:
        start = rng.randrange(len(english) - len(sentences) + 1)
        starts.append(start)
        context.append([title, english[start:start + len(sentences)]])
    question, answer = rng.randrange(len(english)), rng.randrange(len(english))
    source = {**skeleton, "_id": source_id, "context": context,
              "question": english[question], "answer": real._prefix(english[answer], "en", 2, 6)}
    return source, starts, question, answer


def _context(source: dict, starts: list[int], ntrex: dict, rng: random.Random,
             untranslated: int) -> list:
    """The translated context: each paragraph the same NTREX lines in its drawn language;
    `untranslated` sentences of non-English paragraphs keep their English (exact copies)."""
    used = {synth.normalize_title(title) for title, _ in source["context"]}
    context = []
    for (title, sentences), start in zip(source["context"], starts):
        language = rng.choice(VIEW_ORDER)
        if language == "English":
            context.append([title, list(sentences), language])
            continue
        code = BY_NAME[language].code
        translated = real._draw(rng, ntrex, code, lambda line: real._prefix(line, code, 4, 12),
                                lambda t: synth.normalize_title(t) in used or t == title)
        used.add(synth.normalize_title(translated))
        context.append([translated, ntrex[code][start:start + len(sentences)], language])
    places = [(i, k) for i, (title, sentences, language) in enumerate(context)
              if language != "English" for k in range(len(sentences))]
    for i, k in rng.sample(places, min(untranslated, len(places))):
        context[i][1][k] = source["context"][i][1][k]
    return context


def _question(source: dict, language: str, ntrex: dict, question: int,
              answer: int) -> tuple[str, str]:
    """The question and answer of one view: the same NTREX lines in its language."""
    if language == "English":
        return source["question"], source["answer"]
    code = BY_NAME[language].code
    return ntrex[code][question], real._prefix(ntrex[code][answer], code, 2, 6)


def build(target: Path, sources: int, views: int = 24, untranslated: int = 0) -> dict:
    """Write `target`/validation-*.parquet and `target`/hotpot_validation.json once;
    returns {"release": dir, "source": path, "rows": n}."""
    info = target / "info.json"
    if info.is_file():
        return json.loads(info.read_text())
    started = time.perf_counter()
    target.mkdir(parents=True, exist_ok=True)
    base, ntrex = skeletons(), real.load_ntrex()
    english = (real.NTREX / "newstest2019-src.eng.txt").read_bytes().decode("utf-8").split(
        "\r\n")[:-1]
    assert len(english) == len(ntrex["de"]), "NTREX files must be line-aligned"
    rng = random.Random(SEED)
    schema = v11.SCHEMA
    writer = pq.ParquetWriter(target / "validation-00000.parquet", schema, compression="zstd")
    records, source_records, position = [], [], 0
    for s in range(sources):
        skeleton = base[s % len(base)]
        source, starts, q_line, a_line = _aligned(skeleton, f"{skeleton['_id']}-{s:05d}",
                                                  english, rng)
        source_records.append(source)
        context = _context(source, starts, ntrex, rng, untranslated)
        for view in range(views):
            language = VIEW_ORDER[view % len(VIEW_ORDER)]
            question, answer = _question(source, language, ntrex, q_line, a_line)
            row = synth.build_v11_record(source, context, question, answer, language,
                                         split="validation", source_position=s,
                                         release_position=position, view_index=0)
            row["id"] = f"{source['_id']}-v{view:02d}"
            row["record_sha256"] = synth.record_sha256(row)
            records.append(row)
            position += 1
            if len(records) == CHUNK:
                writer.write_table(pa.Table.from_pylist(records, schema=schema),
                                   row_group_size=2048)
                records = []
    if records:
        writer.write_table(pa.Table.from_pylist(records, schema=schema), row_group_size=2048)
    writer.close()
    (target / "hotpot_validation.json").write_text(json.dumps(source_records),
                                                   encoding="utf-8")
    summary = {"release": str(target / "validation-00000.parquet"),
               "source": str(target / "hotpot_validation.json"), "rows": position,
               "sources": sources, "build_seconds": round(time.perf_counter() - started, 1)}
    info.write_text(json.dumps(summary))
    return summary


# The benchmark releases by name: (sources, sentences per context left untranslated).
RELEASES = {"real": (990, 0), "plus": (23_066, 0), "copies": (23_066, 2),
            "heavy": (23_066, 4)}


def release(name: str) -> dict:
    """{"release", "source", "rows", …} of a named benchmark release, built on first use."""
    sources, untranslated = RELEASES[name]
    return build(DATA / f"{name}_{sources}x24", sources, untranslated=untranslated)
