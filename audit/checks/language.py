"""Language compliance (SPEC §3): output in the assigned language and an acceptable script.

Both are whole-release checks (the `query` hook): `audit.language.layer.prepare` computes the slow
signals once per distinct text (cached by content hash) into table `lang_judged`, one row
per title, paragraph, question and answer with its signals, and each check is one filter
over it (joined to the release for ids), so the one-pass row checks are not slowed.

Units whose assigned language is not one of the 24 ('und') are skipped: the unknown-language
checks report them. English-assigned units are checked like any other: an English-assigned
paragraph in German is a defect too (English identity only compares with the source).

script_mismatch: a title (paragraph_id, NULL), sentence (paragraph_id, k), question or
answer (NULL, NULL) whose letters, names set aside, are not mostly in the assigned
language's script; detail "sentence: Cyrillic, expected Greek".
language_mismatch: a paragraph (paragraph_id, NULL), question or answer (NULL, NULL) whose
detected language differs: written in another script, or in the same one and named again by
a second reading, langdetect's, that knows only the two languages (`detectors.language_mismatches`);
detail "paragraph: detected nl (0.97), assigned de".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from ..io.units import IDENTIFIED_UNITS, LEAF_UNITS, kinds_sql
from ..language import anyscript, detectors, scripts
from ..language import layer as langid
from ..languages import CODES, UNKNOWN_CODE
from ..sql.safe import literal
from .model import UNITS_ONLY, Check

if TYPE_CHECKING:
    from ..io.model import Release


def _to_views(found: str) -> str:
    """Findings keyed by `rid` (questions, answers) or by `ctx` (titles and paragraphs,
    judged once per distinct context) → one finding per view."""
    return f"""WITH found AS MATERIALIZED ({found})
        SELECT v.rid, v.id, v.source_split, f.* EXCLUDE (rid, ctx)
        FROM found f JOIN views v USING (rid)
        UNION ALL
        SELECT v.rid, v.id, v.source_split, f.* EXCLUDE (rid, ctx)
        FROM found f JOIN views v USING (ctx)"""


def _script_mismatch(release: "Release") -> str:
    langid.prepare(release)
    beyond = _beyond_the_24(release)
    latin = "(" + ", ".join(f"'{c}'" for c in scripts.AMBIGUOUS["Latin"]) + ")"
    group = (f"CASE WHEN lang = 'zh' AND x.kana THEN 'Japanese' WHEN lang IN {latin} "
             f"THEN {scripts.group_name_sql('x.dom')} "
             f"ELSE {scripts.group_name_sql('x.dom_nn')} END")
    # The cached verdicts: a bit per script rule, for the text and for each of its pieces
    # (a paragraph's sentences; a title, question or answer is one piece).
    return _to_views(f"""SELECT rid, ctx, 'script_mismatch' AS "check",
            CASE WHEN unit = 'paragraph' THEN 'sentence' ELSE unit END AS unit, paragraph_id,
            CASE WHEN unit = 'paragraph' THEN f.k END AS sentence_index,
            CASE WHEN unit = 'paragraph' THEN 'sentence' ELSE unit END || ': ' || f.g ||
              ', expected ' || ({detectors.group_sql('lang')}) AS detail,
            NULL::VARCHAR AS category
        FROM (SELECT *, unnest(CASE WHEN unit = 'paragraph' THEN bad ELSE bad[1:1] END) AS f
              FROM (SELECT rid, ctx, paragraph_id, unit, lang,
                           list_transform(list_filter(list_transform(s.parts, lambda x, i: {{
                               'k': (i - 1)::INTEGER, 'x': x}}),
                               lambda e: (e.x.fails >> bit) & 1 = 1),
                             lambda e: {{'k': e.k, 'g': {group.replace('x.', 'e.x.')}}}) AS bad
                    FROM (SELECT *, {scripts.rule_sql('lang')} AS bit FROM lang_judged) j
                    JOIN lang_script s USING (key)
                    WHERE (j.fails >> bit) & 1 = 1))
        {beyond}""")


def _beyond_the_24(release: "Release") -> str:
    """Script findings on the units of languages outside the 24 (a mapped release's): the
    same rule over ICU's scripts (audit/language/anyscript.py), each language held to the
    scripts it is written in (its code's, the mapping's `scripts`, or ICU's likely one);
    a language with none known is not judged (`language_unverified` says so)."""
    # 'und' is an XHotpotQA release's unknown language: its own checks report it.
    codes = ", ".join(literal(code) for code in (*CODES, UNKNOWN_CODE))
    pairs = release.con.execute(f"""SELECT DISTINCT lang, tgt FROM units
        WHERE lang NOT IN ({codes}) AND unit IN {kinds_sql(LEAF_UNITS)}
          AND tgt IS NOT NULL""").fetchall()
    if not pairs:
        return ""
    declared = getattr(release.layout, "mapping", None)
    infos = {lang: anyscript.language_info(
        lang, declared.scripts.get(lang) if declared is not None else None)
        for lang in {lang for lang, _ in pairs}}
    written = {lang: info.scripts for lang, info in infos.items() if info and info.scripts}
    judged = [(lang, text) for lang, text in pairs if lang in written]
    verdicts = anyscript.script_verdicts([text for _, text in judged],
                                         [written[lang] for lang, _ in judged])
    if not any(bad for bad, _ in verdicts):
        return ""
    found = pa.table({
        "lang": [lang for (lang, _), (bad, _) in zip(judged, verdicts) if bad],
        "tgt": [text for (_, text), (bad, _) in zip(judged, verdicts) if bad],
        "detail": [f"{anyscript.script_name(dominant or 'Zzzz')}, expected "
                   + " or ".join(anyscript.script_name(s) for s in written[lang])
                   for (lang, _), (bad, dominant) in zip(judged, verdicts) if bad]},
        schema=pa.schema([("lang", pa.string()), ("tgt", pa.string()),
                          ("detail", pa.string())]))
    release.con.register("lang_script_beyond_found", found)
    release.con.execute("CREATE OR REPLACE TEMP TABLE lang_script_beyond AS "
                        "SELECT * FROM lang_script_beyond_found")
    release.con.unregister("lang_script_beyond_found")
    return f"""UNION ALL
        SELECT u.rid, u.ctx, 'script_mismatch', u.unit, u.paragraph_id, u.sentence_index,
               u.unit || ': ' || b.detail, NULL::VARCHAR
        FROM units u JOIN lang_script_beyond b USING (lang, tgt)
        WHERE u.unit IN {kinds_sql(LEAF_UNITS)}"""


def _language_mismatch(release: "Release") -> str:
    prepared = langid.prepare(release)
    rule = detectors.language_rule_sql("j", "s", prepared.min_confidence)
    # The confidence shown is the second opinion's where there is one (same script).
    return _to_views(f"""SELECT j.rid, j.ctx, 'language_mismatch' AS "check", j.unit,
            j.paragraph_id,
            NULL::INTEGER AS sentence_index,
            j.unit || ': detected ' || j.detected || ' (' ||
              printf('%.2f', coalesce(s.second_confidence, j.confidence)) ||
              '), assigned ' || j.lang AS detail, NULL::VARCHAR AS category
        FROM lang_judged j
        LEFT JOIN lang_second s ON s.key = j.key AND s.detected = j.detected AND s.lang = j.lang
        WHERE j.unit IN {kinds_sql(IDENTIFIED_UNITS)} AND {rule}""")


LANGUAGE_CHECKS = (
    Check("script_mismatch", ("title", "sentence", "question", "answer", "text"), "review",
          "translation",
          "The letters of a translated title, sentence, question or answer are not mostly in "
          "the assigned language's script (Latin names, digits and punctuation set aside).",
          UNITS_ONLY, query=_script_mismatch, version=scripts.SCRIPT_VERSION, layers=(langid,)),
    Check("language_mismatch", IDENTIFIED_UNITS, "review", "translation",
          "Language ID disagrees with the assigned language for a paragraph (all its "
          "sentences), a question or an answer.", UNITS_ONLY, query=_language_mismatch,
          version=detectors.LANGUAGE_RULE_VERSION, layers=(langid,)),
)
