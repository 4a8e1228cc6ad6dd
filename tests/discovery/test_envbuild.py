"""Task environments: reuse mode (no installs), offline install from a wheel dir, locks, sharing."""

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest

from veriforge.discovery.envbuild import build_environment
from veriforge.discovery.errors import EnvironmentBuildError


def test_reuse_mode_locks_installed_versions_and_is_shared(tmp_path):
    import numpy

    env = build_environment(["numpy>=1.20"], ["numpy"], ["numpy"], mode="reuse", root=tmp_path)
    assert f"numpy=={numpy.__version__}" in env.lock and not env.cached
    assert Path(env.python).is_file() and env.python_version.count(".") == 2
    again = build_environment(["numpy>=1.20"], ["numpy"], ["numpy"], mode="reuse", root=tmp_path)
    assert again.cached and again.env_dir == env.env_dir and again.lock == env.lock


def test_reuse_mode_reports_missing_dependency(tmp_path):
    with pytest.raises(EnvironmentBuildError, match="veriforge_no_such_pkg"):
        build_environment(
            ["veriforge-no-such-pkg"],
            ["veriforge-no-such-pkg"],
            ["veriforge_no_such_pkg"],
            mode="reuse",
            root=tmp_path,
        )
    assert not list(tmp_path.glob("reuse-*/bin"))  # a failed environment is not left behind as "ready"


def _wheel(dest: Path, name: str, version: str) -> Path:
    """A minimal pure-Python wheel, written by hand so the test needs no build backend or network."""
    dist = f"{name}-{version}"
    files = {
        f"{name}/__init__.py": f"VALUE = {version!r}\n".encode(),
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    out = dest / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return out


@pytest.mark.slow
def test_offline_install_from_wheel_dir(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "vfdemo", "1.2.3")
    env = build_environment(
        ["vfdemo>=1.0"],
        ["vfdemo"],
        ["vfdemo"],
        mode="install",
        wheel_dir=wheels,
        offline=True,
        root=tmp_path / "envs",
    )
    assert "vfdemo==1.2.3" in env.lock and env.mode == "install"
    with pytest.raises(EnvironmentBuildError, match="dependency resolution failed"):
        build_environment(
            ["vfdemo>=2"],
            ["vfdemo"],
            ["vfdemo"],
            mode="install",
            wheel_dir=wheels,
            offline=True,
            root=tmp_path / "envs",
        )


def test_offline_needs_wheel_dir(tmp_path):
    with pytest.raises(EnvironmentBuildError, match="wheel directory"):
        build_environment(["numpy"], ["numpy"], ["numpy"], mode="install", offline=True, root=tmp_path)
