"""Check declarations: every check is declared once, with its metadata and the set-based SQL
that yields its findings (`audit.registry` assembles them; everything else reads that).

A check's SQL is an expression that evaluates to a list of findings
`STRUCT(p paragraph_id, s sentence_index, d detail, c category, e evidence)`, either over one
release row `r` (its own fields: question, answer, languages…) or over one distinct context
`r` (its candidates, supporting facts and title keys, and the HotpotQA source row `s` when one
is attached; see `level`). All row checks run in one pass over the views and all context
checks in one pass over the contexts, with DuckDB list lambdas instead of unnesting the
nested columns; a context's findings then reach each of its views.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import pyarrow as pa

from . import controls, hashing
from .languages import CODES
from .sqltext import create_table

if TYPE_CHECKING:
    from .io.model import Release

COPY_CATEGORIES = ("number_or_date", "punctuation", "name_like", "sentence")
UNITS = ("row", "paragraph", "sentence", "fact", "release")
SEVERITIES = ("blocking", "review", "info")
ORIGINS = ("source", "translation", "release")
FINDING = "STRUCT(p VARCHAR, s INTEGER, d VARCHAR, c VARCHAR, e VARCHAR)"
NONE = f"[]::{FINDING}[]"
_LANGS = "[" + ", ".join(f"'{code}'" for code in CODES) + "]"


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    unit: str
    severity: str
    origin: str
    description: str
    layouts: frozenset[str]
    # Row expression (see module doc); None when the layout never carries what it needs.
    # An expression that reads the candidates, the supporting facts or the source runs once
    # per distinct context (`level`); a check that also reads the row's own fields puts that
    # part in `sql` and the context part in `context_sql`.
    sql: str | None = None
    context_sql: str | None = None
    # Capabilities `sql` needs ("source", "record_hash"); without them `witness` runs instead.
    needs: frozenset[str] = frozenset()
    # What the layout shows without those capabilities (may miss cases), or None.
    witness: str | None = None
    # Part of the release's own status rule (SPEC §2, §1.2): compared with shipped flags.
    reference: bool = False
    # The categories its findings can carry, and the default severity of those whose
    # severity differs from the check's.
    categories: tuple[str, ...] = ()
    category_severity: tuple[tuple[str, str], ...] = ()
    # A whole-release check instead of a row expression: prepares what it needs (it may
    # compute slow signals once per distinct text) and returns a SELECT of findings rows
    # (rid, id, source_split, check, paragraph_id, sentence_index, detail, category) and
    # optionally a ninth column, evidence (the substring a view highlights). A check with
    # thresholds is called with the ones in force as a second argument, {name: value}.
    query: Callable[..., str] | None = None
    # What else decides a query check's findings (its rule's constants): part of the
    # registry fingerprint.
    version: str = ""
    # Tunable thresholds (name, default): a policy file may override them per check.
    thresholds: tuple[tuple[str, bool | int | float], ...] = ()

    def plan(self, capabilities: frozenset[str]) -> tuple[str | None, str | None, bool]:
        """(row SQL, context SQL, whether they see every case); when they do not, a flag
        the release shipped is carried over as a finding rather than silently contradicted."""
        if (self.sql or self.context_sql) and self.needs <= capabilities:
            parts, exhaustive = (self.sql, self.context_sql), True
        else:
            parts, exhaustive = (self.witness, None), False
        row = [p for p in parts if p and level(p) == "row"]
        context = [p for p in parts if p and level(p) == "context"]
        return (concat(*row) if len(row) > 1 else (row or [None])[0],
                concat(*context) if len(context) > 1 else (context or [None])[0], exhaustive)


_CONTEXT_FIELDS = re.compile(r"\br\.(candidates|supporting_facts|title_keys)\b|\bs\.")
_ROW_FIELDS = re.compile(r"\br\.(?!candidates\b|supporting_facts\b|title_keys\b)[a-z_]+")


def level(sql: str) -> str:
    """'context' for an expression over a context (candidates, facts, title keys, the
    source row `s`), 'row' for one over the row's own fields; never both."""
    context, row = bool(_CONTEXT_FIELDS.search(sql)), bool(_ROW_FIELDS.search(sql))
    if context and row:
        raise ValueError(f"an expression reads both a row's fields and its context: {sql}")
    return "context" if context else "row"


# ------------------------------------------------------------------ expression helpers

def _f(p: str = "NULL", s: str = "NULL", d: str = "''", c: str = "NULL", e: str = "NULL") -> str:
    return (f"{{'p': {p}::VARCHAR, 's': ({s})::INTEGER, 'd': {d}, 'c': {c}::VARCHAR, "
            f"'e': {e}::VARCHAR}}")


