"""Forked processes: make torch safe in them, and refuse at once what would otherwise hang forever.

A process forked after its parent ran torch inherits torch's intra-op thread pool in a broken state:
its first parallel op waits forever. With one thread torch never enters that pool, so a process that
uses torch sets one thread in every child it forks (as PyTorch's own DataLoader workers do; one
thread per worker is also what N workers on N cores want). An EGL context cannot be inherited at all:
a child of a parent that created an EGL MuJoCo renderer hangs on its first render, even if the parent
closed it. gymnasium's ``AsyncVectorEnv`` forks by default after building a first env in the parent
to read its spaces; our envs make their renderer at the first frame, so that env leaves no context
behind and the workers start clean. Where a parent did render before forking, the env refuses at once
with a one-line error naming the fix (spawn or forkserver children start clean).
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
    """Record that this process runs ``resource`` ("torch", "egl"), which forked children cannot inherit
    as they are; for torch, every child forked from now on starts with one torch thread."""
    if resource == "torch" and resource not in _FIRST_USED_BY:
        os.register_at_fork(after_in_child=_one_torch_thread)
    _FIRST_USED_BY.setdefault(resource, os.getpid())


def _one_torch_thread() -> None:
    import torch

    torch.set_num_threads(1)


def refuse_forked_child(what: str, resources: tuple[str, ...] = ("egl",)) -> None:
    """Raise a one-line error, naming the fix, in a process forked after an ancestor used ``resources``."""
    inherited = sorted(r for r in resources if _FIRST_USED_BY.get(r, os.getpid()) != os.getpid())
    if inherited:
        raise RuntimeError(
            f"{what} cannot run in a process forked after its parent used {' and '.join(inherited)} "
            f"(it would hang); {SPAWN_FIX}"
        )
