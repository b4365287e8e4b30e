"""Shared set-up called at the top of every page: page config, navigation that carries the
view, the release / source / policy pickers, the cached scan and the scope line.

A release opened for the first time is scanned in two stages (audit/engine/staged.py): its
structural checks at once, the checks that read every text on a thread. A page that
shows the release gets the partial scan with a notice naming the checks still running,
which reruns the page when the full scan is in (`setup`; Export keeps its downloads off
meanwhile); a page that acts on every finding (compare, review, annotations, evaluation,
judge, repair) waits for the full scan (`setup(complete_scan=True)`, `scan_of`).

The view (release, HotpotQA sources, policy and Browse filter; `workbench.viewstate.View`) lives
in the URL. Widgets follow the URL and write it back; every navigation link and "open"
action carries it, so any URL reproduces what was shown.

Outside text (release fields, paths, URL parameters, exports) is untrusted: pages show it only
through `html` (fragments from `audit.reports.render`), `say` (Streamlit's boxes with each value
verbatim), or as data in tables and charts; never as Markdown of their own.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import streamlit as st

from audit import paths
from audit.analysis import browse, queries
from audit.checks import registry
from audit.engine import policy, staged
from audit.engine.scan import ScanResult
from audit.errors import InputError
from audit.io import release as readers
from audit.io.atomic import staged_file
from audit.io.model import Release
from audit.reports import render
from audit.settings import DEMO_RELEASE, Settings, configure, demo_sources
from workbench import auth
from workbench.serving import (
    ScanCache,
    served_file,
    served_files,
    stamp,
    upload_name,
    uploads_root,
)
from workbench.viewstate import SPLITS, View

SCANS: ScanCache[staged.StagedScan] = ScanCache()
POLL_SECONDS = 1.0      # how often a partial view asks whether the full scan is in


def html(*fragments: str, css: str = "xb") -> None:
    """Show fragments built by `audit.reports.render` (the only HTML a page may show). st.html,
    not st.markdown: the browser inserts the block as it is instead of running a Markdown
    parser over it."""
    st.html(render.block(*fragments, css=css))


def say(box, template: str, **values: object) -> None:
    """One of Streamlit's boxes (st.error, st.info, st.caption…) with our wording and
    every outside value shown verbatim: say(st.error, "Cannot open {path}", path=p)."""
    box(render.message(template, **values))


def url_corrected(name: str, raw: object, done: str) -> None:
    """Say what was done with a URL parameter that could not be used as given."""
    say(st.warning, "The URL's {param} " + done + ".", param=f"{name}={raw}")


def int_param(name: str, default: int, low: int, high: int, unit: str | None = None) -> int:
    """An integer URL parameter clamped to [low, high]; anything else is the default. A
    correction is said in one line ("showing {unit} N")."""
    raw = str(st.query_params.get(name, "")).strip()
    if not raw:
        return default
    if not re.fullmatch(r"-?[0-9]{1,18}", raw):
        value, why = default, "is not a whole number"
    else:
        value = min(max(int(raw), low), high)
        why = f"is outside {low:,}–{high:,}" if value != int(raw) else ""
    if why:
        url_corrected(name, raw, f"{why}; showing {unit or name} {value:,}")
    return value


# ------------------------------------------------------------------------- the view

def current_view() -> View:
    return View.from_query(st.query_params.to_dict())


def show_view(view: View, **extra: object) -> None:
    """Put `view` (plus page keys) in the URL of this page and rerun."""
    st.query_params.from_dict({**view.to_query(),
                               **{k: str(v) for k, v in extra.items() if v is not None}})
    st.rerun()


def pages() -> list[tuple[str, str]]:
    """(script, label) of every page, in menu order: Overview, then pages/N_Name.py."""
    found = sorted((Path(__file__).resolve().parent.parent / "pages").glob("[0-9]*_*.py"),
                   key=lambda p: int(p.name.split("_", 1)[0]))
    return [("app.py", "Overview")] + [
        (f"pages/{p.name}", p.stem.split("_", 1)[1].replace("_", " ")) for p in found]


def _navigation(view: View) -> None:
    """The menu: every entry opens its page on the same view."""
    with st.sidebar:
        for script, label in pages():
            st.page_link(script, label=label, query_params=view.to_query())


def follow_url(key: str, value: object) -> None:
    """Make widget `key` show the URL's value, on every run. A widget's own change reaches
    the URL in its on_change callback before the page runs again, so this never undoes
    it; and a page switch, which drops widget state, cannot blank the widget."""
    st.session_state[key] = value


def _set_param(name: str, key: str) -> None:
    value = str(st.session_state.get(key) or "").strip()
    if value:
        st.query_params[name] = value
    else:
        st.query_params.pop(name, None)


def save_upload(upload, suffixes: tuple[str, ...]) -> str:
    """Keep an upload under the upload area, named by its content hash and its sanitised
    name (`serving.upload_name`). Operators only."""
    auth.require("Uploading a file")
    data = upload.getvalue()
    target = uploads_root() / upload_name(upload.name, data, suffixes)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        with staged_file(target) as staging:
            staging.write_bytes(data)
    return str(target)


def _uploaded(name: str, key: str, suffixes: tuple[str, ...]) -> None:
    upload = st.session_state.get(key)
    if upload is not None:
        st.query_params[name] = save_upload(upload, suffixes)


def _path_input(label: str, name: str, view_value: str | None, placeholder: str,
                upload: tuple[str, ...] | None = None) -> None:
    key = f"path_{name}"
    follow_url(key, view_value or "")
    st.text_input(label, key=key, placeholder=placeholder, on_change=_set_param,
                  args=(name, key))
    if upload and auth.gate("Uploading a file", box=st.caption):
        st.file_uploader(f"…or upload ({', '.join(upload)})", type=[s[1:] for s in upload],
                         key=f"upload_{name}", on_change=_uploaded,
                         args=(name, f"upload_{name}", upload))


def _pickers(view: View) -> None:
    with st.sidebar:
        st.divider()
        _path_input("Release: path, directory of shards, glob or mapping (.toml)", "release",
                    view.release, "empty = the bundled demo release", (".parquet", ".jsonl"))
        sources = dict(view.sources)
        with st.expander("HotpotQA source and policy", expanded=bool(sources or view.policy)):
            for split in SPLITS:
                _path_input(f"HotpotQA {split} source (JSON)", f"source_{split}",
                            sources.get(split), "not attached", (".json",))
            _path_input("Policy file (TOML or JSON)", "policy", view.policy,
                        "default policy", (".toml", ".json"))


# ------------------------------------------------------------------------- the scan

class CannotOpen(Exception):
    """An input of the view that cannot be opened, named in words ("the policy file")."""

    def __init__(self, what: str, error: InputError) -> None:
        super().__init__(what)
        self.what, self.error = what, error


def _served(what: str, serve, spec: str):
    try:
        return serve(spec)
    except InputError as error:
        raise CannotOpen(what, error) from None


def _request(view: View) -> tuple[tuple, list[Path], list[str], Path | None]:
    """What to scan, resolved under the data roots (the demo and its sources by default),
    and the key that names it: every input file's path, time and size."""
    files = paths.resolve_paths(DEMO_RELEASE) if view.release is None \
        else _served("release", served_files, view.release)
    if view.sources:
        specs = [f"{split}={_served(f'HotpotQA {split} source', served_file, path)}"
                 for split, path in view.sources]
    else:
        specs = demo_sources() if view.release is None else []
    policy_path = _served("policy file", served_file, view.policy) if view.policy else None
    inputs = files + [Path(spec.split("=", 1)[1]) for spec in specs] + \
        ([policy_path] if policy_path else [])
    return (view.release, stamp(inputs), tuple(specs)), files, specs, policy_path


