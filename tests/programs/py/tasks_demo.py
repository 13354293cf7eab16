"""An asyncio service whose tasks are all stuck, for the task reader's tests (3.9+).

Usage: tasks_demo.py READY_FILE [--extra N] [--block [--eager]] [--crash] [--uvloop] [--pytask]

Tasks: 'stuck-waiter' (stuck_waiter -> wait_for_config -> Event.wait, the Event never set),
'parent-gather' gathering 'gather-0'..'gather-2' (each asleep), 'parent-tg' with a TaskGroup of
'tg-0' and 'tg-1' (3.11+), 'agen-consumer' iterating the async generator ticker (asleep inside it),
'awaits-task' awaiting the task 'leaf-task', N more 'idle-I' asleep (--extra N), and the main task.
Once every task is waiting it writes READY_FILE (JSON: pid, the MARK lines, the names, and how many
times a task was asked anything from Python: ``calls``). Then:

- by default the loop idles (no task runs);
- --block: the task 'blocker' runs and blocks the loop in time.sleep (the task at the stop), once
  it has written READY_FILE + ".blocked" (the count of calls then);
- --crash: the task 'crasher' aborts the process (a core file of a crashed asyncio program).

--uvloop runs the loop with uvloop; --pytask makes the tasks asyncio's pure-Python Task; --eager (3.12+,
with --block) starts 'blocker' eagerly: it is in asyncio's eager tasks, never scheduled.

SIGUSR1 writes READY_FILE + ".calls" with the count then: a reader that ran code in the program (a
task's get_name, repr, attribute) raises it.
"""

import asyncio
import json
import os
import signal
import sys
import time

READY = sys.argv[1]
ARGS = sys.argv[2:]
EXTRA = int(ARGS[ARGS.index("--extra") + 1]) if "--extra" in ARGS else 0
calls = 0


class CountingTask(asyncio.Task):
    """Every attribute asked of a task from Python code is counted."""

    def __getattribute__(self, name):
        global calls
        calls += 1
        return super().__getattribute__(name)


def _factory(loop, coro, **kw):
    if "--pytask" in ARGS:  # (asyncio's pure-Python Task: not an _asyncio.Task)
        return asyncio.tasks._PyTask(coro, loop=loop, **kw)
    return CountingTask(coro, loop=loop, **kw)


def _report(_signum, _frame):
    with open(READY + ".calls", "w") as f:
        f.write(str(calls))


config_ready = None
hold = None


async def wait_for_config():
    await config_ready.wait()  # MARK:wait_config


async def stuck_waiter():
    await wait_for_config()  # MARK:stuck_waiter


async def sleeper():
    await asyncio.sleep(3600)  # MARK:sleeper


async def parent_gather():
    kids = [asyncio.get_running_loop().create_task(sleeper()) for _ in range(3)]
    for i, k in enumerate(kids):
        k.set_name(f"gather-{i}")
    await asyncio.gather(*kids)  # MARK:gather


async def tg_child():
    await hold.wait()  # MARK:tg_child


async def parent_tg():
    async with asyncio.TaskGroup() as tg:  # MARK:tg
        tg.create_task(tg_child(), name="tg-0")
        tg.create_task(tg_child(), name="tg-1")


async def ticker():
    n = 0
    while True:
        await asyncio.sleep(3600)  # MARK:ticker
        yield n
        n += 1


async def agen_consumer():
    async for _ in ticker():  # MARK:agen_consumer
        pass


async def leaf():
    await hold.wait()  # MARK:leaf


async def awaits_task(other):
    await other  # MARK:awaits_task


def blocker():
    with open(READY + ".blocked.tmp", "w") as f:
        f.write(str(calls))
    os.rename(READY + ".blocked.tmp", READY + ".blocked")
    time.sleep(3600)  # MARK:blocker


async def blocking_task():
    blocker()  # MARK:blocking_task


async def crasher():
    os.abort()  # MARK:crasher


async def main():
    global config_ready, hold
    config_ready = asyncio.Event()
    hold = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.set_task_factory(_factory)
    made = [loop.create_task(stuck_waiter(), name="stuck-waiter"),
            loop.create_task(parent_gather(), name="parent-gather"),
            loop.create_task(agen_consumer(), name="agen-consumer")]
    if sys.version_info >= (3, 11):
        made.append(loop.create_task(parent_tg(), name="parent-tg"))
    other = loop.create_task(leaf(), name="leaf-task")
    made += [other, loop.create_task(awaits_task(other), name="awaits-task")]
    made += [loop.create_task(sleeper(), name=f"idle-{i}") for i in range(EXTRA)]
    for _ in range(5):
        await asyncio.sleep(0)  # (every task reaches its await)
    names = sorted(t.get_name() for t in asyncio.all_tasks())
    marks = {}
    with open(__file__) as f:
        for i, line in enumerate(f, 1):
            mark = line.split("  # MARK:")[1].strip() if "  # MARK:" in line else ""
            if mark.isidentifier():
                marks[mark] = i
    signal.signal(signal.SIGUSR1, _report)
    with open(READY + ".tmp", "w") as f:
        json.dump({"pid": os.getpid(), "marks": marks, "names": names, "calls": calls,
                   "main": asyncio.current_task().get_name()}, f)
    os.rename(READY + ".tmp", READY)
    if "--block" in ARGS:
        if "--eager" in ARGS:  # (3.12+: it runs at once, in create_task, until it first waits: it never does)
            loop.set_task_factory(asyncio.create_eager_task_factory(CountingTask))
        await loop.create_task(blocking_task(), name="blocker")  # MARK:main_block
    if "--crash" in ARGS:
        await loop.create_task(crasher(), name="crasher")
    await hold.wait()  # MARK:main


if "--uvloop" in ARGS:
    import uvloop

    uvloop.install()
asyncio.run(main())
