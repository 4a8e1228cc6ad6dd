"""OptiML: verified CUDA kernels made faster by search over edits (see docs/optiml.md).

Modules: :mod:`.diagnosis` (bottleneck findings from analysis or profiles), :mod:`.operators`
(the edit operators, one module each, and the registry plug-ins join), :mod:`.kernel_reader`
(the parsers the operators share), :mod:`.objective` (composite objective), :mod:`.xsearch`
(OptiML-X, MCTS over edits under verification), :mod:`.report` (HTML report). Imports stay lazy
so that ``import veriforge.optiml`` costs nothing.
"""