def when(cond: str, d: str = "''", c: str = "NULL") -> str:
    """One row-level finding when `cond` holds."""
    return f"(CASE WHEN {cond} THEN [{_f(d=d, c=c)}] ELSE {NONE} END)"


def per_candidate(cond: str, d: str = "''") -> str:
    """A finding per candidate `c` meeting `cond`."""
    return (f"list_transform(list_filter(r.candidates, lambda c: {cond}), "
            f"lambda c: {_f(p='c.paragraph_id', d=d)})")


def per_sentence(cond: str, d: str = "''", c: str = "NULL", over: str = "sentences") -> str:
    """A finding per index `k` (0-based) of `c.<over>` meeting `cond`; in `cond`, `t` is the
    translated sentence and `src` the source sentence at k (NULL past the end)."""
    cond = cond.replace("{t}", "c.sentences[k + 1]").replace("{src}", "c.source_sentences[k + 1]")
    d = d.replace("{t}", "c.sentences[k + 1]").replace("{src}", "c.source_sentences[k + 1]")
    c = c.replace("{t}", "c.sentences[k + 1]")
    return (f"flatten(list_transform(r.candidates, lambda c: list_transform("
            f"list_filter(range(len(c.{over})), lambda k: {cond}), "
            f"lambda k: {_f(p='c.paragraph_id', s='k', d=d, c=c)})))")


def per_fact(cond: str, d: str = "''") -> str:
    """A finding per supporting fact `f` meeting `cond`, located at the fact."""
    return (f"list_transform(list_filter(r.supporting_facts, lambda f: {cond}), "
            f"lambda f: {_f(p='f.paragraph_id', s='f.sentence_index', d=d)})")


def concat(*parts: str) -> str:
    return "list_concat(" + ", ".join(parts) + ")"


# A candidate "has a source" when the release filled its source side (the reference leaves
# source_title "" and source_sentences [] when the source context had no valid entry).
HAS_SOURCE = "NOT (c.source_title = '' AND len(c.source_sentences) = 0)"
# Number of translated sentences of the candidate a fact points at; -1 when unresolved.
FACT_LEN = ("coalesce(list_max(list_transform(list_filter(r.candidates, "
            "lambda x: x.paragraph_id = f.paragraph_id), lambda x: len(x.sentences))), -1)")
FACT_SOURCE_LEN = ("coalesce(list_max(list_transform(list_filter(r.candidates, "
                   "lambda x: x.paragraph_id = f.paragraph_id AND NOT (x.source_title = '' "
                   "AND len(x.source_sentences) = 0)), lambda x: len(x.source_sentences))), -1)")
TITLE_MATCHES = "len(list_filter(r.candidates, lambda x: x.source_title = f.source_title))"
SOURCE_TITLE_MATCHES = "len(list_filter(s.ctx_titles, lambda t: t = f.source_title))"
PID = "'p' || lpad(CAST(k AS VARCHAR), 2, '0')"
V1 = frozenset({"v1.1", "jsonl"})
ALL = frozenset({"v1.1", "v2", "jsonl"})
V2 = frozenset({"v2"})


def _v1(name: str, unit: str, description: str, severity: str = "blocking", **kw) -> Check:
    return Check(name, unit, severity, "translation", description, V1, reference=True, **kw)


# --------------------------------------------------------------- SPEC §2: the 18 V1.1 flags

