"""The demo's independent oracle: every finding an auditor must report, re-derived in plain
Python from the finished rows and the source files alone (never from the plants)."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter
from typing import Any

from audit.languages import BY_NAME
from devkit import synth

CONNECTORS = frozenset({"of", "the", "de", "la", "le", "van", "von", "du", "da", "del", "der",
                        "den", "y", "and", "bin", "al"})
PLACEHOLDERS = frozenset({"—", "–", "―", "-", "--", "---", "…", "...", "N/A", "n/a"})
# The 18 SPEC §2 flags; duplicate_normalized_translated_title alone is non-blocking.
STRUCTURAL_CHECKS = frozenset({
    "blank_question", "blank_answer", "unknown_question_language",
    "english_identity_mismatch", "invalid_source_context", "invalid_context",
    "candidate_count_mismatch", "invalid_candidate", "invalid_source_candidate",
    "unknown_candidate_language", "blank_sentence", "paragraph_sentence_shortfall",
    "paragraph_sentence_surplus", "malformed_supporting_fact", "supporting_title_missing",
    "supporting_title_ambiguous", "support_index_out_of_range",
    "duplicate_normalized_translated_title",
})


def _blank(text: str) -> bool:
    return not text.strip()


def _norm_title(title: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", title).split()).casefold()


def _bad_unicode(text: str) -> bool:
    return any(ch == "\ufffd" or ord(ch) <= 0x08 or ord(ch) in (0x0B, 0x0C)
               or 0x0E <= ord(ch) <= 0x1F or 0x7F <= ord(ch) <= 0x9F for ch in text)


def copy_category(text: str) -> str:
    """Why a byte-equal copy may be legitimate: punctuation, numbers, names stay as is."""
    cats = [unicodedata.category(ch) for ch in text]
    letters = any(c.startswith("L") for c in cats)
    digits = any(c.startswith("N") for c in cats)
    if not letters and not digits:
        return "punctuation"
    if digits and not letters:
        return "number_or_date"
    tokens = text.split()
    if 1 <= len(tokens) <= 6 and len(text) <= 60 and all(
            unicodedata.category(t[0]) in ("Lu", "Lt") or t.isdigit() or t in CONNECTORS
            for t in tokens):
        return "name_like"
    return "sentence"


def _entry_ok(entry: Any) -> bool:
    return (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
            and isinstance(entry[1], list) and all(isinstance(s, str) for s in entry[1]))


def _pseudo_source(row: dict) -> dict:
    """For a row whose source is absent: rebuild what the row itself says about its source."""
    candidates = sorted(row["candidates"], key=lambda c: c["candidate_index"])
    return {"question": row["source_question"], "answer": row["source_answer"],
            "context": [[c["source_title"], c["source_sentences"]] for c in candidates],
            "supporting_facts": [[f["source_title"], f["sentence_index"]]
                                 for f in row["supporting_facts"]]}


Finding = tuple  # (check, paragraph_id, sentence_index, extra: dict)


def _structural(row: dict, source: dict, shape: dict | None) -> list[Finding]:
    """Re-derive the SPEC §2 flags, one finding per offending unit."""
    out: list[Finding] = []

    def add(check: str, pid: str | None = None, k: int | None = None, **extra: str) -> None:
        out.append((check, pid, k, extra))

    english = row["question_language_name"] == "English"
    if _blank(row["question"]):
        add("blank_question")
    if _blank(row["answer"]):
        add("blank_answer")
    if row["question_language_name"] not in BY_NAME:
        add("unknown_question_language")
    if english and row["question"] != source["question"]:
        add("english_identity_mismatch", unit="question")
    if english and row["answer"] != source["answer"]:
        add("english_identity_mismatch", unit="answer")
    context = source["context"]
    if not isinstance(context, list):
        add("invalid_source_context")
        context = []
    shape = shape or {"translated_context_is_list": True,
                      "translated_context_len": len(row["candidates"]),
                      "invalid_candidate_indices": []}
    if not shape["translated_context_is_list"]:
        add("invalid_context")
    if shape["translated_context_len"] != len(context):
        add("candidate_count_mismatch")
    for i in shape["invalid_candidate_indices"]:
        add("invalid_candidate", f"p{i:02d}")
    kept: dict[int, dict] = {}
    seen_titles: set[str] = set()
    for cand in sorted(row["candidates"], key=lambda c: c["candidate_index"]):
        i, pid, sentences = cand["candidate_index"], cand["paragraph_id"], cand["sentences"]
        kept[i] = cand
        if cand["language"] not in BY_NAME:
            add("unknown_candidate_language", pid)
        for k, sentence in enumerate(sentences):
            if _blank(sentence):
                add("blank_sentence", pid, k)
        if i < len(context):
            if _entry_ok(context[i]):
                n_source = len(context[i][1])
                if len(sentences) < n_source:
                    add("paragraph_sentence_shortfall", pid)
                if len(sentences) > n_source:
                    add("paragraph_sentence_surplus", pid)
                if cand["language"] == "English" and (cand["title"] != context[i][0]
                                                      or sentences != context[i][1]):
                    add("english_identity_mismatch", pid, unit="candidate")
            else:
                add("invalid_source_candidate", pid)
        key = _norm_title(cand["title"])
        if key in seen_titles:
            add("duplicate_normalized_translated_title", pid)
        seen_titles.add(key)
    facts = source["supporting_facts"]
    if not isinstance(facts, list):
        add("malformed_supporting_fact")
        facts = []
    titles = [e[0] if isinstance(e, list) and e and isinstance(e[0], str) else None
              for e in context]
    for fact in facts:
        if not (isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str)
                and type(fact[1]) is int and fact[1] >= 0):
            add("malformed_supporting_fact")
            continue
        title, k = fact
        hits = [i for i, t in enumerate(titles) if t == title]
        if len(hits) != 1:
            add("supporting_title_missing" if not hits else "supporting_title_ambiguous",
                None, k)
            add("support_index_out_of_range", None, k)
            continue
        i = hits[0]
        if i not in kept or k >= len(kept[i]["sentences"]):
            add("support_index_out_of_range", f"p{i:02d}", k)
    return out


def _source_anomalies(source: dict) -> list[Finding]:
    out: list[Finding] = []
    context = source["context"] if isinstance(source["context"], list) else []
    for i, entry in enumerate(context):
        if _entry_ok(entry):
            out += [("source_blank_sentence", f"p{i:02d}", k, {})
                    for k, s in enumerate(entry[1]) if _blank(s)]
    titles = [e[0] if isinstance(e, list) and e and isinstance(e[0], str) else None
              for e in context]
    facts = source["supporting_facts"] if isinstance(source["supporting_facts"], list) else []
    for fact in facts:
        if not (isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str)
                and type(fact[1]) is int and fact[1] >= 0):
            continue
        hits = [i for i, t in enumerate(titles) if t == fact[0]]
        if len(hits) == 1 and _entry_ok(context[hits[0]]) and fact[1] >= len(
                context[hits[0]][1]):
            out.append(("source_support_index_out_of_range", f"p{hits[0]:02d}", fact[1], {}))
    return out


def _text_checks(row: dict) -> list[Finding]:
    """Exact source copies, placeholders and invalid Unicode (SPEC §3)."""
    out: list[Finding] = []

    def copy(text: str, unit: str, pid: str | None = None, k: int | None = None) -> None:
        out.append(("exact_source_copy", pid, k, {"unit": unit,
                                                  "category": copy_category(text)}))

    if row["question_language"] != "en":
        if row["question"] == row["source_question"]:
            copy(row["question"], "question")
        if row["answer"] == row["source_answer"]:
            copy(row["answer"], "answer")
    for unit in ("question", "answer"):
        if _bad_unicode(row[unit]):
            out.append(("invalid_unicode", None, None, {"unit": unit}))
    for cand in row["candidates"]:
        pid, source_sentences = cand["paragraph_id"], cand["source_sentences"]
        foreign = cand["language_code"] != "en"
        if foreign and cand["title"] == cand["source_title"] and not _blank(cand["title"]):
            copy(cand["title"], "title", pid)
        if _bad_unicode(cand["title"]):
            out.append(("invalid_unicode", pid, None, {"unit": "title"}))
        for k, sentence in enumerate(cand["sentences"]):
            source = source_sentences[k] if k < len(source_sentences) else None
            if foreign and source is not None and not _blank(source) and sentence == source:
                copy(sentence, "sentence", pid, k)
            if (sentence.strip() in PLACEHOLDERS and source is not None
                    and not _blank(source) and len(source.strip()) > 1):
                out.append(("placeholder_sentence", pid, k, {}))
            if _bad_unicode(sentence):
                out.append(("invalid_unicode", pid, k, {"unit": "sentence"}))
    out += _hiding(row)
    return out


_HIDING = {*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200B, 0x2060}


def _hiding(row: dict) -> list[Finding]:
    """invisible_control: a text unit holding a bidi control, U+200B or U+2060 anywhere, or
    U+FEFF after its first character (never ZWNJ, ZWJ, LRM, RLM or ALM)."""
    def hides(text: str) -> bool:
        return any(ord(ch) in _HIDING or (ord(ch) == 0xFEFF and i > 0)
                   for i, ch in enumerate(text))
    out = [("invisible_control", None, None, {"unit": unit})
           for unit in ("question", "answer") if hides(row[unit])]
    for cand in row["candidates"]:
        if hides(cand["title"]):
            out.append(("invisible_control", cand["paragraph_id"], None, {"unit": "title"}))
        out += [("invisible_control", cand["paragraph_id"], k, {"unit": "sentence"})
                for k, sentence in enumerate(cand["sentences"]) if hides(sentence)]
    return out


# ------------------------------------------------ views that drift from their siblings

def _drift(rows: dict[str, list[dict]]) -> list[dict]:
    """view_context_drift: the rows of one (split, source id) whose candidates or facts
    differ from the context most of them share (the first in release order on a tie), one
    finding per differing unit, as audit/checks/release.py's rule names them."""
    out = []
    for split, split_rows in rows.items():
        groups: dict[str, list[dict]] = {}
        for row in split_rows:
            groups.setdefault(row["source_id"], []).append(row)
        for views in groups.values():
            contexts: dict[str, list[dict]] = {}
            for row in views:
                contexts.setdefault(json.dumps([row["candidates"], row["supporting_facts"]],
                                               sort_keys=True), []).append(row)
            if len(contexts) < 2:
                continue
            ranked = sorted(contexts.values(), key=lambda vs: -len(vs))   # stable: first
            reference = ranked[0][0]
            for other in ranked[1:]:
                for row in other:
                    out += [{"id": row["id"], "source_split": split,
                             "release_position": row["release_position"],
                             "check": "view_context_drift", "paragraph_id": pid,
                             "sentence_index": k} for pid, k in _drift_units(row, reference)]
    return out


