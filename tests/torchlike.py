"""Stand-ins for torch objects, without importing torch (not installed in the test venv):
radixkv recognises torch objects by their type's module name, so a class whose
``__module__`` is ``"torch"`` takes the same path."""

from __future__ import annotations

import numpy as np


class Size(tuple):  # type: ignore[type-arg]
    """Like ``torch.Size``: a tuple of dimensions from the ``torch`` module, no tensor."""


Size.__module__ = "torch"


class FakeTensor:
    """Like a torch tensor: ``detach().cpu().numpy()`` gives its values, or raises
    RuntimeError (a tensor on the meta device, say) when ``values`` is None."""

    __module__ = "torch"

    def __init__(self, values: np.ndarray | None) -> None:
        self.values = values

    def detach(self) -> FakeTensor:
        return self

    def cpu(self) -> FakeTensor:
        return self

    def numpy(self) -> np.ndarray:
        if self.values is None:
            raise RuntimeError("Cannot copy out of meta tensor")
        return self.values
