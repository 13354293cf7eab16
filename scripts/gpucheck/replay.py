"""Playing a recorded cuda-gdb transcript (``gpucheck.record``) back to tuidbg's engine, strictly.

``ObservedReplay`` is ``tuidbg.engine.transport.ReplayTransport`` for transcripts captured on a
machine, where the engine had several commands in flight at once (its refresh asks for the threads
and the frames together): it keeps the tokens. When the engine sends the next recorded command,
the output recorded after that command is played, each result's token turned into the token the
engine used for the command that had the recorded one. So an answer recorded after a later command
comes back after that command, as it did on the machine.

Strict: every command must be the next one recorded, argument for argument; any other is written to
``mismatches`` (with the commands it skipped). As ``tests/data/cuda-replay/cuda_replay.py`` does,
generic start-up settings (``-gdb-set`` of something other than cuda) that the transcript does not
have at that point are answered ``^done``, so that a new start-up setting in the engine does not make
every transcript obsolete; and ``-inferior-tty-set``'s argument (a fresh pty each run) is not
compared. ``marks`` are the transcript's ``# mark: NAME`` lines with the number of commands sent
before each: ``at_mark`` tells whether a replaying scene reaches its marks where the recording did.
"""

from __future__ import annotations

import re
from typing import Mapping

from tuidbg.engine.transport import Line, ReplayTransport

GENERIC = re.compile(r"^-gdb-set (?!cuda )|^-enable-pretty-printing$")
# (commands whose text is this run's own, matched by their start: the terminal, and the loading of
# tuidbg's gdb extension, which names tuidbg's PID and Python for the orphan watch, gdbext.orphan)
LOOSE = ("-inferior-tty-set", '-interpreter-exec console "python import importlib.util as _u')
_TOKEN_LINE = re.compile(r"^(\d+)([\^*+=].*)$")
_SENT = re.compile(r"^->\s*(\d*)(.*)$")


def substitute(text: str, substitutions: Mapping[str, str]) -> str:
    """``text`` with each recorded path replaced by this machine's (the longest first)."""
    for old in sorted(substitutions, key=len, reverse=True):
        if old and old != substitutions[old]:
            text = text.replace(old, substitutions[old])
    return text


