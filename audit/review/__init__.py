"""The review loop's server-free side: stratified samples of translation units
(`sampling`), the Label Studio labeling configs and the task payloads they read
(`configs`), and the MAPLE realism / relevance inputs (`maple`). Nothing here imports
Label Studio; the adapter that talks to the server lives elsewhere."""
