"""The V2 RC1 release's own flags (SPEC §1.2), names verbatim."""

from __future__ import annotations

from typing import Any

from .dsl import _LANGS, FACT_SOURCE_LEN, per_candidate, per_fact, per_sentence, when
from .model import V2, Check


def _v2(name: str, units: tuple[str, ...], description: str, quality: bool = False,
        origin: str = "translation", **kw: Any) -> Check:
    return Check(name, units, "review" if quality else "blocking", origin, description, V2,
                 reference=True, **kw)


_V2_PARAGRAPH_INDEX = "TRY_CAST(regexp_extract(c.paragraph_id, '^p(\\d{2})$', 1) AS INTEGER)"
V2_CHECKS = (
    _v2("xhotpot:blank_question", ("question",), "The question is blank.",
        sql=when("is_blank(r.question)", "'question is blank'", unit="question")),
    _v2("xhotpot:blank_answer", ("answer",), "The answer is blank.",
        sql=when("is_blank(r.answer)", "'answer is blank'", unit="answer")),
    _v2("xhotpot:unknown_question_language", ("question",),
        "Question language not one of the 24.",
        sql=when(f"NOT list_contains({_LANGS}, r.question_language)",
                 "'question language ' || r.question_language", unit="question"), fix="none"),
    _v2("xhotpot:unknown_answer_language", ("answer",), "Answer language not one of the 24.",
        sql=when(f"NOT list_contains({_LANGS}, r.answer_language)",
                 "'answer language ' || r.answer_language", unit="answer"), fix="none"),
    _v2("xhotpot:question_answer_language_mismatch", ("instance",),
        "Question and answer carry different languages.",
        sql=when("r.question_language <> r.answer_language",
                 "r.question_language || ' vs ' || r.answer_language"), fix="none"),
    _v2("xhotpot:question_source_copy", ("question",),
        "Non-English question equals the English source.", quality=True,
        sql=when("r.question_language <> 'en' AND r.question = r.source_question",
                 "'question equals the English source'", unit="question")),
    _v2("xhotpot:answer_source_copy", ("answer",),
        "Non-English answer equals the English source.", quality=True,
        sql=when("r.answer_language <> 'en' AND r.answer = r.source_answer",
                 "'answer equals the English source'", unit="answer")),
    _v2("xhotpot:sentence_count_mismatch", ("paragraph",),
        "A translated paragraph's sentence count differs from the source's.",
        context_sql=per_candidate(
            "len(c.sentences) <> len(c.source_sentences)",
            "len(c.sentences) || ' translated vs ' || len(c.source_sentences) "
            "|| ' source sentences'"), fix="paragraph"),
    _v2("xhotpot:blank_translation_sentence", ("sentence",), "A translated sentence is blank.",
        context_sql=per_sentence("is_blank({t})", "'translated sentence is blank'")),
    _v2("xhotpot:blank_translated_title", ("title",), "A translated title is blank.",
        context_sql=per_candidate("is_blank(c.title)", "'translated title is blank'",
                                  unit="title")),
    _v2("xhotpot:unknown_candidate_language", ("paragraph",),
        "Candidate language not one of 24.",
        context_sql=per_candidate(f"NOT list_contains({_LANGS}, c.language_code)",
                                  "'candidate language ' || c.language_code"), fix="none"),
    _v2("xhotpot:paragraph_sentence_source_copy", ("paragraph",),
        "A non-English paragraph has a sentence equal to its non-blank English source.",
        quality=True,
        context_sql=per_candidate(
            "c.language_code <> 'en' AND len(list_filter(range(least("
            "len(c.sentences), len(c.source_sentences))), lambda k: NOT "
            "is_blank(c.source_sentences[k + 1]) AND c.sentences[k + 1] = "
            "c.source_sentences[k + 1])) > 0", "'a sentence equals its source'")),
    _v2("source:blank_source_sentence", ("sentence",), "A source sentence is blank (inherited).",
        origin="source",
        context_sql=per_sentence(
            "is_blank({src})",
            "'source sentence is blank (source_blank_sentence in other layouts)'",
            over="source_sentences")),
    _v2("source:support_index_out_of_range", ("fact",),
        "A supporting fact points past its source paragraph (inherited).", origin="source",
        context_sql=per_fact(f"{FACT_SOURCE_LEN} >= 0 AND f.sentence_index >= {FACT_SOURCE_LEN}",
                             "'sentence ' || f.sentence_index || ' of ' || "
                             f"{FACT_SOURCE_LEN} || ' source sentences "
                             "(source_support_index_out_of_range in other layouts)'")),
    _v2("xhotpot:candidate_order_mismatch", ("paragraph",),
        "A candidate's paragraph id does not match its position.",
        context_sql=per_candidate(f"{_V2_PARAGRAPH_INDEX} IS DISTINCT FROM c.candidate_index",
                                  "c.paragraph_id || ' at position ' || c.candidate_index"),
        fix="none"),
    _v2("xhotpot:invalid_paragraph_id", ("paragraph",),
        "A candidate's paragraph id is not pNN within the source context.",
        witness=per_candidate(f"{_V2_PARAGRAPH_INDEX} IS NULL",
                              "'invalid paragraph id ' || c.paragraph_id"), fix="none"),
    _v2("xhotpot:input_checksum_mismatch", ("instance",),
        "The generator's semantic checksum did not reproduce.", origin="release",
        sql=when("NOT r.input_checksum_valid", "'input checksum invalid'")),
    _v2("provenance:assignment_manifest_hash_missing", ("instance",),
        "The language-assignment manifest hash is missing.", quality=True, origin="release",
        sql=when("r.assignment_manifest_sha256 = ''", "'no assignment manifest hash'")),
    _v2("xhotpot:candidate_count_mismatch", ("instance",),
        "Candidate count differs from the source context.",
        context_sql=when("s.source_id IS NOT NULL AND s.context_len <> len(r.candidates)",
                         "'source has ' || s.context_len || ', release ' || len(r.candidates)"),
        needs=frozenset({"source"}), fix="none"),
    # Shape flags of the raw generated record, which the release layout no longer carries.
    *(_v2(name, ("instance",), description) for name, description in (
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
