"""A step key written to gdb by the terminal's input thread (ui.keyplan): armed once a stop is shown,
taken once, only for the key and the app it was made for; the answer is the app's as a key's own.
The input thread is played by a thread of the test calling ``take`` (Pilot's driver has none); the
driver's side is tests/ui/test_driver.py."""

from __future__ import annotations

import asyncio

from conftest import requires_gdb
from ui_helpers import make_app, until, until_stopped

from tuidbg.engine.state import ProcessState
from tuidbg.ui import keyplan
from tuidbg.ui.panes.source import SourceView

pytestmark = requires_gdb


async def armed(pilot) -> keyplan.Plan:
    app = pilot.app
    try:
        await until(pilot, lambda: app.key_plan is not None, 5, "the step keys' plan", floor=0)
    except AssertionError:
        # (a loaded machine: the stop's arming tried ARM_TRIES times while the app was busy; a focus
        # change arms again, as here)
        app.arm_keys()
        await until(pilot, lambda: app.key_plan is not None, 10, "the step keys' plan")
    return app.key_plan


async def planned_step(pilot) -> keyplan.Plan:
    """``n`` read by the "input thread" once a plan is armed; the plan it was written from. (A state
    that comes between the arming and the key, a late stage of the stop's refresh on a loaded machine,
    drops the plan: the key is not written, and the next plan is waited for.)"""
    app = pilot.app
    for _ in range(10):
        plan = await armed(pilot)
        gen = app.state.generation
        if await asyncio.to_thread(keyplan.take, app, b"n"):
            return plan
        await pilot.pause(0.05)
        assert app.state.generation == gen and app.state.is_stopped  # (not written: not stepped)
    raise AssertionError("no plan stayed armed until its key came")


async def test_a_planned_key_steps_once_and_its_answer_is_the_apps(threads_prog):
    app = make_app(program=str(threads_prog), ex=["break middle"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        app.query_one(SourceView).focus()  # (a plan made again for the new focus)
        client = app.session.client
        for _ in range(3):
            plan = await armed(pilot)  # (and at each stop)
            assert set(plan.keys) >= {b"n", b"s"}  # (the default keymap's step keys; "u", until, too)
            assert {a.line for a in plan.keys.values()} >= {
                f"{plan.keys[b'n'].token}{app.session.step_command('next')}\n".encode()}
            gen, line = app.state.generation, app.state.frames[0].line
            plan = await planned_step(pilot)
            await until_stopped(pilot, generation=gen)
            assert app.state.frames[0].line != line  # a `next`: the next line
            await until(pilot, lambda: not app.steps_in_flight, 10, "the step's answer")
            # (the other keys' tokens given back, the step's answered and taken)
            step = plan.keys[b"n"].token
            held = client.tokens_held()
            assert not held["reserved"] & {a.token for a in plan.keys.values()}
            assert step not in held["pending"] and not held["answered"]


async def test_any_other_input_or_change_drops_the_plan(threads_prog, monkeypatch):
    monkeypatch.setattr(keyplan, "ARM_AFTER", 3600)  # (plans made here by hand only)
    app = make_app(program=str(threads_prog), ex=["break middle"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        app.query_one(SourceView).focus()
        client = app.session.client
        gen = app.state.generation

        # another key: not written, and the plan is gone (its tokens given back)
        await pilot.pause()
        keyplan.arm(app)  # (made at a stop: for the focus of then; here for the source pane's)
        assert app.key_plan is not None
        assert not await asyncio.to_thread(keyplan.take, app, b"x")
        assert app.key_plan is None
        await until(pilot, lambda: not client.tokens_held()["reserved"], 5, "the tokens given back")
        assert not await asyncio.to_thread(keyplan.take, app, b"n")  # (no plan: Textual's way)

        # the focus moved to the console's input line: its letters are text there
        keyplan.arm(app)
        assert app.key_plan is not None
        await pilot.press("colon")
        await pilot.pause()
        assert not await asyncio.to_thread(keyplan.take, app, b"n")
        keyplan.arm(app)  # (armed there: no key would step)
        assert app.key_plan is None
        await pilot.press("escape")
        app.query_one(SourceView).focus()
        await pilot.pause()

        # a key read before, handed to the loop and not taken in there yet: it goes first
        keyplan.arm(app)
        with monkeypatch.context() as m:
            m.setattr(app, "input_in_flight", lambda: True)
            assert not await asyncio.to_thread(keyplan.take, app, b"n")

        # a command written to gdb since (here the console's): the plan is out of date
        keyplan.arm(app)
        assert app.key_plan is not None
        await app.session.console("info line")
        assert not await asyncio.to_thread(keyplan.take, app, b"n")

        # a new state since (another frame selected)
        keyplan.arm(app)
        plan = app.key_plan
        await app.session.select_frame(1)
        await until(pilot, lambda: app.state.selected_frame == 1, 5, "the frame selected")
        assert app.key_plan is None  # (dropped at the state)
        app.key_plan = plan  # (as if the state came between the check and the write)
        assert not await asyncio.to_thread(keyplan.take, app, b"n")

        assert app.state.generation == gen and app.state.process is ProcessState.STOPPED  # never stepped
        await until(pilot, lambda: not client.tokens_held()["reserved"], 5, "the tokens given back")


async def test_no_plan_for_a_program_that_runs(threads_prog):
    app = make_app(program=str(threads_prog), ex=["break middle"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        app.query_one(SourceView).focus()
        await armed(pilot)
        await app.session.console("delete")
        await pilot.press("c")
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 10, "the program's end")
        assert app.key_plan is None
        keyplan.arm(app)
        assert app.key_plan is None
