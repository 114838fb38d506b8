"""Allow ``python -m edge_tool``."""

from edge_tool.cli import main

if __name__ == "__main__":
    main()
