#!/usr/bin/env bash
# CPython 3.14 for the tests, built from Debian's source package and cached outside the
# checkout (a fresh clone on the same machine reuses it):
#
#   $CACHE/default/bin/python3.14        --enable-shared, -O2 -g (DWARF in libpython)
#   $CACHE/stripped/bin/python3.14       a copy of it with libpython and python3.14 stripped
#                                        of their debug info (objcopy --strip-debug)
#   $CACHE/freethreaded/bin/python3.14t  --disable-gil, -O2 -g
#   $CACHE/STATUS                        "ok VERSION", or "skipped: WHY" (the tests read it)
#
# CACHE is $TUIDBG_CPYTHON314_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/tuidbg/cpython-3.14.
# Usage: scripts/build-cpython314.sh [--print-cache]
#
# The source: Debian's python3.14 source package (unstable, testing or experimental),
# through apt with a source list and state directory of the script's own under $CACHE
# (the system's apt never sees unstable). When the mirror cannot give the version its
# index names (an index newer than the pool), the pinned release below, checked against
# the SHA-256 from its .dsc. No source: STATUS says why and the script exits 0 (the
# 3.14 tests then skip with that reason).
#
# Only what the tests need is built: no PGO/LTO, no test modules, no ensurepip, and no
# tkinter, sqlite, dbm, curses, readline, ssl/hashlib, decimal, lzma, bz2, uuid. ctypes
# (libffi-dev), zlib, _socket, _json, select... stay in.
set -euo pipefail

CACHE="${TUIDBG_CPYTHON314_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tuidbg/cpython-3.14}"
if [ "${1:-}" = "--print-cache" ]; then
    printf '%s\n' "$CACHE"
    exit 0
