"""The structural checks declared in SQL (`audit.checks.model`): the release's own V1.1
flags (SPEC §2) and the source anomalies the reference lacks (SPEC §3)."""

from __future__ import annotations

from typing import Any

from ..sql.safe import literal
from .dsl import (
    _LANGS,
    FACT_LEN,
    FACT_SOURCE_LEN,
    HAS_SOURCE,
    PID,
    SOURCE_TITLE_MATCHES,
    TITLE_MATCHES,
    _f,
    concat,
    per_candidate,
    per_fact,
    per_sentence,
    when,
)
from .model import NONE, V1, Check


def _v1(name: str, units: tuple[str, ...], description: str, severity: str = "blocking",
        **kw: Any) -> Check:
    return Check(name, units, severity, "translation", description, V1, reference=True, **kw)


# --------------------------------------------------------------- SPEC §2: the 18 V1.1 flags

_MISSING = "'candidate missing from the release'"

V11_CHECKS = (
    _v1("blank_question", ("question",), "The translated question is blank (Python strip()).",
        sql=when("is_blank(r.question)", "'question is blank'", unit="question")),
    _v1("blank_answer", ("answer",), "The translated answer is blank (Python strip()).",
        sql=when("is_blank(r.answer)", "'answer is blank'", unit="answer")),
    _v1("unknown_question_language", ("question",),
        "The question language is not one of the 24.",
        sql=when(f"NOT list_contains({_LANGS}, r.question_language)",
                 "'question language ' || coalesce(r.question_language_name, "
                 "r.question_language)", unit="question"), fix="none"),
    _v1("english_identity_mismatch", ("question", "answer", "paragraph"),
        "An English-assigned question, answer, title or paragraph differs from its source.",
        sql=concat(
            when("r.question_language = 'en' AND r.question IS DISTINCT FROM r.source_question",
                 "'English question differs from the source question'", unit="question"),
            when("r.question_language = 'en' AND r.answer IS DISTINCT FROM r.source_answer",
                 "'English answer differs from the source answer'", unit="answer")),
        context_sql=per_candidate(f"c.language_code = 'en' AND {HAS_SOURCE} AND (c.title <> "
                                  "c.source_title OR c.sentences <> c.source_sentences)",
                                  "'English paragraph differs from its source'")),
    Check("invalid_source_context", ("instance",), "blocking", "source",
          "The HotpotQA source context is not a list.", V1, reference=True,
          context_sql=when("s.source_id IS NOT NULL AND NOT s.context_is_list",
                           "'source context is not a list'"),
          needs=frozenset({"source"})),
    # The legacy translated context is not in any release layout: only the shipped flag tells.
    _v1("invalid_context", ("instance",), "The translated context was not a list (legacy input).",
        fix="none"),
    _v1("candidate_count_mismatch", ("instance",),
        "The translated context has a different number of candidates than the source.",
        context_sql=when("s.source_id IS NOT NULL AND s.context_len <> "
                         "coalesce(list_max(list_transform(r.candidates, "
                         "lambda c: c.candidate_index)) + 1, 0)",
                         "'source has ' || s.context_len || ' paragraphs, translation ' || "
                         "coalesce(list_max(list_transform(r.candidates, "
                         "lambda c: c.candidate_index)) + 1, 0)"),
        needs=frozenset({"source"}), fix="none"),
    _v1("invalid_candidate", ("paragraph",),
        "A translated candidate was malformed and dropped (a gap in candidate_index).",
        witness=("list_transform(list_filter(range(coalesce(list_max(list_transform("
                 "r.candidates, lambda c: c.candidate_index)), -1) + 1), lambda k: NOT "
                 "list_contains(list_transform(r.candidates, lambda c: c.candidate_index), k)),"
                 f" lambda k: {_f(literal('paragraph'), p=PID, d=_MISSING)})"), fix="none"),
    Check("invalid_source_candidate", ("paragraph",), "blocking", "source",
          "A source context entry is not [title, [sentences]].", V1, reference=True,
          context_sql=per_candidate("s.source_id IS NOT NULL AND c.candidate_index < s.context_len "
                                    "AND NOT s.ctx_valid[c.candidate_index + 1]",
                                    "'source entry ' || c.candidate_index || ' is malformed'"),
          needs=frozenset({"source"})),
    _v1("unknown_candidate_language", ("paragraph",),
        "A candidate's language is not one of the 24.",
        context_sql=per_candidate(f"NOT list_contains({_LANGS}, c.language_code)",
                                  "'candidate language ' || c.language"), fix="none"),
    _v1("blank_sentence", ("sentence",), "A translated sentence is blank (Python strip()).",
        context_sql=per_sentence("is_blank({t})", "'translated sentence is blank'")),
    _v1("paragraph_sentence_shortfall", ("paragraph",),
        "A translated paragraph has fewer sentences than its source.",
        context_sql=per_candidate(
            f"{HAS_SOURCE} AND len(c.sentences) < len(c.source_sentences)",
            "len(c.sentences) || ' translated vs ' || len(c.source_sentences) "
            "|| ' source sentences'"), fix="paragraph"),
    _v1("paragraph_sentence_surplus", ("paragraph",),
        "A translated paragraph has more sentences than its source.",
        context_sql=per_candidate(
            f"{HAS_SOURCE} AND len(c.sentences) > len(c.source_sentences)",
            "len(c.sentences) || ' translated vs ' || len(c.source_sentences) "
            "|| ' source sentences'"), fix="paragraph"),
    Check("malformed_supporting_fact", ("fact",), "blocking", "source",
          "A source supporting fact is not [title, non-negative int] (dropped by the build).",
          V1, reference=True,
          context_sql=when("s.source_id IS NOT NULL AND NOT list_bool_and(list_transform(s.facts, "
                           "lambda f: f.valid))",
                           "len(list_filter(s.facts, lambda f: NOT f.valid)) || "
                           "' malformed supporting fact(s) in the source'", unit="fact"),
          needs=frozenset({"source"})),
    # Without the source, the candidates' source titles stand in for the source context;
    # they miss titles of source entries the build could not use.
    _v1("supporting_title_missing", ("fact",),
        "A supporting fact's title matches no source paragraph title (exact).",
        context_sql=per_fact(f"{SOURCE_TITLE_MATCHES} = 0",
                             "'no paragraph titled ' || f.source_title"),
        needs=frozenset({"source"}),
        witness=per_fact(f"f.paragraph_id IS NULL AND {TITLE_MATCHES} < 2",
                         "'no paragraph titled ' || f.source_title")),
    _v1("supporting_title_ambiguous", ("fact",),
        "A supporting fact's title matches two or more source paragraph titles (exact).",
        context_sql=per_fact(f"{SOURCE_TITLE_MATCHES} >= 2",
                             f"{SOURCE_TITLE_MATCHES} || ' paragraphs titled ' || f.source_title"),
        needs=frozenset({"source"}),
        witness=per_fact(f"f.paragraph_id IS NULL AND {TITLE_MATCHES} >= 2",
                         f"{TITLE_MATCHES} || ' paragraphs titled ' || f.source_title")),
    _v1("support_index_out_of_range", ("fact",),
        "A supporting fact points past the translated paragraph (or at no paragraph).",
        context_sql=per_fact(f"f.sentence_index >= {FACT_LEN}",
                             f"CASE WHEN {FACT_LEN} < 0 THEN 'fact resolves to no paragraph' ELSE "
                             f"'sentence ' || f.sentence_index || ' of ' || {FACT_LEN} || "
                             "' translated sentences' END")),
    _v1("duplicate_normalized_translated_title", ("title",),
        "Two candidates share a translated title after NFKC, whitespace collapse and casefold.",
        severity="review",
        context_sql=("(CASE WHEN list_unique(r.title_keys) < len(r.title_keys) THEN list_transform("
             "list_filter(range(len(r.title_keys)), lambda k: list_position(r.title_keys, "
             "r.title_keys[k + 1]) < k + 1), lambda k: "
             + _f(literal("title"), p="r.candidates[k + 1].paragraph_id",
                  d="'same normalised title as ' || r.candidates[list_position(r.title_keys, "
                    "r.title_keys[k + 1])].paragraph_id") +
             f") ELSE {NONE} END)")),
)

# ------------------------------------------------------ SPEC §3: checks the reference lacks

BEYOND_CHECKS = (
    # On V2 the release's own source:… flags report these two defects: one finding per
    # defect, under the reference name (whose detail names ours).
    Check("source_blank_sentence", ("sentence",), "review", "source",
          "A source (English) sentence is blank: inherited from HotpotQA.",
          frozenset({"contexts"}), unless=frozenset({"flags:v2"}),
          context_sql=per_sentence("is_blank({src})", "'source sentence is blank'",
                                   over="source_sentences")),
    Check("source_support_index_out_of_range", ("fact",), "review", "source",
          "A supporting fact points past its source paragraph: inherited from HotpotQA.",
          frozenset({"contexts", "supporting_facts"}), unless=frozenset({"flags:v2"}),
          context_sql=per_fact(f"{FACT_SOURCE_LEN} >= 0 AND f.sentence_index >= {FACT_SOURCE_LEN}",
                               f"'sentence ' || f.sentence_index || ' of ' || {FACT_SOURCE_LEN} || "
                               "' source sentences'")),
)
