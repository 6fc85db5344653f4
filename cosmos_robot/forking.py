"""Forked processes: refuse at once what would otherwise hang forever.

A process forked after its parent has run torch (its thread pool) or created an EGL MuJoCo renderer
deadlocks on its first torch op or render. gymnasium's ``AsyncVectorEnv`` forks by default and builds
a first env in the parent before it forks, so its workers would sit at 0 % CPU forever. Spawned and
forkserver children start clean and are fine, as are children of a parent that used neither.
"""

from __future__ import annotations

import os

# Resource -> the pid of the process that first used it. A forked child inherits this table: an entry
# with another pid means an ancestor used the resource before the fork.
_FIRST_USED_BY: dict[str, int] = {}

SPAWN_FIX = (
    "use the 'spawn' start method: gymnasium.vector.AsyncVectorEnv(..., context='spawn') or "
    "stable_baselines3 SubprocVecEnv(..., start_method='spawn'), or one batched ForwardDynamicsVectorEnv "
    "(gymnasium.make_vec(..., vectorization_mode='vector_entry_point'))"
)


def note_use(resource: str) -> None:
    """Record that this process runs ``resource`` ("torch", "egl"), which forked children cannot inherit."""
    _FIRST_USED_BY.setdefault(resource, os.getpid())


def refuse_forked_child(what: str, resources: tuple[str, ...] = ("torch", "egl")) -> None:
    """Raise a one-line error, naming the fix, in a process forked after an ancestor used ``resources``."""
    inherited = sorted(r for r in resources if _FIRST_USED_BY.get(r, os.getpid()) != os.getpid())
    if inherited:
        raise RuntimeError(
            f"{what} cannot run in a process forked after its parent used {' and '.join(inherited)} "
            f"(it would hang); {SPAWN_FIX}"
        )
