"""The translation layer: pure text signals, and the pair signals computed and cached
once per distinct (language, source, translation)."""
