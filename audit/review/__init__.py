"""The human review loop: stratified samples of translation units (`sampling`), language
routing to bilingual annotators (`routing`), the Label Studio labeling configs and task
payloads (`configs`), MAPLE realism / relevance inputs (`maple`), push, progress, pull and
adjudication with our routing, attribution and blinding layer (`loop`), agreement, final
labels and reports (`agreement`, `reports`, `charts`), batch specs and the command line
(`spec`, `cli`). Only `labelstudio` imports the SDK."""
