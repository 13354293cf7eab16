"""``python -m gpucheck``: the scenes of scripts/gpu-check.sh, each in a process of its own.

    python -m gpucheck run --out OUT --work WORK --cuda-gdb PATH --python PY --budget SECONDS [--dry-run]
                           [--only NAME,...] [--timeout NAME=SECONDS]... [--machine FILE]
    python -m gpucheck scene NAME --config WORK/config.json --out OUT --index N

``run`` (the driver) starts the build of the torch custom operator in the background, then runs the
scenes one after another, each as ``scene`` in a child process with its own timeout, all within the
time budget: a scene that runs past its timeout is ended (its cuda-gdb and program with it) and its
transcript kept; the scenes the budget leaves no time for are reported as not run. At the end it
writes OUT/meta.json (what ran where: the machine, the paths the transcripts name, every scene's
result) and OUT/summary.txt, prints the summary, and exits 0 when every scene passed (on a dry run:
passed, or went as far as it could without a device), else 1.

``scene`` runs one scene: OUT/NN_NAME.mi.txt (the transcript: ``gpucheck.record``) and
OUT/NN_NAME.json (its marks, steps, notes and status), and writes the pids of its cuda-gdb and program
to WORK/NN_NAME.pids as soon as they are known (the driver ends them if the scene's process cannot).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from gpucheck.record import RecordingTransport, TranscriptWriter
from gpucheck.scene import NeedsDevice, Programs, SceneFailed, SceneRun
from gpucheck.scenes import SCENES, scene as find_scene

PASSED, DEVICE, FAILED, TIMEOUT, NOT_RUN = "passed", "device-needed", "failed", "timeout", "not run"
EXIT_PASSED, EXIT_FAILED, EXIT_DEVICE = 0, 1, 3
KILL_GRACE = 8.0  # seconds a scene's process has to end itself after SIGTERM
OP_BUILD_TIMEOUT = 300.0
SUMMARY_RESERVE = 5.0  # seconds of the budget kept for writing the summary


def say(text: str) -> None:
    print(f"gpu-check: {text}", flush=True)


# -- one scene (the child) ----------------------------------------------------------------------------


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _write_pid(path: str, what: str, pid: int) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{what} {pid} {_start_time(pid) or '-'}\n")


def transcript_header(cfg: dict[str, Any], name: str, what: str) -> list[str]:
    m = cfg["machine"]
    where = (f"on a machine WITHOUT a GPU (a dry run of scripts/gpu-check.sh: the scene goes as far as it can)"
             if cfg["dry"] else f"on {m.get('gpu') or 'a GPU machine'} (driver {m.get('driver') or '?'})")
    return [
        f"CAPTURED (not synthesized) with the real cuda-gdb {cfg['cuda_gdb_version']} ({cfg['cuda_gdb_banner_line']}) {where},",
        f"{cfg['date']}, by scripts/gpu-check.sh: scene {name}, {what}.",
        "Format (scripts/gpucheck/record.py): '-> TOKEN-COMMAND' is what tuidbg sent, every other line cuda-gdb's stdout as",
        "read, in order; '# mark: NAME' where the scene wrote down what the engine showed (the .json beside this file),",
        "'# stderr: TEXT' cuda-gdb's stderr. Paths are as they were on that machine (meta.json: repo, work).",
    ]


async def _run_scene(args: argparse.Namespace, cfg: dict[str, Any]) -> int:
    sc = find_scene(args.name)
    stem = f"{args.index:02d}_{sc.name}"
    out = Path(args.out)
    writer = TranscriptWriter(str(out / f"{stem}.mi.txt"), transcript_header(cfg, sc.name, sc.what))
    pids = str(Path(cfg["work"]) / f"{stem}.pids")
    programs = Programs(**cfg["programs"])

    def transport(config, gdb):
        from tuidbg.engine.session import DebugSession
        from tuidbg.engine.transport import gdb_env

        argv = DebugSession(config).gdb_argv()
        t = RecordingTransport(argv, writer, env=gdb_env(config.debuginfod), cwd=config.cwd or None,
                               on_start=lambda pid: _write_pid(pids, "gdb", pid))
        return t

    run = SceneRun(sc.name, programs, cuda_gdb=cfg["cuda_gdb"], dry=cfg["dry"], record=True, transport=transport,
                   comment=writer.comment)
    result: dict[str, Any] = {"scene": sc.name, "what": sc.what, "status": FAILED, "error": None}
    t0 = time.monotonic()
    task = asyncio.ensure_future(sc.run(run))
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    seen_pids: set[int] = set()

    def note_program(st) -> None:
        pid = st.pid
        if pid and pid not in seen_pids:
            seen_pids.add(pid)
            _write_pid(pids, "program", pid)

    async def watch_sessions() -> None:
        known = 0
        while True:
            while known < len(run.sessions):
                run.sessions[known].on_state(note_program)
                known += 1
            await asyncio.sleep(0.05)

    watcher = asyncio.ensure_future(watch_sessions())
    code = EXIT_FAILED
    try:
        await task
        result["status"], code = PASSED, EXIT_PASSED
    except NeedsDevice as exc:
        result["status"], result["error"], code = DEVICE, str(exc), EXIT_DEVICE
    except SceneFailed as exc:
        result["error"] = str(exc)
    except asyncio.CancelledError:
        result["status"], result["error"] = TIMEOUT, "ended by the driver: the scene ran past its timeout"
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc(limit=12)[-6000:]
    finally:
        watcher.cancel()
        if result["status"] == TIMEOUT:
            for s in run.sessions:
                s.abandon("kill")
        else:
            await asyncio.wait_for(run.close(), 30)
        writer.close()
    failed_steps = [st["name"] for st in run.steps if not st.get("ok")]
    if result["status"] == PASSED and failed_steps:
        result["status"], code = FAILED, EXIT_FAILED
        result["error"] = f"steps failed: {', '.join(failed_steps)}"
    result["seconds"] = round(time.monotonic() - t0, 2)
    result["transcript_lines"] = writer.lines
    result.update(run.result())
    tmp = out / f".{stem}.json"
    tmp.write_text(json.dumps(result, indent=1, default=str))
    tmp.replace(out / f"{stem}.json")
    return code


# -- every scene (the driver) -------------------------------------------------------------------------


def _machine_facts(path: str | None) -> dict[str, str]:
    facts: dict[str, str] = {}
    if path and os.path.exists(path):
        for line in Path(path).read_text().splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() and " " not in key.strip():
                facts.setdefault(key.strip(), value.strip())
    return facts


def _banner(cuda_gdb: str) -> tuple[str, str, str]:
    """cuda-gdb's version banner, its version ("13.0"), its first lines in one."""
    try:
        res = subprocess.run([cuda_gdb, "--version"], capture_output=True, text=True, timeout=60)
        text = res.stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "", "?", f"cuda-gdb --version failed: {exc}"
    from tuidbg.engine.session_config import parse_banner

    info = parse_banner(text)
    version = ".".join(str(v) for v in info.cuda_version) or "?"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()][:4]
    return text, version, " / ".join(ln for ln in lines if not ln.startswith("Portions") and "NVIDIA Corp" not in ln)


