"""Vendored helpers that use fixed paths, or read inside the folder the program gives them: the
helper is redirected like the program (its reached writes are outputs, its reads are datasets),
and the program's call of a folder-reading helper is a dataset read."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

from veriforge.discovery.helperio import reached_functions
from veriforge.discovery.localmods import _path_params
from veriforge.discovery.mine import mine_repository
from veriforge.discovery.standalone import make_standalone

AUX = '''
    """Shared loading and summaries of the trials."""
    import glob
    import os

    import pandas as pd

    OUT = './summaries/'
    os.makedirs(OUT, exist_ok=True)


    def load_all(path):
        """Every subject listed in names.dat."""
        names = open(path + 'names.dat').read().split()
        files = sorted(glob.glob(path + 'S*.csv'))
        frames = [pd.read_csv(f) for f in files if os.path.basename(f)[:4] in names]
        return pd.concat(frames, ignore_index=True)


    def preprocess(folder):
        return load_all(folder)


    def summarize(df):
        s = df.groupby('cond', as_index=False)['rt'].mean()
        s.to_csv(OUT + 'by_condition.csv', index=False)
        return s


    def unused_export(df):
        df.to_csv('../exports/all.csv')


    if __name__ == "__main__":
        summarize(load_all('../data/demo/'))
'''

PROGRAM = """
    import aux_lib

    df = aux_lib.preprocess('../data/trials/')
    s = aux_lib.summarize(df)
    s['n'] = df.groupby('cond').size().values
    s.to_csv('results/table.csv', index=False)
