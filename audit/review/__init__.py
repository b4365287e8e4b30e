"""The human review loop: stratified samples of translation units (`sampling`), language
routing to bilingual annotators (`routing`), the Label Studio labeling configs and task
checks (`configs`), MAPLE realism / relevance inputs (`maple`); the kinds of batch, one
module each, and their registry (`kinds`); the batch a push takes (`batches`), its files
(`workspace`, `schemas`), its servers and accounts (`sites`,
`accounts`); push and adjudication (`push`), progress (`status`), pull and attribution
(`pull`), another member's work given back (`intrusions`); agreement, final labels and
reports (`agreement`, `reports`, `charts`), batch specs (`spec`, `inputs`) and the
command line (`audit/cli/review.py`). Only `labelstudio` imports the SDK."""
