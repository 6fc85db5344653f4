"""Seed ranges, in one place: data that trains a model never shares a seed with data that judges it.

Recipe (training) data uses seeds below :data:`TUNING_SEED`; settings chosen on held-out data
(guidance scale, the pixel-residual change level) are chosen on episodes from :data:`TUNING_SEED`;
every evaluation starts at :data:`EVAL_SEED`, each harness at its own offset.
"""

TUNING_SEED = 300_000
EVAL_SEED = 500_000
