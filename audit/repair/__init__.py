"""The repair loop (issue 21): from findings to a corrected release.

    plan         the work list: units to repair with their findings, text and source
    corrections  the corrections file format; each correction located, its old text verified
    edits        corrections grouped into edits of units; agreement and disagreement
    probe        the registry's checks on corrected units (verdicts) and on corrected rows
                 (flags and status by the release's own rule)
    record       the append-only correction record and its workspace
    apply        the whole apply, staged and atomic, the corrected release written by its
                 layout (audit/io/layouts/); changelog: its CHANGELOG.md
    (its commands, `python -m audit repair plan|apply`, are audit/cli/repair.py)

A library: no Streamlit, no repository paths, no environment reads.
"""
