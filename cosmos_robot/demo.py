"""The main job: the three tools on the shipped default model, each judged against MuJoCo, in one report.

``cosmos-robot demo --out demo_out`` (``make demo``), per PushBlock embodiment:

1. **Forward dynamics** - :class:`ForwardDynamicsVectorEnv` next to MuJoCo from the same seeded
   starts with the same actions (expert, noisy and random sources): PSNR per horizon against the
   copy-last-frame baseline, agent-state error, and the PSNR lost when the actions are shuffled
   (0 = the frames ignore the actions). Plot ``fd_<embodiment>.png``, frame strip
   ``fd_strip_<embodiment>.png`` (top: MuJoCo, bottom: imagined).
2. **Labeling** - seeded MuJoCo episodes rendered to mp4 (kept in ``label_<embodiment>/videos``),
   labeled by inverse dynamics into a LeRobot dataset (``label_<embodiment>/labeled``), compared with
   the true actions (R^2, MSE) and replayed open loop in MuJoCo. Plot ``label_<embodiment>.png``.
3. **Policy** - :class:`WorldModelPolicy` closed loop in MuJoCo from seeded starts, next to the
   pixel-driven scripted expert and a random policy on the same starts; the model's episodes are
   recorded to ``policy.rrd`` (real and imagined cameras side by side). Plot ``policy_success.png``.

Everything lands in ``report.json`` (all numbers) and ``report.md``; a summary table is printed.
Seeds are the evaluation seeds (500000+), never seen in training.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cosmos_robot.atomic import write_file_atomic
from cosmos_robot.envs import PUSH_BLOCK_IDS
from cosmos_robot.envs.push_block_scene import CONTROL_HZ
from cosmos_robot.eval.closed_loop import evaluate_policy, make_policy
from cosmos_robot.eval.fd_fidelity import evaluate_fd, frame_strip, plot_fd
from cosmos_robot.eval.labeling import evaluate_labeling, plot_labeling
from cosmos_robot.eval.recording import PolicyRecorder
from cosmos_robot.metrics import rate_with_interval
from cosmos_robot.policies.world_model_policy import WorldModelPolicy
from cosmos_robot.seeds import EVAL_SEED
from cosmos_robot.world_model import WorldActionModel


@dataclass(frozen=True)
class DemoSize:
    """How much the demo runs (per embodiment)."""

    fd_episodes: int = 6
    fd_horizon: int = 16
    label_episodes: int = 4
    policy_episodes: int = 5
    sampling_steps: int = 4  # per imagined step (FD)
    policy_steps: int = 10  # Euler steps per action chunk
    label_steps: int = 10


FULL = DemoSize()
QUICK = DemoSize(fd_episodes=2, fd_horizon=8, label_episodes=2, policy_episodes=1, policy_steps=2, label_steps=2)


def run_demo(
    out: str | Path,
    checkpoint: str = "default",
    embodiments: tuple[str, ...] | None = None,
    quick: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Run the demo into ``out`` and print a summary table; returns the report (also ``report.json``)."""
    out = Path(out)
    size = QUICK if quick else FULL
    model = WorldActionModel.from_pretrained(checkpoint)
    embodiments = tuple(embodiments or [e for e in PUSH_BLOCK_IDS if e in model.embodiments])
    for embodiment in embodiments:
        if embodiment not in PUSH_BLOCK_IDS or embodiment not in model.embodiments:
            raise ValueError(
                f"embodiment={embodiment!r}; expected PushBlock embodiments the model knows: "
                f"{[e for e in PUSH_BLOCK_IDS if e in model.embodiments]}"
            )
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "checkpoint": str(checkpoint),
        "size": size.__dict__,
        "seeds_from": EVAL_SEED,
        "forward_dynamics": {},
        "labeling": {},
        "policy": {},
        "seconds": {},
    }
    started = time.perf_counter()
    for embodiment in embodiments:
        _say(f"[{embodiment}] forward dynamics: learned env vs MuJoCo, same starts and actions", progress)
        t = time.perf_counter()
        fd = evaluate_fd(
            model,
            embodiment,
            episodes=size.fd_episodes,
            horizon=size.fd_horizon,
            sampling_steps=size.sampling_steps,
            progress=progress,
        )
        plot_fd(fd, out / f"fd_{embodiment}.png")
        frame_strip(fd.example["real"], fd.example["imagined"], out / f"fd_strip_{embodiment}.png")
        report["forward_dynamics"][embodiment] = fd.to_json()
        report["seconds"][f"fd_{embodiment}"] = time.perf_counter() - t
        if getattr(getattr(model, "network", None), "forward_prior", None) is not None:
            # The ablation beside the full model: the forward prior alone, same starts and actions.
            model.forward_path = "prior"
            try:
                alone = evaluate_fd(model, embodiment, episodes=size.fd_episodes, horizon=size.fd_horizon,
                                    sampling_steps=size.sampling_steps, progress=False)  # fmt: skip
            finally:
                model.forward_path = "full"
            alone_json = alone.to_json()
            report["forward_dynamics"][embodiment]["prior_alone"] = {
                k: alone_json[k] for k in ("effector_found", "effector_error_mm", "block_error_mm", "state_error")
            }

        _say(f"[{embodiment}] labeling: render mp4, inverse dynamics, compare, replay in MuJoCo", progress)
        t = time.perf_counter()
        lab = evaluate_labeling(
            model,
            embodiment,
            PUSH_BLOCK_IDS[embodiment],
            episodes=size.label_episodes,
            steps=size.label_steps,
            progress=progress,
            keep_dir=out / f"label_{embodiment}",
        )
        plot_labeling(lab, out / f"label_{embodiment}.png")
        report["labeling"][embodiment] = lab.to_json()
        report["seconds"][f"label_{embodiment}"] = time.perf_counter() - t

    _say("policy: closed loop in MuJoCo (recorded to policy.rrd), next to the scripted expert and random", progress)
    t = time.perf_counter()
    recorder = PolicyRecorder(out / "policy.rrd", fps=CONTROL_HZ)
    try:
        for embodiment in embodiments:
            env_id = PUSH_BLOCK_IDS[embodiment]
            ours = WorldModelPolicy(model, embodiment, steps=size.policy_steps)
            entry = {"model": evaluate_policy(ours, env_id, size.policy_episodes, recorder=recorder, progress=progress)}
            for kind in ("pixel-expert", "random"):
                entry[kind] = evaluate_policy(make_policy(kind, env_id), env_id, size.policy_episodes, progress=False)
            entry = {kind: result.to_json() for kind, result in entry.items()}
            report["policy"][embodiment] = entry
    finally:
        report["rerun"] = str(recorder.close())
    report["seconds"]["policy"] = time.perf_counter() - t
    _plot_policy(report["policy"], out / "policy_success.png")
    report["seconds"]["total"] = time.perf_counter() - started

    write_file_atomic(out / "report.json", json.dumps(report, indent=2))
    write_file_atomic(out / "report.md", _markdown(report))
    print(_summary(report, out))
    return report


