"""What a check declares decides how the scan runs it: the level of its SQL (row or context)
by the field it is declared in, and the slow signal layers it reads by naming them. Before
the house move the level was guessed from the SQL text by a regex, and the scan named the
language and heuristics layers to start and discard them."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from conftest import record, scan_records

from audit.checks import record_hash, registry
from audit.checks.model import UNITS_ONLY, Check
from audit.io import signal_cache
from audit.language import layer as language_layer
from audit.translation import layer as heuristics_layer

# What an expression over a context reads (candidates, supporting facts, title keys, the
# HotpotQA source row `s`) and what one over a row's own fields reads.
CONTEXT_FIELDS = re.compile(r"\br\.(candidates|supporting_facts|title_keys)\b|\bs\.")
ROW_FIELDS = re.compile(r"\br\.(?!candidates\b|supporting_facts\b|title_keys\b)[a-z_]+")


def test_each_expression_is_declared_at_the_level_it_reads():
    rows = contexts = units = 0
    for check in registry.REGISTRY:
        if check.sql:
            rows += 1
            assert not CONTEXT_FIELDS.search(check.sql), check.name
        for sql in (check.context_sql, check.witness):
            if sql:
                contexts += 1
                assert not ROW_FIELDS.search(sql), check.name
        if check.unit_sql:
            units += 1
            assert not re.search(r"\b[rcs]\.", check.unit_sql), check.name
    # Exact copies, placeholders and invalid characters read units: they were 2 row and
    # 3 context expressions.
    assert (rows, contexts, units) == (13, 28, 4)


def test_the_plan_follows_the_declared_fields():
    both = registry.BY_NAME["english_identity_mismatch"]
    assert both.plan(frozenset()) == (both.sql, both.context_sql, None, True)
    witnessed = registry.BY_NAME["supporting_title_missing"]
    assert witnessed.plan(frozenset()) == (None, witnessed.witness, None, False)
    assert witnessed.plan(frozenset({"source"})) == (None, witnessed.context_sql, None, True)
    copies = registry.BY_NAME["exact_source_copy"]
    assert copies.plan(frozenset()) == (None, None, copies.unit_sql, True)


def test_the_registered_layers_are_those_the_checks_name():
    assert [layer.NAME for layer in registry.LAYERS] == ["language", "heuristics",
                                                         "preservation", "record_hash"]
    assert registry.BY_NAME["script_mismatch"].layers == (language_layer,)
    assert registry.BY_NAME["record_hash_mismatch"].layers == (record_hash,)
    assert registry.BY_NAME["number_mismatch"].layers == (heuristics_layer,)
    # The checks import their layer's signals, never the other way round; the signal cache
    # is every layer's and imports none.
    assert not imports(heuristics_layer) & {"audit.checks", "audit.checks.translation"}
    assert not imports(language_layer) & {"audit.checks", "audit.checks.language"}
    assert not {m for m in imports(signal_cache)
                if m.startswith(("audit.language", "audit.translation", "audit.checks"))}


def imports(module) -> set[str]:
    """The absolute names of the modules `module` imports (relative imports resolved)."""
    package = module.__name__.rsplit(".", 1)[0].split(".")
    found = set()
    for node in ast.walk(ast.parse(Path(module.__file__).read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            name = ".".join(base + ([node.module] if node.module else []))
            found.add(name)
            found.update(f"{name}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@dataclass
class Done:
    texts: int
    seconds: dict = field(default_factory=lambda: {"compute": 0.25})


class FakeLayer:
    """A signal layer the scan has never heard of: named by one check, it is started,
    prepared by that check's query, and discarded with its record kept."""

    NAME, VERSION, THREADED = "fake", "fake-1", False

    def __init__(self, started: list[str] | None = None):
        self.calls: list[str] = []
        self.done: dict = {}
        self.started = started if started is not None else []

    def start(self, release) -> None:
        self.calls.append("start")
        self.started.append(self.NAME)

    def prepare(self, release):
        self.calls.append("prepare")
        release.con.execute("CREATE OR REPLACE TABLE fake_signals AS "
                            "SELECT rid, id, source_split FROM views")
        self.done[release.con] = Done(release.rows)
        return self.done[release.con]

    def discard(self, con):
        self.calls.append("discard")
        con.execute("DROP TABLE IF EXISTS fake_signals")
        return self.done.pop(con, None)


def test_a_new_layer_runs_without_an_edit_to_the_scan(tmp_path, monkeypatch):
    fake = FakeLayer()

    def query(release) -> str:
        fake.prepare(release)
        return ("SELECT rid, id, source_split, 'fake_check', 'instance', NULL, NULL, 'seen', "
                "NULL FROM fake_signals")

    check = Check("fake_check", ("instance",), "review", "translation", "Reads the fake layer.",
                  UNITS_ONLY,
                  query=query, layers=(fake,))
    monkeypatch.setattr(registry, "REGISTRY", registry.REGISTRY + (check,))
    monkeypatch.setitem(registry.BY_NAME, check.name, check)
    monkeypatch.setattr(registry, "LAYERS", registry.LAYERS + (fake,))
    result = scan_records(tmp_path, [record()])
    assert fake.calls == ["start", "prepare", "discard"]
    assert result.summary["signals"]["fake"] == {"texts": 1, "seconds": {"compute": 0.25}}
    assert [r["check"] for r in result.findings.to_pylist()
            if r["check"] == "fake_check"] == ["fake_check"]
    tables = {name for (name,) in result.release.con.sql(
        "SELECT table_name FROM duckdb_tables()").fetchall()}
    assert "fake_signals" not in tables


def test_a_layer_version_enters_the_fingerprint(monkeypatch):
    base = registry.fingerprint(registry.REGISTRY)
    monkeypatch.setattr(heuristics_layer, "VERSION", "heur-3")
    assert registry.fingerprint(registry.REGISTRY) != base


def test_the_layers_that_only_begin_a_thread_start_first(tmp_path, monkeypatch):
    """A threaded layer's work fills the second core while another's start runs here."""
    started: list[str] = []
    slow, threaded = FakeLayer(started), FakeLayer(started)
    threaded.NAME, threaded.THREADED = "fake_threaded", True
    checks = []
    for layer in (slow, threaded):      # named in this order by the registry's checks
        def query(release, layer=layer) -> str:
            layer.prepare(release)
            return ("SELECT rid, id, source_split, 'fake_check', 'instance', NULL, NULL, "
                    "'seen', NULL FROM fake_signals WHERE false")
        checks.append(Check(f"check_{layer.NAME}", ("instance",), "review", "translation",
                            "Reads a fake layer.", UNITS_ONLY, query=query, layers=(layer,)))
    monkeypatch.setattr(registry, "REGISTRY", registry.REGISTRY + tuple(checks))
    for check in checks:
        monkeypatch.setitem(registry.BY_NAME, check.name, check)
    monkeypatch.setattr(registry, "LAYERS", registry.LAYERS + (slow, threaded))
    scan_records(tmp_path, [record()])
    assert started == ["fake_threaded", "fake"]
