"""Allow ``python -m edge_tool`` (refused with one paragraph from a checkout that is not installed)."""

from edge_tool.core.install import require_installed

require_installed()

from edge_tool.cli import main  # noqa: E402  (cli imports calibration: only once it is known to be there)

if __name__ == "__main__":
    main()