def _build(release: str | None, files: list[Path], specs: list[str],
           policy_path: Path | None) -> staged.StagedScan:
    """The scan's first stage with its steps shown as they happen; the full scan goes on on
    a thread of its own, which builds its browse index too before it is shown."""
    rules = policy.load(policy_path)
    with st.status("Scanning the release…", expanded=True) as box:
        started = time.perf_counter()

        def stage(message: str) -> None:
            box.write(render.message("{t} s · {message}", t=f"{time.perf_counter() - started:.1f}",
                                     message=message))

        def opened() -> Release:
            return readers.open_release(release or DEMO_RELEASE, specs, files,
                                        remember_later=True)

        stage("opening the files")
        scan = staged.start(opened, rules, progress=stage, ready=browse.build_index)
        rows = scan.result.release.rows
        lacking = staged.pending(scan.result)
        box.update(label=(f"First view of {rows:,} rows in {time.perf_counter() - started:.1f} s;"
                          f" {render.plural(len(lacking), 'check')} still running" if lacking
                          else f"Scanned {rows:,} rows in "
                               f"{time.perf_counter() - started:.1f} s"),
                   state="complete", expanded=False)
    return scan


def staged_of(view: View) -> staged.StagedScan:
    """The scan of a view's release, sources and policy: cached, else its first stage
    built with its steps shown. Raises CannotOpen naming the input (release, a source, the
    policy) that cannot be served or read."""
    key, files, specs, policy_path = _request(view)
    try:
        return SCANS.get(key, lambda: _build(view.release, files, specs, policy_path))
    except InputError as error:
        named = {str(policy_path): "policy file"} | {
            spec.split("=", 1)[1]: f"HotpotQA {spec.split('=', 1)[0]} source" for spec in specs}
        raise CannotOpen(named.get(error.path, "release"), error) from None


