"""Checks of a mapped release (audit/io/layouts/mapped.py): its rows against the source
language's, per language.

Alignment: a source id with no row in a language (`row_missing`), a row whose id the source
lacks (`row_extra`), a blank id (`blank_id`), a language's file with more or fewer rows than
the source's (`row_count_mismatch`, release-level, naming the file and both counts), and,
aligned by row order, a row that reads like a neighbour's translation (`row_shifted`: its
numerals and length agree with the source row before or after it better than with its own).
Invariants: a `same` column that differs from the source's value (`value_changed`). An
answer that does not stand in its text (`answer_not_in_text`), and a blank translation of
a non-blank source (`blank_translation`, a unit check). `language_unverified` says, per
language, what the language checks cannot read (a language the detector does not know is
checked by its script alone; one whose script is unknown, by neither).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..sql.safe import literal
from .dsl import per_unit
from .model import Check

if TYPE_CHECKING:
    from ..io.model import Release

ALIGNED = frozenset({"aligned"})
_TAIL = "NULL::VARCHAR AS evidence, NULL::VARCHAR AS source_evidence"
# Digits of the scripts the benchmarks write numbers in, mapped to ASCII before numerals are
# compared (Arabic-Indic, Persian, Devanagari, Bengali, Thai, full-width, Myanmar, Khmer...).
_DIGITS = ("٠١٢٣٤٥٦٧٨٩", "۰۱۲۳۴۵۶۷۸۹", "०१२३४५६७८९", "০১২৩৪৫৬৭৮৯", "๐๑๒๓๔๕๖๗๘๙",
           "０１２３４５６７８９", "၀၁၂၃၄၅၆၇၈၉", "០១២៣៤៥៦៧៨៩", "০১২৩৪৫৬৭৮৯", "૦૧૨૩૪૫૬૭૮૯",
           "੦੧੨੩੪੫੬੭੮੯", "௦௧௨௩௪௫௬௭௮௯", "౦౧౨౩౪౫౬౭౮౯", "೦೧೨೩೪೫೬೭೮೯", "൦൧൨൩൪൫൬൭൮൯",
           "໐໑໒໓໔໕໖໗໘໙", "༠༡༢༣༤༥༦༧༨༩")


def _layout(release: "Release") -> Any:
    """The release's layout: a mapped one (audit/io/layouts/mapped.py, the one layout with
    the `aligned` capability), read for its mapping and its columns' names."""
    assert release.layout.has("aligned")
    return release.layout


def _numerals(text: str) -> str:
    """The numerals of a text expression, ASCII digits, in order (a list)."""
    return (f"regexp_extract_all(translate(coalesce({text}, ''), {literal(''.join(_DIGITS))}, "
            f"{literal('0123456789' * len(_DIGITS))}), '[0-9]+')")


def _file_of(language: str) -> str:
    return f"(SELECT any_value(file) FROM raw_release WHERE lang = {language})"


def _row_missing(release: "Release") -> str:
    by_row = _layout(release).mapping.align == "row"
    detail = ("'line ' || (source_position + 1) || ' of the source has no line in ' || "
              f"{_file_of('v.language')}" if by_row else
              f"'no row with this id in ' || {_file_of('v.language')}")
    return f"""SELECT rid, id, NULL, 'row_missing', 'instance', NULL, NULL, {detail}, NULL
               FROM views v WHERE missing"""


def _row_extra(release: "Release") -> str:
    by_row = _layout(release).mapping.align == "row"
    detail = ("'line ' || (position + 1) || ' of ' || file || ' is beyond the source''s ' || "
              "(SELECT count(*) FROM mapped_source) || ' lines'" if by_row else
              "'row ' || (position + 1) || ' of ' || file || ': the source has no row with "
              "this id'")
    return f"""SELECT rid, id, NULL, 'row_extra', 'instance', NULL, NULL, {detail}, NULL
               FROM views WHERE extra AND nullif(trim(id), '') IS NOT NULL"""


def _blank_id(release: "Release") -> str:
    source = literal(_layout(release).mapping.source_language)
    return f"""SELECT rid, id, NULL, 'blank_id', 'instance', NULL, NULL,
                      'row ' || (position + 1) || ' of ' || file || ' has a blank id', NULL,
                      {_TAIL}, NULL::VARCHAR AS language
               FROM views WHERE NOT missing AND nullif(trim(id), '') IS NULL
               UNION ALL
               SELECT NULL, NULL, NULL, 'blank_id', 'release', NULL, NULL,
                      'row ' || (position + 1) || ' of the source ' || file ||
                      ' has a blank id', NULL, {_TAIL}, {source} AS language
               FROM raw_release WHERE lang = {source} AND nullif(trim(id), '') IS NULL"""


