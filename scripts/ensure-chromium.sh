#!/usr/bin/env bash
# Makes sure a headless-capable Chromium exists at /usr/bin/chromium for the live lease page test
# (test/cli/page.test.ts drives it with playwright-core). Installs Debian's `chromium` package when it
# is missing; needs root (or sudo) and apt access. Idempotent: does nothing when Chromium is present.
set -euo pipefail

CHROMIUM="${LEASEHOLD_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
  exit 0
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "ensure-chromium: $CHROMIUM is missing and this is not root (no sudo): install Debian's chromium package" >&2; exit 1; }
  as_root=(sudo)
fi

echo "ensure-chromium: installing Debian's chromium package" >&2
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends chromium >/dev/null
[ -x "$CHROMIUM" ] || { echo "ensure-chromium: installed, but $CHROMIUM is still missing" >&2; exit 1; }
"$CHROMIUM" --version >&2
