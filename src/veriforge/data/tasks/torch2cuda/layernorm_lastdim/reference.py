import torch
import torch.nn as nn

batch_size = 16
seq_len = 64
hidden = 256
eps = 1e-5


class Model(nn.Module):
    """nn.LayerNorm over the last dimension, with non-trivial (random) weight and bias."""

    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def get_inputs():
    x = torch.randn(batch_size, seq_len, hidden) * 2.0 + 5.0
    return [x]


def get_init_inputs():
    return [hidden, eps]
