"""Language layer: the script profile and the language of release texts (SPEC §3, §4).

No Streamlit here. Two signals, both computed once per DISTINCT text and cached by content
hash, so a rescan costs seconds; `prepare(release)` puts them in DuckDB tables for the two
checks of audit/checks/language.py.

Script profile (deterministic, ICU's script property). Every letter or combining mark whose
ICU script is not Common/Inherited counts in one class: Latin, Han, Kana (Hiragana +
Katakana), Hangul, Devanagari, Bengali, Arabic, Cyrillic, Greek, Thai, Other. Digits,
punctuation, ZWNJ/ZWJ and harakat are Common or Inherited and ignored. `latin_names` counts
the Latin letters of tokens that start with an upper-case Latin letter not preceded by a
Latin letter ("BBC", "Tony Macaroni", "在Ballyhackamore"): names and acronyms, which
legitimately stay Latin inside non-Latin text.

Script rule for a unit (title, sentence, question, answer) assigned language L:
  accepted letters = Latin for the 13 Latin-script languages; Han for zh; Han + Kana for ja;
  Hangul for ko (some Han in Korean only lowers the share); Devanagari hi; Bengali bn;
  Arabic ar/fa/ur; Cyrillic ru; Greek el; Thai th.
  effective letters = all letters, minus `latin_names` when L is not a Latin-script language.
  The unit MISMATCHES when at least MIN_FOREIGN (4) effective letters are not accepted and
  the accepted ones are less than MIN_SHARE (half) of the effective letters — the assigned
  script is not the majority once names are set aside — or when L = zh and the text is
  kana-rich (>= KANA_MIN kana and >= KANA_SHARE of its Han + Kana): Chinese never uses kana.
  Fewer foreign letters leave the unit undetermined ("5 km²" in Japanese, "pig" in Korean).
  The finding names the dominant script group (the 10 of SPEC §4, Japanese = Han + kana).
  On NTREX-128 (24 x 1,997 human-translated lines) the rule fires only on the French
  quotation "Il faut bien le faire." that the translators kept in French.

Language ID (`LanguageIdentifier`), restricted to the 24 languages. The script group of the
text settles Cyrillic (ru), Greek (el), Thai (th), Hangul (ko), Devanagari (hi) and Bengali
(bn), with confidence = that group's share of the letters; a detector runs only inside the
ambiguous groups: the 13 Latin-script languages, the Arabic trio ar/fa/ur, and Han/Kana
(zh vs ja). The group is chosen with Latin names set aside, so a Chinese question full of
English names stays Chinese. Undetermined: name-like texts ("Marie Curie", "Mount
Kilimanjaro"), texts under LANGID_MIN_LETTERS (20) letters or with under LANGID_MIN_WORDS
(10) letters outside names, and Han/Kana/Hangul texts under LANGID_MIN_HAN (10) characters.
Latin-script text reaches the detector without its capitalised tokens (one rare name such as
"Bloemfontein" made lingua call an English paragraph German at 0.97), clipped to
MAX_DETECT_CHARS. A unit's language mismatches when the detected language differs from the
assigned one and is written in another script group, or shares its script, reaches
MIN_CONFIDENCE (0.7), and a second opinion names it again at MIN_CONFIDENCE: the text read
again by a detector knowing only those two languages (`confirm`). The default detector,
lingua, reads with its fast trigram models every Latin-script text that the function-word
rule leaves open (`words`: most paragraphs are settled by their function words), every
Arabic-script text that the letter rule leaves open (`letters`: Urdu, Persian and Arabic
each write letters the others do not) and every Han/Kana text; langdetect, restricted to the two
languages, gives the second opinion on the few same-script disagreements
(`LinguaIdentifier`).

Both signals are computed for a whole batch of texts at once: `count_pieces` counts the
letters of every script class in numpy over all texts joined, and `script_verdicts` and
`routes` apply the rules to those counts as arrays (each tested against the one-text
implementations, `script_profile` and `script_mismatch`). From BACKGROUND_FROM texts on
(a cold XHotpotQA+ scan), two forked child processes share the batches, each on one core.

Cache: `<cache_dir>/<signal>/<version>/part-*.parquet`, one row per text keyed by the sha256
of its UTF-8 bytes; the version names the rule's constants, ICU's Unicode version, or the
detector and its settings, so changing any of them never reads stale rows. Misses are
appended as a new part file written under a temporary name and renamed into place (atomic),
under an exclusive file lock so two scans never cache a key twice; parts are compacted when
more than COMPACT_AFTER. A paragraph is cached as one text (its sentences joined with
U+001F) holding the script verdicts of each sentence, so each sentence is hashed once.
The release's list of units and text keys is cached too (`<cache_dir>/units/`, keyed by the
sha256 of the release files and of the SQL reading them): a warm rescan hashes no text.
"""

