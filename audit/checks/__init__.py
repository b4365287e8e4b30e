"""Checks: the model a check declares, the expression helpers, one module per family
and the registry that assembles them."""
