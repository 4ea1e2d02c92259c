#!/usr/bin/env bash
# A plain, non-editable `pip install .` into a fresh venv must give a working
# `gputui` from any directory: its catalog and scenarios travel in the wheel.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q "$repo" 2>&1 | grep -v '^WARNING: Location' || true
cd "$tmp"   # not the checkout: nothing may be read from it
"$tmp/venv/bin/gputui" --version
"$tmp/venv/bin/gputui" snapshot --demo >/dev/null
"$tmp/venv/bin/gputui" catalog match "NVIDIA GeForce RTX 3090" >/dev/null
"$tmp/venv/bin/python" - <<'PY'
import gputui.core.resources as r
p = str(r.catalog_dir())
assert "site-packages" in p, p
print("install-check: catalog from", p)
PY
echo "install-check: ok"