from __future__ import annotations

import functools
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from .. import settings
from ..io.signal_cache import (
    Background,
    SignalAppender,
    SignalCache,
    cache_lock,
    cached_signals,
    unit_index,
)
from ..io.units import IDENTIFIED_UNITS, LANGUAGE_UNITS, kinds_sql
from ..languages import CODES
from ..sql import arrays
from ..sql.safe import literal
from .detectors import LANGUAGE_RULE_VERSION, LanguageIdentifier, detector, group_sql
from .scripts import SCRIPT_VERSION, SEPARATOR, _unicode_version, count_pieces, script_verdicts

# ------------------------------------------------------------------------------ the cache

# Per piece (a paragraph's sentence, or the whole text): the failing-rule bitmask, the
# dominant group, the dominant group with Latin names set aside, kana-rich.
PART = pa.struct([("fails", pa.int16()), ("dom", pa.int8()), ("dom_nn", pa.int8()),
                  ("kana", pa.bool_())])
SCRIPT_SCHEMA = pa.schema([("key", pa.string()), ("fails", pa.int16()),
                           ("parts", pa.list_(PART))])
LANG_SCHEMA = pa.schema([("key", pa.string()), ("lang", pa.string()),
                         ("confidence", pa.float64()), ("letters", pa.int32()),
                         ("grp", pa.string())])
# Keyed by "<text key>:<detected>:<assigned>".
SECOND_SCHEMA = pa.schema([("key", pa.string()), ("lang", pa.string()),
                           ("confidence", pa.float64())])


# ------------------------------------------------------------- signals for a whole release

# The units read (LANGUAGE_UNITS: titles, paragraphs, questions, answers, texts) whose
# language is one of the 24. A paragraph's text is its sentences joined with U+001F, so one
# cached row per paragraph holds a script profile per sentence (and its language, detected
# on the sentences joined with a space): each sentence is hashed once, as part of its
# paragraph. The warm path keeps only the key of each unit; texts are rebuilt only when some
# key is not cached. A context's units are read once per distinct context (`ctx`), a row's
# per view (`rid`).
def units_sql() -> str:
    """Every judged unit of the release with its text (`text`)."""
    codes = ", ".join(literal(code) for code in CODES)
    return f"""SELECT rid, ctx, paragraph_id, unit, lang, tgt AS text FROM units
               WHERE unit IN {kinds_sql(LANGUAGE_UNITS)} AND lang IN ({codes})
                 AND tgt IS NOT NULL"""


@dataclass
class Prepared:
    """What `prepare` did: distinct texts per signal and how many were computed now."""
    detector: str
    min_confidence: float
    script_texts: int = 0
    script_misses: int = 0
    lang_texts: int = 0
    lang_misses: int = 0
    suspects: int = 0
    second_misses: int = 0
    seconds: dict = field(default_factory=dict)


# Per connection: a release's connection is prepared once, however many checks ask.
_PREPARED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


COMPUTE_BATCH = 50_000     # texts counted and identified at a time (bounded memory)
# From this many texts on, two forked child processes share them (`Background`): counting
# letters and settling function words hold one core each, so in one process the second core
# would wait through most of a cold XHotpotQA+ scan's language phase.
BACKGROUND_FROM = 200_000
_TODO_COLUMNS = ("key", "text", "script", "lang")