V11_CHECKS = (
    _v1("blank_question", "row", "The translated question is blank (Python strip()).",
        sql=when("is_blank(r.question)", "'question is blank'")),
    _v1("blank_answer", "row", "The translated answer is blank (Python strip()).",
        sql=when("is_blank(r.answer)", "'answer is blank'")),
    _v1("unknown_question_language", "row", "The question language is not one of the 24.",
        sql=when(f"NOT list_contains({_LANGS}, r.question_language)",
                 "'question language ' || coalesce(r.question_language_name, "
                 "r.question_language)")),
    _v1("english_identity_mismatch", "paragraph",
        "An English-assigned question, answer, title or paragraph differs from its source.",
        sql=concat(
            when("r.question_language = 'en' AND r.question IS DISTINCT FROM r.source_question",
                 "'English question differs from the source question'"),
            when("r.question_language = 'en' AND r.answer IS DISTINCT FROM r.source_answer",
                 "'English answer differs from the source answer'")),
        context_sql=per_candidate(f"c.language_code = 'en' AND {HAS_SOURCE} AND (c.title <> "
                                  "c.source_title OR c.sentences <> c.source_sentences)",
                                  "'English paragraph differs from its source'")),
    Check("invalid_source_context", "row", "blocking", "source",
          "The HotpotQA source context is not a list.", V1, reference=True,
          sql=when("s.source_id IS NOT NULL AND NOT s.context_is_list",
                   "'source context is not a list'"),
          needs=frozenset({"source"})),
    # The legacy translated context is not in any release layout: only the shipped flag tells.
    _v1("invalid_context", "row", "The translated context was not a list (legacy input)."),
    _v1("candidate_count_mismatch", "row",
        "The translated context has a different number of candidates than the source.",
        sql=when("s.source_id IS NOT NULL AND s.context_len <> "
                 "coalesce(list_max(list_transform(r.candidates, "
                 "lambda c: c.candidate_index)) + 1, 0)",
                 "'source has ' || s.context_len || ' paragraphs, translation ' || "
                 "coalesce(list_max(list_transform(r.candidates, "
                 "lambda c: c.candidate_index)) + 1, 0)"),
        needs=frozenset({"source"})),
    _v1("invalid_candidate", "paragraph",
        "A translated candidate was malformed and dropped (a gap in candidate_index).",
        witness=("list_transform(list_filter(range(coalesce(list_max(list_transform("
                 "r.candidates, lambda c: c.candidate_index)), -1) + 1), lambda k: NOT "
                 "list_contains(list_transform(r.candidates, lambda c: c.candidate_index), k)),"
                 f" lambda k: {_f(p=PID, d=chr(39) + 'candidate missing from the release' + chr(39))})")),
    Check("invalid_source_candidate", "paragraph", "blocking", "source",
          "A source context entry is not [title, [sentences]].", V1, reference=True,
          sql=per_candidate("s.source_id IS NOT NULL AND c.candidate_index < s.context_len "
                            "AND NOT s.ctx_valid[c.candidate_index + 1]",
                            "'source entry ' || c.candidate_index || ' is malformed'"),
          needs=frozenset({"source"})),
    _v1("unknown_candidate_language", "paragraph", "A candidate's language is not one of the 24.",
        sql=per_candidate(f"NOT list_contains({_LANGS}, c.language_code)",
                          "'candidate language ' || c.language")),
    _v1("blank_sentence", "sentence", "A translated sentence is blank (Python strip()).",
        sql=per_sentence("is_blank({t})", "'translated sentence is blank'")),
    _v1("paragraph_sentence_shortfall", "paragraph",
        "A translated paragraph has fewer sentences than its source.",
        sql=per_candidate(f"{HAS_SOURCE} AND len(c.sentences) < len(c.source_sentences)",
                          "len(c.sentences) || ' translated vs ' || len(c.source_sentences) "
                          "|| ' source sentences'")),
    _v1("paragraph_sentence_surplus", "paragraph",
        "A translated paragraph has more sentences than its source.",
        sql=per_candidate(f"{HAS_SOURCE} AND len(c.sentences) > len(c.source_sentences)",
                          "len(c.sentences) || ' translated vs ' || len(c.source_sentences) "
                          "|| ' source sentences'")),
    Check("malformed_supporting_fact", "fact", "blocking", "source",
          "A source supporting fact is not [title, non-negative int] (dropped by the build).",
          V1, reference=True,
          sql=when("s.source_id IS NOT NULL AND NOT list_bool_and(list_transform(s.facts, "
                   "lambda f: f.valid))",
                   "len(list_filter(s.facts, lambda f: NOT f.valid)) || "
                   "' malformed supporting fact(s) in the source'"),
          needs=frozenset({"source"})),
    # Without the source, the candidates' source titles stand in for the source context;
    # they miss titles of source entries the build could not use.
    _v1("supporting_title_missing", "fact",
        "A supporting fact's title matches no source paragraph title (exact).",
        sql=per_fact(f"{SOURCE_TITLE_MATCHES} = 0", "'no paragraph titled ' || f.source_title"),
        needs=frozenset({"source"}),
        witness=per_fact(f"f.paragraph_id IS NULL AND {TITLE_MATCHES} < 2",
                         "'no paragraph titled ' || f.source_title")),
    _v1("supporting_title_ambiguous", "fact",
        "A supporting fact's title matches two or more source paragraph titles (exact).",
        sql=per_fact(f"{SOURCE_TITLE_MATCHES} >= 2",
                     f"{SOURCE_TITLE_MATCHES} || ' paragraphs titled ' || f.source_title"),
        needs=frozenset({"source"}),
        witness=per_fact(f"f.paragraph_id IS NULL AND {TITLE_MATCHES} >= 2",
                         f"{TITLE_MATCHES} || ' paragraphs titled ' || f.source_title")),
    _v1("support_index_out_of_range", "fact",
        "A supporting fact points past the translated paragraph (or at no paragraph).",
        sql=per_fact(f"f.sentence_index >= {FACT_LEN}",
                     f"CASE WHEN {FACT_LEN} < 0 THEN 'fact resolves to no paragraph' ELSE "
                     f"'sentence ' || f.sentence_index || ' of ' || {FACT_LEN} || "
                     "' translated sentences' END")),
    _v1("duplicate_normalized_translated_title", "paragraph",
        "Two candidates share a translated title after NFKC, whitespace collapse and casefold.",
        severity="review",
        sql=("(CASE WHEN list_unique(r.title_keys) < len(r.title_keys) THEN list_transform("
             "list_filter(range(len(r.title_keys)), lambda k: list_position(r.title_keys, "
             "r.title_keys[k + 1]) < k + 1), lambda k: "
             + _f(p="r.candidates[k + 1].paragraph_id",
                  d="'same normalised title as ' || r.candidates[list_position(r.title_keys, "
                    "r.title_keys[k + 1])].paragraph_id") +
             f") ELSE {NONE} END)")),
)