"""


def _files(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _repo(root: Path, aux: str = AUX) -> Path:
    files = {
        "data/trials/names.dat": "S001\nS002\n",
        "data/trials/S001.csv": "cond,rt\na,1.0\nb,2.0\na,3.0\n",
        "data/trials/S002.csv": "cond,rt\na,5.0\nb,4.0\nb,6.0\n",
        "data/trials/S003.csv": "cond,rt\na,100.0\nb,100.0\n",  # not in names.dat: never read
        "analysis/aux_lib.py": textwrap.dedent(aux),
        "analysis/run.py": textwrap.dedent(PROGRAM),
    }
    return _files(root, files)


def test_parameters_that_name_a_file_or_a_folder_read_inside_are_found_through_calls():
    specs = _path_params(textwrap.dedent(AUX), ast.parse(textwrap.dedent(AUX)))
    # open(path + 'names.dat') and glob(path + 'S*.csv'): the caller names the folder;
    # preprocess hands its parameter on to load_all, so it is a folder read too
    assert specs == {"load_all": [[0, "path", "read", "folder"]], "preprocess": [[0, "folder", "read", "folder"]]}
    whole = "import pandas as pd\ndef load(p):\n    q = p\n    return pd.read_csv(q)\n"
    assert _path_params(whole, ast.parse(whole)) == {"load": [[0, "p", "read"]]}
    # writing inside a folder it is given: an output folder (the gold run finds the files); one
    # spec per path parameter
    both = "import pandas as pd\ndef clean(src, out):\n    pd.read_csv(src).to_csv(out + '/x.csv')\n"
    assert _path_params(both, ast.parse(both)) == {"clean": [[0, "src", "read"], [1, "out", "write", "folder"]]}


def test_reached_functions_follow_calls_from_the_program_and_import_time_code():
    aux = ast.parse(textwrap.dedent(AUX))
    program = ast.parse(textwrap.dedent(PROGRAM))
    names = {n.name for n in aux.body if isinstance(n, ast.FunctionDef) and id(n) in reached_functions(program, [aux])}
    assert names == {"load_all", "preprocess", "summarize"}  # unused_export is never called
    cls = ast.parse("class Out:\n    def __init__(self):\n        pass\n    def save(self):\n        pass\n")
    prog = ast.parse("import h\nh.Out()\n")
    assert len(reached_functions(prog, [cls])) == 2  # a reached class reaches its methods


def test_mining_and_rewrite_redirect_the_helper_and_declare_only_reached_writes(tmp_path):
    root = _repo(tmp_path)
    res = mine_repository(root)
    (cand,) = [c for c in res.candidates if c.path == "analysis/run.py"]
    assert cand.datasets == ["data/trials"]
    assert {m["path"]: m["fixed_io"] for m in cand.local_modules} == {"analysis/aux_lib.py": 3}
    sa = make_standalone(cand, root)
    assert sa.outputs == ["pred_results/table.csv", "pred_results/by_condition.csv"]
    lib = sa.lib["aux_lib.py"]
    assert 'OUT = "pred_results/"' in lib
    assert 'df.to_csv("pred_results/all.csv")' in lib  # redirected, though nothing calls it ...
    assert any("never calls" in w and "all.csv" in w for w in sa.warnings)  # ... so no output
    assert "load_all('../data/demo/')" in lib  # the author's __main__ demo never runs on import
    assert 'aux_lib.preprocess("datasets/data/trials/")' in sa.program
    assert {r.get("file") for r in sa.replacements} == {None, "lib/aux_lib.py"}


def test_a_reached_helper_read_of_a_missing_file_refuses_the_program(tmp_path):
    weights = "    def summarize(df):\n        pd.read_csv('../data/weights.csv')\n"
    aux = AUX.replace("    def summarize(df):\n", weights)
    res = mine_repository(_repo(tmp_path, aux))
    reasons = {s.path: s.reason for s in res.skipped}
    assert reasons["analysis/run.py"].startswith("reads a dataset that is not in the repository")
    assert "weights.csv" in reasons["analysis/run.py"]


def test_build_runs_the_redirected_helper_and_its_output_is_judged(tmp_path, build_repo):
    report = build_repo(_repo(tmp_path / "repo"))
    (task,) = [t for t in report.tasks if t.source == "analysis/run.py"]
    assert task.status == "built", task.reason
    tdir = Path(task.task_dir)
    # the helper's own output, written through the redirected fixed path, is a gold result
    assert (tdir / "gold_results/by_condition.csv").read_text().splitlines() == ["cond,rt", "a,3.0", "b,4.0"]
    assert (tdir / "gold_results/table.csv").read_text().splitlines() == ["cond,rt,n", "a,3.0,3", "b,4.0,3"]
    assert sorted(p.name for p in (tdir / "datasets/data/trials").iterdir()) == [
        "S001.csv", "S002.csv", "S003.csv", "names.dat"
    ]
    assert not (tdir / "summaries").exists()
    meta = json.loads((tdir / "task.json").read_text())
    files = {f["dest"]: f for f in meta["veriforge"]["lib"]["files"]}
    assert files["aux_lib.py"].get("redirected") is True
    assert 'OUT = "pred_results/"' in (tdir / "lib/aux_lib.py").read_text()
    assert set(meta["veriforge"]["outputs"]) == {"table.csv", "by_condition.csv"}


CLEANER = '''
    import os
    import pandas as pd


    def clean_csv(input_filepath, output_dir):
        """Keep the answered trials of one session."""
        df = pd.read_csv(input_filepath).dropna(subset=["rt"])
        base, ext = os.path.splitext(os.path.basename(input_filepath))
        os.makedirs(output_dir, exist_ok=True)
        df.to_csv(os.path.join(output_dir, f"{base}_cleaned{ext}"), index=False)
'''

CLEAN_ALL = """
    import os
    from pathlib import Path

    from cleaning import clean_csv

    INPUT_DIR = Path("sessions")
    OUTPUT_DIR = Path("cleaned")

    for name in sorted(os.listdir(INPUT_DIR)):
        clean_csv(INPUT_DIR / name, OUTPUT_DIR)