class ObservedReplay(ReplayTransport):
    """See the module's docstring."""

    def __init__(self, text: str, substitutions: Mapping[str, str] | None = None) -> None:
        super().__init__("")
        text = substitute(text, substitutions or {})
        self.header: list[str] = []
        self.preamble = []
        self.recorded: list[tuple[str, str, list[str]]] = []  # (token, command, output after it)
        self.marks: list[tuple[int, str]] = []  # (commands recorded before it, name)
        self.mismatches: list[tuple[str, str]] = []
        self.generic_extra: list[str] = []
        current: list[str] = self.preamble
        in_header = True
        for raw in text.splitlines():
            if raw.startswith("#"):
                if in_header:
                    self.header.append(raw)
                m = re.match(r"^# mark: (.*)$", raw)
                if m:
                    self.marks.append((len(self.recorded), m.group(1).strip()))
                continue
            in_header = False
            m = _SENT.match(raw)
            if m and raw.startswith("->"):
                current = []
                self.recorded.append((m.group(1), m.group(2).strip(), current))
                continue
            if raw.strip():
                current.append(raw)
        self._tokens: dict[str, str] = {}  # recorded token -> the engine's
        self._mark_seen = 0

    # (ReplayTransport's steps, for code that reads them)
    @property
    def steps(self) -> list[tuple[str, list[str]]]:  # type: ignore[override]
        return [(c, out) for _, c, out in self.recorded]

    @steps.setter
    def steps(self, value) -> None:  # ReplayTransport.__init__ sets it (to nothing)
        pass

    def write(self, line: str) -> None:
        m = re.match(r"^(\d*)(.*)$", line)
        token, sent = (m.group(1), m.group(2).strip()) if m else ("", line.strip())
        self.sent.append(sent)
        nxt = self.recorded[self._cursor] if self._cursor < len(self.recorded) else None
        if GENERIC.match(sent) and (nxt is None or nxt[1] != sent):
            self.generic_extra.append(sent)
            self._queue.put_nowait(Line(f"{token}^done"))
            return
        found = None
        if nxt is not None and (nxt[1] == sent or self._name(nxt[1]) == self._name(sent)):
            found = self._cursor
        else:
            for i in range(self._cursor, len(self.recorded)):
                if self.recorded[i][1] == sent:
                    found = i
                    break
        if found is None:
            self.mismatches.append(("<not in transcript>", sent))
            self._queue.put_nowait(Line(f'{token}^error,msg="not in transcript: {sent.replace(chr(34), chr(39))}"'))
            return
        for _, skipped, _ in self.recorded[self._cursor:found]:
            self.mismatches.append((skipped, "<skipped>"))
        rec_token, recorded, output = self.recorded[found]
        if recorded != sent and not (recorded.startswith(LOOSE) and sent.startswith(LOOSE)):
            self.mismatches.append((recorded, sent))
        self._cursor = found + 1
        if rec_token:
            self._tokens[rec_token] = token
        for out in output:
            tm = _TOKEN_LINE.match(out)
            if tm and tm.group(1) in self._tokens:
                out = self._tokens[tm.group(1)] + tm.group(2)
            self._queue.put_nowait(Line(out))
            if re.match(r"^\d*\^exit", out):
                self.close_now()  # (gdb's output ends after its ^exit, as the recording's did)

    def close_now(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(None)

    async def exit_reason(self) -> str:
        return "gdb exited (the replayed transcript's ^exit)"

    def at_mark(self, name: str) -> str | None:
        """Called where a replaying scene marks ``name``: None when the recording had that mark next,
        after as many commands; else what differs."""
        if self._mark_seen >= len(self.marks):
            return f"mark {name!r}: the recording has no more marks"
        count, want = self.marks[self._mark_seen]
        self._mark_seen += 1
        if want != name:
            return f"mark {name!r}: the recording's next mark is {want!r}"
        if count != self._cursor:
            return f"mark {name!r}: after {self._cursor} commands, the recording's after {count}"
        return None

    @property
    def finished(self) -> bool:
        return self._cursor == len(self.recorded)

    @property
    def marks_left(self) -> list[str]:
        return [name for _, name in self.marks[self._mark_seen:]]


# -- a recorded scene, replayed -----------------------------------------------------------------------


def load_recording(folder: str) -> dict:
    """A gpu-check.sh output folder's meta.json (what ran where, every scene's result)."""
    import json
    from pathlib import Path

    return json.loads((Path(folder) / "meta.json").read_text())


def scene_result(meta: dict, name: str) -> dict:
    for r in meta["scenes"]:
        if r["scene"] == name:
            return r
    raise KeyError(f"the recording has no scene {name}")


class Replayed:
    """A scene replayed: its run (marks, steps, notes), the transport (sent, mismatches), how it ended."""

    def __init__(self, run, transport: ObservedReplay | None, status: str, error: str | None) -> None:
        self.run = run
        self.transport = transport
        self.status = status
        self.error = error

    def problems(self) -> list[str]:
        """What differs from the recording (empty: the replay went exactly as the recording)."""
        t = self.transport
        out = list(self.run.mark_problems)
        if t is None:
            return out + ["the scene made no session"]
        out += [f"recorded {rec!r}, sent {sent!r}" for rec, sent in t.mismatches]
        if not t.finished:
            out.append(f"{len(t.recorded) - t._cursor} recorded command(s) not sent, from {t.recorded[t._cursor][1]!r}")
        if t.marks_left:
            out.append(f"marks not reached: {t.marks_left}")
        return out


async def replay_scene(folder: str, name: str, repo: str, on_mark=None) -> Replayed:
    """Scene ``name`` of the recording in ``folder`` run again against its transcript, with this
    checkout's paths (``repo``) where the recording had its own."""
    import asyncio
    from pathlib import Path

    from gpucheck.scene import NeedsDevice, Programs, SceneFailed, SceneRun
    from gpucheck.scenes import scene as find_scene

    meta = load_recording(folder)
    result = scene_result(meta, name)
    subs = {meta["programs"]["repo"]: repo}
    text = (Path(folder) / result["transcript"]).read_text()
    programs = dict(meta["programs"])
    programs["repo"] = repo
    transports: list[ObservedReplay] = []

    def transport(config, gdb):
        if transports:
            raise RuntimeError("a scene has one cuda-gdb: its transcript is for one session")
        transports.append(ObservedReplay(text, subs))
        return transports[0]

    def at_mark(mark: str):
        return transports[0].at_mark(mark) if transports else f"mark {mark!r} before any session"

    run = SceneRun(name, Programs(**programs), cuda_gdb=meta["cuda_gdb"], dry=meta["dry"], record=False,
                   transport=transport, on_mark=on_mark, at_mark=at_mark)
    status, error = "passed", None
    try:
        await find_scene(name).run(run)
    except NeedsDevice as exc:
        status, error = "device-needed", str(exc)
    except SceneFailed as exc:
        status, error = "failed", str(exc)
    except Exception as exc:  # (an engine error the recording did not have: the replay went elsewhere)
        status, error = "failed", f"{type(exc).__name__}: {exc}"
    finally:
        await asyncio.wait_for(run.close(), 30)
    if status == "passed" and any(not st.get("ok") for st in run.steps):
        status = "failed"
    return Replayed(run, transports[0] if transports else None, status, error)


def recorded_marks(meta: dict, name: str, repo: str) -> list[dict]:
    """The scene's marks as recorded, with this checkout's paths (to compare with a replay's)."""
    import json

    text = json.dumps(scene_result(meta, name).get("marks", []))
    return json.loads(substitute(text, {meta["programs"]["repo"]: repo}))