def _row_count_mismatch(release: "Release") -> str:
    if _layout(release).mapping.partial:     # languages hold subsets of the items
        return _NOTHING
    source = literal(_layout(release).mapping.source_language)
    return f"""WITH counts AS (SELECT lang, any_value(file) AS file, count(*) AS n
                              FROM raw_release GROUP BY lang)
        SELECT NULL, NULL, NULL, 'row_count_mismatch', 'release', NULL, NULL,
               t.file || ' has ' || t.n || ' rows, the source ' || s.file || ' ' || s.n,
               CASE WHEN t.n < s.n THEN 'shorter' ELSE 'longer' END, {_TAIL}, t.lang AS language
        FROM counts t, counts s JOIN mapped_languages l ON true
        WHERE s.lang = {source} AND t.lang = l.language AND t.n <> s.n"""


def _row_shifted(release: "Release") -> str:
    layout = _layout(release)
    text = next(c for c in layout.mapping.columns if c.role == "text").name
    # The text in views, and in the source's own rows (mapped_source: raw_release's columns).
    tgt, src = layout.column_sql(text), layout.column_sql(text)
    # A row's agreement with a source row: the distance of its log length ratio from its
    # language's median, plus one when their numerals differ. A row is shifted when a
    # neighbour's source agrees better by MARGIN and either the numerals point at it (the
    # row's equal the neighbour's, and its own source has others: a source may spell out
    # what a translation writes in digits), or, both sources at least MIN_LENGTH long, its
    # own length is off by more than LENGTH_OFF (a factor of e) and the neighbour's within
    # LENGTH_ON. A dropped or added line shifts every line after it: over the WINDOW rows
    # on each side, the neighbour's offset agrees better by WINDOW_MARGIN in sum.
    return f"""
    WITH r AS (
        SELECT v.rid, v.id, v.language, v.position, length({tgt}) AS lt,
               {_numerals(tgt)} AS nt, ln(greatest(length({tgt}), 1)) AS llt
        FROM views v WHERE NOT v.missing AND NOT is_blank({tgt})),
    s AS (SELECT position, ln(greatest(length({src}), 1)) AS ls,
                 {_numerals(src)} AS ns
          FROM mapped_source),
    m AS (SELECT r.language, median(r.llt - s.ls) AS med
          FROM r JOIN s USING (position) GROUP BY r.language),
    scored AS (
        SELECT r.rid, r.id, r.language, r.position, o.off,
               abs(r.llt - s.ls - m.med) AS dl, (r.nt <> s.ns)::INTEGER AS dn,
               len(s.ns) > 0 AS has_numbers, s.ls >= ln({MIN_LENGTH}) AS long
        FROM r JOIN m USING (language) CROSS JOIN (VALUES (-1), (0), (1)) o(off)
        JOIN s ON s.position = r.position + o.off),
    windowed AS (SELECT *, sum(dl + dn) OVER (PARTITION BY language, off ORDER BY position
                                           ROWS BETWEEN {WINDOW} PRECEDING
                                           AND {WINDOW} FOLLOWING) AS w
                 FROM scored),
    own AS (SELECT * FROM windowed WHERE off = 0),
    best AS (SELECT * FROM windowed WHERE off <> 0
             QUALIFY row_number() OVER (PARTITION BY rid ORDER BY dl + dn, off) = 1)
    SELECT o.rid, o.id, NULL, 'row_shifted', 'instance', NULL, NULL,
           'reads like the translation of source line ' || (b.position + b.off + 1) ||
           ' (' || CASE WHEN b.dn < o.dn THEN 'numerals and length' ELSE 'length' END ||
           '), not of line ' || (o.position + 1), NULL
    FROM own o JOIN best b USING (rid)
    WHERE (b.dl + b.dn + {MARGIN} < o.dl + o.dn
           AND ((b.dn < o.dn AND b.has_numbers AND o.has_numbers)
                OR (o.dl > {LENGTH_OFF} AND b.dl < {LENGTH_ON} AND o.long AND b.long)))
       OR (b.w + {WINDOW_MARGIN} < o.w AND b.dl + b.dn <= o.dl + o.dn)
    """


MARGIN, LENGTH_OFF, LENGTH_ON, MIN_LENGTH = 0.5, 1.0, 0.25, 30
WINDOW, WINDOW_MARGIN = 3, 2.0


def _value_changed(release: "Release") -> str:
    layout = _layout(release)
    parts = [f"""SELECT rid, id, NULL, 'value_changed', {literal(c.name)}, NULL, NULL,
                        {literal(c.name)} || ' is ' || coalesce('''' || {layout.column_sql(c.name)}
                        || '''', 'missing') || ', the source''s ' ||
                        coalesce('''' || {layout.column_sql(c.name, 's')} || '''', 'missing'),
                        NULL
                 FROM views
                 WHERE NOT missing AND NOT extra AND {layout.column_sql(c.name)} IS DISTINCT
                       FROM {layout.column_sql(c.name, 's')}"""
             for c in layout.mapping.of_role("same")]
    return " UNION ALL ".join(parts) or _NOTHING