def scan_of(view: View) -> ScanResult:
    """The full scan of a view's release, sources and policy (`staged_of`, `complete`)."""
    return complete(staged_of(view))


def complete(scan: staged.StagedScan) -> ScanResult:
    """The full scan, waited for with its progress shown; the page stops with an error box
    when it failed."""
    if not scan.done:
        with st.status("Waiting for the full scan: this page acts on every check's findings",
                       expanded=True) as box:
            line = st.empty()
            while not scan.wait(POLL_SECONDS):
                with line:
                    _progress(scan, st.write)
            box.update(label="The full scan is in", state="complete", expanded=False)
    if scan.error is not None:
        _failed(scan)
        st.stop()
    return scan.result


def _progress(scan: staged.StagedScan, box) -> None:
    say(box, f"Full scan: {scan.seconds:.0f} s so far; latest step: " + "{latest}",
        latest=scan.latest or "starting the checks that read every text")


def _failed(scan: staged.StagedScan) -> None:
    """The full scan's error, with what the page lacks and a way to scan again."""
    say(st.error, "The full scan of this release failed: {problem}. Without it the pages "
                  "show only the first checks' results, marked partial (they lack "
                  "{checks}), and exporting, comparing, reviewing and repairing stay off.",
        problem=f"{type(scan.error).__name__}: {scan.error}",
        checks=", ".join(staged.pending(scan.result)))
    st.button("Scan again", key="scan_again", on_click=SCANS.drop,
              args=(_request(current_view())[0],))


def _partial_notice(scan: staged.StagedScan) -> None:
    """While the full scan runs: which checks this page lacks and the latest step, asked
    again every POLL_SECONDS; the whole page reruns on the full scan once it is in."""
    @st.fragment(run_every=POLL_SECONDS)
    def notice() -> None:
        if scan.done:
            st.rerun()
        lacking = staged.pending(scan.result)
        say(st.info, "**Partial results: the scan is still running.** The status counts and "
                     f"findings on this page come from the checks done so far; these "
                     f"{len(lacking)} are still running and not counted yet: " + "{checks}. "
                     "The page updates by itself when they finish; exports wait for them.",
            checks=", ".join(lacking))
        _progress(scan, st.caption)
    notice()


def page_setup(title: str, heading: str | None = None) -> View:
    """Page config, navigation (carrying the view) and the page heading: all a page that
    does not read the release needs (no release picker, no scan). The workbench's edge:
    each run reads its settings from the environment."""
    configure(Settings.from_env())
    st.set_page_config(page_title=f"{title} · XHotpotQA audit", layout="wide")
    st.markdown(render.CSS, unsafe_allow_html=True)
    view = current_view()
    _navigation(view)
    auth.panel()
    st.title(heading or title)
    return view


def setup(title: str, heading: str | None = None, *, complete_scan: bool = False
          ) -> ScanResult:
    """`page_setup`, then the release pickers and the cached scan: the full scan where
    `complete_scan` (waited for), else the scan as it stands, a partial one with its
    notice. Stops the page with an error box when an input cannot be served or read."""
    view = page_setup(title, heading)
    _pickers(view)
    for name, raw, done in browse.Filters.parse(st.query_params.to_dict())[1]:
        url_corrected(name, raw, done)
    try:
        scan = staged_of(view)
    except CannotOpen as failed:
        say(st.error, f"Cannot open the {failed.what}: " + "{problem}", problem=failed.error)
        st.stop()
    if complete_scan:
        return complete(scan)
    result = scan.result        # read once: the notice below is about this very result
    if staged.pending(result):
        if scan.error is not None:
            _failed(scan)
        else:
            _partial_notice(scan)
    return result


def needs_vector(result: ScanResult, what: str) -> None:
    """Stop a page that works on XHotpotQA's multi-hop rows (questions, candidate
    paragraphs, the language vector) with a note, on a release without them (a mapped
    benchmark): `what` says what the page does."""
    if browse.has_vector(result):
        return
    say(st.info, "{what} works on multi-hop releases (questions, candidate paragraphs and "
                 "their language vector); {release} is a {layout} release. Browse, "
                 "Instance, Findings, Compare, Export, Review and Annotations open it "
                 "(README: Mapping a benchmark).", what=what, release=release_name(result),
        layout=result.release.layout.description)
    st.stop()


