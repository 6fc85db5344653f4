#!/usr/bin/env bash
# One-time set-up, run by `make` targets when needed: Debian packages for headless EGL rendering,
# a Python 3.12 virtual environment at .venv, this package installed editable with its dev extras, and
# the two LeRobot plugin distributions of plugins/ (policy and env), also editable.
# Re-running is cheap: the venv is rebuilt only when pyproject.toml changes.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
for pkg in libegl1 libgl1 libgles2 libegl-mesa0 libgl1-mesa-dri; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "setup: installing Debian packages for headless EGL: ${need_apt[*]}"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

find_python() {
    if command -v pyenv >/dev/null 2>&1 && PYENV_VERSION=3.12.1 pyenv which python3.12 >/dev/null 2>&1; then
        PYENV_VERSION=3.12.1 pyenv which python3.12
    elif command -v python3.12 >/dev/null 2>&1; then
        command -v python3.12
    else
        echo "setup: Python 3.12 not found (tried pyenv 3.12.1 and python3.12 on PATH)" >&2
        exit 1
    fi
}

# The LeRobot plugins (plugins/*) are separate distributions: their pyproject files count too.
stamp=".venv/.installed-$(cat pyproject.toml plugins/*/pyproject.toml | sha1sum | cut -c1-12)"
if [ -f "$stamp" ]; then
    exit 0
fi
py="$(find_python)"
# The environment is ~6.5 GB once installed (torch's CUDA build and its nvidia wheels), and the ~2.5 GB of
# downloaded wheels sit beside it while pip unpacks them: a full disk otherwise fails deep inside pip as
# "[Errno 28] No space left on device".
free_gb=$(( $(df -Pk . | awk 'NR==2 {print $4}') / 1024 / 1024 ))
if [ "$free_gb" -lt 7 ]; then
    echo "setup: ${free_gb} GB free on the disk of $(pwd); expected at least 7 GB (~9 while installing) for .venv; free some and rerun" >&2
    exit 1
elif [ "$free_gb" -lt 10 ]; then
    echo "setup: warning: only ${free_gb} GB free; installing may need ~9 GB at its peak"
fi
echo "setup: creating .venv with $py (first time: ~3 minutes, ~2.5 GB of wheels)"
[ -d .venv ] || "$py" -m venv .venv
log=.venv/install.log
# --no-cache-dir: a fresh machine never reuses pip's copy of the wheels, which would keep ~2.5 GB more on disk.
pip=(.venv/bin/python -m pip install --no-cache-dir)
if ! { "${pip[@]}" --upgrade pip && "${pip[@]}" -e ".[dev]" \
        && "${pip[@]}" --no-deps -e plugins/lerobot_policy_cosmos_robot -e plugins/lerobot_env_cosmos_robot; } >"$log" 2>&1; then
    echo "setup: pip install failed; last lines of $log:" >&2
    grep -v "^WARNING: Location" "$log" | tail -n 30 >&2
    exit 1
fi
rm -f .venv/.installed-*
touch "$stamp"
echo "setup: done"
