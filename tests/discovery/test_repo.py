"""Repository input: a local folder, or a git URL cloned with --depth 1 (tested with file://)."""

import shutil
import subprocess
from pathlib import Path

import pytest

from veriforge.discovery.errors import RepoFetchError
from veriforge.discovery.repo import is_git_url, open_repository

FIXTURES = Path(__file__).parent / "fixtures"


def test_local_folder():
    src = open_repository(FIXTURES / "numpy_sim")
    assert src.path == (FIXTURES / "numpy_sim").resolve() and src.name == "numpy_sim"


def test_missing_folder():
    with pytest.raises(RepoFetchError, match="not a folder"):
        open_repository("/nonexistent/veriforge/repo")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_clone_from_local_bare_repo(tmp_path):
    work = tmp_path / "work"
    shutil.copytree(FIXTURES / "numpy_sim", work)
    git = ["git", "-c", "user.email=t@example.org", "-c", "user.name=t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "init"], check=True)
    bare = tmp_path / "heatsim.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    url = f"file://{bare}"
    assert is_git_url(url) and is_git_url("git@github.com:alice/heatsim.git") and not is_git_url(str(bare))
    src = open_repository(url)
    assert (src.path / "simulate_diffusion.py").is_file() and src.name.endswith("heatsim")
    assert src.commit and len(src.commit) == 40
    with pytest.raises(RepoFetchError, match="git clone"):
        open_repository(f"file://{tmp_path}/nope.git")
