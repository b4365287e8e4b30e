"""The workbench's Streamlit-side services that are no part of the audit library (`audit/`
has no Streamlit): who may write (`auth`)."""
