#!/usr/bin/env bash
# Everything tuidbg needs on a fresh Debian machine, idempotent and non-interactive.
#
#   scripts/setup.sh          tuidbg itself: gdb, a C compiler (for the demo), .venv
#   scripts/setup.sh --test   also what the test suite needs: tmux, cuda-gdb (non-free),
#                             the test Python packages, and a Python 3.11 venv with
#                             PyTorch 2.13.0 (CPU) in .venv-torch (with ninja and pytest)
#
# Runs as root, or through sudo when it is available.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
want_test=0
[ "${1:-}" = "--test" ] && want_test=1

say() { printf 'setup: %s\n' "$*" >&2; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else SUDO=""; fi
fi

export DEBIAN_FRONTEND=noninteractive
apt_updated=0
apt_install() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" != 0 ] && [ -z "$SUDO" ]; then
        say "missing Debian packages: ${missing[*]} (run as root or install them)"; return 1
    fi
    if [ $apt_updated = 0 ]; then
        say "apt-get update"
        $SUDO apt-get update -qq </dev/null >/dev/null
        apt_updated=1
    fi
    say "installing ${missing[*]}"
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
}

enable_non_free() {
    # cuda-gdb is in Debian's non-free component; add it in a source list of our own.
    local list=/etc/apt/sources.list.d/tuidbg-non-free.sources
    if ! grep -rqsE '^(Components|deb ).*non-free( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null; then
        local codename
        codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
        say "adding Debian's non-free component ($list)"
        $SUDO tee "$list" >/dev/null <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $codename $codename-updates
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
        apt_updated=0
    fi
}

pkgs=(gdb gcc g++ make binutils python3 python3-venv python3-dev procps ca-certificates)
[ $want_test = 1 ] && pkgs+=(tmux file util-linux mount cgdb gdbserver iproute2 zsh)  # (zsh: tests/cli/test_completion.py; unshare, mount: tests/cli/test_bundle.py; cgdb: bench/step_tmux.py; gdbserver, iproute2: the second node of tests/cli/test_remote.py)
apt_install "${pkgs[@]}"

if [ $want_test = 1 ]; then
    if ! command -v cuda-gdb >/dev/null 2>&1; then
        enable_non_free
        apt_install nvidia-cuda-gdb || say "nvidia-cuda-gdb could not be installed: the cuda-gdb tests will say so"
    fi
fi

# The Python that runs tuidbg: python3 from PATH if it is >= 3.9 and has venv, else Debian's.
py=""
for cand in python3 /usr/bin/python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
        py="$cand"; break
    fi
done
[ -n "$py" ] || { say "no Python >= 3.9 with venv found"; exit 1; }

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import sys' 2>/dev/null; then
    say "creating .venv with $("$py" -c 'import sys; print(sys.executable)')"
    rm -rf .venv
    "$py" -m venv .venv
fi
stamp=.venv/.tuidbg-installed
extras=""
[ $want_test = 1 ] && extras="[test]"
# (an install with the test extras also serves the demo)
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || { [ -n "$extras" ] && ! grep -qxF -- "$extras" "$stamp"; }; then
    say "installing tuidbg$extras into .venv"
    .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
    .venv/bin/python -m pip install -q --disable-pip-version-check -e ".$extras"
    printf '%s\n' "$extras" > "$stamp"
fi

if [ $want_test = 1 ]; then
    # PyTorch for the mixed-stack test: CPU wheel 2.13.0 for Python 3.11 (never another
    # spelling: those pull several GB of CUDA wheels).
    torch_py=""
    for cand in /usr/bin/python3.11 "$(command -v python3.11 || true)"; do
        if [ -n "$cand" ] && [ -x "$cand" ] && "$cand" -c 'import venv, ensurepip' 2>/dev/null; then torch_py="$cand"; break; fi
    done
    if [ -z "$torch_py" ]; then
        say "no Python 3.11 with venv: the PyTorch tests will say so"
    elif [ ! -f .venv-torch/.torch-installed ]; then
        say "creating .venv-torch with $torch_py and torch==2.13.0 (CPU)"
        rm -rf .venv-torch
        "$torch_py" -m venv .venv-torch
        if .venv-torch/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0; then
            touch .venv-torch/.torch-installed
        else
            say "torch==2.13.0 could not be installed: the PyTorch tests will say so"
        fi
    fi
    # ninja builds the custom-operator test's C++ extension (torch.utils.cpp_extension.load_inline).
    if [ -x .venv-torch/bin/python ] && ! .venv-torch/bin/python -c 'import ninja' 2>/dev/null; then
        say "installing ninja into .venv-torch (C++ extension builds)"
        .venv-torch/bin/python -m pip install -q --disable-pip-version-check ninja \
            || say "ninja could not be installed: the custom-operator tests will say so"
    fi
    # pytest runs the custom operator from a test (tests/programs/py/torch_op_checks.py under
    # `python -m pytest`: the README's PyTorch screenshot and its engine test). Pinned to the version the
    # project's own venv has: the screenshot shows pytest's header, which a new release would change.
    if [ -x .venv-torch/bin/python ] && ! .venv-torch/bin/python -c 'import pytest' 2>/dev/null; then
        say "installing pytest into .venv-torch (the custom operator called from a pytest test)"
        .venv-torch/bin/python -m pip install -q --disable-pip-version-check pytest==8.4.2 \
            || say "pytest could not be installed: the custom operator's pytest test will say so"
    fi
fi
if [ $want_test = 1 ]; then
    # scripts/gpu-check.sh's wheels (tuidbg's dependencies for a GPU machine's CPython 3.12), in .whl/ (git
    # ignores it; a GPU run carries it): its dry-run test installs them the way the GPU machine does
    if [ ! -f .whl/REQUIREMENTS ] || [ pyproject.toml -nt .whl/REQUIREMENTS ]; then
        say "fetching the wheels scripts/gpu-check.sh carries to a GPU machine into .whl/"
        PYTHON=.venv/bin/python bash scripts/gpu-check.sh --fetch-wheels \
            || say "the wheels could not be fetched: the GPU check's dry-run test will say so"
    fi
fi
[ $want_test = 1 ] && { bash scripts/build-cpython314.sh || say "CPython 3.14 could not be built: the 3.14 tests will say so"; }
say "ready"
