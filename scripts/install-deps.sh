#!/usr/bin/env bash
# Installs everything TierDB's build, tests and demo need on Debian 12, idempotently.
# Quiet when there is nothing to do; safe to run on every `make check`.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)

debian_packages=(
  build-essential pkg-config clang libclang-rt-14-dev llvm
  libjansson-dev libzstd-dev libsnappy-dev zlib1g-dev liblz4-dev
  libbrotli-dev libcurl4-openssl-dev libpq-dev libmicrohttpd-dev
  postgresql-15 postgresql-server-dev-15
  python3-venv
)

missing=()
for pkg in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python virtual environment for the interop tests and benchmarks.
venv="$top/.venv"
requirements="$top/scripts/requirements.txt"
stamp="$venv/.requirements-installed"
if [ ! -x "$venv/bin/python" ]; then
  echo "install-deps: creating Python virtual environment in .venv"
  python3 -m venv "$venv"
fi
if [ ! -f "$stamp" ] || ! cmp -s "$requirements" "$stamp"; then
  echo "install-deps: installing Python packages from scripts/requirements.txt"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$stamp"
fi
