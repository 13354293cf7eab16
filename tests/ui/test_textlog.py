"""The console's and the Output pane's log (tuidbg.ui.panes.textlog.TextLog) in an app of its own: long
lines wrap at the log's width (counted again when it changes), old lines drop off within the bound, the
log follows its end until scrolled away from it, and a row is found by bisection the same as by walking
the lines one by one."""

from __future__ import annotations

from textual.app import App

from tuidbg.ui.panes.textlog import TextLog


class LogApp(App):
    def compose(self):
        yield TextLog(id="log", max_lines=50)


def rows(log: TextLog) -> list[str]:
    """What each row of the log shows, through its line API."""
    return [log.render_line(y).text.rstrip() for y in range(log.size.height)]


def wrapped_by_hand(lines: list[str], width: int) -> list[str]:
    out = []
    for line in lines:
        out.extend(line[i:i + width] for i in range(0, max(1, len(line)), width))
    return out


async def test_long_lines_wrap_and_rewrap_at_a_new_width():
    app = LogApp()
    async with app.run_test(size=(30, 10)) as pilot:
        log = app.query_one(TextLog)
        width = log.scrollable_content_region.width
        lines = ["a" * 70 + "|end", "short", "", "b" * width]
        log.write_lines(lines)
        await pilot.pause()
        assert log.row_count == len(wrapped_by_hand(lines, width))
        assert rows(log)[:log.row_count] == wrapped_by_hand(lines, width)
        await pilot.resize_terminal(50, 10)
        await pilot.pause()
        width = log.scrollable_content_region.width
        assert rows(log)[:log.row_count] == wrapped_by_hand(lines, width)


async def test_old_lines_drop_off_and_every_row_is_the_right_piece_of_its_line():
    app = LogApp()
    async with app.run_test(size=(24, 12)) as pilot:
        log = app.query_one(TextLog)
        width = log.scrollable_content_region.width
        written = [f"{i}:" + "x" * (i * 7 % 60) for i in range(3000)]
        for i in range(0, 3000, 7):  # (batches, as the app writes them)
            log.write_lines(written[i:i + 7], open_line="partial" if i % 2 else "")
        await pilot.pause()
        kept = written[-50:]
        assert log.lines() == kept and log.dropped == 2950
        expected = wrapped_by_hand(kept, width)
        assert log.row_count == len(expected)
        # every row, through the scroll offset and the bisection, against the lines wrapped by hand
        seen: dict[int, str] = {}
        for top in range(0, len(expected), log.size.height):
            log.scroll_to(y=top, animate=False, immediate=True)
            await pilot.pause()
            at = int(log.scroll_offset.y)  # (the last page: as far as the log scrolls)
            seen.update((at + i, text) for i, text in enumerate(rows(log)) if at + i < len(expected))
        assert [seen[i] for i in range(len(expected))] == expected


async def test_the_log_follows_its_end_until_scrolled_away_and_keeps_its_place_when_it_rewraps():
    app = LogApp()
    async with app.run_test(size=(30, 8)) as pilot:
        log = app.query_one(TextLog)
        log.write_lines([f"line {i} " + "y" * 40 for i in range(30)])
        await pilot.pause()
        assert log.following and log.scroll_offset.y == log.max_scroll_y > 0
        # taller, then shorter (a pane maximized, then restored): still at the end
        await pilot.resize_terminal(30, 20)
        await pilot.pause()
        await pilot.resize_terminal(30, 8)
        await pilot.pause()
        log.write_lines(["the newest"])
        await pilot.pause()
        assert log.scroll_offset.y == log.max_scroll_y and "the newest" in rows(log)
        # scrolled up: new lines and a new width leave the rows in view where they are
        log.scroll_to(y=4, animate=False, immediate=True)
        await pilot.pause()
        assert not log.following
        first = rows(log)[0]
        log.write_lines(["newer still"])
        await pilot.pause()
        assert rows(log)[0] == first
        await pilot.resize_terminal(60, 8)
        await pilot.pause()
        assert rows(log)[0].startswith("line 2 ")  # (the line that was at the top, from its start)
        log.scroll_end(animate=False)
        await pilot.pause()
        assert log.following and "newer still" in rows(log)


async def test_tail_and_restyle_tail():
    app = LogApp()
    async with app.run_test(size=(30, 8)):
        log = app.query_one(TextLog)
        log.write_lines(["a", "b"], style="log")
        assert log.tail(1) == [("b", "log")]
        log.restyle_tail(1, "error")
        assert log.tail(2) == [("a", "log"), ("b", "error")]
