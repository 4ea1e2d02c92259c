#!/usr/bin/env bash
# gputui installs on every Python it claims, with the lowest dependency versions
# pyproject.toml allows as well as the newest:
#   - for each of 3.10 .. 3.13 and each resolution (lowest-direct, highest): a fresh venv,
#     a plain non-editable install of this checkout, then gputui run from another directory;
#   - the whole test suite on the oldest Python with the lowest versions and on the newest
#     Python with the newest versions (the two corners where breakage shows first).
# Wheels only for the compiled dependencies (psutil, pydantic-core): a lower bound that
# needs a compiler on some Python is not an honest lower bound for that Python.
#
# Usage: scripts/python-matrix.sh [--no-tests] [PYTHONS...]   (default: 3.10 3.11 3.12 3.13)
# Needs uv (installed into a temporary venv when missing) and the interpreters, found under
# pyenv (`pyenv root`/versions/X.Y.*) or on PATH as pythonX.Y.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
run_tests=1
if [ "${1:-}" = "--no-tests" ]; then run_tests=0; shift; fi
pythons=("$@")
[ ${#pythons[@]} -gt 0 ] || pythons=(3.10 3.11 3.12 3.13)
oldest=${pythons[0]}
newest=${pythons[${#pythons[@]}-1]}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

uv=$(command -v uv || true)
if [ -z "$uv" ]; then
  python3 -m venv "$tmp/uv-venv"
  "$tmp/uv-venv/bin/python" -m pip install -q uv 2>&1 | grep -v '^WARNING: Location' || true
  uv="$tmp/uv-venv/bin/uv"
fi

find_python() {
  local v=$1 root cand
  root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
  for cand in "$root"/versions/"$v".*/bin/python"$v"; do
    [ -x "$cand" ] && { echo "$cand"; return; }
  done
  cand=$(command -v "python$v" || true)
  if [ -n "$cand" ] && "$cand" -c 'pass' 2>/dev/null; then echo "$cand"; return; fi
  "$uv" python find "$v" 2>/dev/null || return 1
}

binary=(--only-binary psutil --only-binary pydantic-core)
suites=()
failed=()
summary=()
for v in "${pythons[@]}"; do
  py=$(find_python "$v") || { echo "python-matrix: no Python $v found" >&2; failed+=("$v: no interpreter"); continue; }
  for res in lowest-direct highest; do
    venv="$tmp/venv-$v-$res"
    "$uv" venv -q --seed -p "$py" "$venv"
    if ! "$uv" pip install -q -p "$venv/bin/python" --resolution "$res" "${binary[@]}" "$repo"; then
      failed+=("$v $res: install"); continue
    fi
    versions=$("$uv" pip list -p "$venv/bin/python" 2>/dev/null \
      | awk 'tolower($1) ~ /^(textual|nvidia-ml-py|psutil|pydantic|platformdirs|tomli|prometheus-client)$/ {printf "%s=%s ", $1, $2}')
    if (cd "$tmp" && "$venv/bin/gputui" --version >/dev/null \
        && "$venv/bin/gputui" snapshot --demo >/dev/null \
        && "$venv/bin/gputui" catalog match "NVIDIA GeForce RTX 3090" >/dev/null \
        && "$venv/bin/gputui" fit --gpu "RTX 3090" >/dev/null); then
      summary+=("ok   Python $v $res: $versions")
    else
      failed+=("$v $res: gputui did not run"); summary+=("FAIL Python $v $res: $versions")
    fi
    if [ "$run_tests" = 1 ] && { { [ "$v" = "$oldest" ] && [ "$res" = lowest-direct ]; } \
        || { [ "$v" = "$newest" ] && [ "$res" = highest ]; }; }; then
      tvenv="$tmp/tvenv-$v-$res"
      "$uv" venv -q --seed -p "$py" "$tvenv"
      "$uv" pip install -q -p "$tvenv/bin/python" --resolution "$res" "${binary[@]}" -e "$repo[test]"
      log="$tmp/tests-$v-$res.log"
      {
        echo "python-matrix: test suite on Python $v, $res versions:"
        "$uv" pip list -p "$tvenv/bin/python" 2>/dev/null \
          | awk 'tolower($1) ~ /^(textual|nvidia-ml-py|psutil|pydantic|platformdirs|tomli|prometheus-client|pytest|pytest-asyncio|pytest-textual-snapshot|hypothesis)$/ {printf "  %s %s\n", $1, $2}'
      } > "$log"
      # The two corner suites run side by side, each on two workers as `make test` runs it:
      # about half a suite's wall time is waits (subprocesses, servers, scrapes), which the
      # four workers overlap on the two cores.
      (cd "$repo" && exec "$tvenv/bin/python" -m pytest -q -p no:cacheprovider -n 2 --dist loadscope) \
        >> "$log" 2>&1 &
      suites+=("$!:$v $res:$log")
    fi
  done
done
for suite in "${suites[@]}"; do
  pid=${suite%%:*}; rest=${suite#*:}; name=${rest%%:*}; log=${rest#*:}
  if wait "$pid"; then
    grep -vE '^[.sxX]+ *(\[ *[0-9]+%\])?$' "$log"   # the versions and pytest's summary
  else
    cat "$log"; failed+=("$name: tests")
  fi
done
# The artefacts a release would publish: an sdist and a wheel, each installed into a fresh
# venv and run; and the tool-style install users type (`uv tool install .`).
"$uv" build -q -o "$tmp/dist" "$repo"
for art in "$tmp"/dist/gputui-*.tar.gz "$tmp"/dist/gputui-*.whl; do
  venv="$tmp/venv-art"; rm -rf "$venv"
  "$uv" venv -q --seed -p "$(find_python "$newest")" "$venv"
  if "$uv" pip install -q -p "$venv/bin/python" "${binary[@]}" "$art" \
      && (cd "$tmp" && "$venv/bin/gputui" --version >/dev/null && "$venv/bin/gputui" fit --all-cards >/dev/null); then
    summary+=("ok   $(basename "$art") installs and runs")
  else
    failed+=("$(basename "$art")"); summary+=("FAIL $(basename "$art")")
  fi
done
if UV_TOOL_DIR="$tmp/tools" UV_TOOL_BIN_DIR="$tmp/tools/bin" "$uv" tool install -q "$repo" \
    && (cd "$tmp" && "$tmp/tools/bin/gputui" --version >/dev/null); then
  summary+=("ok   uv tool install .")
else
  failed+=("uv tool install"); summary+=("FAIL uv tool install .")
fi

printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'python-matrix: FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "python-matrix: ok"