def _compute(con, identifier: LanguageIdentifier, scripts: SignalCache,
             languages: SignalCache, seconds: dict, workdir: Path) -> None:
    """The script and language signals of the keys in lang_missing_script and
    lang_missing_lang (their texts in lang_unit_texts), COMPUTE_BATCH texts at a time: each
    text is read from DuckDB and its letters counted once for both. Appended to the caches
    and to lang_script / lang_detect."""
    con.execute("""CREATE OR REPLACE TEMP TABLE lang_todo AS
        SELECT t.key, t.text, s.key IS NOT NULL AS script, l.key IS NOT NULL AS lang
        FROM lang_unit_texts t LEFT JOIN lang_missing_script s USING (key)
        LEFT JOIN lang_missing_lang l USING (key);
        DROP TABLE lang_unit_texts; DROP TABLE IF EXISTS lang_texts""")
    total = con.sql("SELECT count(*) FROM lang_todo").fetchall()[0][0]
    with SignalAppender(con, scripts, "lang_script") as script_rows, \
            SignalAppender(con, languages, "lang_detect") as language_rows:
        found = (_computed_apart(con, identifier, total, seconds, workdir)
                 if total >= BACKGROUND_FROM else _computed_here(con, identifier, total, seconds))
        for script, language in found:
            if script is not None:
                script_rows.add(script)
            if language is not None:
                language_rows.add(language)


def _computed_here(con, identifier: LanguageIdentifier, total: int, seconds: dict):
    """(script rows, language rows) of lang_todo's texts, a batch at a time, in this process."""
    seconds["script"] = seconds["lang"] = 0.0
    for start in range(0, total, COMPUTE_BATCH):
        batch = con.sql(f"SELECT {', '.join(_TODO_COLUMNS)} FROM lang_todo "
                        "WHERE rowid >= ? AND rowid < ?",
                        params=[start, start + COMPUTE_BATCH]).fetchall()
        yield _signals(identifier, *zip(*batch), seconds)


def _computed_apart(con, identifier: LanguageIdentifier, total: int, seconds: dict,
                    workdir: Path):
    """As `_computed_here`, by two forked child processes; `seconds["apart"]` is the wait."""
    clock = time.perf_counter()
    background = Background(con, f"SELECT {', '.join(_TODO_COLUMNS)} FROM lang_todo", total,
                            _TODO_COLUMNS, functools.partial(_child_signals, identifier),
                            COMPUTE_BATCH, workdir)
    for table in background.tables():      # (which stops the children however it ends)
        # The kind as a mask, not compared with a Python scalar (which imports pandas).
        language = table.column("kind").cast(pa.bool_())
        yield (table.filter(pc.invert(language)).select(SCRIPT_SCHEMA.names),
               table.filter(language).select(LANG_SCHEMA.names))
    seconds["apart"] = time.perf_counter() - clock


def _child_signals(identifier: LanguageIdentifier, columns: dict[str, list]) -> pa.Table:
    """`_signals` of one share of the texts, in a forked child: its script rows (kind 0)
    and its language rows (kind 1) in one table."""
    identifier.parallel = False
    found = _signals(identifier, columns["key"], columns["text"], columns["script"],
                     columns["lang"], {"script": 0.0, "lang": 0.0})
    # (The kind column from numpy: an Arrow scalar from Python would import pandas, 0.25 s
    # of each child.)
    return pa.concat_tables(
        [table.append_column("kind", arrays.numbers([kind] * table.num_rows, pa.int8()))
         for kind, table in enumerate(found) if table is not None],
        promote_options="default")


def _signals(identifier: LanguageIdentifier, keys, texts, script, language, seconds: dict
             ) -> tuple[pa.Table | None, pa.Table | None]:
    """The script rows of the texts flagged `script` and the language rows of those flagged
    `language` (None where none is); the letters of each text are counted once for both."""
    import numpy as np
    clock = time.perf_counter()
    counts, pieces = count_pieces(texts, split=True)
    starts = np.concatenate(([0], np.cumsum(pieces, dtype=np.int64)))
    totals = np.add.reduceat(counts, starts[:-1])     # a text's counts: its pieces' sum
    scripts = languages = None
    wanted = np.flatnonzero(script)
    if len(wanted):
        scripts = _script_table([keys[i] for i in wanted],
                                counts[np.repeat(np.array(script), pieces)],
                                [pieces[i] for i in wanted])
    seconds["script"] += time.perf_counter() - clock
    clock = time.perf_counter()
    wanted = np.flatnonzero(language)
    if len(wanted):
        found = identifier.identify([texts[i].replace(SEPARATOR, " ") for i in wanted],
                                    totals[wanted])
        languages = arrays.table(
            {"key": [keys[i] for i in wanted], "lang": [d.lang for d in found],
             "confidence": [d.confidence for d in found],
             "letters": [d.letters for d in found], "grp": [d.group for d in found]},
            LANG_SCHEMA)
    seconds["lang"] += time.perf_counter() - clock
    return scripts, languages


