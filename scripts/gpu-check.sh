#!/usr/bin/env bash
# tuidbg's CUDA features on a real GPU with a real cuda-gdb, every MI exchange recorded (issue 34).
#
#   bash scripts/gpu-check.sh OUTDIR              on a machine with a GPU, cuda-gdb and nvcc: fetches
#                                                 nothing; fits in 8 minutes (GPU_CHECK_BUDGET)
#   bash scripts/gpu-check.sh --dry-run OUTDIR    here, without a GPU: everything that needs none
#   bash scripts/gpu-check.sh --fetch-wheels      (where pip can download) tuidbg's dependencies as
#                                                 wheels for CPython 3.12 x86_64 into .whl/
#
# Options: --only NAME,...  (some scenes only), --timeout NAME=SECONDS (a scene's own timeout),
# --budget SECONDS (the whole run's, from the start of this script; default 450).
#
# Steps: (1) the machine's facts into OUTDIR/machine.txt; (2) the carried wheels (.whl/, or $WHEELS)
# installed into a private folder with pip --no-index; (3) meanwhile, the CUDA test programs built
# with nvcc -g -G for this machine's GPU (tests/programs/cuda/gpucheck.cu; the torch custom operator is
# built by the driver, in the background); (4) the scenes (scripts/gpucheck/scenes.py), each a
# cuda-gdb of its own driven by tuidbg's engine, headless, in a process of its own with its own
# timeout: OUTDIR/NN_SCENE.mi.txt (the transcript) and NN_SCENE.json (what the engine showed), then
# OUTDIR/meta.json and OUTDIR/summary.txt. Exit 0 when every scene passed (dry run: passed, or went
# as far as it could without a device), 1 when one did not, 2 when the script could not start.
#
# Environment: PYTHON (default python3: the one with torch), CUDA_GDB, NVCC (default: on PATH or
# under /usr/local/cuda/bin), WHEELS (default .whl), GPU_CHECK_WORK (builds and the private folder;
# default a new temporary folder, removed at the end), GPU_CHECK_ARCH (default: the GPU's, e.g. sm_90;
# sm_75 on a dry run).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
t0=$(date +%s)
say() { printf 'gpu-check: %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }

dry=0
fetch=0
out=""
budget="${GPU_CHECK_BUDGET:-450}"
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) dry=1; shift ;;
        --fetch-wheels) fetch=1; shift ;;
        --only) [ $# -ge 2 ] || die "--only needs scene names (NAME,NAME)"; extra+=(--only "$2"); shift 2 ;;
        --timeout) [ $# -ge 2 ] || die "--timeout needs NAME=SECONDS"; extra+=(--timeout "$2"); shift 2 ;;
        --budget) [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || die "--budget needs a number of seconds"; budget="$2"; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option $1 (bash scripts/gpu-check.sh --help)" ;;
        *) [ -z "$out" ] || die "one OUTDIR only ($out, $1)"; out="$1"; shift ;;
    esac
done

wheels="${WHEELS:-$here/.whl}"
PY="${PYTHON:-python3}"