# ------------------------------------------------------ SPEC §3: checks the reference lacks

BEYOND_CHECKS = (
    Check("exact_source_copy", "sentence", "review", "translation",
          "A non-English sentence, title, question or answer is byte-equal to its English "
          "source; the category separates likely invariants from ordinary sentences.", ALL,
          # Numbers, punctuation and names legitimately stay as they are (SPEC §3).
          categories=COPY_CATEGORIES, category_severity=(("number_or_date", "info"), ("punctuation", "info"),
                             ("name_like", "info")),
          sql=concat(
              when("r.question_language <> 'en' AND r.question = r.source_question",
                   "'question equals the English source'", "copy_category(r.question)"),
              when("r.answer_language <> 'en' AND r.answer = r.source_answer",
                   "'answer equals the English source'", "copy_category(r.answer)")),
          context_sql=concat(
              "list_transform(list_filter(r.candidates, lambda c: c.language_code <> 'en' AND "
              "c.title = c.source_title), lambda c: "
              + _f(p="c.paragraph_id", d="'title equals the English source'",
                   c="copy_category(c.title)") + ")",
              per_sentence("{t} = {src} AND c.language_code <> 'en' AND NOT is_blank({src})",
                           "'sentence equals the English source'", "copy_category({t})"))),
    Check("placeholder_sentence", "sentence", "review", "translation",
          "A translated sentence is a stand-in (em dash, ellipsis, N/A) where the source "
          "sentence has content.", ALL,
          sql=per_sentence("is_placeholder({t}) AND NOT is_blank({src}) AND "
                           "length(py_strip({src})) > 1",
                           "'placeholder ' || py_strip({t}) || ' for a non-blank source'")),
    Check("invalid_unicode", "sentence", "review", "translation",
          "Text contains U+FFFD or a C0/C1 control character.", ALL,
          sql=concat(when("has_invalid_chars(r.question)", "'question'"),
                     when("has_invalid_chars(r.answer)", "'answer'")),
          context_sql=concat(per_candidate("has_invalid_chars(c.title)", "'title'"),
                             per_sentence("has_invalid_chars({t})", "'sentence'"))),
    # On V2 the release's own source:… flags report these two defects: one finding per
    # defect, under the reference name (whose detail names ours).
    Check("source_blank_sentence", "sentence", "review", "source",
          "A source (English) sentence is blank: inherited from HotpotQA.", V1,
          sql=per_sentence("is_blank({src})", "'source sentence is blank'",
                           over="source_sentences")),
    Check("source_support_index_out_of_range", "fact", "review", "source",
          "A supporting fact points past its source paragraph: inherited from HotpotQA.", V1,
          sql=per_fact(f"{FACT_SOURCE_LEN} >= 0 AND f.sentence_index >= {FACT_SOURCE_LEN}",
                       f"'sentence ' || f.sentence_index || ' of ' || {FACT_SOURCE_LEN} || "
                       "' source sentences'")),
)

# ------------------------------------------ characters that hide or reorder what is read

