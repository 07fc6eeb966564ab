"""Adam, written out: the optimizer of the course's small trained models (``attn.lessons.trained.tiny``
and ``attn.lessons.trained.seq2seq``).

Notebook 04 trains with ``torch.optim.Adam`` in a loop the learner reads; this class is for
the models trained inside the package, where the import it avoids would be most of the time.
"""
from __future__ import annotations

import torch

__all__ = ["Adam"]


class Adam:
    """Adam (Kingma and Ba, 2015) with ``torch.optim.Adam``'s defaults and arithmetic.

    The same operations, in the same order, as ``torch.optim.Adam(params, lr)`` on CPU
    (betas 0.9 and 0.999, eps 1e-8, no weight decay), so it gives the same weights bit for
    bit (``tests/attn/lessons/test_trained_adam.py`` checks it on both models). It is written out because
    the constructor of every ``torch.optim`` optimizer imports ``torch._dynamo``: 1.1-2.1 s of
    notebook 08's or 10's run here, more than the whole training of their small models (see
    docs/performance.md, "Where the time went").

    Per parameter p with gradient g, at step t = 1, 2, ...:
    m <- beta1 m + (1 - beta1) g;  v <- beta2 v + (1 - beta2) g^2;
    p <- p - lr / (1 - beta1^t) * m / (sqrt(v / (1 - beta2^t)) + eps).
    """

    def __init__(self, params, lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.betas, self.eps = lr, betas, eps
        self.t = 0
        self.m = [torch.zeros_like(p) for p in self.params]  # first moments
        self.v = [torch.zeros_like(p) for p in self.params]  # second moments

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        beta1, beta2 = self.betas
        step_size = self.lr / (1 - beta1 ** self.t)
        bias_correction2_sqrt = (1 - beta2 ** self.t) ** 0.5
        for p, m, v in zip(self.params, self.m, self.v):
            if p.grad is None:
                continue
            g = p.grad
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = (v.sqrt() / bias_correction2_sqrt).add_(self.eps)
            p.addcdiv_(m, denom, value=-step_size)