if [ $fetch = 1 ]; then
    # tuidbg's runtime dependencies (pyproject.toml) for the GPU machine's CPython 3.12 on x86_64,
    # resolved together (one version of each), nothing else: its image has torch and the rest.
    reqs=$(cd "$here" && "$PY" - <<'EOF'
import re, sys
try:
    import tomllib
except ImportError:
    import tomli as tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
print("\n".join(d for d in deps if "python_version < '3.11'" not in d))
EOF
) || die "cannot read the dependencies from pyproject.toml (needs Python 3.11+ or tomli)"
    mkdir -p "$wheels" || die "cannot create $wheels"
    rm -f "$wheels"/*.whl
    mapfile -t req_list <<<"$reqs"
    "$PY" -m pip download -q --disable-pip-version-check --only-binary=:all: --dest "$wheels" \
        --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64 --platform any \
        "${req_list[@]}" || die "pip download failed"
    printf '%s\n' "$reqs" >"$wheels/REQUIREMENTS"  # (what they were fetched for: scripts/setup.sh compares)
    say "$(ls "$wheels"/*.whl | wc -l) wheels in $wheels ($(du -sh "$wheels" | cut -f1)); a GPU run carries this folder"
    exit 0
fi

[ -n "$out" ] || die "usage: bash scripts/gpu-check.sh [--dry-run] OUTDIR (--help says more)"
mkdir -p "$out" || die "cannot create $out"
[ -z "$(ls -A "$out")" ] || die "$out is not empty: give a new folder (its transcripts are the record of one run)"
out="$(cd "$out" && pwd)"

if [ -n "${GPU_CHECK_WORK:-}" ]; then
    work="$GPU_CHECK_WORK"
    mkdir -p "$work" || die "cannot create $work"
else
    work="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")" || die "cannot make a temporary folder"
    trap 'rm -rf "$work"' EXIT
fi
work="$(cd "$work" && pwd)"

find_tool() {  # find_tool NAME: on PATH, else under the usual CUDA folders
    local name=$1 c
    command -v "$name" 2>/dev/null && return 0
    for c in /usr/local/cuda/bin/"$name" /usr/local/cuda-*/bin/"$name" /opt/cuda/bin/"$name"; do
        [ -x "$c" ] && { echo "$c"; return 0; }
    done
    return 1
}
cuda_gdb="${CUDA_GDB:-$(find_tool cuda-gdb)}" || die "no cuda-gdb (set CUDA_GDB)"
nvcc="${NVCC:-$(find_tool nvcc)}" || die "no nvcc (set NVCC)"
command -v "$PY" >/dev/null 2>&1 || die "no $PY (set PYTHON to the Python that has torch)"
ls "$wheels"/*.whl >/dev/null 2>&1 || die "no wheels in $wheels: run 'bash scripts/gpu-check.sh --fetch-wheels' where pip can download, and carry that folder"

# (1) the machine (torch's import takes seconds: meanwhile, the rest)
machine="$out/machine.txt"
timeout 120 "$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' \
    >"$work/torch.txt" 2>&1 &
torch_probe=$!
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "uname: $(uname -srm)"
    if command -v nvidia-smi >/dev/null 2>&1 && q=$(timeout 60 nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader 2>/dev/null) && [ -n "$q" ]; then
        IFS=',' read -r gpu driver cc mem <<<"$(head -1 <<<"$q")"
        echo "gpu: $(echo $gpu)"; echo "driver: $(echo $driver)"; echo "compute_cap: $(echo $cc)"; echo "memory: $(echo $mem)"
    else
        echo "gpu: none (nvidia-smi: $(command -v nvidia-smi >/dev/null 2>&1 && echo 'no answer' || echo 'not installed'))"
    fi
    echo "cuda_gdb: $cuda_gdb"
    echo "cuda_gdb_version: $(timeout 60 "$cuda_gdb" --version 2>&1 | grep -v '^Portions\|^Copyright\|^License\|^This is free\|^There is NO\|^and "show\|^This GDB\|^Type "show\|^For bug\|^Find the GDB\|^<http\|^For help\|^Type "apropos\|^--Type\|^$' | head -3 | tr '\n' ' ')"
    echo "nvcc: $nvcc $(timeout 60 "$nvcc" --version 2>&1 | tail -1)"
    cs=$(find_tool compute-sanitizer) && echo "compute_sanitizer: $(timeout 60 "$cs" --version 2>&1 | grep -i version | head -1)"
    echo "python: $(command -v "$PY") $("$PY" -c 'import sys; print(sys.version.split()[0])' 2>&1)"
    echo "cpus: $(nproc)"
    wait $torch_probe
    echo "torch: $(tail -1 "$work/torch.txt")"
} >"$machine" 2>&1
sed 's/^/  /' "$machine" >&2
arch="${GPU_CHECK_ARCH:-}"
if [ -z "$arch" ]; then
    if [ $dry = 1 ]; then
        arch=sm_75  # the oldest target nvcc 13 builds and one that cuda-gdb 11.8 reads
    else
        cc=$(sed -n 's/^compute_cap: \([0-9]*\)\.\([0-9]*\)$/\1\2/p' "$machine")
        [ -n "$cc" ] || die "no GPU found (nvidia-smi): on a machine without one, use --dry-run"
        arch="sm_$cc"
    fi
fi

# (3) the CUDA test programs, built while (2) installs the wheels
src="$here/tests/programs/cuda"
nvcc_jobs=()
build() {  # build WHAT OUTPUT COMMAND... (in the background; see built). A GPU_CHECK_WORK that has
    local what=$1 output=$2 stamp="$nvcc -g -G -arch=$arch"; shift 2  # it built already is kept
    [ -e "$output" ] && [ "$output" -nt "$src/$what.cu" ] && [ "$(cat "$output.how" 2>/dev/null)" = "$stamp" ] && return 0
    ( timeout 300 "$@" >"$work/nvcc-$what.log" 2>&1 && echo "$stamp" >"$output.how" ) &
    nvcc_jobs+=("$!:$what")
}
built() {  # wait for the builds; the first that failed ends the script with nvcc's words
    local job
    for job in ${nvcc_jobs[@]+"${nvcc_jobs[@]}"}; do
        wait "${job%%:*}" || { cat "$work/nvcc-${job#*:}.log" >&2; die "nvcc could not build ${job#*:}"; }
    done
}
build gpucheck "$work/gpucheck" "$nvcc" -g -G -arch="$arch" -o "$work/gpucheck" "$src/gpucheck.cu"
# the operator's kernel half alone (torch's build compiles it again, with torch's flags): a mistake
# in it shows here in seconds, also on a dry run, where torch has no CUDA to build the operator with
build gpucheck_op "$work/gpucheck_op.o" "$nvcc" -g -G -arch="$arch" -c -o "$work/gpucheck_op.o" "$src/gpucheck_op.cu"

# (2) tuidbg's dependencies from the carried wheels, into a private folder
site="$work/site"
how="$(command -v "$PY") $(cd "$wheels" && ls -l -- *.whl | md5sum)"  # (a GPU_CHECK_WORK that has them keeps them)
if [ "$(cat "$site/.how" 2>/dev/null)" != "$how" ]; then
    rm -rf "$site"
    "$PY" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$wheels"/*.whl \
        || die "pip could not install the wheels of $wheels into $site"
    echo "$how" >"$site/.how"
fi
pypath="$site:$here:$here/scripts"
PYTHONPATH="$pypath" "$PY" -c 'import textual, pygdbmi, rich, psutil, tuidbg.engine.debugger' \
    || die "tuidbg's engine does not import with the wheels of $wheels"
say "wheels installed into $site ($(ls "$wheels"/*.whl | wc -l) from $wheels)"

built
say "built with $nvcc -g -G -arch=$arch, $(( $(date +%s) - t0 )) s since the start"

# (4) the scenes
dry_flag=()
[ $dry = 1 ] && dry_flag=(--dry-run)
PYTHONPATH="$pypath" "$PY" -m gpucheck run --out "$out" --work "$work" --cuda-gdb "$cuda_gdb" --python "$(command -v "$PY")" \
    --budget "$budget" --started "$t0" --arch "$arch" --machine "$machine" "${dry_flag[@]}" "${extra[@]}"
rc=$?
say "$out/summary.txt ($(( $(date +%s) - t0 )) s)"
exit $rc
