#!/usr/bin/env bash
# Every number of docs/results.md's tables, one command after another (nothing else should run on
# the machine meanwhile: timings and 2-core throughput depend on it). Writes JSON, text logs and plots
# under out/results/. About 70 minutes on 2 cores, most of it the Diffusion Policy comparison's
# training budget (20 minutes) and the two PPO runs.
#   DATA=<recipe data dir> bash benchmarks/run_all_evals.sh [checkpoint]   (default: the shipped model)
# DATA holds the default recipe's datasets (cosmos-robot train --recipe default --data-dir DATA): the
# labeling baseline trains on them. DP=0 skips the Diffusion Policy comparison (~23 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
export MUJOCO_GL=egl HF_HUB_OFFLINE=1
CK="${1:-default}"
DATA="${DATA:-out/recipe_data}"
PY=.venv/bin/python
CLI=.venv/bin/cosmos-robot
R=out/results
mkdir -p "$R"
run() { local name="$1"; shift; echo "== $name: $*"; "$@" 2>&1 | tee "$R/$name.txt" | grep -v "it/s\]" | tail -n 12; }

run eval_default $PY benchmarks/eval_default.py --checkpoint "$CK" --json "$R/eval_default.json"
for e in point arm2; do
  run "eval_fd_$e" $CLI eval fd --checkpoint "$CK" --embodiment "$e" --json "$R/eval_fd_$e.json"
  run "eval_policy_$e" $CLI eval policy --checkpoint "$CK" --env "cosmos_robot/PushBlock${e^}-v0" \
      --episodes 20 --rerun "$R/policy_$e.rrd" --json "$R/eval_policy_$e.json"
done
run eval_rank_point $CLI eval rank --checkpoint "$CK" --embodiment point --json "$R/eval_rank_point.json"
for e in point arm2; do
  run "eval_label_$e" $CLI eval label --checkpoint "$CK" --env "cosmos_robot/PushBlock${e^}-v0" \
      --baseline-data "$DATA/${e}_expert" "$DATA/${e}_noise0.3" "$DATA/${e}_noise0.6" --json "$R/eval_label_$e.json"
done
for e in point arm2; do
  run "probe_block_steps_$e" $PY benchmarks/probe_block_steps.py --checkpoint "$CK" --embodiment "$e" \
      --json "$R/probe_block_steps_$e.json"
  run "probe_block_throws_$e" $PY benchmarks/probe_block_throws.py --checkpoint "$CK" --embodiment "$e" \
      --episodes 32 --seed 4242 --json "$R/probe_block_throws_$e.json"
done
ALL_DATA=()
for e in point arm2; do for d in expert noise0.3 noise0.6 random; do ALL_DATA+=("$DATA/${e}_$d"); done; done
run probe_block_oracle $PY benchmarks/probe_block_oracle.py --data "${ALL_DATA[@]}" --json "$R/probe_block_oracle.json"
for e in point arm2; do
  run "probe_block_sensitivity_$e" $PY benchmarks/probe_block_sensitivity.py --embodiment "$e" \
      --json "$R/probe_block_sensitivity_$e.json"
done
run eval_imagination_rl $CLI eval imagination-rl --checkpoint "$CK" --json "$R/eval_imagination_rl.json"
run bench_policy $PY benchmarks/bench_policy.py --quick --checkpoint "$CK" --json "$R/bench_policy.json"
run bench_fd_env $PY benchmarks/bench_fd_env.py --quick --checkpoint "$CK" --json "$R/bench_fd_env.json"
[[ "${DP:-1}" == 0 ]] || run compare_policy_dp $PY benchmarks/compare_policy_dp.py --checkpoint "$CK" --budget-minutes 18 --json "$R/compare_policy_dp.json"
