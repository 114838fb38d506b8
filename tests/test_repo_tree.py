"""What the repository tracks: no symlink at all. calibration/ and web_demo/ become edge_tool.calibration and
edge_tool.web_demo through pyproject's package-dir (issue 33), so a checkout with ``core.symlinks=false`` has no
text-file stand-ins and no tree walker must choose whether to follow a link; and a worktree's ``.venv`` or
``node_modules`` link is never committed (a checkout of such a commit replaced the ignored real directories of
another checkout with links to themselves)."""

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_no_symlink_is_tracked():
    listed = subprocess.run(["git", "ls-files", "-s"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    links = sorted(line.split("\t", 1)[1] for line in listed.splitlines() if line.startswith("120000 "))
    assert links == [], f"symlinks tracked by git: {links}"


def test_gitignore_covers_venv_and_node_modules_links_too():
    """A pattern with a trailing slash matches directories only, not a symlink of the same name."""
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", ".venv", ".venv-tf2.21-py3.12", "web_demo/node_modules"],
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert ignored == [".venv", ".venv-tf2.21-py3.12", "web_demo/node_modules"]
