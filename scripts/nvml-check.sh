#!/usr/bin/env bash
# nvml-check.sh: the NVML source end to end, through the real pynvml -> libnvidia-ml.so.1
# path, against the simulated NVML library in ../shared/fakenvml (no GPU needed).
#
# Builds the fake library three ways into a temporary folder (current driver;
# "legacy": without the _v2/_v3/V entry points, like a pre-R515 driver;
# "v1only": legacy and no _v2 process lists either), starts the idle worker
# processes its scenarios refer to, runs `gputui snapshot --json` for each build
# x scenario (sample, faults) with the simulated clock frozen, and compares
# every value with the scenario's (scripts/nvml_check.py). Exits non-zero with
# one MISMATCH line per difference.
#
# Environment: FAKENVML_DIR (default: ../shared/fakenvml from the repository
# root), PYTHON (default: .venv/bin/python), KEEP_TMP=1 to keep the temp folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fake=${FAKENVML_DIR:-$root/../shared/fakenvml}
py=${PYTHON:-$root/.venv/bin/python}
if [ ! -f "$fake/fakenvml.c" ]; then
  echo "nvml-check: fake NVML sources not found at $fake (set FAKENVML_DIR)" >&2
  exit 2
fi
fake=$(cd "$fake" && pwd)
[ -x "$py" ] || { echo "nvml-check: no Python at $py (run 'make test' first to create .venv)" >&2; exit 2; }
command -v "${CC:-gcc}" >/dev/null || { echo "nvml-check: needs a C compiler (gcc)" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputui-nvml-check.XXXXXX")
cleanup() {
  "$fake/stop-procs.sh" "$tmp/sample.conf.pids" "$tmp/faults.conf.pids" 2>/dev/null || true
  if [ "${KEEP_TMP:-0}" = 1 ]; then echo "nvml-check: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# The legacy symbol list is the fake's own (LEGACY_HIDE in its Makefile).
legacy_hide=$(make -s -C "$fake" -pn BUILD="$tmp/probe" 2>/dev/null |
  sed -n 's/^LEGACY_HIDE := //p' | head -n 1)
[ -n "$legacy_hide" ] || { echo "nvml-check: LEGACY_HIDE not found in $fake/Makefile" >&2; exit 2; }
v1_hide="$legacy_hide nvmlDeviceGetComputeRunningProcesses_v2 nvmlDeviceGetGraphicsRunningProcesses_v2 nvmlDeviceGetMPSComputeRunningProcesses_v2"

echo "nvml-check: building the fake NVML library in $tmp" >&2
make -s -C "$fake" BUILD="$tmp/current" >/dev/null
make -s -C "$fake" variant VARIANT_DIR="$tmp/legacy" HIDE="$legacy_hide" >/dev/null
make -s -C "$fake" variant VARIANT_DIR="$tmp/v1only" HIDE="$v1_hide" >/dev/null

"$fake/start-procs.sh" "$fake/scenarios/sample.conf.in" "$tmp/sample.conf" 2>/dev/null
"$fake/start-procs.sh" "$fake/tests/faults.conf.in" "$tmp/faults.conf" 2>/dev/null

export FAKE_NVML_QUIET=1
"$py" "$root/scripts/nvml_check.py" --fakenvml "$fake" \
  --lib "current=$tmp/current" --lib "legacy=$tmp/legacy" --lib "v1only=$tmp/v1only" \
  --scenario "sample=$tmp/sample.conf" --scenario "faults=$tmp/faults.conf"
