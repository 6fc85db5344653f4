"""Forked workers: the learned env works under fork (gymnasium's default), spawn and forkserver, and
refuses at once where a fork would hang (a parent that rendered with EGL)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from cosmos_robot import forking

MAKE = 'gym.make("cosmos_robot/ForwardDynamics-v0", sampling_steps=1, max_episode_steps=3)'


def test_a_child_of_a_process_that_rendered_is_refused(monkeypatch):
    monkeypatch.setattr(forking, "_FIRST_USED_BY", {"egl": os.getpid()})
    forking.refuse_forked_child("the learned env")  # this process rendered itself: fine
    monkeypatch.setattr(forking, "_FIRST_USED_BY", {"egl": os.getpid() + 1, "torch": os.getpid() + 1})
    with pytest.raises(RuntimeError, match=r"parent used egl .*context='spawn'"):
        forking.refuse_forked_child("the learned env")
    forking.refuse_forked_child("the learned env", resources=())  # torch alone is made safe, not refused


def run(script: str, folder, timeout: float = 240) -> subprocess.CompletedProcess:
    # A file, not `python -c`: spawned workers re-import the main module from its path.
    path = folder / "vectorized.py"
    path.write_text(textwrap.dedent(script))
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_a_forked_child_of_a_torch_process_runs_torch(tmp_path):
    # Without the one-thread child the conv below would wait forever on the inherited thread pool.
    result = run(
        """
        import multiprocessing, torch
        from cosmos_robot.forking import note_use

        def child(_):
            x = torch.randn(256, 64, 8, 8)
            return torch.get_num_threads(), float(torch.nn.functional.conv2d(x, torch.ones(64, 64, 3, 3)).mean())

        if __name__ == "__main__":
            note_use("torch")
            torch.set_num_threads(2)
            torch.nn.functional.conv2d(torch.randn(256, 64, 8, 8), torch.ones(64, 64, 3, 3))  # the parent's pool
            with multiprocessing.get_context("fork").Pool(1) as pool:
                print("child threads", pool.map(child, [0])[0][0])
    """,
        tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "child threads 1" in result.stdout


@pytest.mark.slow
def test_async_vector_env_works_with_its_default_fork_and_with_spawn(tmp_path):
    template = f"""
        import gymnasium as gym
        import cosmos_robot
        if __name__ == "__main__":
            envs = gym.vector.AsyncVectorEnv([lambda: {MAKE}] * 2, **KWARGS)
            obs, _ = envs.reset(seed=0)
            obs, *_ = envs.step(envs.action_space.sample())
            print("stepped", obs["pixels"].shape)
            envs.close()
    """
    for kwargs in ("{}", "{'context': 'spawn'}"):
        result = run(template.replace("KWARGS", kwargs), tmp_path)
        assert result.returncode == 0, result.stderr[-2000:]
        assert "stepped (2, 64, 64, 3)" in result.stdout


@pytest.mark.slow
def test_fork_after_rendering_fails_at_once_naming_the_fix(tmp_path):
    rendered_first = f"""
        import gymnasium as gym
        import cosmos_robot
        if __name__ == "__main__":
            real = gym.make("cosmos_robot/PushBlockPoint-v0")
            real.reset(seed=0)  # an EGL context in the parent: a forked child could never render
            envs = gym.vector.AsyncVectorEnv([lambda: {MAKE}] * 2)
            envs.reset(seed=0)
    """
    result = run(rendered_first, tmp_path, timeout=120)  # would hang forever without the check
    assert result.returncode != 0 and "context='spawn'" in result.stderr


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
