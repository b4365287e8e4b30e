"""Whole-release checks, each its own query over the whole scan: the record checksum, ids
and sources across rows, the views of one source sharing a context, and the comparison of
the shipped status and flags with the release's own rule (`CONSISTENCY_CHECKS`, run last
by the scan)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import record_hash
from .model import Check

if TYPE_CHECKING:
    from ..io.model import Release

def _duplicate_id(release: "Release") -> str:
    # A mapped release's id repeats once per language: ids are compared within one.
    within = ", language" if release.layout.has("aligned") else ""
    return f"""SELECT rid, id, source_split, 'duplicate_id', 'instance', NULL, NULL,
        n || ' rows share this id', NULL FROM (SELECT rid, id, source_split,
        count(*) OVER (PARTITION BY id, source_split{within}) AS n FROM views
        WHERE {"NOT missing" if within else "true"}) WHERE n > 1"""


def _missing_source_id(release: "Release") -> str:
    # A file of both splits given as one split's source (HotpotQA train and dev in one
    # file): its other split's records are rows of that split, which the detail says.
    return """SELECT NULL, s.source_id, s.source_split, 'missing_source_id', 'release', NULL,
        NULL,
        'source record ' || s.source_position || ' of ' || s.file || ' has no ' ||
        s.source_split || ' row' || coalesce('; the release has it as a ' || o.split ||
        ' row (is this file both splits? give each split its own source)', ''),
        NULL FROM sources s ANTI JOIN release r
        ON r.source_id = s.source_id AND r.source_split = s.source_split
        LEFT JOIN (SELECT source_id, min(source_split) AS split FROM release GROUP BY 1) o
        ON o.source_id = s.source_id AND o.split <> s.source_split"""


def _unexpected_source_id(release: "Release") -> str:
    return """SELECT r.rid, r.id, r.source_split, 'unexpected_source_id', 'instance', NULL,
        NULL,
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
           NULL::INTEGER AS k,
           CASE WHEN a IS NOT NULL AND b IS NOT NULL
                     AND a.paragraph_id IS NOT DISTINCT FROM b.paragraph_id
                     AND a.language_code IS NOT DISTINCT FROM b.language_code
                     AND (a.title IS DISTINCT FROM b.title
                          OR a.source_title IS DISTINCT FROM b.source_title)
                THEN 'title' ELSE 'paragraph' END AS unit, CASE
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
    SELECT ctx, n, total, ref_n, ref_rid, a.paragraph_id, k::INTEGER, 'sentence',
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
    SELECT ctx, n, total, ref_n, ref_rid, NULL, NULL, 'fact',
           'supporting facts (' || len(fa) || ' here, ' || len(fb) || ' in the sibling)'
    FROM pairs WHERE fa IS DISTINCT FROM fb)
SELECT v.rid, v.id, v.source_split, 'view_context_drift', u.unit, u.p, u.k,
       'differs from sibling view ' || sib.id || ' in ' || u.what || '; ' || u.ref_n ||
       ' of the ' || u.total || ' views of source ' || v.source_id ||
       ' share the sibling''s context, ' || u.n || ' this one''s', NULL
FROM units u JOIN views v USING (ctx) JOIN views sib ON sib.rid = u.ref_rid
WHERE u.what IS NOT NULL"""


def _view_context_drift(release: "Release") -> str:
    return _DRIFT


RELEASE_CHECKS = (
    Check("record_hash_mismatch", ("instance",), "review", "release",
          "The row's record checksum does not reproduce from its content.",
          frozenset({"record_hash"}),
          query=record_hash.verify_query, layers=(record_hash,)),
    Check("duplicate_id", ("instance",), "review", "release",
          "Two or more release rows share an id within a split.", frozenset(),
          query=_duplicate_id),
    Check("view_context_drift", ("title", "paragraph", "sentence", "fact"), "review", "release",
          "The views of one source (XHotpotQA+) do not share one context: a view's "
          "candidates, sentences or supporting facts differ from those most of its siblings "
          "share; the finding names the unit that differs and the sibling view.",
          frozenset({"contexts"}),
          query=_view_context_drift),
    Check("missing_source_id", ("release",), "review", "source",
          "A HotpotQA source record has no release row (omitted).", frozenset({"contexts"}),
          needs=frozenset({"source"}), query=_missing_source_id),
    Check("unexpected_source_id", ("instance",), "review", "release",
          "A release row's source id is not in the HotpotQA source.",
          frozenset({"contexts"}),
          needs=frozenset({"source"}), query=_unexpected_source_id),
    # Compare the shipped status and flags with what the release's own rule derives from
    # the other findings: they run last, in scan._consistency.
    Check("status_mismatch", ("instance",), "review", "release",
          "The shipped status differs from the one the release's own rule derives.",
          frozenset({"shipped_status"})),
    Check("structural_flags_mismatch", ("instance",), "review", "release",
          "The shipped flags differ from the re-derived reference flags.",
          frozenset({"shipped_status"})),
)
CONSISTENCY_CHECKS = ("status_mismatch", "structural_flags_mismatch")
