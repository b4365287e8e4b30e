"""The human review loop: stratified samples of translation units (`sampling`), the Label
Studio labeling configs and task payloads (`configs`), MAPLE realism / relevance inputs
(`maple`), push and pull with our overlap, blinding and adjudication layer (`loop`),
agreement and reports (`agreement`, `reports`). Only `labelstudio` imports the SDK."""
