#!/usr/bin/env bash
# The offline bundle, built from this checkout:
#
#   bash scripts/bundle.sh [--python 3.X]... [--arch x86_64|aarch64]... OUTDIR
#
#   OUTDIR/wheels/     tuidbg's wheel and every dependency's, for each target CPython and
#                      architecture (default: 3.9 to 3.14, x86_64 and aarch64, manylinux2014:
#                      glibc 2.17 or newer). Install with no network:
#                        pip install --no-index --find-links OUTDIR/wheels tuidbg
#   OUTDIR/tuidbg.pyz  one file, a PEX zipapp of the same wheels, that runs with any of those
#                      Pythons: python3 tuidbg.pyz dump PID. On its first run it unpacks into
#                      $PEX_ROOT (default ~/.cache/pex; a temporary directory when that is not
#                      writable).
#
# Building uses the package index as pip is configured to (PIP_INDEX_URL, pip.conf); installing
# and running the bundle do not. Each target is resolved with its own Python version's markers
# (pex does this; `pip download --python-version` evaluates markers with the Python that runs it,
# and would leave tomli out for 3.9 and 3.10). A target for which some dependency has no wheel is
# left out with one line saying so; the script fails only when no target is left. The tool is pex (the `bundle` extra in pyproject.toml): from .venv when it is
# installed there, else in a venv of its own under ~/.cache/tuidbg/bundle-tools.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEX_REQ="pex>=2.105,<3"  # (the same as the bundle extra in pyproject.toml)
say() { printf 'bundle: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

pythons=()
archs=()
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --python) [ $# -ge 2 ] || die "--python needs a version (3.9 ... 3.14)"
                  [[ "$2" =~ ^3\.[0-9]+$ ]] || die "--python $2: give a CPython version such as 3.11"
                  pythons+=("$2"); shift 2 ;;
        --arch) [ $# -ge 2 ] || die "--arch needs x86_64 or aarch64"
                [[ "$2" =~ ^(x86_64|aarch64)$ ]] || die "--arch $2: x86_64 or aarch64"
                archs+=("$2"); shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option $1 (bash scripts/bundle.sh [--python 3.X]... [--arch ARCH]... OUTDIR)" ;;
        *) [ -z "$out" ] || die "one OUTDIR only ($out, $1)"; out="$1"; shift ;;
    esac
done
[ -n "$out" ] || die "usage: bash scripts/bundle.sh [--python 3.X]... [--arch x86_64|aarch64]... OUTDIR"
[ ${#pythons[@]} -gt 0 ] || pythons=(3.9 3.10 3.11 3.12 3.13 3.14)
[ ${#archs[@]} -gt 0 ] || archs=(x86_64 aarch64)
mkdir -p "$out" || die "cannot create $out"
out="$(cd "$out" && pwd)"

# The tool: pex, with a Python that has pip (for tuidbg's own wheel).
py=""
if "$here/.venv/bin/python" -c 'import pex, pip' 2>/dev/null; then
    py="$here/.venv/bin/python"
else
    tools="${XDG_CACHE_HOME:-$HOME/.cache}/tuidbg/bundle-tools"
    if ! "$tools/bin/python" -c 'import pex, pip' 2>/dev/null; then
        say "installing $PEX_REQ into $tools"
        rm -rf "$tools"
        python3 -m venv "$tools" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
        "$tools/bin/python" -m pip install -q --disable-pip-version-check "$PEX_REQ" || die "could not install $PEX_REQ"
    fi
    py="$tools/bin/python"
fi
bin="$(dirname "$py")"

work="$(mktemp -d "${TMPDIR:-/tmp}/tuidbg-bundle.XXXXXX")"
trap 'rm -rf "$work"' EXIT
rm -rf "$out/wheels" "$out/tuidbg.pyz"
mkdir -p "$out/wheels"

say "building tuidbg's wheel from $here"
"$py" -m pip wheel -q --disable-pip-version-check --no-deps -w "$work/own" "$here" >"$work/own.log" 2>&1 \
    || { cat "$work/own.log" >&2; die "could not build tuidbg's wheel"; }
own="$(ls "$work"/own/tuidbg-*.whl)"
version="$(basename "$own" | cut -d- -f2)"
cp "$own" "$out/wheels/"

# All targets in one resolve (pex runs them in parallel); when that fails, one target at a time,
# so that a dependency with no wheel for one target leaves out that one only, with one line.
download() {  # download LOG DEST PLATFORM...
    local log="$1" dest="$2" args=()
    shift 2
    for plat in "$@"; do args+=(--platform "$plat"); done
    "$bin/pex3" download --use-pip-config --resolver-version pip-2020-resolver --wheel --no-build \
        "${args[@]}" -d "$dest" "$own" >"$log" 2>&1
}
all=()
labels=()  # "CPython 3.9 on x86_64" for each platform in all
for v in "${pythons[@]}"; do
    for a in "${archs[@]}"; do
        all+=("manylinux2014_${a}-cp-${v/./}-cp${v/./}")
        labels+=("CPython $v on $a")
    done
done
platforms=()
done_targets=()
if download "$work/log" "$work/dl/all" "${all[@]}"; then
    platforms=("${all[@]}")
    done_targets=("${labels[@]}")
else
    rm -rf "$work/dl/all"
    for i in "${!all[@]}"; do
        if download "$work/log" "$work/dl/$i" "${all[$i]}"; then
            platforms+=("${all[$i]}")
            done_targets+=("${labels[$i]}")
        else
            why="$(grep -oE 'No matching distribution found for .*' "$work/log" | head -1 \
                   | sed 's/^No matching distribution found for /no wheel of /' || true)"
            [ -n "$why" ] || why="$(grep -oE "(ERROR|Error): .*" "$work/log" | tail -1 || true)"
            [ -n "$why" ] || why="$(tail -1 "$work/log")"
            say "${labels[$i]} left out: $why"
            rm -rf "$work/dl/$i"
        fi
    done
fi
[ ${#platforms[@]} -gt 0 ] || die "no target could be resolved (is the package index reachable?)"
for d in "$work"/dl/*/; do cp -n "$d"*.whl "$out/wheels/"; done

# The zipapp, from the wheelhouse only (no index): it carries exactly the wheels above. Run with an
# older Python, it runs itself with a python3.9+ from PATH (pex's interpreter constraint), or says
# that it found none.
pex_platforms=()
for plat in "${platforms[@]}"; do pex_platforms+=(--platform "$plat"); done
"$bin/pex" --no-pypi -f "$out/wheels" --resolver-version pip-2020-resolver "${pex_platforms[@]}" \
    --interpreter-constraint 'CPython>=3.9' "tuidbg==$version" -c tuidbg --python-shebang '/usr/bin/env python3' \
    -o "$out/tuidbg.pyz" >"$work/log" 2>&1 \
    || { cat "$work/log" >&2; die "pex could not build tuidbg.pyz"; }

n="$(ls "$out/wheels" | wc -l)"
size="$(du -h "$out/tuidbg.pyz" | cut -f1)"
targets=""
for a in "${archs[@]}"; do  # "CPython 3.9 3.10 on x86_64; CPython 3.9 on aarch64"
    vs="$(printf '%s\n' "${done_targets[@]}" | sed -n "s/^CPython \(.*\) on $a\$/\1/p" | tr '\n' ' ')"
    [ -z "$vs" ] || targets="${targets:+$targets; }CPython ${vs% } on $a"
done
say "tuidbg $version: $out/wheels ($n wheels) and $out/tuidbg.pyz ($size) for $targets"
