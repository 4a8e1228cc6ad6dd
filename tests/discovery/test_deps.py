"""Imports -> distributions, with the repository's own version specifiers."""

from pathlib import Path

from veriforge.discovery.deps import read_repo_requirements, resolve_requirements

FIXTURES = Path(__file__).parent / "fixtures"


def test_name_mismatches_and_stdlib():
    reqs = resolve_requirements(["sklearn", "skimage", "cv2", "PIL", "yaml", "bs4", "os", "json", "argparse"])
    assert reqs.dists == [
        "pillow",
        "beautifulsoup4",
        "opencv-python",
        "scikit-image",
        "scikit-learn",
        "pyyaml",
    ]


def test_repo_specifiers_are_respected():
    reqs = resolve_requirements(["numpy", "pandas", "scipy", "os"], FIXTURES / "stats_analysis")
    assert reqs.specs == ["numpy>=1.22", "pandas>=1.4", "scipy>=1.8"] and reqs.sources == ["requirements.txt"]
    sim = resolve_requirements(["numpy"], FIXTURES / "numpy_sim")
    assert sim.specs == ["numpy>=1.20"] and sim.sources == ["setup.py"]
    assert resolve_requirements(["numpy"], FIXTURES / "ml_eval").specs == ["numpy"]  # no requirement file


def test_pandas_format_extras_and_local_modules():
    reqs = resolve_requirements(["pandas", "mylib"], calls=["pd.read_excel"], local_modules={"mylib"})
    assert reqs.dists == ["pandas", "openpyxl"]


def test_pyproject_and_environment_yml(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname="x"\ndependencies=["xarray>=2023.1", "netCDF4"]\n'
    )
    (tmp_path / "environment.yml").write_text(
        "name: lab\nchannels: [conda-forge]\ndependencies:\n  - python=3.10\n  - numpy=1.26\n"
        "  - pip\n  - pip:\n    - seaborn==0.13.2\n"
    )
    found, sources = read_repo_requirements(tmp_path)
    assert found == {"xarray": ">=2023.1", "netcdf4": "", "numpy": "==1.26", "seaborn": "==0.13.2"}
    assert sources == ["pyproject.toml", "environment.yml"]


def test_format_packages_for_calls_in_vendored_helpers(tmp_path):
    """A helper caching frames with to_hdf needs `tables` though the program never calls it."""
    from veriforge.discovery.deps import format_calls, resolve_requirements

    (tmp_path / "utils.py").write_text("def cache(df, n):\n    df.to_hdf(n, key='d')\n"
                                       "def load(n):\n    return pandas.read_hdf(n, 'd')\n")
    (tmp_path / "plain.py").write_text("def f(df):\n    return df.to_csv('x.csv')\n")
    calls = format_calls(tmp_path, [{"path": "utils.py"}, {"path": "plain.py"}, {"path": "gone.py"}])
    assert calls == ["read_hdf", "to_hdf"]
    reqs = resolve_requirements(["pandas"], calls=calls)
    assert "tables" in reqs.dists
