"""The `on_failure` keyword of the SciPy solvers (`odeint`, `quad`, `minimize`, `root`, ...):
what to do when a solve did not finish, so that its result (and its derivative) is wrong.
"raise" (the default) raises `RuntimeError`; "warn" warns (`RuntimeWarning`) and lets the
caller go on with SciPy's result, as SciPy itself does.

Imports: none of fgrad's.
"""

from __future__ import annotations

import warnings

__all__ = ["check_on_failure", "report_failure"]

_CHOICES = ("raise", "warn")


def check_on_failure(who: str, on_failure: str) -> None:
    """Refuse an `on_failure` that is neither "raise" nor "warn", naming `who`."""
    if on_failure not in _CHOICES:
        raise ValueError(f"{who}: on_failure must be 'raise' or 'warn', got {on_failure!r}")


def report_failure(text: str, on_failure: str, stacklevel: int) -> None:
    """Raise `RuntimeError(text)`, or with `on_failure="warn"` warn it as a `RuntimeWarning`.
    `stacklevel` counts from the caller of `report_failure`, as it would for a
    `warnings.warn` written in its place."""
    if on_failure == "raise":
        raise RuntimeError(text)
    # + 1: the frame of this function, which the caller's count does not include
    warnings.warn(text, RuntimeWarning, stacklevel=stacklevel + 1)
