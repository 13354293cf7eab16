"""``tuidbg attach --children PID`` as the command line sets it up (``cli.attach_config``, ``cli.start_session``:
the same engine, gdb and agents), without the screen, for the fault tests that kill this process (tuidbg) or
its gdb at a moment of their choosing.

Usage: attach_driver.py PID FILE LINE MODE

It puts a Python breakpoint at FILE:LINE and continues; at the first stop once every process of the tree has
its agent connected it prints ``READY pids=P,P,...``. MODE ``stop``: at each stop it prints ``STOPPED
pid=PID`` and waits at the stop for a line on stdin before it continues. MODE ``run``: it continues at once
after each stop, for ever (the kill comes while processes run, stop, answer the agent's requests). MODE
``hang``: once ready it continues, has gdb run a command that does not end (gdb reads no more input: a gdb
stuck in the kernel looks the same) and prints ``HUNG``.
"""

from __future__ import annotations

import asyncio
import os
import sys

from tuidbg import cli
from tuidbg.engine import pyagent


async def main(pid: str, file: str, line: int, mode: str) -> None:
    args = cli.build_parser().parse_args(["attach", "--nx", "--fresh", "--children", pid])
    cfg = cli.attach_config(args)
    s = await cli.start_session(cfg)  # (returns once the first process is shown...)
    await s.launch()  # (... and the others are attached with it, the agent in each)
    ctl = pyagent.controller(s)
    assert ctl is not None
    loop = asyncio.get_running_loop()
    await ctl.add_breakpoint(file, line)
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    ready = False
    deadline = loop.time() + 120
    while True:
        await ctl.resume()
        st = await ctl.wait_stop(120)
        if not ready:  # (an agent connects once its process runs Python again)
            if not all(inf.python.agent is not None and inf.python.agent.connected for inf in s.state.inferiors):
                if loop.time() > deadline:
                    raise SystemExit(f"agents not connected: {[(i.pid, i.python.agent) for i in s.state.inferiors]}")
                continue
            ready = True
            print("READY pids=" + ",".join(str(inf.pid) for inf in s.state.inferiors), flush=True)
        if mode == "hang":
            await ctl.resume()
            mark = os.path.join(os.environ["TMPDIR"], "gdb-hangs")
            asyncio.ensure_future(s.console(f"python import time; open({mark!r}, 'w').close(); time.sleep(3600)",
                                            timeout=None))
            while not os.path.exists(mark):  # (gdb runs the command now, and reads no more)
                await asyncio.sleep(0.05)
            print("HUNG", flush=True)
            await asyncio.sleep(3600)
        if mode == "stop":
            print(f"STOPPED pid={st.pid} python={st.python.stop is not None}", flush=True)
            if not await reader.readline():
                break


if __name__ == "__main__":
    os.environ.setdefault("TERM", "dumb")
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]))