_HIDING = controls.regex_class(controls.BIDI + controls.INFO)
# Bidi controls and zero-width characters anywhere, a byte-order mark after the first
# character: the cheap filter that leaves only the rare texts to describe.
_HIDING_PATTERN = f"{_HIDING}|(?s:.){controls.regex_class([controls.BOM])}"
# Texts holding such a character: questions and answers per view, titles and sentences once
# per distinct context.
_HIDING_UNITS = """
SELECT rid, NULL::INTEGER AS ctx, NULL AS paragraph_id, NULL::INTEGER AS sentence_index,
       'question' AS unit, question AS text FROM views WHERE regexp_matches(question, $p)
UNION ALL
SELECT rid, NULL, NULL, NULL, 'answer', answer FROM views WHERE regexp_matches(answer, $p)
UNION ALL
SELECT NULL, ctx, c.paragraph_id, NULL, 'title', c.title
FROM (SELECT ctx, unnest(candidates) AS c FROM contexts
      WHERE len(list_filter(candidates, lambda c: regexp_matches(c.title, $p))) > 0)
WHERE regexp_matches(c.title, $p)
UNION ALL
SELECT NULL, ctx, c.paragraph_id, k - 1, 'sentence', c.sentences[k]
FROM (SELECT ctx, c, unnest(range(1, len(c.sentences) + 1)) AS k
      FROM (SELECT ctx, unnest(candidates) AS c FROM contexts
            WHERE len(list_filter(candidates, lambda c: len(list_filter(
                      c.sentences, lambda s: regexp_matches(s, $p))) > 0)) > 0))
WHERE regexp_matches(c.sentences[k], $p)
"""
_HIDING_SCHEMA = pa.schema([("rid", pa.int64()), ("ctx", pa.int32()),
                            ("paragraph_id", pa.string()), ("sentence_index", pa.int32()),
                            ("detail", pa.string()), ("category", pa.string()),
                            ("evidence", pa.string())])


def hiding_characters(text: str) -> list[tuple[int, str]]:
    """(position, character) of each character that hides or reorders text, in order:
    bidi controls, U+200B and U+2060 anywhere, U+FEFF after the first character."""
    return [(i, ch) for i, ch in enumerate(text)
            if controls.kind(ch) in ("review", "info") and not (i == 0 and ord(ch) == controls.BOM)]


def _invisible_control(release: "Release") -> str:
    """One finding per text unit holding such characters; its category is that of the
    worst one (bidi and BOM: review, zero-width: info), its detail names the first."""
    con = release.con
    units = con.sql(_HIDING_UNITS, params={"p": _HIDING_PATTERN}).to_arrow_table().to_pylist()
    rows: dict[str, list] = {f.name: [] for f in _HIDING_SCHEMA}
    for unit in units:
        found = hiding_characters(unit["text"] or "")
        if not found:
            continue
        kinds = {controls.kind(ch) for _, ch in found}
        position, char = found[0]
        more = f" and {len(found) - 1} more" if len(found) > 1 else ""
        for key in ("rid", "ctx", "paragraph_id", "sentence_index"):
            rows[key].append(unit[key])
        rows["detail"].append(f"{unit['unit']}: {controls.name(char)} at character "
                              f"{position}{more}")
        rows["category"].append("bidi_or_bom" if "review" in kinds else "zero_width")
        rows["evidence"].append(char)
    create_table(con, "invisible_control_rows", _HIDING_SCHEMA, rows, temp=True)
    # A title's or sentence's finding reaches every view of its context.
    return """SELECT v.rid, v.id, v.source_split, 'invisible_control', f.paragraph_id,
        f.sentence_index, f.detail, f.category, f.evidence
        FROM invisible_control_rows f JOIN views v USING (rid)
        UNION ALL
        SELECT v.rid, v.id, v.source_split, 'invisible_control', f.paragraph_id,
        f.sentence_index, f.detail, f.category, f.evidence
        FROM invisible_control_rows f JOIN views v USING (ctx)"""


HIDING_CHECKS = (
    Check("invisible_control", "sentence", "review", "translation",
          "A title, sentence, question or answer holds a character that reorders or hides "
          "text (bidi embeddings, overrides and isolates, U+FEFF after the first character: "
          "review; U+200B, U+2060: info). ZWNJ/ZWJ and LRM/RLM/ALM belong to the writing "
          "systems and are never flagged.", ALL,
          categories=("bidi_or_bom", "zero_width"),
          category_severity=(("zero_width", "info"),), query=_invisible_control),
)


# ------------------------------------------------ SPEC §1.2: V2 RC1 flags, names verbatim


def _v2(name: str, unit: str, description: str, quality: bool = False, origin="translation",
        **kw) -> Check:
    return Check(name, unit, "review" if quality else "blocking", origin, description, V2,
                 reference=True, **kw)


_V2_PARAGRAPH_INDEX = "TRY_CAST(regexp_extract(c.paragraph_id, '^p(\\d{2})$', 1) AS INTEGER)"

