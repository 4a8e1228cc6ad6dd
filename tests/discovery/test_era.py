"""Environments of the repository's era: the date from git, the per-package release selection, the
pip resolution under era caps (offline, tiny hand-written wheels with set upload times), lock-keyed
sharing and disk accounting."""

import base64
import hashlib
import os
import subprocess
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from packaging.tags import Tag

from veriforge.discovery.envbuild import build_environment, resolve_pins
from veriforge.discovery.era import (
    Era,
    FindLinksIndex,
    Release,
    era_of,
    parse_era,
    select_release,
)
from veriforge.discovery.errors import EnvironmentBuildError

CP311 = {Tag("cp311", "cp311", "manylinux_2_17_x86_64"), Tag("py3", "none", "any")}


def _d(text: str) -> datetime:
    return parse_era(text)


def test_parse_era_date_means_end_of_day_and_rejects_garbage():
    assert parse_era("2019-05-01") == datetime(2019, 5, 1, 23, 59, 59, tzinfo=UTC)
    assert parse_era("2019-05-01T10:00:00+02:00").utcoffset() is not None
    with pytest.raises(EnvironmentBuildError):
        parse_era("last spring")


def test_select_newest_before_cut_that_installs_here():
    rels = [
        Release("1.5.0", _d("2010-08-31"), None, ("numpy-1.5.0.tar.gz",)),  # sdist only, but a binary package
        Release(
            "1.14.0", _d("2018-01-10"), None, ("numpy-1.14.0-cp36-cp36m-manylinux1_x86_64.whl", "numpy-1.14.0.zip")
        ),
        Release("1.15.0", _d("2018-07-20"), None, ("numpy-1.15.0-cp37-cp37m-manylinux1_x86_64.whl",)),
        Release("1.23.2", _d("2022-08-14"), ">=3.8", ("numpy-1.23.2-cp311-cp311-manylinux_2_17_x86_64.whl",)),
        Release("1.23.1", _d("2022-07-08"), ">=3.8", ("numpy-1.23.1-cp310-cp310-manylinux_2_17_x86_64.whl",)),
        Release("2.0.0", _d("2024-06-16"), ">=3.9", ("numpy-2.0.0-cp311-cp311-manylinux_2_17_x86_64.whl",)),
    ]
    # 2018: no release then has a cp311 wheel -> the first later release that does, recorded as relaxed
    pin = select_release("numpy", rels, _d("2018-12-31"), python="3.11.7", tags=CP311)
    assert pin.version == "1.23.2" and "no release before 2018-12-31 installs on Python 3.11.7" in pin.relaxed
    assert "newest then: 1.15.0" in pin.relaxed
    # 2023: the newest installable release before the cut, not 2.0
    pin = select_release("numpy", rels, _d("2023-01-01"), python="3.11.7", tags=CP311)
    assert (pin.version, pin.relaxed, pin.binary) == ("1.23.2", None, True)  # pip gets --only-binary numpy
    # the repository's own specifier still applies
    pin = select_release("numpy", rels, _d("2025-01-01"), specifier="<2", python="3.11.7", tags=CP311)
    assert pin.version == "1.23.2"


def test_select_pure_python_sdist_requires_python_prerelease_and_yanked():
    rels = [
        Release("0.9", _d("2017-03-01"), None, ("tool-0.9.tar.gz",)),  # sdist only: pure Python of its era
        Release("1.0rc1", _d("2017-06-01"), None, ("tool-1.0rc1-py3-none-any.whl",)),
        Release("1.0", _d("2017-08-01"), None, ("tool-1.0-py3-none-any.whl",), yanked=True),
        Release("1.1", _d("2017-09-01"), "<3.8", ("tool-1.1-py3-none-any.whl",)),  # not for 3.11
    ]
    pure = select_release("tool", rels, _d("2018-01-01"), python="3.11.7", tags=CP311)
    assert (pure.version, pure.binary) == ("0.9", False)
    late = select_release("tool", rels, _d("2016-01-01"), python="3.11.7", tags=CP311)
    assert late.version == "0.9" and late.relaxed == "first released after 2016-01-01"
    none = select_release("tool", rels, _d("2018-01-01"), specifier=">=5", python="3.11.7", tags=CP311)
    assert none.version is None and ">=5" in none.relaxed


