"""The package mcpfsm._core.oauth: its ``__all__`` is sorted and names every public name."""

from __future__ import annotations

import inspect

from mcpfsm._core import oauth as o


def test_all_is_sorted_and_complete() -> None:
    assert o.__all__ == sorted(o.__all__, key=lambda name: (not name.isupper(), name.islower(), name))
    public = {
        name
        for name, value in vars(o).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and getattr(value, "__module__", o.__name__) == o.__name__
    }
    assert public - {"annotations"} <= set(o.__all__)
