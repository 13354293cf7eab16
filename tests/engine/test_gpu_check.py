"""scripts/gpu-check.sh (issue 34) on this machine: its dry run, with the real cuda-gdb 11.8 (no GPU),
the real nvcc 13 and .venv-torch's Python standing in for the GPU machine's (the one with torch).

The dry run does all of it that needs no device: tuidbg's dependencies installed from the carried
wheels (.whl/, which scripts/setup.sh --test fetches) into a private folder, the CUDA programs built
with nvcc -g -G, and every scene (scripts/gpucheck/scenes.py) driven through the engine on cuda-gdb up
to where its program finds no CUDA device, its MI exchange recorded. The recordings are then replayed
by the same scenes (scripts/gpucheck/replay.py): what tests/engine/test_cuda13_observed.py will do
with a GPU machine's. The script also has to fail: a gdb that is not cuda-gdb, a scene past its
timeout, a budget with no time left, missing wheels, bad arguments.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO
from pystack_helpers import TORCH_PYTHON
from test_cuda_gdb_live import CUDA_GDB, NVCC

SCRIPT = REPO / "scripts" / "gpu-check.sh"
WHEELS = REPO / ".whl"
if str(REPO / "scripts") not in sys.path:
    sys.path.insert(0, str(REPO / "scripts"))

from gpucheck import replay as R  # noqa: E402
from gpucheck.scenes import SCENES  # noqa: E402

pytestmark = [
    pytest.mark.cudagdb,
    pytest.mark.slow,
    pytest.mark.skipif(CUDA_GDB is None, reason="cuda-gdb is not installed (scripts/setup.sh --test installs Debian's nvidia-cuda-gdb)"),
    pytest.mark.skipif(NVCC is None, reason="nvcc is not installed"),
    pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)"),
    pytest.mark.skipif(not list(WHEELS.glob("*.whl")),
                       reason="no carried wheels in .whl/ (scripts/setup.sh --test fetches them: bash scripts/gpu-check.sh --fetch-wheels)"),
]


def gpu_check(out: Path, *args: str, work: Path | None = None, timeout: float = 420, **env: str) -> subprocess.CompletedProcess:
    e = {**os.environ, "PYTHON": str(TORCH_PYTHON), "CUDA_GDB": str(CUDA_GDB), "NVCC": str(NVCC), **env}
    if work is not None:
        e["GPU_CHECK_WORK"] = str(work)
    return subprocess.run(["bash", str(SCRIPT), *args, str(out)], env=e, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """The builds and the private folder, shared by this module's runs (the builds are kept when up to date)."""
    return tmp_path_factory.mktemp("gpu-check-work")


@pytest.fixture(scope="module")
def dry(tmp_path_factory, work):
    """The whole dry run, once."""
    out = tmp_path_factory.mktemp("gpu-check") / "out"
    # (a budget for a loaded machine: the dry run takes about 40 s on an idle one, several times that under load)
    res = gpu_check(out, "--dry-run", "--budget", "900", work=work, timeout=960)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    return out, json.loads((out / "meta.json").read_text()), res


def _result(meta: dict, name: str) -> dict:
    return R.scene_result(meta, name)


def _marks(r: dict) -> dict[str, dict]:
    return {m["name"]: m["facts"] for m in r.get("marks", [])}


def test_dry_run_goes_through_every_scene_up_to_the_device(dry):
    out, meta, res = dry
    assert meta["dry"] and meta["cuda_gdb_version"] == "11.8"
    assert [r["scene"] for r in meta["scenes"]] == [s.name for s in SCENES]
    for r in meta["scenes"]:
        # every scene's driver ran and stopped only where the program found no CUDA device
        assert r["status"] == "device-needed", (r["scene"], r.get("error"), r.get("steps"))
        assert "no CUDA" in r["error"] or "no CUDA device" in r["error"], r["error"]
        assert not [s for s in r.get("steps", []) if not s.get("ok")], (r["scene"], r["steps"])
        assert (out / r["transcript"]).exists() and r["transcript_lines"] > 20
    # startup: the engine on cuda-gdb as a user gets it, a host stop before any kernel, empty device tables
    st = _marks(_result(meta, "startup"))
    assert st["started"]["cuda_version"] == [11, 8] and st["started"]["caps"]["probed"]
    assert st["started"]["workaround"] is True  # Debian's 11.8 needs the Python-unwinder workaround
    assert st["host_stop"]["frames"][0]["func"] == "no_device" and st["host_stop"]["frames"][0]["arch"] == "i386:x86-64"
    assert st["devices"]["devices"] == [] and st["devices"]["kernels"] == [] and st["devices"]["focus"] is None
    assert st["exit"]["exit_code"] == 2
    # the kernel breakpoints were accepted, pending on the device (the device part is the GPU run's)
    kb = _marks(_result(meta, "kernel_breakpoint"))["breakpoint"]
    assert kb["pending_on_device"] is True
    # break_on_launch was set through cuda-gdb
    assert _marks(_result(meta, "break_on_launch"))["set"]["settings"]["values"]["break_on_launch"] == "application"
    # the torch program under cuda-gdb with tuidbg's agent: a Python stop, a CPU tensor's preview
    host = _marks(_result(meta, "torch_preview"))["py_host"]
    assert host["locals"] == [["host", "Tensor", "Tensor float32 [6] cpu", True]]
    assert ["values", "", "[0, 0.5, 1, 1.5, 2, 2.5] min=0 max=2.5 mean=1.25", False] in host["children"]
    op = _result(meta, "torch_op")
    assert op["op_build"] == "no CUDA torch here (needs a device)"
    assert "no CUDA" in (out / "torch-op-build.log").read_text()
    text = (out / "summary.txt").read_text()
    assert text.startswith("gpu-check ") and "DRY RUN (no GPU)" in text and "13 device-needed" in text
    assert text in res.stdout


