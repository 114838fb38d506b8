"""The zoo's model builders, one module per family (``common`` holds what they share); the registry is ``models``."""
