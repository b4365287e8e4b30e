"""Reading and writing releases, caches and tables."""