def _git(cwd: Path, *args: str, when: str | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@x"
    if when:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def test_era_of_uses_the_scripts_last_commit_and_says_when_a_clone_is_shallow(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "analysis.py").write_text("print(1)\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "a", when="2018-03-04T12:00:00+00:00")
    (repo / "README.md").write_text("later\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "b", when="2021-06-07T12:00:00+00:00")
    era = era_of(repo, "analysis.py")
    assert era.date.date().isoformat() == "2018-03-04" and era.source == "git log -- analysis.py"
    assert era_of(repo).date.year == 2021 and era_of(repo).source == "git HEAD"
    shallow = tmp_path / "shallow"
    _git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    got = era_of(shallow, "analysis.py")
    assert got.date.year == 2021 and "shallow" in got.source
    plain = tmp_path / "plain"
    plain.mkdir()
    assert era_of(plain, "x.py") is None


def _wheel(dest: Path, name: str, version: str, when: str, requires: tuple[str, ...] = ()) -> Path:
    """A pure-Python wheel written by hand, its mtime standing for the upload date."""
    dist = f"{name}-{version}"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    files = {
        f"{name}/__init__.py": f"VALUE = {version!r}\n".encode(),
        f"{dist}.dist-info/METADATA": meta.encode(),
        f"{dist}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [
        f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}"
        for p, d in files.items()
    ]
    files[f"{dist}.dist-info/RECORD"] = ("\n".join([*record, f"{dist}.dist-info/RECORD,,"]) + "\n").encode()
    out = dest / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    stamp = _d(when).timestamp()
    os.utime(out, (stamp, stamp))
    return out


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    w = tmp_path / "wheels"
    w.mkdir()
    _wheel(w, "eradep", "1.0", "2019-01-01")
    _wheel(w, "eradep", "2.0", "2023-01-01")
    _wheel(w, "eraprobe", "1.0", "2019-02-01", ("eradep",))
    _wheel(w, "eraprobe", "2.0", "2023-02-01", ("eradep>=2",))
    _wheel(w, "eranew", "3.0", "2022-05-01")
    return w


def test_find_links_index_dates_are_file_mtimes(wheels):
    rels = {r.version: r.uploaded.year for r in FindLinksIndex(wheels).releases("eraprobe")}
    assert rels == {"1.0": 2019, "2.0": 2023}


@pytest.mark.slow
def test_resolution_under_the_era_caps_dependencies_and_relaxes_what_did_not_exist(wheels):
    era = Era(_d("2020-06-01"), "configured")
    res = resolve_pins(["eraprobe", "eranew"], ["eraprobe", "eranew"], era=era, wheel_dir=str(wheels), offline=True)
    assert res.pins == ["eradep==1.0", "eranew==3.0", "eraprobe==1.0"]  # eradep: capped although transitive
    rec = res.era.to_dict()
    assert rec["relaxed"] == {"eranew": "first released after 2020-06-01"}
    assert "eradep<=1.0" in rec["constraints"] and rec["era"]["source"] == "configured"
    today = resolve_pins(["eraprobe"], ["eraprobe"], wheel_dir=str(wheels), offline=True)
    assert today.pins == ["eradep==2.0", "eraprobe==2.0"] and today.era is None
    # a repository pin that the era cannot honour is relaxed, not fatal
    pinned = resolve_pins(["eraprobe==2.0"], ["eraprobe"], era=era, wheel_dir=str(wheels), offline=True)
    assert pinned.pins == ["eradep==2.0", "eraprobe==2.0"]
    assert set(pinned.era.to_dict()["relaxed"]) == {"eraprobe", "eradep"}


@pytest.mark.slow
def test_environments_are_keyed_by_the_resolved_lock_and_report_disk(wheels, tmp_path):
    era = Era(_d("2020-06-01"), "configured")
    kw = {"mode": "install", "wheel_dir": wheels, "offline": True, "root": tmp_path / "envs", "era": era}
    a = build_environment(["eraprobe"], ["eraprobe"], ["eraprobe"], **kw)
    assert "eraprobe==1.0" in a.lock and "eradep==1.0" in a.lock and not a.cached
    assert a.disk_bytes > 0 and a.era["constraints"]
    b = build_environment(["eraprobe<2"], ["eraprobe"], ["eraprobe"], **kw)  # other specs, same lock
    assert b.cached and b.env_dir == a.env_dir and b.disk_bytes == a.disk_bytes
    c = build_environment(["eraprobe"], ["eraprobe"], ["eraprobe"], **{**kw, "era": None})
    assert c.env_dir != a.env_dir and "eraprobe==2.0" in c.lock


@pytest.mark.slow
def test_a_repository_pin_that_cannot_install_here_gives_way_to_the_era(tmp_path):
    """requirements.txt says numpy==1.14.5 (no wheel for this Python): the pin is dropped, recorded,
    and the era's closest installable release is used instead of failing the environment."""
    w = tmp_path / "wheels"
    w.mkdir()
    _wheel(w, "eraprobe", "1.0", "2019-02-01")
    _wheel(w, "eraprobe", "1.5", "2019-09-01")
    _wheel(w, "eraprobe", "2.0", "2023-02-01")
    old = w / "eraprobe-0.9-cp27-cp27mu-manylinux1_x86_64.whl"  # the authors' pin: Python 2.7 only
    old.write_bytes(b"not a real wheel")
    era = Era(_d("2020-06-01"), "configured")
    res = resolve_pins(["eraprobe==0.9"], ["eraprobe"], era=era, wheel_dir=str(w), offline=True)
    assert res.pins == ["eraprobe==1.5"]
    why = res.era.to_dict()["relaxed"]["eraprobe"]
    assert why.startswith("repository pin eraprobe==0.9 does not install here")


def test_only_imported_distributions_are_installed(tmp_path):
    """requirements.txt lists tensorflow for another script: a task importing numpy does not get it."""
    from veriforge.discovery.deps import resolve_requirements

    (tmp_path / "requirements.txt").write_text("numpy==1.16.4\ntensorflow==1.14.0\ntorch>=1.2\n")
    reqs = resolve_requirements(["numpy", "os"], tmp_path)
    assert reqs.specs == ["numpy==1.16.4"] and reqs.dists == ["numpy"]


@pytest.mark.slow
def test_a_conflicting_cap_moves_up_to_the_forced_date_not_to_today(tmp_path):
    """eranew did not exist in 2019 (forced: its 2022 release) and needs eradep>=1.5: eradep's 2019 cap
    conflicts, so it moves to the newest release before eranew's date (1.5), not to today's 2.0."""
    w = tmp_path / "wheels"
    w.mkdir()
    _wheel(w, "eradep", "1.0", "2019-01-01")
    _wheel(w, "eradep", "1.5", "2022-01-01")
    _wheel(w, "eradep", "2.0", "2023-01-01")
    _wheel(w, "eranew", "3.0", "2022-05-01", ("eradep>=1.5",))
    era = Era(_d("2019-06-01"), "configured")
    res = resolve_pins(["eranew", "eradep"], ["eranew", "eradep"], era=era, wheel_dir=str(w), offline=True)
    assert res.pins == ["eradep==1.5", "eranew==3.0"]
    assert "moved to 2022-05-01" in res.era.to_dict()["relaxed"]["eradep"]


def test_pypi_index_reads_release_dates_over_http_and_caches_them(tmp_path):
    """The PyPI JSON API shape over a real local HTTP server (no network): earliest upload time per
    release, Requires-Python, files, yanked; releases without files skipped; 404 = no releases; a
    second index reads the on-disk cache without asking again; a server error is one clear error."""
    import json as _json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from veriforge.discovery.era import PyPIIndex
    from veriforge.discovery.errors import EnvironmentBuildError

    served: list[str] = []
    body = {"info": {}, "releases": {
        "1.0": [{"filename": "demo-1.0.tar.gz", "upload_time_iso_8601": "2019-03-02T10:00:00.000000Z"},
                {"filename": "demo-1.0-py3-none-any.whl", "upload_time_iso_8601": "2019-03-01T09:00:00.000000Z",
                 "requires_python": ">=3.6"}],
        "2.0": [{"filename": "demo-2.0-py3-none-any.whl", "upload_time_iso_8601": "2021-06-01T00:00:00Z",
                 "yanked": True}],
        "3.0": [],
    }}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            served.append(self.path)
            if self.path == "/pypi/demo/json":
                data, status = _json.dumps(body).encode(), 200
            elif self.path == "/pypi/broken/json":
                data, status = b"oops", 500
            else:
                data, status = b"{}", 404
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/pypi/{{name}}/json"
        index = PyPIIndex(cache=tmp_path / "cache", url=url)
        releases = {r.version: r for r in index.releases("Demo")}
        assert set(releases) == {"1.0", "2.0"}  # 3.0 has no files
        assert releases["1.0"].uploaded.isoformat().startswith("2019-03-01T09:00")  # earliest file
        assert releases["1.0"].requires_python == ">=3.6" and len(releases["1.0"].files) == 2
        assert releases["2.0"].yanked and not releases["1.0"].yanked
        assert index.releases("missing") == []
        with pytest.raises(EnvironmentBuildError, match="answered 500 for broken"):
            index.releases("broken")
        asked = len(served)
        again = PyPIIndex(cache=tmp_path / "cache", url=url).releases("demo")
        assert {r.version for r in again} == {"1.0", "2.0"} and len(served) == asked  # from the disk cache
    finally:
        server.shutdown()
