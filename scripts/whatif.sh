#!/usr/bin/env bash
# Builds daydream-whatif (Release) and runs it; arguments go to the program.
# With no arguments it analyses the bundled ResNet-50 trace.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${DAYDREAM_BUILD_DIR:-build-release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAYDREAM_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target daydream-whatif >/dev/null
exec "$build/examples/daydream-whatif" "$@"