"""


def test_files_named_at_run_time_in_a_helpers_output_folder_are_the_outputs(tmp_path, build_repo):
    """A helper that writes inside the folder it is given (file names from the inputs): the
    program's folder becomes pred_results/ and the gold run says which files the task expects."""
    repo = tmp_path / "repo"
    _files(repo, {
        "exp/sessions/s01.csv": "trial,rt\n1,0.5\n2,\n3,0.7\n",
        "exp/sessions/s02.csv": "trial,rt\n1,\n2,0.9\n",
        "exp/cleaned/s01_cleaned.csv": "trial,rt\n1,0.5\n3,0.7\n",  # the author's committed results
        "exp/cleaning.py": textwrap.dedent(CLEANER),
        "exp/clean_all.py": textwrap.dedent(CLEAN_ALL),
    })
    (cand,) = [c for c in mine_repository(repo).candidates if c.path == "exp/clean_all.py"]
    assert cand.helper_io == {"clean_csv": [[0, "input_filepath", "read"], [1, "output_dir", "write", "folder"]]}
    assert cand.datasets == ["exp/sessions"]
    assert cand.writes == [{"role": "write", "call": "clean_csv", "line": 11, "value": "cleaned", "folder": True}]
    sa = make_standalone(cand, repo)
    assert 'OUTPUT_DIR = Path("pred_results")' in sa.program and sa.outputs == []
    report = build_repo(repo)
    (task,) = [t for t in report.tasks if t.source == "exp/clean_all.py"]
    assert task.status == "built", task.reason
    tdir = Path(task.task_dir)
    meta = json.loads((tdir / "task.json").read_text())
    assert meta["veriforge"]["outputs"] == ["s01_cleaned.csv", "s02_cleaned.csv"]
    assert (tdir / "gold_results/s02_cleaned.csv").read_text().splitlines() == ["trial,rt", "2,0.9"]


PROCESSING = '''
    import os
    import pickle
    import xml.etree.ElementTree as xet

    import pandas as pd


    class Experiment:
        def __init__(self, path_to_data="./", scale=1.0):
            # the default is the author's; callers pass their folder
            config = xet.parse("{}config.xml".format(path_to_data)).getroot()
            self.subjects = [int(s.get("id")) for s in config.iter("subject")]
            self.data = {s: pd.read_csv("{}S{:02d}.csv".format(path_to_data, s)) for s in self.subjects}


    def load_once(data_path):
        cache = "{}/experiment.pickle".format(data_path)
        if os.path.exists(cache):
            with open(cache, "rb") as fh:
                return pickle.load(fh)
        return Experiment(data_path)
'''

DISPLAY = '''
    import os

    import matplotlib.pyplot as plt

    FIGURES = "./Figures"


    def save_in_figures(fig, name):
        os.makedirs(FIGURES, exist_ok=True)
        fig.savefig("{}/{}".format(FIGURES, name))


    def plot_means(expe):
        fig, ax = plt.subplots()
        means = [expe.data[s]["rt"].mean() for s in expe.subjects]
        ax.bar([str(s) for s in expe.subjects], means)
        ax.set_ylabel("mean rt")
        save_in_figures(fig, "means_{}.pdf".format(len(means)))
'''

MAIN = """
    import matplotlib.pyplot as plt

    import processing as edp
    import display as edd

    expe = edp.load_once("./expe_data/")
    edd.plot_means(expe)
    plt.show()
"""


