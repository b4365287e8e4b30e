"""SQL helpers: safe literals and identifiers (safe), the DuckDB macros and tables (macros), Arrow arrays from buffers (arrays)."""