V2_CHECKS = (
    _v2("xhotpot:blank_question", "row", "The question is blank.",
        sql=when("is_blank(r.question)", "'question is blank'")),
    _v2("xhotpot:blank_answer", "row", "The answer is blank.",
        sql=when("is_blank(r.answer)", "'answer is blank'")),
    _v2("xhotpot:unknown_question_language", "row", "Question language not one of the 24.",
        sql=when(f"NOT list_contains({_LANGS}, r.question_language)",
                 "'question language ' || r.question_language")),
    _v2("xhotpot:unknown_answer_language", "row", "Answer language not one of the 24.",
        sql=when(f"NOT list_contains({_LANGS}, r.answer_language)",
                 "'answer language ' || r.answer_language")),
    _v2("xhotpot:question_answer_language_mismatch", "row",
        "Question and answer carry different languages.",
        sql=when("r.question_language <> r.answer_language",
                 "r.question_language || ' vs ' || r.answer_language")),
    _v2("xhotpot:question_source_copy", "row", "Non-English question equals the English source.",
        quality=True,
        sql=when("r.question_language <> 'en' AND r.question = r.source_question",
                 "'question equals the English source'")),
    _v2("xhotpot:answer_source_copy", "row", "Non-English answer equals the English source.",
        quality=True,
        sql=when("r.answer_language <> 'en' AND r.answer = r.source_answer",
                 "'answer equals the English source'")),
    _v2("xhotpot:sentence_count_mismatch", "paragraph",
        "A translated paragraph's sentence count differs from the source's.",
        sql=per_candidate("len(c.sentences) <> len(c.source_sentences)",
                          "len(c.sentences) || ' translated vs ' || len(c.source_sentences) "
                          "|| ' source sentences'")),
    _v2("xhotpot:blank_translation_sentence", "sentence", "A translated sentence is blank.",
        sql=per_sentence("is_blank({t})", "'translated sentence is blank'")),
    _v2("xhotpot:blank_translated_title", "paragraph", "A translated title is blank.",
        sql=per_candidate("is_blank(c.title)", "'translated title is blank'")),
    _v2("xhotpot:unknown_candidate_language", "paragraph", "Candidate language not one of 24.",
        sql=per_candidate(f"NOT list_contains({_LANGS}, c.language_code)",
                          "'candidate language ' || c.language_code")),
    _v2("xhotpot:paragraph_sentence_source_copy", "paragraph",
        "A non-English paragraph has a sentence equal to its non-blank English source.",
        quality=True,
        sql=per_candidate("c.language_code <> 'en' AND len(list_filter(range(least("
                          "len(c.sentences), len(c.source_sentences))), lambda k: NOT "
                          "is_blank(c.source_sentences[k + 1]) AND c.sentences[k + 1] = "
                          "c.source_sentences[k + 1])) > 0", "'a sentence equals its source'")),
    _v2("source:blank_source_sentence", "sentence", "A source sentence is blank (inherited).",
        origin="source",
        sql=per_sentence("is_blank({src})",
                         "'source sentence is blank (source_blank_sentence in other layouts)'",
                         over="source_sentences")),
    _v2("source:support_index_out_of_range", "fact",
        "A supporting fact points past its source paragraph (inherited).", origin="source",
        sql=per_fact(f"{FACT_SOURCE_LEN} >= 0 AND f.sentence_index >= {FACT_SOURCE_LEN}",
                     "'sentence ' || f.sentence_index || ' of ' || "
                     f"{FACT_SOURCE_LEN} || ' source sentences "
                     "(source_support_index_out_of_range in other layouts)'")),
    _v2("xhotpot:candidate_order_mismatch", "paragraph",
        "A candidate's paragraph id does not match its position.",
        sql=per_candidate(f"{_V2_PARAGRAPH_INDEX} IS DISTINCT FROM c.candidate_index",
                          "c.paragraph_id || ' at position ' || c.candidate_index")),
    _v2("xhotpot:invalid_paragraph_id", "paragraph",
        "A candidate's paragraph id is not pNN within the source context.",
        witness=per_candidate(f"{_V2_PARAGRAPH_INDEX} IS NULL",
                              "'invalid paragraph id ' || c.paragraph_id")),
    _v2("xhotpot:input_checksum_mismatch", "row",
        "The generator's semantic checksum did not reproduce.", origin="release",
        sql=when("NOT r.input_checksum_valid", "'input checksum invalid'")),
    _v2("provenance:assignment_manifest_hash_missing", "row",
        "The language-assignment manifest hash is missing.", quality=True, origin="release",
        sql=when("r.assignment_manifest_sha256 = ''", "'no assignment manifest hash'")),
    _v2("xhotpot:candidate_count_mismatch", "row",
        "Candidate count differs from the source context.",
        sql=when("s.source_id IS NOT NULL AND s.context_len <> len(r.candidates)",
                 "'source has ' || s.context_len || ', release ' || len(r.candidates)"),
        needs=frozenset({"source"})),
    # Shape flags of the raw generated record, which the release layout no longer carries.
    *(_v2(name, "row", description) for name, description in (
        ("xhotpot:source_split_mismatch", "Generated split differs from the source split."),
        ("xhotpot:source_id_mismatch", "Generated source id differs from the source."),
        ("xhotpot:candidates_not_list", "Generated candidates were not a list."),
        ("xhotpot:malformed_candidate", "A generated candidate was not an object."),
        ("xhotpot:source_title_mismatch", "Recorded source title differs from the source."),
        ("xhotpot:source_sentences_mismatch",
         "Recorded source sentences differ from the source."),
        ("xhotpot:translation_sentences_not_list", "Translated sentences were not a list."),
        ("xhotpot:supporting_facts_not_list", "Generated supporting facts were not a list."),
        ("xhotpot:malformed_supporting_fact", "A generated supporting fact was not an object."),
        ("xhotpot:invalid_support_sentence_id", "A support sentence id was not an integer."),
        ("xhotpot:invalid_support_paragraph_id", "A support paragraph id was not pNN."),
        ("source:supporting_title_not_unique", "A source support title is not unique."),
        ("xhotpot:support_annotation_mismatch", "Support differs from the source annotation."),
        ("xhotpot:question_type_mismatch", "Generated question type differs from the source."),
        ("xhotpot:difficulty_mismatch", "Generated difficulty differs from the source."),
        ("xhotpot:missing_provenance", "The generated record had no provenance."),
    )),
)

