"""Benchmark the language layer: accuracy on NTREX-128 and the cost of language compliance.

    .venv/bin/python bench/langid.py                 # both detectors

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

The cost of language compliance inside a whole scan, cold and warm, is bench/scan.py's.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from audit.language import detectors, scripts  # noqa: E402
from audit.languages import CODES  # noqa: E402

NTREX = REPO.parent / "shared" / "realdata" / "ntrex128"
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


def evaluate(identifier: detectors.LanguageIdentifier, lines: dict[str, list[str]],
             spans: list[tuple[int, int]]) -> dict:
    # Script verdict per (paragraph, label): any sentence failing the rule.
    profiles = {c: [scripts.script_profile(t) for t in lines[c]] for c in CODES}
    texts, owners = [], []
    for code in CODES:
        for n, (a, b) in enumerate(spans):
            texts.append(" ".join(lines[code][a:b]))
            owners.append((code, n))
    started = time.perf_counter()
    found = identifier.identify(texts)
    seconds = time.perf_counter() - started
    detection = dict(zip(owners, zip(texts, found)))
    # Every (paragraph, label): the language rule for all of them at once (one batch of
    # second opinions).
    judged = [(true, n, label) for true in CODES for n in range(len(spans)) for label in CODES]
    languages = dict(zip(judged, detectors.language_mismatches(
        identifier, [(*detection[(true, n)], label) for true, n, label in judged])))
    hits: dict[tuple[str, str], list[bool]] = defaultdict(list)
    alarms, alarm_examples = [], []
    for true in CODES:
        for n, (a, b) in enumerate(spans):
            det = detection[(true, n)][1]
            for label in CODES:
                script = any(scripts.script_mismatch(profiles[true][k], label)
                             for k in range(a, b))
                lang = languages[(true, n, label)]
                flagged = script or lang
                if label == true:
                    alarms.append(flagged)
                    if flagged:
                        alarm_examples.append((true, a, "script" if script else
                                               f"lang {det.lang} {det.confidence}"))
                else:
                    hits[(label, true)].append(flagged)
    group = scripts.GROUP_OF
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


def short_sentences(identifier: detectors.LanguageIdentifier, lines: dict[str, list[str]],
                    sample: int = 200) -> dict:
    """Single lines (question-sized): false alarms and same-script recall, for reference."""
    rng = random.Random(SEED + 1)
    picks = rng.sample(range(len(lines["en"])), sample)
    texts = [(c, lines[c][i]) for c in CODES for i in picks]
    found = identifier.identify([t for _, t in texts])
    alarms = detectors.language_mismatches(identifier, [(t, d, c) for (c, t), d in
                                                     zip(texts, found)])
    undetermined = sum(d.lang is None for d in found)
    same = detectors.language_mismatches(identifier, [
        (text, d, label) for (true, text), d in zip(texts, found) for label in CODES
        if label != true and scripts.GROUP_OF[label] == scripts.GROUP_OF[true]
        and scripts.GROUP_OF[true] in ("Latin", "Arabic")])
    return {"sentences": len(texts), "false_alarm_rate": sum(alarms) / len(alarms),
            "same_script_recall": sum(same) / len(same),
            "undetermined": undetermined / len(texts)}


def wikipedia_false_alarms(identifier: detectors.LanguageIdentifier) -> dict:
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
        languages = detectors.language_mismatches(identifier, [(t, d, c) for (c, t), d in
                                                            zip(items, found)])
        alarms = [(c, d, t) for (c, t), d, lang in zip(items, found, languages)
                  if lang or scripts.script_mismatch(t, c)]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--detectors", default="langdetect,lingua",
                        help="comma-separated: langdetect, lingua (the checks' detector: "
                             "trigram models, accurate second opinions), lingua-high")
    args = parser.parse_args()
    lines, docs = load_ntrex()
    spans = windows(docs)
    for name in args.detectors.split(","):
        identifier = detectors.DETECTORS[name]() if name != "langdetect" else \
            detectors.LangdetectIdentifier(processes=2)
        print_accuracy(evaluate(identifier, lines, spans), short_sentences(identifier, lines),
                       wikipedia_false_alarms(identifier))


if __name__ == "__main__":
    main()
