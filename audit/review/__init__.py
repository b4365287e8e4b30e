"""The human review loop: stratified samples of translation units (`sampling`), language
routing to bilingual annotators (`routing`), the Label Studio labeling configs and task
payloads (`configs`), MAPLE realism / relevance inputs (`maple`); a batch per kind
(`batches`), its files (`workspace`, `schemas`), its servers and accounts (`sites`,
`accounts`); push and adjudication (`push`), progress (`status`), pull and attribution
(`pull`), another member's work given back (`intrusions`); agreement, final labels and
reports (`agreement`, `reports`, `charts`), batch specs and the command line (`spec`,
`cli`). Only `labelstudio` imports the SDK."""