def scope_line(result: ScanResult, rows: int | None = None, *, filtered: bool = True,
               unfiltered: str = "the Browse filter does not apply here") -> None:
    """One line: which release, which filter and how many rows this page works on;
    `unfiltered` says why the whole release is used when `filtered` is false."""
    view = current_view()
    summary = result.summary
    parts = [render.strong(release_name(result)),
             render.text(f" · {summary['layout']} · " + render.plural(summary["rows"], "row"))]
    if filtered:
        count = rows if rows is not None else browse.count(result, view.filters)
        parts.append(render.text(f" · filter: {view.describe_filter()} → "
                                 f"{render.plural(count, 'row')}"))
    else:
        parts.append(render.text(f" · whole release ({unfiltered})"))
    sources = summary["sources"]
    parts.append(render.text(" · HotpotQA source: " + (
        ", ".join(Path(s).name for s in sources) if sources else "none attached")))
    parts.append(render.text(f" · policy: {Path(summary['policy']['name']).name}"))
    lacking = staged.pending(result)
    if lacking:
        parts += [render.text(" · "), render.badge(
            f"partial scan: {render.plural(len(lacking), 'check')} still running", "review")]
    html(*parts, css="scope")


def counted(result: ScanResult, label: str) -> str:
    """A status count's label, marked while the scan is partial."""
    return f"{label} (partial)" if staged.pending(result) else label


DEMO_NAME = "the bundled demo release"


def release_name(result: ScanResult) -> str:
    """What a page calls the release: the bundled demo by that name, else its own."""
    return DEMO_NAME if current_view().release is None else result.summary["release"]


def orientation(result: ScanResult) -> None:
    """What a first visit needs to know: what is shown, how to open one's own release and
    where paths are read from. Shown while the view is the bundled demo."""
    if current_view().release is not None:
        return
    st.info(f"You are looking at the bundled demo release: {result.summary['rows']:,} "
            "synthetic XHotpotQA rows with planted defects and their HotpotQA sources, so every page has something to "
            "show. To audit your own release, give its path (a Parquet or JSONL file, a "
            "directory of shards or a glob) in the sidebar under Release, or upload it "
            "there; paths are read only from the workbench's data roots "
            "(AUDIT_DATA_ROOTS). The view, filter included, lives in the URL: share or "
            "reload it to see the same thing.")


# Whole numbers that are positions or names, not counts: no thousands separator.
NOT_COUNTS = frozenset({"row", "rid", "sentence_index", "candidate_index", "view", "position",
                        "seed", "year", "index"})


def show_table(data, percent: tuple[str, ...] = (), **options):
    """st.dataframe with one number format on every page: counts with thousands separators
    (as the metrics and captions write them), the `percent` columns (shares and their
    interval bounds, stored as fractions) in percent."""
    import pandas as pd
    frame = data.to_pandas() if hasattr(data, "to_pandas") else pd.DataFrame(data)
    config = {name: st.column_config.NumberColumn(format="percent")
              for name in percent if name in frame.columns}
    for name, dtype in frame.dtypes.items():
        if name not in config and name not in NOT_COUNTS and \
                pd.api.types.is_integer_dtype(dtype):
            config[name] = st.column_config.NumberColumn(format="localized")
    config.update(options.pop("column_config", None) or {})
    return st.dataframe(frame, hide_index=options.pop("hide_index", True),
                        column_config=config, **options)


def no_source_notice(result: ScanResult) -> None:
    """Say which checks could not run because no HotpotQA source is attached, for the
    release or for one of its splits."""
    if "source" in result.release.capabilities:
        for split, rows in queries.splits_without_source(result).items():
            say(st.info, "No HotpotQA source is attached for the {split} split ({rows}): "
                         "its rows' source checks do not run. Attach its source in the "
                         "sidebar under HotpotQA source and policy.",
                split=split, rows=render.plural(rows, "row"))
        return
    needing = [c.name for c in registry.for_layout(result.release.layout)
               if "source" in c.needs]
    if not needing:         # a layout no source applies to (a mapped benchmark)
        return
    say(st.info, "No HotpotQA source is attached: {n} checks need it and are taken from the "
                 "release's shipped flags or left out ({checks}). Attach the source in the "
                 "sidebar under HotpotQA source and policy.",
        n=str(len(needing)), checks=", ".join(needing))


def filtered_rows(result: ScanResult) -> list[int]:
    return browse.matching_rows(result, current_view().filters)