def _script_table(keys: list[str], counts, pieces: list[int]) -> pa.Table:
    """The script signal rows of texts from their pieces' `count_pieces` counts (`pieces`
    of them per text): the verdicts of each piece, and their union in `fails`."""
    import numpy as np
    fails, best, nameless, rich = script_verdicts(counts)
    offsets = np.concatenate(([0], np.cumsum(pieces, dtype=np.int64)))
    union = np.bitwise_or.reduceat(fails, offsets[:-1]) if keys else fails
    parts = pa.ListArray.from_arrays(
        arrays.numbers(offsets, pa.int32()),
        pa.StructArray.from_arrays([arrays.numbers(column, f.type) for column, f in
                                    zip((fails, best, nameless, rich), PART)],
                                   fields=list(PART)))
    return arrays.table({"key": keys, "fails": arrays.numbers(union, pa.int16()),
                         "parts": parts}, SCRIPT_SCHEMA)


def _units(release, root: Path) -> None:
    """Table lang_units: every judged unit and the sha256 key of its text. Hashing every
    text is most of a warm scan's cost, so the table is itself remembered per release
    content (`signal_cache.unit_index`). Built now, each distinct text is hashed once and
    kept (temp table lang_texts, one row per text) for the signals the cache lacks; the
    units take their keys by join."""
    def build() -> None:
        release.con.execute(f"""CREATE OR REPLACE TEMP TABLE lang_all AS {units_sql()};
            CREATE OR REPLACE TEMP TABLE lang_texts AS {_keyed_texts("lang_all")};
            CREATE OR REPLACE TABLE lang_units AS
                SELECT u.* EXCLUDE (text), t.key FROM lang_all u JOIN lang_texts t USING (text);
            DROP TABLE lang_all""")
    unit_index(release, root, ["lang_units"], build, units_sql(), temp=False)


# As a signal layer (`audit.checks.layers.SignalLayer`) of the two language checks.
NAME = "language"
THREADED = False
VERSION = f"{SCRIPT_VERSION}+{LANGUAGE_RULE_VERSION}"


def start(release) -> None:
    """Nothing runs ahead: the signals are computed when the first check asks."""


