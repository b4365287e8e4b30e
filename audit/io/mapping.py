"""A mapping file: how a machine-translated benchmark that is not XHotpotQA is laid out
(README: Mapping a benchmark). It is TOML, untrusted, and read here before anything opens:
every problem is an InputError naming the mapping file, the key and what was expected.

    [release]  name, source_language, languages (optional), scripts (optional), partial
               (optional: languages hold subsets of the source's items)
    [input]    files ("{lang}" in a file or directory name gives the language), source (the
               source language's file when the pattern does not name it), format, records
               (nested JSON), header / columns (tsv, csv), align ("id" or "row"),
               language = { column = "..." } (one long table with a language column)
    [columns]  name = role, or name = { role, field, in }: roles id, text, answer, same, keep

Nothing here imports DuckDB or Arrow: a command resolves a mapping's files (`files`) to
name its scan before it opens anything.
"""

from __future__ import annotations

import glob as globlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError

FORMATS = ("tsv", "csv", "jsonl", "json", "parquet", "txt")
_BY_SUFFIX = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
              ".json": "json", ".parquet": "parquet", ".txt": "txt"}
ROLES = {
    "id": "the row's id: rows of the same id are one item in every language",
    "text": "a translated unit: every text check runs on it",
    "answer": "a translated answer: a text that must stand in the text unit named by `in`",
    "same": "must equal the source language's value (a label, a numeric answer)",
    "keep": "carried along, not checked",
}
TEXT_ROLES = ("text", "answer")
ALIGNS = ("id", "row")
LANG = "{lang}"
# A field path: names joined by dots, each optionally indexed ("answers[0].text").
_FIELD = re.compile(r"^[^.\[\]]+(\[\d+\])*(\.[^.\[\]]+(\[\d+\])*)*$")
_RECORDS = re.compile(r"^([^.\[\]]+(\[\])?)(\.[^.\[\]]+(\[\])?)*$")
LANG_CODE = re.compile(r"^[A-Za-z]{2,3}([-_][A-Za-z]{4})?([-_]([A-Za-z]{2}|[0-9]{3}))?$")
_SCRIPT = re.compile(r"^[A-Z][a-z]{3}$")


@dataclass(frozen=True)
class Column:
    """One mapped column: its name (the unit findings name), role, where it is in a record
    (`field`, a path) and, for an answer, the text column it must stand in."""

    name: str
    role: str
    field: str
    within: str | None = None


@dataclass(frozen=True)
class Mapping:
    path: Path
    name: str
    source_language: str
    languages: tuple[str, ...] | None
    scripts: dict[str, str]
    files: str
    source: str | None
    format: str
    records: str | None
    header: bool
    names: tuple[str, ...] | None       # a headerless tsv/csv's column names
    align: str
    language_column: str | None
    columns: tuple[Column, ...]
    partial: bool = False
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def id_column(self) -> Column | None:
        return next((c for c in self.columns if c.role == "id"), None)

    def of_role(self, *roles: str) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.role in roles)


def is_mapping(spec: str | Path) -> bool:
    return str(spec).lower().endswith(".toml")


