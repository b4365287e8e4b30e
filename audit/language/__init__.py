"""The language layer: the script rule, the language detectors, the layer that computes
both once per distinct text, and the release descriptors."""
