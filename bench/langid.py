"""Benchmark the language layer: accuracy on NTREX-128 and the cost of language compliance.

    .venv/bin/python bench/langid.py                 # both detectors, then compliance timing
    .venv/bin/python bench/langid.py --skip-timing   # accuracy only

Accuracy. Paragraphs are 3–5 consecutive lines of one NTREX document (sentence-aligned human
translations in all 24 languages, read from ../shared/realdata/ntrex128 at run time). Every
paragraph is judged in its own language (false alarms) and, for each ordered pair (A, B),
A ≠ B, the paragraph in language B is labelled A (a wrong-language substitution). A
paragraph is flagged when either language check would report it: script_mismatch on any
sentence, or language_mismatch on the paragraph. Pairs are grouped into cross-script,
same-script Latin (13 x 12 ordered pairs) and same-script Arabic (3 x 2). Targets:
cross-script 100 %, same-script mean ≥ 90 % with no pair below 75 %, false alarms ≤ 1 %.
The detection itself does not depend on the label, so each paragraph is detected once.

Also printed: single NTREX lines (question-sized) and false alarms on correctly labelled
Wikipedia-domain text (HotpotQA English paragraphs, XQuAD paragraphs and questions).

Timing. Language compliance (both checks: distinct texts, cache look-up, detection of the
misses, the two finding queries) over a 23,066-row release, cold (empty cache) and warm,
each in a fresh process: (1) bench/data/release_23066x1 (tiled from the demo by
bench/scan.py, so only a few hundred distinct texts), and (2) the same rows with 10
candidates each and every candidate's sentences, title and question replaced by NTREX lines
of the assigned language plus a row-unique number, so nearly every one of the ~228,000
paragraphs and ~690,000 sentences is a distinct text, as in a real release (built once
under /tmp, outside the repository).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from audit import langid  # noqa: E402
from audit.languages import CODES  # noqa: E402

NTREX = REPO.parent / "shared" / "realdata" / "ntrex128"
DATA = REPO / "bench" / "data"
# XHotpotQA code -> NTREX file suffix (ntrex128/SOURCE.md, LANGUAGES.tsv).
NTREX_FILE = {
    "en": "src.eng", "zh": "ref.zho-CN", "hi": "ref.hin", "es": "ref.spa", "ar": "ref.arb",
    "fr": "ref.fra", "ru": "ref.rus", "pt": "ref.por", "bn": "ref.ben", "ur": "ref.urd",
    "id": "ref.ind", "ja": "ref.jpn", "de": "ref.deu", "sw": "ref.swa", "tr": "ref.tur",
    "vi": "ref.vie", "ko": "ref.kor", "it": "ref.ita", "fa": "ref.fas", "th": "ref.tha",
    "nl": "ref.nld", "pl": "ref.pol", "el": "ref.ell", "sv": "ref.swe",
}
SEED = 20261130


def load_ntrex() -> tuple[dict[str, list[str]], list[str]]:
    lines = {code: (NTREX / f"newstest2019-{NTREX_FILE[code]}.txt").read_text(
        "utf-8").splitlines() for code in CODES}
    docs = (NTREX / "DOCUMENT_IDS.tsv").read_text("utf-8").splitlines()
    assert all(len(v) == len(docs) for v in lines.values())
    return lines, docs


def windows(docs: list[str], seed: int = SEED) -> list[tuple[int, int]]:
    """Non-overlapping [start, end) windows of 3–5 consecutive lines inside a document."""
    rng = random.Random(seed)
    out, start = [], 0
    while start < len(docs):
        end = start
        while end < len(docs) and docs[end] == docs[start]:
            end += 1
        i = start
        while end - i >= 3:
            size = min(rng.choice((3, 4, 5)), end - i)
            out.append((i, i + size))
            i += size
        start = end
    return out


def evaluate(identifier: langid.LanguageIdentifier, lines: dict[str, list[str]],
             spans: list[tuple[int, int]]) -> dict:
    # Script verdict per (paragraph, label): any sentence failing the rule.
    profiles = {c: [langid.script_profile(t) for t in lines[c]] for c in CODES}
    texts, owners = [], []
    for code in CODES:
        for n, (a, b) in enumerate(spans):
            texts.append(" ".join(lines[code][a:b]))
            owners.append((code, n))
    started = time.perf_counter()
    found = identifier.identify(texts)
    seconds = time.perf_counter() - started
    detection = dict(zip(owners, found))
    hits: dict[tuple[str, str], list[bool]] = defaultdict(list)
    alarms, alarm_examples = [], []
    for true in CODES:
        for n, (a, b) in enumerate(spans):
            det = detection[(true, n)]
            for label in CODES:
                script = any(langid.script_mismatch(profiles[true][k], label)
                             for k in range(a, b))
                lang = langid.language_mismatch(det, label, identifier.min_confidence)
                flagged = script or lang
                if label == true:
                    alarms.append(flagged)
                    if flagged:
                        alarm_examples.append((true, a, "script" if script else
                                               f"lang {det.lang} {det.confidence}"))
                else:
                    hits[(label, true)].append(flagged)
    group = langid.GROUP_OF
    kinds = {"cross-script": [], "same-script Latin": [], "same-script Arabic": []}
    recall = {pair: sum(v) / len(v) for pair, v in hits.items()}
    for (label, true), r in recall.items():
        if group[label] != group[true]:
            kinds["cross-script"].append(((label, true), r))
        elif group[label] == "Latin":
            kinds["same-script Latin"].append(((label, true), r))
        else:
            kinds["same-script Arabic"].append(((label, true), r))
    same = kinds["same-script Latin"] + kinds["same-script Arabic"]
    return {"detector": identifier.version, "paragraphs": len(texts),
            "paragraphs_per_s": len(texts) / seconds,
            "kinds": {k: (len(v), sum(r for _, r in v) / len(v), min(r for _, r in v))
                      for k, v in kinds.items()},
            "same_script_mean": sum(r for _, r in same) / len(same),
            "worst_same": min(same, key=lambda x: x[1]),
            "worst_pairs": sorted(same, key=lambda x: x[1])[:5],
            "false_alarm_rate": sum(alarms) / len(alarms), "false_alarms": sum(alarms),
            "correct_paragraphs": len(alarms), "alarm_examples": alarm_examples[:10]}


def short_sentences(identifier: langid.LanguageIdentifier, lines: dict[str, list[str]],
                    sample: int = 200) -> dict:
    """Single lines (question-sized): false alarms and same-script recall, for reference."""
    rng = random.Random(SEED + 1)
    picks = rng.sample(range(len(lines["en"])), sample)
    texts = [(c, lines[c][i]) for c in CODES for i in picks]
    found = identifier.identify([t for _, t in texts])
    alarms = [langid.language_mismatch(d, c, identifier.min_confidence)
              for (c, _), d in zip(texts, found)]
    same, undetermined = [], 0
    for (true, _), d in zip(texts, found):
        undetermined += d.lang is None
        for label in CODES:
            if label != true and langid.GROUP_OF[label] == langid.GROUP_OF[true] and \
                    langid.GROUP_OF[true] in ("Latin", "Arabic"):
                same.append(langid.language_mismatch(d, label, identifier.min_confidence))
    return {"sentences": len(texts), "false_alarm_rate": sum(alarms) / len(alarms),
            "same_script_recall": sum(same) / len(same),
            "undetermined": undetermined / len(texts)}


def wikipedia_false_alarms(identifier: langid.LanguageIdentifier) -> dict:
    """Correctly labelled Wikipedia-domain text, full of names (HotpotQA's own domain): the
    English HotpotQA dev-head paragraphs, and XQuAD's 240 paragraphs and 1,190 questions in
    its 11 languages of the 24 (human translations). A unit is a false alarm when either
    check would report it (the script rule judged on the whole text)."""
    realdata = NTREX.parent
    hotpot = json.loads((realdata / "hotpotqa_dev_head" /
                         "hotpot_dev_distractor_v1_first103.json").read_text("utf-8"))
    sets = {"HotpotQA en paragraphs": [("en", "".join(s)) for r in hotpot
                                       for _, s in r["context"]]}
    paragraphs, questions = [], []
    for code in ("en", "es", "de", "tr", "vi", "ar", "el", "ru", "th", "zh", "hi"):
        data = json.loads((realdata / "xquad" / f"xquad.{code}.json").read_text("utf-8"))
        for article in data["data"]:
            for p in article["paragraphs"]:
                paragraphs.append((code, p["context"]))
                questions += [(code, q["question"]) for q in p["qas"]]
    sets["XQuAD paragraphs"], sets["XQuAD questions"] = paragraphs, questions
    out = {}
    for name, items in sets.items():
        found = identifier.identify([t for _, t in items])
        alarms = [(c, d, t) for (c, t), d in zip(items, found)
                  if langid.language_mismatch(d, c, identifier.min_confidence)
                  or langid.script_mismatch(t, c)]
        out[name] = (len(items), len(alarms), [(c, d.lang, d.confidence, t[:70])
                                               for c, d, t in alarms[:3]])
    return out


def print_accuracy(r: dict, short: dict, wiki: dict | None = None) -> None:
    print(f"\n== {r['detector']}  ({r['paragraphs']:,} NTREX paragraphs of 3–5 lines, "
          f"{r['paragraphs_per_s']:,.0f} paragraphs/s detection)")
    for kind, (n, mean, low) in r["kinds"].items():
        print(f"  {kind:20} {n:4} ordered pairs  recall mean {mean:7.2%}  min {low:7.2%}")
    (label, true), worst = r["worst_same"]
    print(f"  same-script mean    {r['same_script_mean']:7.2%}   worst pair: {true} text "
          f"labelled {label} {worst:.2%}")
    print("  5 worst same-script pairs: " + ", ".join(
        f"{t}→{lab} {x:.1%}" for (lab, t), x in r["worst_pairs"]))
    print(f"  false alarms        {r['false_alarm_rate']:7.3%}  ({r['false_alarms']} of "
          f"{r['correct_paragraphs']:,} correctly labelled paragraphs)")
    for code, line, why in r["alarm_examples"]:
        print(f"    {code} line {line}: {why}")
    print(f"  single lines: false alarms {short['false_alarm_rate']:.2%}, same-script recall "
          f"{short['same_script_recall']:.2%}, undetermined {short['undetermined']:.1%} "
          f"({short['sentences']:,} lines)")
    for name, (n, bad, examples) in (wiki or {}).items():
        print(f"  {name:23} false alarms {bad / n:6.2%} ({bad} of {n:,})")
        for code, lang, confidence, text in examples:
            print(f"    {code} detected {lang} ({confidence}): {text}")


# --------------------------------------------------------------------------- timing

def distinct_release(base: Path, target: Path, lines: dict[str, list[str]],
                     candidates: int = 10) -> Path:
    """`base` with `candidates` candidates per row (as in XHotpotQA: 10 per row, ~230,000
    paragraphs for 23,066 rows; extra ones copy a row's candidate under a new id and a
    random language) and NTREX text of the assigned language in every candidate, title and
    question, made row-unique by a number (digits are not letters: scripts and languages
    are unchanged)."""
    if target.exists():
        return target
    import pyarrow.parquet as pq
    target.mkdir(parents=True)   # (a partial directory from an interrupted build: delete it)
    n = len(lines["en"])
    for path in sorted(base.glob("*.parquet")):
        table = pq.read_table(path)
        rows = table.to_pylist()
        for r, row in enumerate(rows):
            rng = random.Random(f"{SEED}|{r}")
            cands = row["candidates"]
            for extra in range(len(cands), candidates if cands else 0):
                copy = dict(cands[extra % len(cands)])
                code = rng.choice(CODES)
                copy.update(paragraph_id=f"p{extra:02d}", candidate_index=extra,
                            language_code=code, language=langid.BY_CODE[code].name)
                cands.append(copy)
            for c, cand in enumerate(cands):
                code = cand["language_code"]
                if code not in lines:
                    continue
                start, step = rng.randrange(n), rng.randrange(1, 97)
                tag = f" ({r}.{c})"
                cand["sentences"] = [lines[code][(start + k * step) % n] + tag
                                     for k in range(len(cand["sentences"]))]
                cand["title"] = " ".join(lines[code][(start + 7) % n].split()[:3]) + tag
            q = row["question_language"]
            if q in lines:
                row["question"] = lines[q][rng.randrange(n)] + f" ({r})"
        pq.write_table(type(table).from_pylist(rows, schema=table.schema), target / path.name,
                       compression="zstd", row_group_size=2048)
    return target


_CHILD = """
import json, sys, time
from pathlib import Path
t0 = time.perf_counter()
from audit import readers, langid, language_checks
release = readers.open_release(sys.argv[1])
t1 = time.perf_counter()
identifier = langid.detector(sys.argv[3])
prepared = langid.prepare(release, Path(sys.argv[2]), identifier)
counts = {}
for check in language_checks.LANGUAGE_CHECKS:
    counts[check.name] = release.con.sql(
        f"SELECT count(*) FROM ({check.query(release)})").fetchall()[0][0]
t2 = time.perf_counter()
units = release.con.sql("SELECT unit, count(*) FROM lang_judged GROUP BY 1").fetchall()
sentences = release.con.sql(
    "SELECT sum(len(s.parts)) FROM lang_judged j JOIN lang_script s USING (key) "
    "WHERE j.unit = 'paragraph'").fetchall()[0][0]
print(json.dumps({"compliance_s": t2 - t1, "open_s": t1 - t0, "findings": counts,
                  "sentences": sentences,
                  "units": dict(units), "script_texts": prepared.script_texts,
                  "script_misses": prepared.script_misses, "lang_texts": prepared.lang_texts,
                  "lang_misses": prepared.lang_misses,
                  "phases": {k: round(v, 2) for k, v in prepared.seconds.items()}}))
"""


def time_compliance(release: Path, detector: str) -> None:
    """cold: empty cache; warm: everything cached; rehash: the signals cached but not the
    release's unit index (what an edited release costs: every text is hashed again)."""
    cache = Path(tempfile.mkdtemp(prefix="langid-cache-"))
    try:
        for run in ("cold", "warm", "rehash"):
            if run == "rehash":
                shutil.rmtree(cache / "units")
            done = subprocess.run([sys.executable, "-c", _CHILD, str(release), str(cache),
                                   detector], cwd=REPO, capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(done.stderr)
            f = json.loads(done.stdout)
            paragraphs = f["units"].get("paragraph", 0)
            print(f"  {run:6}  {f['compliance_s']:7.2f} s  ({paragraphs / f['compliance_s']:>9,.0f}"
                  f" paragraphs/s)  units {sum(f['units'].values()):,} "
                  f"(paragraphs {paragraphs:,}, sentences {f['sentences']:,})  "
                  f"distinct: script {f['script_texts']:,} "
                  f"(computed {f['script_misses']:,}), language {f['lang_texts']:,} (computed "
                  f"{f['lang_misses']:,})  phases {f['phases']}  findings {f['findings']}",
                  flush=True)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--detectors", default="langdetect,lingua",
                        help="comma-separated: langdetect, lingua (the checks' detector, "
                             "hybrid mode), lingua-high, lingua-low")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--timing-detector", default=langid.DEFAULT_DETECTOR)
    args = parser.parse_args()
    lines, docs = load_ntrex()
    if not args.skip_accuracy:
        spans = windows(docs)
        for name in args.detectors.split(","):
            identifier = langid.DETECTORS[name]() if name != "langdetect" else \
                langid.LangdetectIdentifier(processes=2)
            print_accuracy(evaluate(identifier, lines, spans), short_sentences(identifier, lines),
                           wikipedia_false_alarms(identifier))
    if args.skip_timing:
        return
    sys.path.insert(0, str(REPO / "bench"))
    from scan import build  # bench/scan.py
    base = build(DATA / "release_23066x1", 23_066, 1)
    # Third-party text stays out of the repository: the NTREX-filled copy lives in /tmp.
    distinct = distinct_release(base, Path(tempfile.gettempdir()) / "xhotpotqa-bench" /
                                "release_23066x10_ntrex", lines)
    for label, path in (("tiled demo release (few distinct texts)", base),
                        ("NTREX-filled release, 10 candidates per row (distinct texts)", distinct)):
        print(f"\n== language compliance, {label}: {path.name}, detector "
              f"{args.timing_detector}", flush=True)
        time_compliance(path, args.timing_detector)


if __name__ == "__main__":
    main()