def test_dry_run_used_the_carried_wheels_and_built_the_programs(dry, work):
    out, meta, res = dry
    site = work / "site"
    for name in ("textual", "pygdbmi", "rich", "pygments", "psutil"):
        assert str(site) in meta["deps"][name], (name, meta["deps"][name])  # the private folder, nothing else
    assert meta["deps"]["textual"].startswith("8.2.")
    assert (work / "gpucheck").read_bytes()[:4] == b"\x7fELF" and (work / "gpucheck_op.o").exists()
    machine = (out / "machine.txt").read_text()
    assert "gpu: none" in machine and "cuda_gdb_version: NVIDIA (R) CUDA Debugger 11.8 release" in machine
    assert re.search(r"^torch: 2\.\d+\.\d+\+cpu cuda None available False$", machine, re.M), machine
    assert meta["programs"]["gpucheck"] == str(work / "gpucheck")
    assert meta["sources"].keys() == {"gpucheck.cu", "gpucheck_op.cu", "gpucheck_op.cpp", "gpucheck_torch.py"}


def test_transcripts_are_captures_in_the_replay_format(dry):
    out, meta, _ = dry
    for r in meta["scenes"]:
        text = (out / r["transcript"]).read_text()
        head = [ln for ln in text.splitlines() if ln.startswith("#")][:5]
        joined = " ".join(head).lower()
        assert head[0].startswith("# CAPTURED (not synthesized) with the real cuda-gdb 11.8")
        assert "without a gpu" in joined and f"scene {r['scene']}" in joined
        assert re.search(r"cuda-gdb \d+\.(\d+|x)\b", joined)  # what test_cuda_replay checks of every CUDA transcript
        body = [ln for ln in text.splitlines() if not ln.startswith("#")]
        assert body[0] == "-> 1-gdb-version" and any(ln.startswith("1^done") for ln in body)
        # every mark of the scene's record is in the transcript, in order
        marks = [m.group(1) for m in re.finditer(r"^# mark: (.*)$", text, re.M)]
        assert marks == [m["name"] for m in r["marks"]]


@pytest.mark.parametrize("name", [s.name for s in SCENES if s.replayable])
async def test_dry_run_transcripts_replay_exactly(dry, name):
    """The scene, run again against its own transcript: the same commands, the same marks where the
    recording had them, the same facts at each, the same end."""
    out, meta, _ = dry
    rp = await R.replay_scene(str(out), name, str(REPO))
    assert rp.problems() == []
    assert rp.transport.finished and rp.transport.sent
    recorded = _result(meta, name)
    # (the program's own words are the recording's: a replay has no program)
    assert (rp.status, rp.error) == (recorded["status"], recorded["error"].split("; the program said")[0])
    assert rp.run.marks == R.recorded_marks(meta, name, str(REPO))


async def test_a_replay_that_differs_is_told(dry):
    """The replay's checks can fail: a transcript with one answer changed gives other marks, and one
    cut short leaves commands unanswered."""
    out, meta, _ = dry
    t = (out / "01_startup.mi.txt").read_text()
    assert 'func="no_device"' in t
    changed = out.parent / "changed"
    shutil.copytree(out, changed)
    (changed / "01_startup.mi.txt").write_text(t.replace('func="no_device"', 'func="elsewhere"'))
    rp = await R.replay_scene(str(changed), "startup", str(REPO))
    assert rp.run.marks != R.recorded_marks(meta, "startup", str(REPO))
    cut = t[: t.index("-> ", t.index("# mark: host_stop"))]  # nothing after the host stop
    (changed / "01_startup.mi.txt").write_text(cut)
    rp = await R.replay_scene(str(changed), "startup", str(REPO))
    assert any("not in transcript" in p for p in rp.problems()), rp.problems()


