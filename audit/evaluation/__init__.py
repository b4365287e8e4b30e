"""Evaluation by language vector: model predictions (metrics, slices, contrasts), LLM-judge
samples and MAPLE retrieval runs (issue 14). No Streamlit; the pages and the CLI
(`audit/cli/evaluation.py`) call these modules."""
