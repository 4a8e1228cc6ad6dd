"""Stage 3a -- which distributions a program needs, as the repository itself specifies them.

Imports are mapped to distributions (standard library excluded; the well-known import/package name
mismatches such as ``sklearn`` -> ``scikit-learn`` handled by a table, then by the current
interpreter's installed metadata, then by the import name itself). Version specifiers come from the
repository's own requirement files when it has them (``requirements*.txt``, ``setup.py``
``install_requires``, ``pyproject.toml`` ``[project].dependencies``, ``environment.yml``'s ``pip:``
section), so a task is built against the versions its authors asked for.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["IMPORT_TO_DIST", "Requirements", "canonical", "read_repo_requirements", "resolve_requirements"]

IMPORT_TO_DIST: dict[str, str] = {
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "cv2": "opencv-python",
    "PIL": "pillow",
    "yaml": "pyyaml",
    "bs4": "beautifulsoup4",
    "Bio": "biopython",
    "attr": "attrs",
    "dateutil": "python-dateutil",
    "google.protobuf": "protobuf",
    "Crypto": "pycryptodome",
    "OpenSSL": "pyopenssl",
    "serial": "pyserial",
    "usb": "pyusb",
    "wx": "wxpython",
    "dotenv": "python-dotenv",
    "jose": "python-jose",
    "magic": "python-magic",
    "pde": "py-pde",  # PDE solvers (zwicker-group/py-pde): a PyPI package named "pde" is another project
    "docx": "python-docx",
    "pptx": "python-pptx",
    "igraph": "python-igraph",
    "louvain": "python-louvain",
    "community": "python-louvain",
    "mpl_toolkits": "matplotlib",
    "pylab": "matplotlib",
    "osgeo": "gdal",
    "rdkit": "rdkit",
    "tables": "tables",
    "umap": "umap-learn",
    "hdbscan": "hdbscan",
    "Levenshtein": "levenshtein",
    "statsmodels": "statsmodels",
    "sympy": "sympy",
    "netCDF4": "netcdf4",
    "pyarrow": "pyarrow",
    "fitz": "pymupdf",
    "MDAnalysis": "mdanalysis",
    "astropy": "astropy",
    "healpy": "healpy",
    "ase": "ase",
    "pymatgen": "pymatgen",
    "torch_geometric": "torch-geometric",
    "tensorflow": "tensorflow",
    "keras": "keras",
    "xgboost": "xgboost",
    "lightgbm": "lightgbm",
    "catboost": "catboost",
    "nibabel": "nibabel",
    "nilearn": "nilearn",
    "mne": "mne",
    "Bio.PDB": "biopython",
    "lxml": "lxml",
    "jwt": "pyjwt",
    "zmq": "pyzmq",
    "git": "gitpython",
    "sentence_transformers": "sentence-transformers",
    "pytorch_lightning": "pytorch-lightning",
}
"""Import name -> distribution name where they differ (or where the metadata lookup would be ambiguous)."""

CALL_EXTRAS: dict[str, str] = {
    "read_excel": "openpyxl",
    "to_excel": "openpyxl",
    "read_parquet": "pyarrow",
    "to_parquet": "pyarrow",
    "read_feather": "pyarrow",
    "to_feather": "pyarrow",
    "read_hdf": "tables",
    "to_hdf": "tables",
}
"""Optional dependencies pandas loads lazily for some file formats."""


def format_calls(repo_root: Path, modules: list[dict[str, Any]]) -> list[str]:
    """The :data:`CALL_EXTRAS` calls (``.to_hdf(``, ``.read_excel(``) in vendored helper modules:
    pandas loads those format packages only when called, so the program's own calls are not
    enough (a helper caching frames with ``to_hdf`` needs ``tables``)."""
    found: list[str] = []
    for mod in modules:
        try:
            text = (Path(repo_root) / mod["path"]).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        found += [name for name in CALL_EXTRAS if f".{name}(" in text and name not in found]
    return found


_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")


def canonical(name: str) -> str:
    """PEP 503 normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Requirements:
    """What to install for one program."""

    specs: list[str]  # e.g. ["numpy>=1.22", "pandas>=1.4", "scipy"]
    dists: list[str]  # canonical names of the distributions needed
    from_repo: dict[str, str] = field(default_factory=dict)  # canonical name -> specifier from repo files
    sources: list[str] = field(default_factory=list)  # repo files the specifiers came from
    unmapped: list[str] = field(default_factory=list)  # imports with no known distribution

    def to_dict(self) -> dict[str, object]:
        return {
            "specs": self.specs,
            "dists": self.dists,
            "from_repo": self.from_repo,
            "sources": self.sources,
            "unmapped": self.unmapped,
        }


def _parse_req_line(line: str) -> tuple[str, str] | None:
    line = line.split("#", 1)[0].strip()
    if not line or line.startswith(("-", "git+", "http:", "https:", "file:", ".")) or "://" in line:
        return None
    line = line.split(";", 1)[0].strip()  # environment markers: keep the requirement, drop the marker
    m = _REQ_NAME.match(line)
    if not m:
        return None
    spec = m.group(3).replace(" ", "")
    if spec.startswith("="):
        spec = spec if spec.startswith("==") else "=" + spec  # conda's "pkg=1.2" -> "pkg==1.2"
    if spec and not re.match(r"^(==|>=|<=|~=|!=|<|>|===)", spec.split(",")[0]):
        return None
    return canonical(m.group(1)), spec


def _setup_py_requires(path: Path) -> list[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return []
    out: list[str] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.keyword)
            and node.arg == "install_requires"
            and isinstance(node.value, ast.List | ast.Tuple)
        ):
            out += [
                e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
            ]
    return out


def _environment_yml_pip(path: Path) -> list[str]:
    """Dependencies of an ``environment.yml`` (conda names kept when they look like PyPI ones, plus the
    ``pip:`` section), parsed line by line so PyYAML is not needed."""
    out: list[str] = []
    in_deps = False
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if not raw.startswith((" ", "\t", "-")):
            in_deps = raw.strip().startswith("dependencies:")
            continue
        if in_deps:
            item = raw.strip()
            if item.startswith("- ") and not item.endswith(":"):
                value = item[2:].strip().strip("'\"")
                if "::" in value:
                    value = value.split("::", 1)[1]
                if not value.startswith(("python", "pip")) or value.startswith(("python-", "pip-")):
                    out.append(value)
    return out


def read_repo_requirements(root: str | Path) -> tuple[dict[str, str], list[str]]:
    """``({canonical name: specifier}, [files read])`` from the repository's requirement files."""
    root = Path(root)
    found: dict[str, str] = {}
    sources: list[str] = []

    def add(lines: list[str], source: str) -> None:
        got = False
        for line in lines:
            parsed = _parse_req_line(line)
            if parsed:
                name, spec = parsed
                if spec or name not in found:
                    found[name] = spec
                got = True
        if got:
            sources.append(source)

    for path in sorted(root.glob("requirements*.txt")) + sorted(root.glob("requirements/*.txt")):
        add(
            path.read_text(encoding="utf-8", errors="replace").splitlines(), path.relative_to(root).as_posix()
        )
    if (root / "setup.py").is_file():
        add(_setup_py_requires(root / "setup.py"), "setup.py")
    if (root / "pyproject.toml").is_file():
        try:
            data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
            add(list(data.get("project", {}).get("dependencies", [])), "pyproject.toml")
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            pass
    for name in ("environment.yml", "environment.yaml"):
        if (root / name).is_file():
            add(_environment_yml_pip(root / name), name)
    return found, sources


def _installed_mapping() -> dict[str, list[str]]:
    from importlib.metadata import packages_distributions

    try:
        return packages_distributions()
    except Exception:  # broken metadata of some installed distribution must not stop a build
        return {}


def resolve_requirements(
    imports: list[str],
    repo_root: str | Path | None = None,
    calls: list[str] | None = None,
    local_modules: set[str] | None = None,
) -> Requirements:
    """Distributions for ``imports`` (top-level module names), with the repository's specifiers."""
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    local_modules = local_modules or set()
    installed: dict[str, list[str]] | None = None
    dists: list[str] = []
    unmapped: list[str] = []
    for mod in sorted(set(imports)):
        if mod in stdlib or mod in local_modules or mod.startswith("_"):
            continue
        dist = IMPORT_TO_DIST.get(mod)
        if dist is None:
            installed = installed if installed is not None else _installed_mapping()
            owners = installed.get(mod, [])
            dist = owners[0] if len(owners) >= 1 else None
        if dist is None:
            unmapped.append(mod)
            dist = mod
        if canonical(dist) not in dists:
            dists.append(canonical(dist))
    for call in calls or []:
        extra = CALL_EXTRAS.get(call.split(".")[-1])
        if extra and "pandas" in dists and extra not in dists:
            dists.append(extra)
    repo_specs, sources = read_repo_requirements(repo_root) if repo_root else ({}, [])
    specs = [f"{d}{repo_specs.get(d, '')}" for d in dists]
    return Requirements(
        specs=specs,
        dists=dists,
        from_repo={d: repo_specs[d] for d in dists if d in repo_specs},
        sources=sources,
        unmapped=unmapped,
    )
