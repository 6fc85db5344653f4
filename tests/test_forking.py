"""Forked workers: the learned env works under spawn and forkserver, and refuses at once where fork would hang."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from cosmos_robot import forking

MAKE = 'gym.make("cosmos_robot/ForwardDynamics-v0", sampling_steps=1, max_episode_steps=3)'


def test_a_child_of_a_process_that_used_torch_is_refused(monkeypatch):
    monkeypatch.setattr(forking, "_FIRST_USED_BY", {"torch": os.getpid()})
    forking.refuse_forked_child("the learned env")  # this process used it itself: fine
    monkeypatch.setattr(forking, "_FIRST_USED_BY", {"torch": os.getpid() + 1, "egl": os.getpid()})
    with pytest.raises(RuntimeError, match=r"parent used torch .*context='spawn'"):
        forking.refuse_forked_child("the learned env")
    forking.refuse_forked_child("a PushBlock env", resources=("egl",))  # egl was this process's own


def run(script: str, folder, timeout: float = 240) -> subprocess.CompletedProcess:
    # A file, not `python -c`: spawned workers re-import the main module from its path.
    path = folder / "vectorized.py"
    path.write_text(textwrap.dedent(script))
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_async_vector_env_fails_at_once_with_fork_and_works_with_spawn(tmp_path):
    template = f"""
        import gymnasium as gym
        import cosmos_robot
        if __name__ == "__main__":
            envs = gym.vector.AsyncVectorEnv([lambda: {MAKE}] * 2, context=CONTEXT)
            obs, _ = envs.reset(seed=0)
            envs.step(envs.action_space.sample())
            print("stepped", obs["pixels"].shape)
            envs.close()
    """
    forked = run(template.replace("CONTEXT", "None"), tmp_path, timeout=120)  # would hang forever without the check
    assert forked.returncode != 0 and "context='spawn'" in forked.stderr
    spawned = run(template.replace("CONTEXT", "'spawn'"), tmp_path)
    assert spawned.returncode == 0, spawned.stderr[-2000:]
    assert "stepped (2, 64, 64, 3)" in spawned.stdout


@pytest.mark.slow
def test_sb3_subproc_vec_env_works_with_its_default_start_method(tmp_path):
    result = run(
        f"""
        import gymnasium as gym
        from gymnasium.wrappers import FilterObservation, FlattenObservation
        from stable_baselines3.common.vec_env import SubprocVecEnv
        import cosmos_robot

        def make():
            return FlattenObservation(FilterObservation({MAKE}, ["agent_pos"]))

        if __name__ == "__main__":
            envs = SubprocVecEnv([make] * 2)
            obs = envs.reset()
            envs.step([envs.action_space.sample() for _ in range(2)])
            print("stepped", obs.shape)
            envs.close()
    """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "stepped (2, 2)" in result.stdout
