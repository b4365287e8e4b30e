"""The bundled demo release: text bank, instances, plants, oracle, build (see build.py)."""
