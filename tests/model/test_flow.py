"""Rectified flow: schedule, loss masking, an oracle sampler recovers x0, a trained toy flow matches its data."""

from __future__ import annotations

import torch
from torch import nn

from cosmos_robot.model.flow import (
    add_noise,
    classifier_free_guidance,
    euler_sample,
    euler_times,
    sample_time,
    velocity_target,
)


def test_noising_endpoints_and_target():
    x0, eps = torch.randn(4, 3), torch.randn(4, 3)
    torch.testing.assert_close(add_noise(x0, eps, torch.tensor(0.0)), x0)
    torch.testing.assert_close(add_noise(x0, eps, torch.tensor(1.0)), eps)
    t = torch.tensor(0.3)
    # moving along v for -t lands on x0: x_t - t * v = x0
    torch.testing.assert_close(add_noise(x0, eps, t) - t * velocity_target(x0, eps), x0)


def test_time_sampler_range_and_shift():
    g = torch.Generator().manual_seed(0)
    t1 = sample_time((20000,), 1.0, g)
    t5 = sample_time((20000,), 5.0, g)
    assert 0 < t1.min() and t1.max() < 1
    assert abs(float(t1.mean()) - 0.5) < 0.02 and float(t5.mean()) > 0.7
    times = euler_times(4, shift=3.0)
    assert times[0] == 1.0 and times[-1] == 0.0 and torch.all(times[1:] < times[:-1])


def test_oracle_velocity_recovers_x0_and_keeps_clean_tokens():
    torch.manual_seed(0)
    x0 = torch.randn(2, 5, 3)
    clean = torch.randn(2, 5, 3)
    noisy = torch.tensor([[True, True, False, True, False]] * 2)

    def oracle(x, t):  # exact v for data x0: v = (x_t - x0) / t
        return torch.where(t > 0, (x - x0) / t.clamp_min(1e-8), torch.zeros_like(x))

    out = euler_sample(oracle, torch.randn(2, 5, 3), clean, noisy, steps=3, shift=2.0)
    torch.testing.assert_close(out[noisy], x0[noisy], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out[~noisy], clean[~noisy])


def test_a_tiny_trained_flow_reproduces_a_two_mode_distribution():
    torch.manual_seed(0)
    centers = torch.tensor([[-2.0, 0.0], [2.0, 1.0]])

    def data(n):
        return centers[torch.randint(2, (n,))] + 0.3 * torch.randn(n, 2)

    net = nn.Sequential(nn.Linear(3, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU(), nn.Linear(128, 2))
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    for _ in range(1500):
        x0, eps = data(256), torch.randn(256, 2)
        t = sample_time((256, 1))
        loss = ((net(torch.cat([add_noise(x0, eps, t), t], 1)) - velocity_target(x0, eps)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    def velocity(x, t):  # x (1, N, 2), t (1, N, 1)
        return net(torch.cat([x[0], t[0]], 1))[None]

    n = 2000
    samples = euler_sample(
        velocity, torch.randn(1, n, 2), torch.zeros(1, n, 2), torch.ones(1, n, dtype=torch.bool), steps=20
    )[0]
    nearest = torch.cdist(samples, centers).argmin(1)
    fraction = float((nearest == 1).float().mean())
    assert 0.4 < fraction < 0.6, f"mode balance {fraction:.2f}"
    for k in range(2):
        members = samples[nearest == k]
        torch.testing.assert_close(members.mean(0), centers[k], atol=0.15, rtol=0)
        assert 0.15 < float(members.std(0).mean()) < 0.5


def test_guidance_scale_one_is_the_conditional_prediction():
    cond, uncond = torch.randn(3, 4), torch.randn(3, 4)
    torch.testing.assert_close(classifier_free_guidance(cond, uncond, 1.0), cond)
    torch.testing.assert_close(classifier_free_guidance(cond, uncond, 0.0), uncond)