def _drift_units(row: dict, sibling: dict) -> list[tuple[str | None, int | None]]:
    units: list[tuple[str | None, int | None]] = []
    mine, theirs = row["candidates"], sibling["candidates"]
    for i in range(max(len(mine), len(theirs))):
        a = mine[i] if i < len(mine) else None
        b = theirs[i] if i < len(theirs) else None
        if a is None or b is None:
            units.append(((a or b)["paragraph_id"], None))
        elif any(a[key] != b[key] for key in ("paragraph_id", "language_code", "title",
                                               "source_title", "source_sentences")) or (
                len(a["sentences"]) != len(b["sentences"])) or (
                a["sentences"] == b["sentences"] and a != b):
            units.append((a["paragraph_id"], None))
        else:
            units += [(a["paragraph_id"], k) for k, (x, y) in
                      enumerate(zip(a["sentences"], b["sentences"])) if x != y]
    if row["supporting_facts"] != sibling["supporting_facts"]:
        units.append((None, None))
    return units


# ------------------------------------------- what the question needs survives translation

_PAREN = re.compile(r"\s*[(（][^()（）]*[)）]\s*$")


def _preservation(rows: dict[str, list[dict]]) -> list[dict]:
    """answer_not_in_evidence and bridge_entity_lost with the default thresholds: the units
    (supporting sentences holding the English answer or the other gold title), the
    renderings (the whole release's translated titles and answers) and the verdicts are
    derived here from the finished rows; the matcher is the check's own
    (`preservation.match_signals`: there is no second one to compare it with)."""
    from audit.checks import preservation as checks
    from audit.language.descriptors import normalize_answer
    from audit.translation import preservation
    thresholds = dict(checks.THRESHOLDS)
    renderings: dict[tuple[str, str], set[str]] = {}
    for row in (r for split_rows in rows.values() for r in split_rows):
        pairs = [(_PAREN.sub("", c["source_title"]), c["language_code"],
                  _PAREN.sub("", c["title"])) for c in row["candidates"]]
        pairs.append((row["source_answer"], row["answer_language"], row["answer"]))
        for english, lang, form in pairs:
            if english is not None and form is not None and not _blank(form):
                renderings.setdefault((synth.normalize_title(english), lang), set()).add(form)

    def contains(text: str, part: str) -> bool:
        return f" {normalize_answer(part)} " in f" {normalize_answer(text)} "

    out = []
    for split, split_rows in rows.items():
        for row in split_rows:
            answer = row["source_answer"]
            eligible = (answer is not None and not _blank(answer)
                        and (copy_category(answer) in ("name_like", "number_or_date")
                             or _by_value(answer)))
            cands = {c["paragraph_id"]: c for c in row["candidates"]}
            facts = list(dict.fromkeys(
                (f["paragraph_id"], f["sentence_index"]) for f in row["supporting_facts"]
                if f["paragraph_id"] in cands and f["sentence_index"] >= 0))
            gold = list(dict.fromkeys(p for p, _ in facts))
            for pid, k in facts:
                c = cands[pid]
                if c["language_code"] not in preservation.TARGETS or k >= min(
                        len(c["sentences"]), len(c["source_sentences"])):
                    continue
                src, tgt = c["source_sentences"][k], c["sentences"][k]
                if _blank(src) or _blank(tgt):
                    continue
                units = []
                if eligible and normalize_answer(answer) and contains(src, answer):
                    units.append(("answer", answer))
                if row["question_type"] == "bridge" and len(gold) >= 2:
                    for other in (g for g in gold if g != pid):
                        full = _PAREN.sub("", cands[other]["source_title"])
                        head = full.split(",")[0]
                        if normalize_answer(full) and contains(src, full):
                            units.append(("bridge", full))
                        elif head != full and len(normalize_answer(head)) >= 4 and contains(
                                src, head):
                            units.append(("bridge", head))
                for kind, target in units:
                    forms = sorted(renderings.get((synth.normalize_title(target),
                                                   c["language_code"]), ()))
                    if _preservation_verdict(preservation, thresholds, kind, c["language_code"],
                                             target, src, tgt, forms):
                        out.append({"id": row["id"], "source_split": split,
                                    "release_position": row["release_position"],
                                    "check": ("answer_not_in_evidence" if kind == "answer"
                                              else "bridge_entity_lost"),
                                    "paragraph_id": pid, "sentence_index": k})
    return out


