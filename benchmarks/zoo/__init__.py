"""The model zoo benchmark: many small models of real shapes × every edgetool cell (see docs/zoo.md)."""