# ----------------------------------------- release-level checks (queries over the whole scan)

# ------------------------------------------------ whole-release checks (their own queries)

def _duplicate_id(release: "Release") -> str:
    return """SELECT rid, id, source_split, 'duplicate_id', NULL, NULL,
        n || ' rows share this id', NULL FROM (SELECT rid, id, source_split,
        count(*) OVER (PARTITION BY id, source_split) AS n FROM release) WHERE n > 1"""


def _missing_source_id(release: "Release") -> str:
    return """SELECT NULL, s.source_id, s.source_split, 'missing_source_id', NULL, NULL,
        'source record ' || s.source_position || ' of ' || s.file || ' has no release row',
        NULL FROM sources s ANTI JOIN release r
        ON r.source_id = s.source_id AND r.source_split = s.source_split"""


def _unexpected_source_id(release: "Release") -> str:
    return """SELECT r.rid, r.id, r.source_split, 'unexpected_source_id', NULL, NULL,
        'source id ' || r.source_id || ' is not in the HotpotQA source', NULL
        FROM release r ANTI JOIN sources s
        ON r.source_id = s.source_id AND r.source_split = s.source_split
        WHERE r.source_split IN (SELECT DISTINCT source_split FROM sources)"""


# The views of one source (XHotpotQA+: 24, one per question language) must share one context:
# only the question and answer change. Contexts are grouped by value (readers), so a source
# with views in two contexts has drifted; the context most of its views share (the first
# such in release order on a tie) is the reference, and each view of another context gets a
# finding per unit that differs from it, naming the sibling view it differs from.
_DRIFT = """
WITH s AS (SELECT source_id, source_split, ctx, count(*) AS n, min(rid) AS first_rid
           FROM views GROUP BY ALL),
multi AS (SELECT *, sum(n) OVER (PARTITION BY source_id, source_split) AS total,
                 count(*) OVER (PARTITION BY source_id, source_split) AS contexts FROM s),
ranked AS (SELECT *, row_number() OVER (PARTITION BY source_id, source_split
                                        ORDER BY n DESC, first_rid) AS rank
           FROM multi WHERE contexts > 1),
pairs AS (SELECT d.ctx, d.n, d.total, r.ctx AS ref_ctx, r.n AS ref_n, r.first_rid AS ref_rid,
                 a.candidates AS ca, b.candidates AS cb, a.supporting_facts AS fa,
                 b.supporting_facts AS fb
          FROM ranked d JOIN ranked r ON r.source_id = d.source_id
               AND r.source_split = d.source_split AND r.rank = 1
          JOIN contexts a ON a.ctx = d.ctx JOIN contexts b ON b.ctx = r.ctx
          WHERE d.rank > 1),
cand AS (SELECT * EXCLUDE (ca, cb), ca[i + 1] AS a, cb[i + 1] AS b
         FROM (SELECT *, unnest(range(greatest(len(ca), len(cb)))) AS i FROM pairs)),
units AS (
    SELECT ctx, n, total, ref_n, ref_rid, coalesce(a.paragraph_id, b.paragraph_id) AS p,
           NULL::INTEGER AS k, CASE
        WHEN a IS NULL THEN 'candidate ' || (i + 1) || ' (missing here, ' || b.paragraph_id ||
                            ' in the sibling)'
        WHEN b IS NULL THEN 'candidate ' || (i + 1) || ' (' || a.paragraph_id ||
                            ' here, missing in the sibling)'
        WHEN a.paragraph_id IS DISTINCT FROM b.paragraph_id THEN 'candidate ' || (i + 1) ||
             ' (' || a.paragraph_id || ' here, ' || b.paragraph_id || ' in the sibling)'
        WHEN a.language_code IS DISTINCT FROM b.language_code THEN 'language (' ||
             a.language_code || ' here, ' || b.language_code || ' in the sibling)'
        WHEN a.title IS DISTINCT FROM b.title THEN 'translated title'
        WHEN a.source_title IS DISTINCT FROM b.source_title THEN 'English title'
        WHEN a.source_sentences IS DISTINCT FROM b.source_sentences THEN 'English sentences'
        WHEN len(a.sentences) <> len(b.sentences) THEN 'translated sentence count (' ||
             len(a.sentences) || ' here, ' || len(b.sentences) || ' in the sibling)'
        WHEN a.sentences = b.sentences AND a IS DISTINCT FROM b
             THEN 'candidate index or language name' END AS what
    FROM cand
    UNION ALL
    SELECT ctx, n, total, ref_n, ref_rid, a.paragraph_id, k::INTEGER,
           'translated sentence ' || k
    FROM (SELECT *, unnest(range(len(a.sentences))) AS k FROM cand
          WHERE a.paragraph_id IS NOT DISTINCT FROM b.paragraph_id
            AND a.language_code IS NOT DISTINCT FROM b.language_code
            AND a.title IS NOT DISTINCT FROM b.title
            AND a.source_title IS NOT DISTINCT FROM b.source_title
            AND a.source_sentences IS NOT DISTINCT FROM b.source_sentences
            AND len(a.sentences) = len(b.sentences) AND a.sentences <> b.sentences)
    WHERE a.sentences[k + 1] IS DISTINCT FROM b.sentences[k + 1]
    UNION ALL
    SELECT ctx, n, total, ref_n, ref_rid, NULL, NULL,
           'supporting facts (' || len(fa) || ' here, ' || len(fb) || ' in the sibling)'
    FROM pairs WHERE fa IS DISTINCT FROM fb)
SELECT v.rid, v.id, v.source_split, 'view_context_drift', u.p, u.k,
       'differs from sibling view ' || sib.id || ' in ' || u.what || '; ' || u.ref_n ||
       ' of the ' || u.total || ' views of source ' || v.source_id ||
       ' share the sibling''s context, ' || u.n || ' this one''s', NULL
FROM units u JOIN views v USING (ctx) JOIN views sib ON sib.rid = u.ref_rid
WHERE u.what IS NOT NULL"""


