"""Seed ranges, in one place: data that trains a model never shares a seed with data that judges it.

Recipe (training) data uses seeds below :data:`TUNING_SEED`; settings chosen on held-out data
(guidance scale, the pixel-residual change level) are chosen on episodes from :data:`TUNING_SEED`;
every evaluation starts at :data:`EVAL_SEED`, each harness at its own offset.
"""

TUNING_SEED = 300_000
EVAL_SEED = 500_000

# Each harness starts at its own offset, so no two harnesses score the same starts.
POLICY_SEED = EVAL_SEED  # eval policy (closed loop)
FD_SEED = EVAL_SEED  # eval fd (its starts are open-loop recordings, not scored episodes)
RANK_SEED = EVAL_SEED + 10_000
IMAGINATION_RL_SEED = EVAL_SEED + 20_000
LABELING_SEED = EVAL_SEED + 30_000
