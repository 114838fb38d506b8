"""What the repository tracks: no symlink but the two package links (issue 33 removes those), so a worktree's
``.venv`` or ``node_modules`` link is never committed — a checkout of such a commit replaced the ignored real
directories of another checkout with links to themselves."""

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE_LINKS = {"edge_tool/calibration", "edge_tool/web_demo"}


def test_the_only_tracked_symlinks_are_the_package_links():
    listed = subprocess.run(["git", "ls-files", "-s"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    links = {line.split("\t", 1)[1] for line in listed.splitlines() if line.startswith("120000 ")}
    assert links <= PACKAGE_LINKS, f"symlinks tracked by git: {sorted(links - PACKAGE_LINKS)}"


def test_gitignore_covers_venv_and_node_modules_links_too():
    """A pattern with a trailing slash matches directories only, not a symlink of the same name."""
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", ".venv", ".venv-tf2.21-py3.12", "web_demo/node_modules"],
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert ignored == [".venv", ".venv-tf2.21-py3.12", "web_demo/node_modules"]
