"""What the without-replacement route of "optimal" / "sweep" did with each row: ``route_report``."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from .run import _prepare

__all__ = ["route_report"]


def route_report(
    name: Literal["optimal", "sweep"],
    p: ArrayLike,
    q: ArrayLike,
    n: int,
    *,
    threads: int | None = None,
    work_budget: float | None = None,
) -> dict[str, Any]:
    """What the without-replacement route of "optimal" / "sweep" does with each row.

    Prepares the verifier with scheme "wor" and returns a dict of arrays (shape (B,), or scalars
    for 1-D input): ``work`` (grid operations spent), ``out_of_budget`` (the budget was spent, or
    too small for the next order or run, which is then not started), ``best_order`` (the inner
    order whose plan was kept; ``best_order_name`` spells it), ``orders_run``, ``alpha_star``,
    ``alpha_plan`` (the plan's exact acceptance) and ``gap`` = alpha_star - alpha_plan. With
    "optimal" a row that is not certified raises ValueError instead, saying the same.
    ``work_budget=None`` is the verifier's own default: ``WOR_WORK_BUDGET`` for "sweep" (a bounded
    time per row), ``limits.WOR_OPTIMAL_WORK_BUDGET`` (100x) for "optimal".
    """
    if name not in ("optimal", "sweep"):
        raise ValueError(f"name: route_report describes 'optimal' or 'sweep', got {name!r}")
    batch, batched = _prepare(name, p, q, n, "wor", threads, work_budget)
    out: dict[str, Any] = dict(batch.route())
    out["gap"] = np.asarray(out["alpha_star"]) - np.asarray(out["alpha_plan"])
    if not batched:
        out = {k: (v[0] if isinstance(v, list) else np.asarray(v)[0].item()) for k, v in out.items()}
    return out