def _preservation_verdict(preservation, t: dict, kind: str, lang: str, target: str,
                          src: str, tgt: str, forms: list[str]) -> str | None:
    """'lost', 'unverifiable' or None (found) for one unit."""
    s = preservation.match_signals(kind, lang, target, src, tgt, forms)
    script = t[preservation.SCRIPT_KEYS[preservation.script_of(lang)] + "_score"]
    found = (s["en_score"] >= t["rendering_score"] or (s["form_score"] or 0) >=
             t["rendering_score"] or (s.get("roman_score") or 0) >= script
             or (not forms and (s.get("word_score") or 0) >= t["word_score"]))
    if s["num_missing"]:
        return "lost"
    if any(ch.isalpha() for ch in target) and not _by_value(target) and not found:
        return "lost" if forms else "unverifiable"
    return None


_DATE_WORDS = re.compile(r"(?i)\b(?:january|february|march|april|may|june|july|august|"
                         r"september|october|november|december|jan|feb|mar|apr|jun|jul|aug|"
                         r"sept|sep|oct|nov|dec|bce|bc|ad|ce|am|pm|us|usd|gbp|eur|a\.m|p\.m|"
                         r"a\.d|b\.c)\b")


def _by_value(text: str) -> bool:
    """A number or a date judged by its numerals alone: a digit, at most eight words, no
    capitalised word but a month, an era or a currency code."""
    return (any(ch.isdigit() for ch in text) and len(text) <= 60
            and len(text.strip().split(" ")) <= 8
            and not any(ch.isupper() for ch in _DATE_WORDS.sub("", text)))