def prepare(release, cache_dir: Path | None = None,
            identifier: LanguageIdentifier | None = None, force: bool = False) -> Prepared:
    """Create tables lang_judged (every judged unit: rid or ctx, paragraph_id, unit, lang, text
    key, failing script rules, detected language and confidence), lang_script (per text:
    script verdicts per piece), lang_detect and lang_second (the second opinions) on the
    release's connection, once per connection unless `force` (or until `discard`)."""
    con = release.con
    if con in _PREPARED and not force:
        return _PREPARED[con]
    identifier = identifier or detector()
    root = Path(cache_dir) if cache_dir is not None else settings.cache_dir("langid")
    done = Prepared(identifier.name, identifier.min_confidence)
    clock = time.perf_counter()
    _units(release, root)
    done.seconds["units"] = time.perf_counter() - clock

    scripts = SignalCache(root, "script", f"{SCRIPT_VERSION}-unicode{_unicode_version()}",
                          SCRIPT_SCHEMA)
    languages = SignalCache(root, "lang", identifier.version, LANG_SCHEMA)
    with cache_lock(root):
        clock = time.perf_counter()
        done.script_texts, done.script_misses = cached_signals(
            con, scripts, "lang_script", "SELECT key FROM lang_units", "lang_missing_script")
        done.lang_texts, done.lang_misses = cached_signals(
            con, languages, "lang_detect", f"SELECT key FROM lang_units WHERE unit IN {kinds_sql(IDENTIFIED_UNITS)}",
            "lang_missing_lang")
        done.seconds["lookup"] = time.perf_counter() - clock
        if done.script_misses or done.lang_misses:
            clock = time.perf_counter()
            _unit_texts(con, "SELECT key FROM lang_missing_script "
                             "UNION SELECT key FROM lang_missing_lang")
            done.seconds["texts"] = time.perf_counter() - clock
            _compute(con, identifier, scripts, languages, done.seconds, root)
        clock = time.perf_counter()
        con.execute("""CREATE OR REPLACE TABLE lang_judged AS
            SELECT u.rid, u.ctx, u.paragraph_id, u.unit, u.lang, u.key, s.fails,
                   d.lang AS detected, d.confidence
            FROM lang_units u JOIN lang_script s USING (key) LEFT JOIN lang_detect d USING (key);
            DROP TABLE lang_units;""")   # (one copy of the units: 8.5 M rows for XHotpotQA+)
        done.seconds["join"] = time.perf_counter() - clock
        clock = time.perf_counter()
        done.suspects, done.second_misses = _second_opinions(
            con, identifier,
            SignalCache(root, "second", identifier.second_version, SECOND_SCHEMA))
        done.seconds["second"] = time.perf_counter() - clock
    for table in ("lang_texts", "lang_unit_texts", "lang_todo", "lang_missing_script",
                  "lang_missing_lang", "lang_missing_second"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    done.seconds["total"] = sum(done.seconds.values())
    _PREPARED[con] = done
    return done


def _unit_texts(con, keys: str) -> None:
    """Temp table lang_unit_texts: the text of each key of the relation `keys`, from the
    texts `_units` kept, else by hashing every text of the release again (a warm scan never
    needs any)."""
    texts = ("lang_texts" if _exists(con, "lang_texts") else
             f"({_keyed_texts(f'({units_sql()})')})")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE lang_unit_texts AS
        SELECT key, text FROM {texts} SEMI JOIN ({keys}) USING (key)""")


def _keyed_texts(units: str) -> str:
    """Each distinct text of the relation `units` once, with its key (sha256)."""
    return f"SELECT text, sha256(text) AS key FROM (SELECT DISTINCT text FROM {units})"


def _exists(con, table: str) -> bool:
    return con.sql("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?",
                   params=[table]).fetchall()[0][0] > 0


def _second_opinions(con, identifier: LanguageIdentifier, cache: SignalCache
                     ) -> tuple[int, int]:
    """Table lang_second (key, detected, lang, second, second_confidence): the second
    opinion (`LanguageIdentifier.confirm`) on each judged text whose detection names
    another language of its assigned language's script at min_confidence, cached per
    (text, detected, assigned). Returns (such distinct suspects, computed now)."""
    con.execute(f"""CREATE OR REPLACE TEMP TABLE lang_suspects AS
        SELECT DISTINCT key || ':' || detected || ':' || lang AS pair, key, detected, lang
        FROM lang_judged
        WHERE unit IN {kinds_sql(IDENTIFIED_UNITS)} AND detected <> lang AND {group_sql('detected')} = {group_sql('lang')}
          AND confidence >= {literal(identifier.min_confidence)}""")
    suspects, misses = cached_signals(con, cache, "lang_confirmed",
                                      "SELECT pair AS key FROM lang_suspects",
                                      "lang_missing_second")
    if misses:
        needed = ("SELECT key FROM lang_suspects s SEMI JOIN lang_missing_second m "
                  "ON m.key = s.pair")
        source = "lang_todo"     # the texts a cold fill just read, when they cover these
        if not _exists(con, source) or con.sql(
                f"SELECT count(*) FROM ({needed}) ANTI JOIN {source} USING (key)"
                ).fetchall()[0][0]:
            _unit_texts(con, needed)
            source = "lang_unit_texts"
        pairs, texts, detected, assigned = zip(*con.sql(f"""
            SELECT s.pair, replace(t.text, chr(31), ' '), s.detected, s.lang
            FROM lang_suspects s JOIN {source} t USING (key)
            SEMI JOIN lang_missing_second m ON m.key = s.pair""").fetchall())
        found = identifier.confirm(list(zip(texts, detected, assigned)))
        new = arrays.table({"key": list(pairs), "lang": [lang for lang, _ in found],
                            "confidence": [c for _, c in found]}, SECOND_SCHEMA)
        with SignalAppender(con, cache, "lang_confirmed") as confirmed:
            confirmed.add(new)
    con.execute("""CREATE OR REPLACE TABLE lang_second AS
        SELECT s.key, s.detected, s.lang, c.lang AS second, c.confidence AS second_confidence
        FROM lang_suspects s JOIN lang_confirmed c ON c.key = s.pair;
        DROP TABLE lang_suspects; DROP TABLE lang_confirmed""")
    return suspects, misses


def discard(con) -> Prepared | None:
    """Drop what `prepare` put on a connection (its checks have run: the memory goes to
    collecting findings) and return what it did; a later `prepare` builds it again."""
    for table in ("lang_judged", "lang_script", "lang_detect", "lang_second"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    return _PREPARED.pop(con, None)


