"""Seeded synthetic evaluation inputs: prediction files, judge files, human ratings and the
data/evaluation_demo/ files built from them (demo.py)."""
