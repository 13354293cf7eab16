#!/usr/bin/env bash
# Set everything up (see scripts/setup.sh) and start tuidbg on the bundled demo:
# a Python program calling a C library it builds here, with a SIGTRAP break-in.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$here/scripts/setup.sh"
mkdir -p "$here/demo/_build"
gcc -g -O0 -shared -fPIC "$here/demo/vecmath.c" -o "$here/demo/_build/libvecmath.so" -lm
cd "$here/demo"
exec "$here/.venv/bin/tuidbg" run -ex "break accumulate" demo.py "$@"
