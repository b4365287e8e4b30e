"""What a scan tells people: comparisons, the acceptance gate and its page, quarantine
lists, and the one rendering boundary for outside text."""
