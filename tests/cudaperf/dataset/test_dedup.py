"""Dedup rules: exact (normalised), structural (alpha-renamed, literals abstracted), near (shingle Jaccard
within a family), and the bundled-task leak guard."""

from __future__ import annotations

import re

from veriforge.cuda.tasks.load import bundled_root
from veriforge.cudaperf.dataset.dedup import (
    NEAR_THRESHOLD,
    DedupIndex,
    abstract_tokens,
    bundled_index,
    jaccard,
    normalised_tokens,
    reference_keys,
)

ADD = ("void reference(const float* a, const float* b, float* c, int n) {\n"
       "  for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];\n}\n")


def test_exact_ignores_comments_and_whitespace_but_not_code():
    noisy = "/* header */\nvoid reference(const float* a,const float* b,float* c,int n){ // add\n" \
            "for(int i=0;i<n;++i)   c[i]=a[i]+b[i];}\n"
    assert reference_keys(noisy, "c2cuda").exact == reference_keys(ADD, "c2cuda").exact
    assert reference_keys(ADD.replace("+", "-"), "c2cuda").exact != reference_keys(ADD, "c2cuda").exact


def test_structural_abstracts_locals_and_literals_keeps_calls_and_operators():
    renamed = re.sub(r"\ba\b", "p", re.sub(r"\bb\b", "q", re.sub(r"\bc\b", "r", ADD)))
    assert renamed != ADD
    assert abstract_tokens(renamed) == abstract_tokens(ADD)
    assert abstract_tokens(ADD.replace("i = 0", "i = 1")) == abstract_tokens(ADD)  # literal abstracted
    assert abstract_tokens(ADD.replace("a[i] + b[i]", "a[i] * b[i]")) != abstract_tokens(ADD)
    assert abstract_tokens(ADD.replace("float", "double")) != abstract_tokens(ADD)
    sin = ADD.replace("a[i] + b[i]", "sinf(a[i]) + b[i]")
    assert abstract_tokens(sin) != abstract_tokens(ADD.replace("a[i] + b[i]", "cosf(a[i]) + b[i]"))
    # alpha-renaming, not one placeholder: a + b and a + a differ
    assert abstract_tokens(ADD.replace("b[i];", "a[i];")) != abstract_tokens(ADD)


def test_python_references_drop_docstrings_and_comments():
    a = ('import torch\nclass Model(torch.nn.Module):\n    """Doc."""\n    def forward(self, x):\n'
         '        return torch.relu(x)\n')
    b = ('import torch\n# comment\nclass Model(torch.nn.Module):\n    def forward(self, y):  # hi\n'
         '        return torch.relu(y)\n')
    assert normalised_tokens(a, "torch2cuda")[:4] == ["import", "torch", "class", "Model"]
    assert reference_keys(a, "torch2cuda").structural == reference_keys(b, "torch2cuda").structural
    dim0, dim1 = (a.replace("torch.relu(x)", f"torch.cumsum(x, dim={d})") for d in (0, 1))
    assert reference_keys(dim0, "torch2cuda").structural != reference_keys(dim1, "torch2cuda").structural
    assert reference_keys("n = 4\n" + a, "torch2cuda").structural == reference_keys("n = 8\n" + a,
                                                                                      "torch2cuda").structural
    gelu = a.replace("relu", "gelu")
    assert reference_keys(a, "torch2cuda").structural != reference_keys(gelu, "torch2cuda").structural


def test_near_duplicates_only_within_a_family_and_above_threshold():
    long = "void reference(const float* a, float* c, int n) {\n" + "".join(
        f"  c[{k}] = a[{k}] * a[{k}] + c[{k}];\n" for k in range(30)) + "}\n"
    # one operator changed in a long reference: structurally different, but near-identical
    variant = long.replace("c[29] = a[29] * a[29] + c[29]", "c[29] = a[29] * a[29] - c[29]", 1)
    ka, kb = reference_keys(long, "c2cuda"), reference_keys(variant, "c2cuda")
    assert ka.structural != kb.structural and jaccard(ka.shingles, kb.shingles) >= NEAR_THRESHOLD
    idx = DedupIndex()
    assert idx.check_and_add("t1", "fam", ka) is None
    dup = idx.check_and_add("t2", "fam", kb)
    assert dup is not None and dup.rule == "near" and dup.of == "t1" and "Jaccard" in dup.reason
    assert idx.check_and_add("t3", "other_family", kb) is None  # near check is per family
    # a short element-wise reference with one changed operator is below the threshold: kept
    short = reference_keys(ADD.replace("+", "*"), "c2cuda")
    assert jaccard(reference_keys(ADD, "c2cuda").shingles, short.shingles) < NEAR_THRESHOLD
    idx2 = DedupIndex()
    idx2.add("x", "fam", reference_keys(ADD, "c2cuda"))
    assert idx2.check("y", "fam", short) is None


def test_bundled_references_are_leak_guarded():
    keys = bundled_index()
    saxpy = (bundled_root() / "c2cuda" / "saxpy" / "reference.c").read_text()
    idx = DedupIndex(bundled=keys)
    dup = idx.check("gen_saxpy", "fam", reference_keys("// generated\n" + saxpy, "c2cuda"))
    assert dup is not None and dup.rule == "bundled" and dup.of == "c2cuda/saxpy"
    relu = (bundled_root() / "torch2cuda" / "relu" / "reference.py").read_text().replace("dim = 16384", "dim = 99")
    assert idx.check("gen_relu", "fam", reference_keys(relu, "torch2cuda")).of == "torch2cuda/relu"
    assert len(set(keys.values())) == 63  # every bundled task is guarded