def _source_hashes(repo: str) -> dict[str, str]:
    out = {}
    for name in Programs.SOURCES:
        data = (Path(repo) / "tests" / "programs" / "cuda" / name).read_bytes()
        out[name] = hashlib.sha256(data).hexdigest()
    return out


def _kill_left(pids_file: Path) -> list[str]:
    """End what a scene's process left (its cuda-gdb, its program), checking each is still that process."""
    ended = []
    if not pids_file.exists():
        return ended
    for line in pids_file.read_text().splitlines():
        parts = line.split()
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        what, pid, start = parts[0], int(parts[1]), parts[2]
        if _start_time(pid) is not None and _start_time(pid) == start:
            try:
                os.kill(pid, signal.SIGKILL)
                ended.append(f"{what} {pid}")
            except OSError:
                pass
    return ended


def _end(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except OSError:
        pass
    try:
        proc.wait(KILL_GRACE)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait(10)


def _op_build(cfg: dict[str, Any], out: Path) -> subprocess.Popen:
    """The torch custom operator's build, in the background (its log: OUT/torch-op-build.log)."""
    p = cfg["programs"]
    env = dict(os.environ)
    env.setdefault("MAX_JOBS", str(max(1, (os.cpu_count() or 2) - 1)))
    if cfg.get("arch", "").startswith("sm_"):
        cc = cfg["arch"][3:]
        env.setdefault("TORCH_CUDA_ARCH_LIST", f"{cc[:-1]}.{cc[-1]}")
    log = open(out / "torch-op-build.log", "wb")
    return subprocess.Popen([p["python"], str(Path(p["repo"]) / "tests/programs/cuda/gpucheck_torch.py"), "build", p["op_build"]],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)


PYTHONPATH = ""  # the driver's own (main() takes it out of the environment that cuda-gdb and the programs get)


def _scene_env(work: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHONPATH
    env["PYTHONUNBUFFERED"] = "1"
    env["TMPDIR"] = work  # (the agent's socket folders; one place for what a scene's programs leave)
    return env


def run_all(args: argparse.Namespace) -> int:
    t_start = float(args.started) if args.started else time.time()
    deadline = t_start + args.budget
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    repo = str(Path(__file__).resolve().parents[2])
    names = [s.name for s in SCENES]
    only = [n.strip() for n in args.only.split(",")] if args.only else names
    unknown = [n for n in only if n not in names]
    if unknown:
        say(f"no scene {', '.join(unknown)} (the scenes: {', '.join(names)})")
        return 2
    timeouts: dict[str, float] = {}
    for item in args.timeout or []:
        name, sep, secs = item.partition("=")
        try:
            timeouts[name] = float(secs)
        except ValueError:
            sep = ""
        if not sep or name not in names:
            say(f"--timeout {item}: give NAME=SECONDS for one of the scenes ({', '.join(names)})")
            return 2
    banner, version, banner_line = _banner(args.cuda_gdb)
    machine = _machine_facts(args.machine)
    programs = Programs(repo=repo, work=str(work), gpucheck=str(work / "gpucheck"), python=args.python,
                        op_build=str(work / "op-build"), marks=Programs.read_marks(repo))
    import tuidbg

    cfg = {
        "dry": bool(args.dry_run), "cuda_gdb": args.cuda_gdb, "cuda_gdb_version": version,
        "cuda_gdb_banner_line": banner_line, "cuda_gdb_banner": banner, "arch": args.arch or "",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine, "work": str(work), "programs": programs.__dict__,
        "tuidbg": tuidbg.__version__, "sources": _source_hashes(repo),
        "python": sys.version.split()[0], "deps": _deps(),
    }
    (work / "config.json").write_text(json.dumps(cfg, indent=1))
    say(f"{'DRY RUN (no GPU): ' if args.dry_run else ''}cuda-gdb {version} ({args.cuda_gdb}), "
        f"{len(only)} scene(s), {deadline - time.time():.0f} s left of the budget")
    build = _op_build(cfg, out) if any(find_scene(n).needs_op for n in only) else None
    results: list[dict[str, Any]] = []
    build_status = None
    for index, sc in enumerate(SCENES, 1):
        if sc.name not in only:
            continue
        stem = f"{index:02d}_{sc.name}"
        own = timeouts.get(sc.name, sc.timeout)
        entry: dict[str, Any] = {"scene": sc.name, "index": index, "what": sc.what, "transcript": f"{stem}.mi.txt"}
        if sc.needs_op and build is not None and build_status is None and deadline - time.time() - SUMMARY_RESERVE >= min(10.0, own):
            # (the build's wait counts against the budget, not against the scene's own timeout)
            try:
                build.wait(max(1.0, min(OP_BUILD_TIMEOUT, deadline - time.time() - SUMMARY_RESERVE - min(10.0, own))))
            except subprocess.TimeoutExpired:
                _end(build)
            rc = build.returncode
            build_status = {0: "built", 2: "no CUDA torch here (needs a device)"}.get(rc, f"failed (exit {rc}): see torch-op-build.log")
            say(f"torch custom operator: {build_status}")
        left = deadline - time.time() - SUMMARY_RESERVE
        timeout = min(own, left)
        if timeout < min(10.0, own):
            entry.update(status=NOT_RUN, error=f"not run: {max(left, 0):.0f} s of the time budget were left")
            results.append(entry)
            say(f"{stem}: {entry['error']}")
            continue
        t0 = time.time()
        proc = subprocess.Popen([sys.executable, "-m", "gpucheck", "scene", sc.name, "--config", str(work / "config.json"),
                                 "--out", str(out), "--index", str(index)],
                                env=_scene_env(str(work)), stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _end(proc)
        left_behind = _kill_left(work / f"{stem}.pids")
        rfile = out / f"{stem}.json"
        if rfile.exists():
            entry.update(json.loads(rfile.read_text()))
        else:
            entry.update(status=TIMEOUT if proc.returncode in (-signal.SIGKILL, -signal.SIGTERM) else FAILED,
                         error=f"the scene's process ended ({proc.returncode}) without its result")
        if proc.returncode is not None and proc.returncode < 0 and entry.get("status") != TIMEOUT:
            entry["status"] = TIMEOUT
        if entry.get("status") == TIMEOUT:
            entry["error"] = f"ran past its timeout of {timeout:.0f} s; the transcript is kept"
        if left_behind:
            entry["ended_after"] = left_behind
        entry["wall_seconds"] = round(time.time() - t0, 1)
        if sc.needs_op:
            entry["op_build"] = build_status
        results.append(entry)
        say(f"{stem}: {entry['status']} in {entry['wall_seconds']} s" + (f" ({entry['error']})" if entry.get("error") else ""))
    if build is not None:
        _end(build)
    meta = {k: v for k, v in cfg.items()}
    meta["scenes"] = results
    meta["elapsed"] = round(time.time() - t_start, 1)
    (out / "meta.json").write_text(json.dumps(meta, indent=1, default=str))
    text = summary(meta)
    (out / "summary.txt").write_text(text)
    print(text, flush=True)
    ok = {PASSED, DEVICE} if args.dry_run else {PASSED}
    return 0 if results and all(r.get("status") in ok for r in results) and len(results) == len(only) else 1


def _deps() -> dict[str, str]:
    """Where tuidbg's dependencies were imported from (the carried wheels' private folder)."""
    out = {}
    for name in ("textual", "pygdbmi", "rich", "pygments", "psutil"):
        try:
            mod = __import__(name)
            out[name] = f"{getattr(mod, '__version__', '')} {os.path.dirname(mod.__file__ or '')}".strip()
        except Exception as exc:
            out[name] = f"not importable: {exc}"
    return out


def summary(meta: dict[str, Any]) -> str:
    m = meta.get("machine", {})
    lines = [
        f"gpu-check {meta['date']}{'  DRY RUN (no GPU)' if meta['dry'] else ''}",
        f"  machine: {m.get('gpu', 'no GPU')} driver {m.get('driver', '-')}, compute {m.get('compute_cap', '-')}",
        f"  cuda-gdb {meta['cuda_gdb_version']} ({meta['cuda_gdb_banner_line']}), Python {meta['python']}, tuidbg {meta['tuidbg']}",
        f"  torch: {m.get('torch', '-')}",
    ]
    counts: dict[str, int] = {}
    for r in meta["scenes"]:
        st = r.get("status", "?")
        counts[st] = counts.get(st, 0) + 1
        marks = ", ".join(mk["name"] for mk in r.get("marks", []))
        lines.append(f"  {r['index']:02d} {r['scene']:<18} {st:<14} {r.get('wall_seconds', '-'):>6} s  marks: {marks or '-'}")
        if r.get("error"):
            lines.append(f"       {r['error'][:300]}")
        for step in r.get("steps", []):
            if not step.get("ok"):
                lines.append(f"       step {step['name']}: {step.get('error', '?')[:200]}")
    lines.append("  " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + f"; {meta['elapsed']} s in all")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpucheck")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--work", required=True)
    r.add_argument("--cuda-gdb", required=True)
    r.add_argument("--python", required=True)
    r.add_argument("--budget", type=float, required=True)
    r.add_argument("--started")
    r.add_argument("--arch")
    r.add_argument("--machine")
    r.add_argument("--dry-run", action="store_true")
    r.add_argument("--only")
    r.add_argument("--timeout", action="append")
    sc = sub.add_parser("scene")
    sc.add_argument("name")
    sc.add_argument("--config", required=True)
    sc.add_argument("--out", required=True)
    sc.add_argument("--index", type=int, required=True)
    args = ap.parse_args(argv)
    global PYTHONPATH
    # tuidbg's dependencies come from the carried wheels' folder on PYTHONPATH: this process has them
    # on sys.path now; cuda-gdb and the programs it runs (the torch program: its own packages) must not
    PYTHONPATH = os.environ.pop("PYTHONPATH", "")
    if args.cmd == "run":
        return run_all(args)
    cfg = json.loads(Path(args.config).read_text())
    return asyncio.run(_run_scene(args, cfg))