def _view_context_drift(release: "Release") -> str:
    return _DRIFT


RELEASE_CHECKS = (
    Check("record_hash_mismatch", "row", "review", "release",
          "The row's record checksum does not reproduce from its content.",
          frozenset({"v1.1", "v2"}), needs=frozenset({"record_hash"}),
          query=hashing.verify_query),
    Check("duplicate_id", "release", "review", "release",
          "Two or more release rows share an id within a split.", ALL, query=_duplicate_id),
    Check("view_context_drift", "release", "review", "release",
          "The views of one source (XHotpotQA+) do not share one context: a view's "
          "candidates, sentences or supporting facts differ from those most of its siblings "
          "share; the finding names the unit that differs and the sibling view.", ALL,
          query=_view_context_drift),
    Check("missing_source_id", "release", "review", "source",
          "A HotpotQA source record has no release row (omitted).", ALL,
          needs=frozenset({"source"}), query=_missing_source_id),
    Check("unexpected_source_id", "release", "review", "release",
          "A release row's source id is not in the HotpotQA source.", ALL,
          needs=frozenset({"source"}), query=_unexpected_source_id),
    # Compare the shipped status and flags with what the release's own rule derives from
    # the other findings: they run last, in scan._consistency.
    Check("status_mismatch", "row", "review", "release",
          "The shipped status differs from the one the release's own rule derives.",
          frozenset({"v1.1", "v2"})),
    Check("structural_flags_mismatch", "row", "review", "release",
          "The shipped flags differ from the re-derived reference flags.",
          frozenset({"v1.1", "v2"})),
)
CONSISTENCY_CHECKS = ("status_mismatch", "structural_flags_mismatch")
