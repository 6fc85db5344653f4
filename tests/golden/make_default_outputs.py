"""Regenerate ``default_outputs.npz``: fixed inputs and the shipped default model's outputs for them.

Run from the repository root after a change that is MEANT to change the default model's outputs
(a retrained default), and say so in the commit:

    .venv/bin/python tests/golden/make_default_outputs.py

The inputs are stored beside the outputs, so the pinning test does not depend on MuJoCo's renderer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).with_name("default_outputs.npz")
EMBODIMENTS = ("point", "arm2")
STEPS = 4  # denoising steps: enough to exercise the sampler, cheap enough for the default test run


def record_inputs(embodiment: str, seed: int, steps: int = 7) -> dict[str, np.ndarray]:
    """``steps + 1`` frames and states and the uniform-random actions between them, from a seeded reset."""
    from cosmos_robot.envs.push_block import PushBlockEnv

    env = PushBlockEnv(embodiment)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    frames, states, actions = [obs["pixels"]], [obs["agent_pos"]], []
    for _ in range(steps):
        action = rng.uniform(env.action_space.low, env.action_space.high).astype(np.float32)
        obs, *_ = env.step(action)
        frames.append(obs["pixels"])
        states.append(obs["agent_pos"])
        actions.append(action)
    env.close()
    return {"frames": np.stack(frames), "states": np.stack(states), "actions": np.stack(actions)}


def default_outputs(model, inputs: dict[str, np.ndarray], embodiment: str) -> dict[str, np.ndarray]:
    """Forward dynamics (6 steps), inverse dynamics (8 frames) and one policy chunk of ``model``."""
    frames, states, actions = inputs["frames"], inputs["states"], inputs["actions"]
    fd = model.forward_dynamics(frames[:1], actions[:6], embodiment, states=states[0], steps=STEPS, seed=1)
    labels, spread = model.inverse_dynamics(frames, embodiment, steps=STEPS, seed=2, return_spread=True)
    chunk = model.policy(frames[0], embodiment, state=states[0], steps=STEPS, seed=3)
    return {
        "fd_frames": fd.frames,
        "fd_states": fd.states,
        "fd_rewards": fd.rewards,
        "fd_success": fd.success,
        "id_actions": labels,
        "id_spread": spread,
        "policy_actions": chunk.actions,
        "policy_frames": chunk.frames,
    }


def main() -> None:
    import torch

    from cosmos_robot.world_model import WorldActionModel

    torch.set_num_threads(1)
    model = WorldActionModel.from_pretrained("default")
    arrays: dict[str, np.ndarray] = {}
    for i, embodiment in enumerate(EMBODIMENTS):
        inputs = record_inputs(embodiment, seed=4242 + i)
        outputs = default_outputs(model, inputs, embodiment)
        arrays |= {f"{embodiment}/in/{k}": v for k, v in inputs.items()}
        arrays |= {f"{embodiment}/out/{k}": v for k, v in outputs.items()}
    np.savez_compressed(GOLDEN, **arrays)
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
