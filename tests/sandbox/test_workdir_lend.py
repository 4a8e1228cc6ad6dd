"""An adopted folder (``cwd=`` of ``cuda run``: the user's own directory) lent to sandbox uids comes
back to its owners however runs overlap or die: two runs lending one folder at once, and a run
killed before it gave the folder back (the next run restores it first)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from veriforge.sandbox.workdir import Workdir, _LendJournal

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="lending needs root (chown to the sandbox uid)")

UID_A, UID_B = 2_000_400_001, 2_000_400_002


@pytest.fixture
def reachable(tmp_path):
    """A folder the sandbox uid can reach (pytest's own tmp folders are 0700)."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="vf-lend-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _tree(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "input.txt").write_text("x")
    (root / "sub" / "data.bin").write_bytes(b"\0")
    return root


def _owners(root: Path) -> set[int]:
    return {p.lstat().st_uid for p in [root, *root.rglob("*")]}


def test_overlapping_runs_in_one_folder_give_it_back_to_its_owner(reachable):
    tree = _tree(reachable / "project")
    owner = os.getuid()
    a, b = Workdir(tree, uid=UID_A, keep=True), Workdir(tree, uid=UID_B, keep=True)
    a.lend()
    assert _owners(tree) == {UID_A}
    b.lend()  # b must not record UID_A as the owner of the user's files
    assert _owners(tree) == {UID_B}
    (tree / "sub" / "made_by_b.txt").write_text("new")
    os.lchown(tree / "sub" / "made_by_b.txt", UID_B, UID_B)
    a.give_back()
    assert _owners(tree) == {UID_B}  # b still runs there
    b.give_back()
    assert _owners(tree) == {owner}  # new entries go to the folder's owner too
    assert not _LendJournal(tree.resolve()).file.exists()


def test_what_a_run_made_before_a_second_run_lent_the_folder_goes_to_the_owner(reachable):
    """The second lend sees entries the first run's program made, owned by the first run's uid:
    neither is their owner to give back to, and a folder made under a held-back name (.git) was
    not there when the folder was first lent, so it is given back too."""
    tree = _tree(reachable / "project")
    owner = os.getuid()
    a, b = Workdir(tree, uid=UID_A, keep=True), Workdir(tree, uid=UID_B, keep=True)
    a.lend()
    made = [tree / "made_by_a.txt", tree / "sub" / ".git", tree / "sub" / ".git" / "x"]
    made[0].write_text("new")
    made[1].mkdir()
    made[2].write_text("x")
    for path in made:
        os.lchown(path, UID_A, UID_A)
    b.lend()
    a.give_back()
    b.give_back()
    assert {p.lstat().st_uid for p in made} == {owner}
    assert _owners(tree) == {owner}


def test_a_run_killed_while_holding_the_folder_is_undone_by_the_next_run(reachable):
    tree = _tree(reachable / "project")
    owner = os.getuid()
    # a child process lends the folder and dies without giving it back (SIGKILL, a test timeout)
    code = (f"import os\nfrom pathlib import Path\nfrom veriforge.sandbox.workdir import Workdir\n"
            f"Workdir(Path({str(tree)!r}), uid={UID_A}, keep=True).lend()\nos._exit(0)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    assert _owners(tree) == {UID_A}
    journal = _LendJournal(tree.resolve()).file
    assert json.loads(journal.read_text())["owners"][str(tree.resolve() / "input.txt")] == [owner, os.getgid()]
    nxt = Workdir(tree, uid=UID_B, keep=True)
    nxt.lend()
    nxt.give_back()
    assert _owners(tree) == {owner}
    assert not journal.exists()


def test_a_journal_folder_planted_by_another_user_is_refused(reachable, monkeypatch):
    """Whoever controls the journal chooses whom the user's files go back to: a planted folder
    (not ours, or open to others) stops the lend instead of being used."""
    import tempfile

    from veriforge.sandbox.workdir import WorkdirError

    monkeypatch.setattr(tempfile, "tempdir", str(reachable))
    planted = reachable / "veriforge-lent"
    planted.mkdir()
    os.chown(planted, UID_A, UID_A)
    tree = _tree(reachable / "project")
    with pytest.raises(WorkdirError, match="not a private folder"):
        Workdir(tree, uid=UID_B, keep=True).lend()
    assert _owners(tree) == {os.getuid()}
    os.chown(planted, os.getuid(), os.getgid())
    planted.chmod(0o777)
    with pytest.raises(WorkdirError, match="not a private folder"):
        Workdir(tree, uid=UID_B, keep=True).lend()


def test_a_huge_folder_is_refused_before_anything_changes_owner(reachable, monkeypatch):
    from veriforge.sandbox import workdir
    from veriforge.sandbox.workdir import WorkdirError

    tree = _tree(reachable / "home")
    for i in range(5):
        (tree / f"f{i}").write_text("x")
    monkeypatch.setattr(workdir, "MAX_LEND_ENTRIES", 4)
    with pytest.raises(WorkdirError, match=r"more than 4 files and folders.*--data"):
        Workdir(tree, uid=UID_A, keep=True).lend()
    assert _owners(tree) == {os.getuid()}  # nothing was handed over
    monkeypatch.setattr(workdir, "MAX_LEND_ENTRIES", 100)
    w = Workdir(tree, uid=UID_A, keep=True)
    w.lend()
    assert _owners(tree) == {UID_A}
    w.give_back()
    assert _owners(tree) == {os.getuid()}


def test_a_projects_virtualenv_and_git_store_are_kept_back_not_counted(reachable, monkeypatch):
    """``cuda run`` from a project root: its .venv and .git hold far more entries than the
    program's data; they stay with their owner and do not count against the limit."""
    from veriforge.sandbox import workdir

    tree = _tree(reachable / "project")
    for store in (tree / ".venv", tree / "env3", tree / ".git", tree / "sub" / "node_modules"):
        store.mkdir()
        for i in range(6):
            (store / f"f{i}").write_text("x")
    (tree / "env3" / "pyvenv.cfg").write_text("home = /usr/bin\n")  # a venv under any name
    (tree / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    monkeypatch.setattr(workdir, "MAX_LEND_ENTRIES", 5)  # root, input.txt, sub, sub/data.bin
    w = Workdir(tree, uid=UID_A, keep=True)
    w.lend()
    kept = [tree / ".venv", tree / "env3", tree / ".git", tree / "sub" / "node_modules"]
    assert {p.lstat().st_uid for p in kept} == {os.getuid()}
    assert {p.lstat().st_uid for k in kept for p in k.rglob("*")} == {os.getuid()}
    assert {(tree / n).lstat().st_uid for n in ("input.txt", "sub", "sub/data.bin")} == {UID_A}
    # what the program makes during the run, under a held-back name too, is given back all the same
    made = tree / "sub" / ".git"
    made.mkdir()
    (made / "pyvenv.cfg").write_text("x")
    for path in (made, made / "pyvenv.cfg"):
        os.lchown(path, UID_A, UID_A)
    w.give_back()
    assert _owners(tree) == {os.getuid()}


def test_veriforges_home_inside_the_folder_is_kept_back_and_a_folder_inside_it_is_refused(reachable, monkeypatch):
    """``cuda run`` from a folder that holds VERIFORGE_HOME (``VERIFORGE_HOME=./.vf``): the store,
    caches and secret key never change owner; a run from inside the home is refused outright."""
    from veriforge.sandbox.workdir import WorkdirError

    tree = _tree(reachable / "project")
    home = tree / "vfhome"
    (home / "cache").mkdir(parents=True)
    (home / "secret.key").write_bytes(b"k" * 32)
    (home / "runs.sqlite").write_text("store")
    monkeypatch.setenv("VERIFORGE_HOME", str(home))
    w = Workdir(tree, uid=UID_A, keep=True)
    w.lend()
    assert _owners(home) == {os.getuid()}
    assert {(tree / n).lstat().st_uid for n in ("input.txt", "sub", "sub/data.bin")} == {UID_A}
    w.give_back()
    assert _owners(tree) == {os.getuid()}
    for inside in (home, home / "cache"):
        with pytest.raises(WorkdirError, match=r"inside veriforge's own folder"):
            Workdir(inside, uid=UID_A, keep=True).lend()
        assert _owners(home) == {os.getuid()}