def load(path: str | Path) -> Mapping:
    """Read and check a mapping file (not yet its data files: `files`)."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "no such mapping file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(path, f"unreadable mapping file ({error})") from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(path, f"not valid TOML ({error})",
                         expected="a mapping file (README: Mapping a benchmark)") from None
    return _parse(path, raw)


def _fail(path: Path, key: str, problem: str, expected: str | None = None) -> InputError:
    return InputError(path, problem, where=key, expected=expected)


def _table(path: Path, raw: dict[str, Any], key: str, known: tuple[str, ...]) -> dict[str, Any]:
    value = raw.get(key, {})
    if not isinstance(value, dict):
        raise _fail(path, f"[{key}]", "not a table", "a [" + key + "] section")
    unknown = sorted(set(value) - set(known)) if known else []
    if unknown:
        raise _fail(path, f"[{key}] {unknown[0]}", "unknown key",
                    "one of " + ", ".join(known))
    return value


def _string(path: Path, table: dict[str, Any], section: str, key: str, default: str | None = None,
            choices: tuple[str, ...] | None = None) -> str | None:
    value = table.get(key, default)
    where = f"[{section}] {key}"
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, where, f"{value!r} is not a non-empty string",
                    " | ".join(choices) if choices else "a string")
    if choices and value not in choices:
        raise _fail(path, where, f"unknown value {value!r}", " | ".join(choices))
    return value


def language_code(path: Path, where: str, code: Any) -> str:
    """A language code as written, once it is one the tool can read (BCP 47 style: a 2- or
    3-letter language, optionally a script and a region: "de", "deu", "zho-CN",
    "aze-Latn")."""
    if not isinstance(code, str) or not LANG_CODE.match(code):
        raise _fail(path, where, f"cannot read language code {code!r}",
                    "a language code such as de, deu, zho-CN or aze-Latn")
    return code


def _parse(path: Path, raw: dict[str, Any]) -> Mapping:
    unknown = sorted(set(raw) - {"release", "input", "columns"})
    if unknown:
        raise _fail(path, unknown[0], "unknown section", "[release], [input] and [columns]")
    release = _table(path, raw, "release", ("name", "source_language", "languages", "scripts",
                                            "partial"))
    given = _table(path, raw, "input", ("files", "source", "format", "records", "header",
                                        "columns", "align", "language"))
    columns_raw = _table(path, raw, "columns", ())
    name = _string(path, release, "release", "name", path.stem)
    if "source_language" not in release:
        raise _fail(path, "[release] source_language", "missing",
                    "the code of the language the others were translated from")
    source_language = language_code(path, "[release] source_language",
                                    release["source_language"])
    languages = release.get("languages")
    if languages is not None:
        if not isinstance(languages, list) or not languages:
            raise _fail(path, "[release] languages", "not a non-empty list of codes")
        languages = tuple(language_code(path, "[release] languages", c) for c in languages)
    scripts = release.get("scripts", {})
    if not isinstance(scripts, dict):
        raise _fail(path, "[release] scripts", "not a table", 'a table such as { mey = "Arab" }')
    for code, script in scripts.items():
        language_code(path, f"[release] scripts.{code}", code)
        if not isinstance(script, str) or not _SCRIPT.match(script):
            raise _fail(path, f"[release] scripts.{code}", f"{script!r} is not a script code",
                        "an ISO 15924 code such as Latn, Arab, Ethi")
    files = _string(path, given, "input", "files")
    if files is None:
        raise _fail(path, "[input] files", "missing",
                    'a file name or pattern such as "xquad.{lang}.json"')
    language = given.get("language")
    language_column = None
    if language is not None:
        if not isinstance(language, dict) or set(language) != {"column"} or not isinstance(
                language["column"], str):
            raise _fail(path, "[input] language", f"{language!r} is not a language column",
                        '{ column = "lang" }')
        language_column = language["column"]
    nested = any(LANG in str(spec.get("field", "")) for spec in columns_raw.values()
                 if isinstance(spec, dict))
    if LANG not in files and language_column is None and not nested:
        raise _fail(path, "[input] files", f"{files!r} names no language",
                    '"{lang}" in a file or directory name, [input] language = '
                    '{ column = "..." }, or "{lang}" in the fields of [columns]')
    if nested and (LANG in files or language_column is not None):
        raise _fail(path, "[columns]", "{lang} in a field and in [input] too",
                    "the language named in one place")
    if LANG in files and language_column is not None:
        raise _fail(path, "[input] language", "a language column and {lang} in [input] files",
                    "one of the two")
    source = _string(path, given, "input", "source")
    fmt = _string(path, given, "input", "format", _BY_SUFFIX.get(Path(files).suffix.lower()),
                  FORMATS)
    if fmt is None:
        raise _fail(path, "[input] format", f"cannot tell the format of {files!r}",
                    " | ".join(FORMATS))
    records = _string(path, given, "input", "records")
    if records is not None and (fmt != "json" or not _RECORDS.match(records)):
        raise _fail(path, "[input] records", f"{records!r} is not a record path of a json file",
                    'a path such as "data[].paragraphs[].qas[]" (format = "json")')
    header = given.get("header", True)
    if not isinstance(header, bool):
        raise _fail(path, "[input] header", f"{header!r} is not true or false")
    names = given.get("columns")
    if names is not None:
        if fmt not in ("tsv", "csv") or not isinstance(names, list) or not all(
                isinstance(n, str) and n for n in names):
            raise _fail(path, "[input] columns", "not a list of column names of a tsv or csv",
                        '["id", "premise", ...] for a file without a header line')
        names = tuple(names)
    elif fmt in ("tsv", "csv") and not header:
        raise _fail(path, "[input] columns", "missing for a file without a header line",
                    "the names of its columns, in order")
    columns = _columns(path, columns_raw, fmt)
    has_id = any(c.role == "id" for c in columns)
    align = _string(path, given, "input", "align", "id" if has_id else "row", ALIGNS) or "row"
    if align == "id" and not has_id:
        raise _fail(path, "[input] align", '"id" but no column has role "id"',
                    'a column with role "id", or align = "row"')
    if align == "row" and language_column is not None:
        raise _fail(path, "[input] align", '"row" in one long table',
                    'align = "id": rows of a long table are matched by their id')
    partial = release.get("partial", False)
    if not isinstance(partial, bool):
        raise _fail(path, "[release] partial", f"{partial!r} is not true or false")
    return Mapping(path=path, name=str(name), source_language=source_language,
                   languages=languages, scripts=dict(scripts), files=files, source=source,
                   format=fmt, records=records, header=header, names=names, align=align,
                   language_column=language_column, columns=columns, partial=partial,
                   raw=raw)


def dumps(raw: dict[str, Any]) -> str:
    """A mapping as TOML again (a corrected release's, its paths rewritten): the tables of
    the format, their strings, booleans, lists and inline tables."""
    def key(k: str) -> str:
        return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k, ensure_ascii=False)

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v, ensure_ascii=False)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + " }"
        return json.dumps(v)
    parts = []
    for section in ("release", "input", "columns"):
        if section in raw:
            parts.append(f"[{section}]\n" + "".join(
                f"{key(k)} = {value(v)}\n"
                for k, v in raw[section].items()))
    return "\n".join(parts)


def resolved(mapping: Mapping, name: str) -> Path:
    """A path of the mapping (a file pattern, the source) as it is read: relative to the
    mapping file's folder."""
    return _resolve(mapping, name)


def _columns(path: Path, raw: dict[str, Any], fmt: str) -> tuple[Column, ...]:
    if not raw:
        if fmt == "txt":     # a line is the one translated unit
            return (Column("text", "text", "text"),)
        raise _fail(path, "[columns]", "missing",
                    "at least one column with role text (README: Mapping a benchmark)")
    columns = []
    for name, spec in raw.items():
        where = f"[columns] {name}"
        if isinstance(spec, str):
            spec = {"role": spec}
        if not isinstance(spec, dict):
            raise _fail(path, where, f"{spec!r} is not a role",
                        "a role (" + ", ".join(ROLES) + ") or { role = ..., field = ... }")
        unknown = sorted(set(spec) - {"role", "field", "in"})
        if unknown:
            raise _fail(path, f"{where}.{unknown[0]}", "unknown key", "role, field, in")
        role = spec.get("role")
        if role not in ROLES:
            raise _fail(path, where, f"unknown role {role!r}", " | ".join(ROLES))
        located = spec.get("field", name)
        if not isinstance(located, str) or not _FIELD.match(located.replace(LANG, "lang")):
            raise _fail(path, f"{where}.field", f"{located!r} is not a field path",
                        'a name or a path such as "answers[0].text"')
        within = spec.get("in")
        if (within is not None) != (role == "answer"):
            raise _fail(path, f"{where}.in", "an answer names the text it stands in, and only "
                        "an answer", 'role = "answer" with in = "<a text column>"')
        columns.append(Column(name, role, located, within))
    by_name = {c.name: c for c in columns}
    for column in columns:
        if column.within is not None and (column.within not in by_name
                                          or by_name[column.within].role != "text"):
            raise _fail(path, f"[columns] {column.name}.in",
                        f"{column.within!r} is not a column with role text",
                        "the name of a text column of [columns]")
    if sum(c.role == "id" for c in columns) > 1:
        raise _fail(path, "[columns]", "more than one column with role id", "at most one")
    if not any(c.role in TEXT_ROLES for c in columns):
        raise _fail(path, "[columns]", "no column with role text or answer",
                    "at least one translated column")
    if fmt == "txt" and [c.field for c in columns] != ["text"]:
        raise _fail(path, "[columns]", "a txt file has one column, its lines",
                    'text = "text" (or no [columns])')
    return tuple(columns)


@dataclass(frozen=True)
class DataFile:
    path: Path
    language: str | None        # None: a long table's rows name theirs


def nested(mapping: Mapping) -> bool:
    """Whether each record holds every language's value ("{lang}" in a field path)."""
    return any(LANG in c.field for c in mapping.columns)


def _glob(pattern: str) -> str:
    """A pattern's glob: "{lang}" and "*" each stand for part of one name."""
    return "*".join(globlib.escape(part) for part in pattern.replace(LANG, "*").split("*"))


def _matcher(pattern: str) -> re.Pattern[str]:
    parts = [re.escape(p).replace(r"\*", r"[^/\\]*") for p in pattern.split(LANG)]
    return re.compile(r"(?P<lang>[^/\\]+?)".join(parts) + "$")


def files(mapping: Mapping) -> list[DataFile]:
    """The data files a mapping names, the source language's first (a language's files in
    name order: a "*" in the pattern may match several); an InputError when a pattern
    matches nothing or a language is missing."""
    pattern = str(_resolve(mapping, mapping.files))
    if mapping.language_column is not None or nested(mapping):
        tables = sorted(Path(p) for p in globlib.glob(_glob(pattern)) if Path(p).is_file())
        if not tables:
            raise _fail(mapping.path, "[input] files", f"no file matches {pattern!r}",
                        "the path of the release's table(s), relative to the mapping file")
        return [DataFile(path, None) for path in tables]
    found: dict[str, list[Path]] = {}
    matcher = _matcher(pattern)
    for candidate in sorted(globlib.glob(_glob(pattern))):
        match = matcher.match(candidate)
        if match and Path(candidate).is_file() and LANG_CODE.match(match["lang"]):
            found.setdefault(match["lang"], []).append(Path(candidate))
    prefix, _, suffix = pattern.partition(LANG)
    if mapping.source is not None:
        source = _resolve(mapping, mapping.source)
        if not source.is_file():
            raise _fail(mapping.path, "[input] source", f"no such file {str(source)!r}",
                        "the source language's file, relative to the mapping file")
        found[mapping.source_language] = [source]
    several = next((code for code, paths in found.items() if len(paths) > 1), None)
    if several is not None and mapping.align == "row":
        raise _fail(mapping.path, "[input] files", f"{len(found[several])} files of "
                    f"{several} match; aligned by row, a language is one file",
                    'one file per language, or align = "id"')
    if not found:
        raise _fail(mapping.path, "[input] files", f"{mapping.files!r} matches no file",
                    f"files such as {prefix.rsplit('/', 1)[-1]}de{suffix} beside the mapping")
    if mapping.source_language not in found:
        raise _fail(mapping.path, "[release] source_language",
                    f"no file of the source language {mapping.source_language!r} (found "
                    + ", ".join(sorted(found)[:8]) + ")",
                    "a file matching [input] files for it, or [input] source")
    wanted = mapping.languages or tuple(sorted(c for c in found
                                               if c != mapping.source_language))
    missing = [code for code in wanted if code not in found]
    if missing:
        raise _fail(mapping.path, "[release] languages",
                    f"no file for {', '.join(missing)}",
                    f"a file matching {mapping.files!r} for each listed language")
    if not [c for c in wanted if c != mapping.source_language]:
        raise _fail(mapping.path, "[input] files", "only the source language's file",
                    "at least one translated language")
    order = [mapping.source_language] + [c for c in wanted if c != mapping.source_language]
    return [DataFile(path, code) for code in order for path in found[code]]


def _resolve(mapping: Mapping, name: str) -> Path:
    path = Path(name).expanduser()
    return path if path.is_absolute() else mapping.folder / path
