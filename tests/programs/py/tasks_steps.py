"""Steps through asyncio tasks: two tasks run the same coroutine (worker), a third awaits one.

'w' and 'other' both run worker(); 'boss' (the main task) awaits 'w'. Each worker awaits fetch(),
which sleeps (the task suspends: other tasks run meanwhile). Prints "total w N" and exits.
"""

import asyncio


async def fetch(i):
    await asyncio.sleep(0.01)  # MARK:fetch_sleep
    return i * 2  # MARK:fetch_return


async def worker(name, n):
    total = 0
    for i in range(n):  # MARK:worker_for
        x = await fetch(i)  # MARK:worker_await
        total += x  # MARK:worker_after
    return total  # MARK:worker_return


async def boss():
    loop = asyncio.get_running_loop()
    other = loop.create_task(worker("other", 40), name="other")
    w = loop.create_task(worker("w", 3), name="w")
    r = await w  # MARK:boss_await
    print("total w", r, flush=True)  # MARK:boss_after
    await other


asyncio.run(boss())
