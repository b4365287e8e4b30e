"""Release layouts, one module each (v11, v2, jsonl, parallel) implementing `base.Layout`;
what the multi-hop and the Parquet layouts share (multihop, parquet, checksum); `registry`
lists them and tells which one a release's files are."""