fi
if [ $# -gt 0 ]; then
    printf 'usage: %s [--print-cache]\n' "$0" >&2
    exit 2
fi

PINNED_VERSION=3.14.7
PINNED_DEB=3.14.7-1
PINNED_SHA256=3b48dac8fb59f62eaa67ac83c1eb12bda1b7a08406dd286e252c11a66be27f81
# What the stamps record: a change here rebuilds.
CONFIG_ID="v1 -O2 -g shared no-test-modules"

say() { printf 'build-cpython314: %s\n' "$*" >&2; }
mkdir -p "$CACHE"
status() { printf '%s\n' "$*" >"$CACHE/STATUS"; }
skip() {
    say "skipped: $*"
    status "skipped: $*"
    exit 0
}

built() { # prefix exe
    [ -x "$1/bin/$2" ] && [ -f "$1/.tuidbg-built" ] && [ "$(cat "$1/.tuidbg-built")" = "$VERSION $CONFIG_ID" ]
}

# -- already built? --------------------------------------------------------------------------
if [ -f "$CACHE/VERSION" ]; then
    VERSION="$(cat "$CACHE/VERSION")"
    if built "$CACHE/default" python3.14 && built "$CACHE/stripped" python3.14 && built "$CACHE/freethreaded" python3.14t; then
        status "ok $VERSION"
        say "CPython $VERSION already built in $CACHE"
        exit 0
    fi
fi

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive

# -- build dependencies ------------------------------------------------------------------------
deps=(gcc make binutils pkg-config libffi-dev zlib1g-dev xz-utils curl ca-certificates)
missing=()
for p in "${deps[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ] && [ -z "$SUDO" ]; then
        skip "missing Debian packages ${missing[*]} (run as root or install them)"
    fi
    say "installing ${missing[*]}"
    $SUDO apt-get update -qq </dev/null >/dev/null || true
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null \
        || skip "could not install ${missing[*]}"
fi

# -- the source --------------------------------------------------------------------------------
src="$CACHE/src"
mkdir -p "$src"
tarball="$(ls -1 "$src"/python3.14_3.14.*.orig.tar.xz 2>/dev/null | sort -V | tail -1 || true)"
if [ -z "$tarball" ]; then
    # The mirror the system uses (first URIs of its deb822 list, or the first deb line).
    mirror="$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)"
    [ -n "$mirror" ] || mirror="$(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\(http[^[:space:]]*\).*/\2/p' /etc/apt/sources.list 2>/dev/null | head -1)"
    [ -n "$mirror" ] || mirror="http://deb.debian.org/debian"
    apt_dir="$CACHE/apt"
    mkdir -p "$apt_dir/etc" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
    cat >"$apt_dir/etc/tuidbg-unstable-src.sources" <<EOF
Types: deb-src
URIs: $mirror
Suites: unstable testing experimental
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt_opts=(-o "Dir::Etc::sourcelist=/dev/null" -o "Dir::Etc::sourceparts=$apt_dir/etc"
              -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
              -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1")
    if apt-get "${apt_opts[@]}" update -qq </dev/null >"$apt_dir/update.log" 2>&1; then
        # Every version the index names, newest first.
        versions="$(apt-cache "${apt_opts[@]}" showsrc python3.14 2>/dev/null | sed -n 's/^Version: //p' | sort -rV | uniq)"
        for v in $versions; do
            say "apt-get source python3.14=$v"
            if (cd "$src" && apt-get "${apt_opts[@]}" source -qq --download-only "python3.14=$v" </dev/null >"$apt_dir/source.log" 2>&1); then
                break
            fi
        done
    else
        say "apt-get update for Debian's source index failed (see $apt_dir/update.log)"
    fi
    rm -f "$src"/*.debian.tar.* "$src"/*.dsc
    tarball="$(ls -1 "$src"/python3.14_3.14.*.orig.tar.xz 2>/dev/null | sort -V | tail -1 || true)"
    if [ -z "$tarball" ]; then
        # The index can be ahead of the mirror's pool: take the pinned release from the pool.
        url="$mirror/pool/main/p/python3.14/python3.14_$PINNED_VERSION.orig.tar.xz"
        say "no version the index names could be downloaded; fetching the pinned $PINNED_DEB"
        part="$src/python3.14_$PINNED_VERSION.orig.tar.xz.part"
        if curl -sSf -o "$part" "$url" && echo "$PINNED_SHA256  $part" | sha256sum -c --status; then
            mv "$part" "$src/python3.14_$PINNED_VERSION.orig.tar.xz"
            tarball="$src/python3.14_$PINNED_VERSION.orig.tar.xz"
        else
            rm -f "$part"
            skip "Debian's python3.14 source package could not be downloaded (no network to a Debian mirror?)"
        fi
    fi
fi
VERSION="$(basename "$tarball" | sed 's/^python3.14_\(.*\)\.orig\.tar\.xz$/\1/')"
printf '%s\n' "$VERSION" >"$CACHE/VERSION"
say "CPython $VERSION from $(basename "$tarball")"

tree="$src/Python-$VERSION"
if [ ! -f "$tree/configure" ]; then
    rm -rf "$tree"
    tar -C "$src" -xJf "$tarball"
    [ -f "$tree/configure" ] || skip "$(basename "$tarball") does not hold Python-$VERSION/configure"
fi

# -- build ---------------------------------------------------------------------------------------
jobs="$(nproc 2>/dev/null || echo 2)"
# Modules the tests do not need (configure's py_cv_module_NAME=n/a leaves one out).
no_modules=()
for m in _tkinter _sqlite3 _dbm _gdbm _ssl _hashlib _curses _curses_panel readline _uuid _decimal _lzma _bz2 _zstd; do
    no_modules+=("py_cv_module_$m=n/a")
done

build() { # name prefix exe configure-args...
    local name="$1" prefix="$2" exe="$3"
    shift 3
    built "$prefix" "$exe" && return 0
    local bdir="$CACHE/build-$name" t0
    t0=$(date +%s)
    rm -rf "$bdir" "$prefix"
    mkdir -p "$bdir"
    say "building $name into $prefix (log: $bdir/build.log)"
    (
        cd "$bdir"
        # $ORIGIN: the interpreter finds its libpython next to it, in any copy of the prefix.
        "$tree/configure" --prefix="$prefix" --enable-shared --without-ensurepip --disable-test-modules \
            --without-static-libpython "$@" "${no_modules[@]}" \
            OPT="-DNDEBUG -g -O2" LDFLAGS='-Wl,-rpath,\$$ORIGIN/../lib' >build.log 2>&1
        make -j"$jobs" >>build.log 2>&1
        make install COMPILEALL_OPTS="-j0" >>build.log 2>&1
    ) || { tail -30 "$bdir/build.log" >&2; say "the $name build failed (log: $bdir/build.log)"; exit 1; }
    "$prefix/bin/$exe" -c 'import ctypes, zlib, socket, json, select, threading' \
        || { say "the $name build lacks a module the tests need"; exit 1; }
    printf '%s\n' "$VERSION $CONFIG_ID" >"$prefix/.tuidbg-built"
    rm -rf "$bdir"
    say "$name: $(( $(date +%s) - t0 ))s"
}

build default "$CACHE/default" python3.14
build freethreaded "$CACHE/freethreaded" python3.14t --disable-gil

if ! built "$CACHE/stripped" python3.14; then
    rm -rf "$CACHE/stripped"
    cp -a "$CACHE/default" "$CACHE/stripped"
    rm -f "$CACHE/stripped/.tuidbg-built"
    objcopy --strip-debug "$CACHE/stripped/lib/libpython3.14.so.1.0"
    objcopy --strip-debug "$CACHE/stripped/bin/python3.14"
    "$CACHE/stripped/bin/python3.14" -c 'import sys; assert sys.prefix == sys.argv[1], sys.prefix' "$CACHE/stripped"
    printf '%s\n' "$VERSION $CONFIG_ID" >"$CACHE/stripped/.tuidbg-built"
fi
status "ok $VERSION"
say "CPython $VERSION ready in $CACHE"
