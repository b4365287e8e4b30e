"""Questions asked of a scan: browsing, instance and findings queries, mixing, statistics."""