def _say(message: str, progress: bool) -> None:
    if progress:
        print(message, flush=True)


def _plot_policy(policy: dict[str, Any], path: Path) -> Path:
    """Success rate per policy and embodiment, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = ("model", "pixel-expert", "random")
    labels = {"model": "world-model policy", "pixel-expert": "scripted expert (pixels)", "random": "random"}
    fig, ax = plt.subplots(figsize=(6, 3.4))
    width = 0.8 / len(kinds)
    for k, kind in enumerate(kinds):
        rates = [policy[e][kind]["success_rate"] for e in policy]
        ax.bar(np.arange(len(policy)) + k * width, rates, width, label=labels[kind])
    ax.set_xticks(np.arange(len(policy)) + width, list(policy))
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success rate (MuJoCo)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _rows(report: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(embodiment, metric, ours, baseline) rows shared by the printed table and report.md."""
    rows = []
    for e, fd in report["forward_dynamics"].items():
        h = [1, len(fd["psnr"]) // 2, len(fd["psnr"])]
        frames = fd["episodes_per_source"] * len(fd["sources"])
        found = " / ".join(_found(fd["effector_found"][i - 1], fd["effector_visible"][i - 1], frames) for i in h)
        rows.append(
            (e, f"FD effector found where MuJoCo shows it, h{h[0]}/h{h[1]}/h{h[2]}", found, "1.00 = always")
        )  # fmt: skip
        errors = " / ".join(_mm(fd["effector_error_mm"][i - 1]) for i in h)
        shuffled = " / ".join(_mm(fd["effector_error_mm_shuffled"][i - 1]) for i in h)
        rows.append((e, f"FD effector error mm, h{h[0]}/h{h[1]}/h{h[2]} (vs shuffled actions)", errors, shuffled))
        rows.append(
            (e, f"FD block error mm at h{h[2]} (vs a block that never moves)", _mm(fd["block_error_mm"][-1]),
             f"{_mm(fd['block_error_mm_copy_last'][-1])}; detector floor {_mm(fd['detector_floor_mm']['block'])}")
        )  # fmt: skip
        ours = " / ".join(f"{fd['psnr'][i - 1]:.1f}" for i in h)
        base = " / ".join(f"{fd['psnr_copy_last'][i - 1]:.1f}" for i in h)
        rows.append((e, f"FD PSNR dB at h{h[0]}/h{h[1]}/h{h[2]} (vs copy-last)", ours, base))
        rows.append(
            (e, "FD PSNR lost with shuffled actions (dB, h8)", f"{fd['delta_psnr_shuffled']:.2f}", "0 = ignores")
        )
        rows.append((e, f"FD agent_pos error at h{h[2]}", f"{fd['state_error'][-1]:.3f}", "-"))
        if "prior_alone" in fd:
            last = [
                f"{_share(r['effector_found'][-1])} / {_mm(r['effector_error_mm'][-1])} / "
                f"{_mm(r['block_error_mm'][-1])}"
                for r in (fd, fd["prior_alone"])
            ]
            rows.append((e, f"FD ablation at h{h[2]}: effector found / error mm / block mm (vs prior alone)", *last))
    for e, lab in report["labeling"].items():
        rows.append((e, "labels R2 vs true actions", f"{lab['r2']:.3f}", "1 = exact"))
        n = lab["episodes"]
        replay, original = (rate_with_interval(lab[k], n) for k in ("replay_success_rate", "original_success_rate"))
        rows.append(
            (e, "replayed labels: success (originals' in brackets)", f"{replay} [{original}]",
             f"true actions {rate_with_interval(lab['true_action_replay_success_rate'], n)}")
        )  # fmt: skip
    for e, pol in report["policy"].items():
        rows.append(
            (e, "policy success rate in MuJoCo (95 % interval, episodes)", _rate(pol["model"]),
             f"expert {_rate(pol['pixel-expert'])}, random {_rate(pol['random'])}")
        )  # fmt: skip
    return rows


def _rate(result: dict[str, Any]) -> str:
    return rate_with_interval(result["success_rate"], result["episodes"])


def _mm(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _found(share: float | None, visible: float, frames: int) -> str:
    """A found share with its interval, over the frames (of ``frames``) where MuJoCo shows the object."""
    shown = round(visible * frames)
    return "-" if share is None else rate_with_interval(share, shown)


def _summary(report: dict[str, Any], out: Path) -> str:
    lines = [f"\n{'embodiment':<11}{'metric':<50}{'ours':>20}  baseline"]
    lines += [f"{e:<11}{m:<50}{o:>20}  {b}" for e, m, o, b in _rows(report)]
    lines.append(f"\nreport: {out}/report.md (numbers: {out}/report.json), plots: {out}/*.png")
    lines.append(f"policy recording: rerun {report['rerun']}")
    lines.append(f"total {report['seconds']['total']:.0f} s")
    return "\n".join(lines)


def _markdown(report: dict[str, Any]) -> str:
    lines = [
        "# cosmos_robot demo report",
        "",
        f"Checkpoint `{report['checkpoint']}`; MuJoCo seeds from {report['seeds_from']} (never trained on); "
        f"ran in {report['seconds']['total']:.0f} s.",
        "",
        "| embodiment | metric | ours | baseline |",
        "|---|---|---|---|",
        *[f"| {e} | {m} | {o} | {b} |" for e, m, o, b in _rows(report)],
        "",
    ]
    for e in report["forward_dynamics"]:
        lines += [
            f"## {e}",
            "",
            f"![forward dynamics fidelity](fd_{e}.png)",
            "",
            f"MuJoCo (top) and the learned env (bottom), same start and actions: ![frame strip](fd_strip_{e}.png)",
            "",
            f"![labeled vs true actions](label_{e}.png)",
            "",
        ]
    lines += [
        "## Policy",
        "",
        "![success](policy_success.png)",
        "",
        f"Open the recording with `rerun {report['rerun']}`: real and imagined cameras side by side.",
        "",
    ]
    return "\n".join(lines)