def test_constructor_and_format_spellings_and_figures_a_helper_saves(tmp_path, build_repo):
    """The MIEM-style layout (a held-out public repository): the program's only I/O is through
    helpers -- a loader whose path is formatted into a cache name, a class whose constructor parses
    a config under the folder it is given (its parameter default is the author's, not a fixed
    path), and a display helper saving figures into a folder of its own."""
    repo = tmp_path / "repo"
    _files(repo, {
        "Expe/expe_data/config.xml": '<e><subject id="1"/><subject id="2"/></e>\n',
        "Expe/expe_data/S01.csv": "trial,rt\n1,0.5\n2,0.7\n",
        "Expe/expe_data/S02.csv": "trial,rt\n1,0.9\n2,1.3\n",
        "Expe/processing.py": textwrap.dedent(PROCESSING),
        "Expe/display.py": textwrap.dedent(DISPLAY),
        "Expe/main.py": textwrap.dedent(MAIN),
    })
    specs = _path_params(textwrap.dedent(PROCESSING), ast.parse(textwrap.dedent(PROCESSING)))
    assert specs == {
        "Experiment": [[0, "path_to_data", "read", "folder"]],  # self is not the caller's argument
        "load_once": [[0, "data_path", "read", "folder"]],
    }
    res = mine_repository(repo)
    (cand,) = [c for c in res.candidates if c.path == "Expe/main.py"]
    assert cand.datasets == ["Expe/expe_data"]
    mods = {m["path"]: m["fixed_io"] for m in cand.local_modules}
    assert mods == {"Expe/processing.py": 0, "Expe/display.py": 2}  # the default "./" is no fixed path
    assert [(w["value"], w.get("folder")) for w in cand.writes] == [("./Figures", True)]
    report = build_repo(repo)
    (task,) = [t for t in report.tasks if t.source == "Expe/main.py"]
    assert task.status == "built", task.reason
    tdir = Path(task.task_dir)
    meta = json.loads((tdir / "task.json").read_text())
    assert meta["veriforge"]["outputs"] == ["means_2.pdf"]
    plan = meta["veriforge"]["eval_plan"]["outputs"][0]
    assert plan["kind"] == "figure"  # judged by the plotted data, not pixels


def test_a_program_whose_helpers_draw_is_captured_though_it_draws_nothing_itself(tmp_path):
    display = DISPLAY.replace('        save_in_figures(fig, "means_{}.pdf".format(len(means)))\n', "")
    repo = tmp_path / "repo"
    _files(repo, {
        "Expe/expe_data/config.xml": '<e><subject id="1"/></e>\n',
        "Expe/expe_data/S01.csv": "trial,rt\n1,0.5\n",
        "Expe/processing.py": textwrap.dedent(PROCESSING),
        "Expe/display.py": textwrap.dedent(display),
        "Expe/main.py": textwrap.dedent(MAIN),
    })
    (cand,) = [c for c in mine_repository(repo).candidates if c.path == "Expe/main.py"]
    assert any("figures it only displays" in c for c in cand.source_changes)
    # without the helper drawing, a program that only calls plt.show() is no figure program
    (repo / "Expe/display.py").write_text("def plot_means(expe):\n    return None\n")
    res = mine_repository(repo)
    assert {s.path: s.reason for s in res.skipped}["Expe/main.py"].startswith("writes no outputs")


def test_percent_templates_package_reexports_and_one_parse_per_helper_version(tmp_path):
    from veriforge.discovery.helperio import parsed_helper
    from veriforge.discovery.localmods import helper_io_calls
    from veriforge.discovery.mine import RepoIndex

    pct = "import pandas as pd\ndef load(folder):\n    return pd.read_csv('%s/obs.csv' % folder)\n"
    assert _path_params(pct, ast.parse(pct)) == {"load": [[0, "folder", "read", "folder"]]}
    # `from pkg import clean` where pkg/__init__.py re-exports it from a submodule
    _files(tmp_path, {
        "pkg/__init__.py": "from .processing import clean\n",
        "pkg/processing.py": "import pandas as pd\ndef clean(src, out):\n    pd.read_csv(src).to_csv(out + '/x.csv')\n",
    })
    mods = [{"name": "pkg", "path": "pkg/__init__.py", "dest": "pkg/__init__.py"},
            {"name": "pkg", "path": "pkg/processing.py", "dest": "pkg/processing.py"}]
    program = ast.parse("from pkg import clean\nclean('data/a.csv', 'results')\n")
    assert helper_io_calls(RepoIndex(tmp_path), mods, program) == {
        "clean": [[0, "src", "read"], [1, "out", "write", "folder"]]
    }
    first = parsed_helper(tmp_path, mods[1])
    assert parsed_helper(tmp_path, mods[1]) is first  # parsed once ...
    (tmp_path / "pkg/processing.py").write_text("def clean(src, out):\n    return None\n")
    assert parsed_helper(tmp_path, mods[1])[0].startswith("def clean")  # ... until the file changes
