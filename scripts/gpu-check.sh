#!/usr/bin/env bash
# gpu-check.sh: on a machine with a real NVIDIA GPU (no network needed), install gputui from
# this working tree into a fresh virtualenv, print `gputui snapshot`, then take
# `gputui snapshot --json` and nvidia-smi's queries at the same moment and compare every
# field both report (scripts/gpu_check.py). Exit 0: all equal (moving values within
# tolerance); 1: differences (listed); 2: setup problem.
#
# Offline install: if a wheel folder travels with the tree (GPUTUI_WHEELS, else ./wheels,
# else ../shared/wheels), pip uses only it (--no-index --find-links); it must hold gputui's
# dependencies and hatchling. Otherwise pip installs normally.
# Environment: PYTHON (default python3), KEEP_TMP=1 keeps the temp folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}

command -v nvidia-smi >/dev/null || { echo "gpu-check: nvidia-smi not found (is this a GPU machine?)" >&2; exit 2; }
command -v "$py" >/dev/null || { echo "gpu-check: $py not found (set PYTHON)" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputui-gpu-check.XXXXXX")
cleanup() {
  if [ "${KEEP_TMP:-0}" = 1 ]; then echo "gpu-check: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

wheels=${GPUTUI_WHEELS:-}
if [ -z "$wheels" ]; then
  for d in "$root/wheels" "$root/../shared/wheels"; do
    if [ -d "$d" ] && compgen -G "$d/*.whl" >/dev/null; then wheels=$d; break; fi
  done
fi
pip_args=(--quiet --disable-pip-version-check)
if [ -n "$wheels" ]; then
  echo "gpu-check: installing offline from $wheels" >&2
  pip_args+=(--no-index --find-links "$wheels")
else
  echo "gpu-check: no wheel folder found; installing with pip's normal index" >&2
fi

"$py" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install "${pip_args[@]}" "$root" >"$tmp/pip.log" 2>&1 || {
  tail -n 20 "$tmp/pip.log" >&2
  echo "gpu-check: installing gputui failed (log above)" >&2
  exit 2
}
gputui=$tmp/venv/bin/gputui

echo "== nvidia-smi" >&2
nvidia-smi -L || true
echo "== gputui snapshot" >&2
"$gputui" snapshot || { echo "gpu-check: 'gputui snapshot' failed" >&2; exit 1; }

# The same moment: all three start together.
"$gputui" snapshot --json >"$tmp/snapshot.json" 2>"$tmp/snapshot.err" &
p1=$!
nvidia-smi --query-gpu=name,uuid,pci.bus_id,memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw,clocks.sm,clocks.mem \
  --format=csv,noheader,nounits >"$tmp/gpus.csv" &
p2=$!
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >"$tmp/apps.csv" &
p3=$!
rc=0
wait "$p1" || { cat "$tmp/snapshot.err" >&2; echo "gpu-check: 'gputui snapshot --json' failed" >&2; rc=1; }
wait "$p2" || { echo "gpu-check: nvidia-smi --query-gpu failed" >&2; rc=1; }
wait "$p3" || { echo "gpu-check: nvidia-smi --query-compute-apps failed" >&2; rc=1; }
[ "$rc" = 0 ] || exit 1

echo "== gputui vs nvidia-smi" >&2
"$tmp/venv/bin/python" "$root/scripts/gpu_check.py" "$tmp/snapshot.json" "$tmp/gpus.csv" "$tmp/apps.csv"