def test_a_failing_scene_and_one_past_its_timeout_are_reported_and_the_others_still_run(tmp_path, work):
    # plain gdb is not cuda-gdb: the first scene fails. The second, the torch program's (its torch takes
    # gdb several seconds to load, every time), is ended at a timeout of 2 s, its transcript kept.
    res = gpu_check(tmp_path / "out", "--dry-run", "--only", "startup,torch_op,exception", "--timeout", "torch_op=2",
                    work=work, CUDA_GDB=shutil.which("gdb") or "/usr/bin/gdb")
    assert res.returncode == 1, res.stdout + res.stderr
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())
    st = {r["scene"]: r for r in meta["scenes"]}
    assert st["startup"]["status"] == "failed" and "is not cuda-gdb to tuidbg" in st["startup"]["error"]
    assert st["torch_op"]["status"] == "timeout" and "past its timeout of 2 s" in st["torch_op"]["error"]
    assert (tmp_path / "out" / "12_torch_op.mi.txt").read_text().startswith("# CAPTURED")
    assert "-> 1-gdb-version" in (tmp_path / "out" / "12_torch_op.mi.txt").read_text()
    assert st["exception"]["status"] in ("failed", "device-needed")  # it ran, after the two above
    summary = (tmp_path / "out" / "summary.txt").read_text()
    assert "startup" in summary and "failed" in summary and "timeout" in summary


def test_no_time_left_means_scenes_not_run(tmp_path, work):
    res = gpu_check(tmp_path / "out", "--dry-run", "--only", "startup,exception", "--budget", "1", work=work)
    assert res.returncode == 1
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())
    assert [(r["scene"], r["status"]) for r in meta["scenes"]] == [("startup", "not run"), ("exception", "not run")]
    assert "of the time budget were left" in meta["scenes"][0]["error"]


def test_bad_input_gets_one_clear_line(tmp_path, work):
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    res = gpu_check(tmp_path / "a", "--dry-run", work=work, WHEELS=str(empty))
    assert res.returncode == 2 and "no wheels in" in res.stderr and "--fetch-wheels" in res.stderr
    assert "Traceback" not in res.stderr
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x").write_text("")
    res = gpu_check(tmp_path / "b", "--dry-run", work=work)
    assert res.returncode == 2 and "is not empty" in res.stderr
    res = gpu_check(tmp_path / "c", "--bogus", work=work)
    assert res.returncode == 2 and "unknown option --bogus" in res.stderr



def test_the_driver_refuses_unknown_scenes_and_timeouts(tmp_path, capsys, monkeypatch):
    from gpucheck.driver import main

    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))  # (main takes it out of the environment)

    base = ["run", "--out", str(tmp_path / "o"), "--work", str(tmp_path), "--cuda-gdb", str(CUDA_GDB),
            "--python", str(TORCH_PYTHON), "--budget", "60", "--dry-run"]
    assert main(base + ["--only", "startup,nonesuch"]) == 2
    assert main(base + ["--timeout", "startup"]) == 2
    assert main(base + ["--timeout", "nonesuch=3"]) == 2
    said = capsys.readouterr().out
    assert "no scene nonesuch (the scenes: startup, break_on_launch," in said
    assert said.count("--timeout") == 2 and "give NAME=SECONDS" in said
    assert not (tmp_path / "o" / "meta.json").exists()


async def test_the_cuda13_replay_harness_works_on_a_real_recording(dry, monkeypatch):
    """tests/ui/test_ui_cuda13_observed.py's harness (the scene replayed with the CUDA pane fed its
    states, looked at on each mark) on the dry run's startup scene: real cuda-gdb 11.8 transcripts,
    so that the harness the GPU recording is waiting for is known to work."""
    import importlib.util

    out, meta, _ = dry
    spec = importlib.util.spec_from_file_location("cuda13_observed", REPO / "tests" / "ui" / "test_ui_cuda13_observed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "OBSERVED", out)
    rp, seen = await mod.observe("startup", keys_at={"host_stop": "k"})
    assert rp.problems() == [] and rp.status == "device-needed"
    assert list(seen.at) == ["started", "host_stop", "devices", "exit"]
    at = seen.at["host_stop"]
    assert at["header"].startswith("■ host stop") and "focus: host thread" in at["header"], at["header"]
    assert "cuda-gdb 11.8" in at["header"] and "11.8 unwinder workaround on" in at["header"]
    assert at["state"].frames[0].func == "no_device"
    assert "rows_k" in at and not any("kernel 0" in r for r in at["rows_k"])  # no kernel yet
    assert "exited" in seen.at["exit"]["header"]