def _status(flags: set[str]) -> str:
    if flags - {"duplicate_normalized_translated_title"}:
        return "quarantined"
    return "review_required" if flags else "accepted"


def _row_hash(row: dict) -> str:
    body = {k: v for k, v in row.items() if k != "record_sha256"}
    text = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def compute_findings(rows: dict[str, list[dict]], sources: dict[str, list[dict]],
                     shapes: list[dict]) -> tuple[list[dict], dict[tuple[str, int], set[str]]]:
    """Every finding for the finished rows and source files, plus each row's re-derived flags.

    `shapes` supplies the translated-context shape the rows cannot show (planted knowledge).
    """
    shape_of = {(s["source_split"], s["release_position"]): s for s in shapes}
    findings: list[dict] = []
    derived: dict[tuple[str, int], set[str]] = {}
    for split, split_rows in rows.items():
        by_id = {s["_id"]: s for s in sources.get(split, [])}
        id_counts = Counter(r["id"] for r in split_rows)
        for row in split_rows:
            position = row["release_position"]
            source = by_id.get(row["id"]) or _pseudo_source(row)
            structural = _structural(row, source, shape_of.get((split, position)))
            flags = {f[0] for f in structural}
            assert flags <= STRUCTURAL_CHECKS
            derived[(split, position)] = flags
            found = structural + _source_anomalies(source) + _text_checks(row)
            if _row_hash(row) != row["record_sha256"]:
                found.append(("record_hash_mismatch", None, None, {}))
            if row["status"] != _status(flags):
                found.append(("status_mismatch", None, None, {}))
            if sorted(set(row["structural_flags"])) != sorted(flags) or (
                    row["structural_flags"] != sorted(row["structural_flags"])):
                found.append(("structural_flags_mismatch", None, None, {}))
            if id_counts[row["id"]] > 1:
                found.append(("duplicate_id", None, None, {}))
            if row["id"] not in by_id:
                found.append(("unexpected_source_id", None, None, {}))
            findings += [{"id": row["id"], "source_split": split, "release_position": position,
                          "check": check, "paragraph_id": pid, "sentence_index": k, **extra}
                         for check, pid, k, extra in found]
        for missing in sorted(set(by_id) - set(id_counts)):
            findings.append({"id": missing, "source_split": split, "release_position": None,
                             "check": "missing_source_id", "paragraph_id": None,
                             "sentence_index": None})
    findings += _drift(rows) + _preservation(rows)
    return sorted(findings, key=finding_key), derived


def finding_key(f: dict) -> tuple:
    none_last = lambda v, empty: empty if v is None else v  # noqa: E731
    return (f["source_split"], f["id"], none_last(f["release_position"], -1), f["check"],
            none_last(f["paragraph_id"], ""), none_last(f["sentence_index"], -1),
            f.get("unit") or "")