def _answer_not_in_text(release: "Release") -> str:
    layout = _layout(release)
    parts = []
    for c in layout.mapping.of_role("answer"):
        answer, text = layout.column_sql(c.name), layout.column_sql(c.within or "")
        source_answer, source_text = (layout.column_sql(c.name, "s"),
                                      layout.column_sql(c.within or "", "s"))
        parts.append(f"""
            SELECT rid, id, NULL, 'answer_not_in_text', {literal(c.name)}, NULL, NULL,
                   {literal(c.name)} || ' does not stand in ' || {literal(c.within)}, NULL,
                   {answer} AS evidence, NULL::VARCHAR AS source_evidence, NULL::VARCHAR AS language
            FROM views
            WHERE NOT missing AND NOT is_blank({answer}) AND {text} IS NOT NULL
              AND NOT contains(squeezed({text}), squeezed({answer}))
              AND ({source_answer} IS NULL OR {source_text} IS NULL
                   OR contains(squeezed({source_text}), squeezed({source_answer})))""")
    return " UNION ALL ".join(parts) or _NOTHING


_NOTHING = ("SELECT NULL::BIGINT, NULL, NULL, NULL, NULL, NULL, NULL::INTEGER, NULL, NULL "
            "WHERE false")


def _language_unverified(release: "Release") -> str:
    from ..language import anyscript
    from ..languages import CODES
    rows = []
    for code, unit_lang in release.con.execute(
            "SELECT language, unit_lang FROM mapped_languages ORDER BY ord").fetchall():
        if unit_lang in CODES:
            continue
        info = anyscript.language_info(code, _layout(release).mapping.scripts.get(code))
        name = f"{code} ({info.name})" if info and info.name else code
        if info and info.scripts:
            written = " or ".join(anyscript.script_name(s) for s in info.scripts)
            detail = (f"{name}: the language detector does not know it; its language is "
                      f"checked by its script alone ({written})")
        else:
            detail = (f"{name}: neither its language nor its script is known (declare one in "
                      "[release] scripts); its language is not checked")
        rows.append(f"({literal(detail)}, {literal(code)})")
    if not rows:
        return _NOTHING
    return f"""SELECT NULL::BIGINT, NULL, NULL, 'language_unverified', 'release', NULL, NULL,
                      d, NULL, {_TAIL}, code AS language FROM (VALUES {', '.join(rows)}) t(d, code)"""


ALIGNED_CHECKS = (
    Check("row_missing", ("instance",), "blocking", "release",
          "An item of the source language has no row in this language: the finding names "
          "the language's file (by row order: the source line with no line).", ALIGNED,
          query=_row_missing),
    Check("row_extra", ("instance",), "review", "release",
          "A row whose id the source language does not have (by row order: a line beyond "
          "the source's last).", ALIGNED, query=_row_extra),
    Check("blank_id", ("instance", "release"), "blocking", "release",
          "A row's id is blank: it cannot be matched with its source.", ALIGNED,
          query=_blank_id),
    Check("row_count_mismatch", ("release",), "review", "release",
          "A language's file holds more or fewer rows than the source language's; the "
          "finding names the file and both counts.", ALIGNED, categories=("shorter", "longer"),
          query=_row_count_mismatch),
    Check("row_shifted", ("instance",), "blocking", "release",
          "Aligned by row order, a row reads like the translation of the source row before "
          "or after its own: its numerals and length agree with that neighbour better.",
          frozenset({"aligned", "row_order"}), query=_row_shifted,
          version=f"{MARGIN} {LENGTH_OFF} {LENGTH_ON} {MIN_LENGTH} {WINDOW} {WINDOW_MARGIN}"),
    Check("value_changed", ("instance",), "blocking", "translation",
          "A column the mapping keeps the same in every language (a label, a numeric answer) "
          "differs from the source language's value.", ALIGNED, query=_value_changed),
    Check("answer_not_in_text", ("answer",), "blocking", "translation",
          "An answer does not stand in the text the mapping says holds it, where the source "
          "answer stands in the source text.", ALIGNED, query=_answer_not_in_text),
    Check("blank_translation", ("text", "answer"), "blocking", "translation",
          "A translated text or answer is blank or missing where its source has content.",
          ALIGNED, unit_sql=per_unit("is_blank(coalesce(u.tgt, '')) AND NOT is_blank(u.src)",
                                     "'blank where the source has ' || length(u.src) || "
                                     "' characters'", units=("text", "answer"))),
    Check("language_unverified", ("release",), "info", "release",
          "A language the language checks cannot fully read: one the detector does not know "
          "is checked by its script alone, one whose script is unknown by neither.", ALIGNED,
          query=_language_unverified),
)
