"""RowsTable (the fast layout of long plain-text tables) draws exactly what the rich table it stands for draws."""

import io

from hypothesis import given, settings, strategies as st
from rich.console import Console

from forensics.render.style import RowsTable

cells = st.text(alphabet="abcxyz0123456789 .:-_", min_size=0, max_size=14)


def draw(renderable, width, color):
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=color, color_system="standard" if color else None,
                      no_color=not color, highlight=False, emoji=False, legacy_windows=False)
    console.print(renderable)
    return out.getvalue()


@settings(max_examples=150, deadline=None)
@given(justify=st.lists(st.sampled_from(["left", "right", "center"]), min_size=1, max_size=5),
       data=st.data(), width=st.integers(20, 160), color=st.booleans(), titled=st.booleans())
def test_same_text_as_the_rich_table(justify, data, width, color, titled):
    names = data.draw(st.lists(cells.filter(lambda c: c.strip() == c and c), min_size=len(justify),
                               max_size=len(justify)))
    rows = data.draw(st.lists(st.lists(cells.map(str.strip), min_size=len(justify), max_size=len(justify)),
                              max_size=30))
    fast = RowsTable(*zip(names, justify), rows=rows, title="records that depart" if titled else None)
    assert draw(fast, width, color) == draw(fast.rich_table(), width, color)


def test_narrow_console_falls_back_to_the_rich_table():
    fast = RowsTable("a", ("b", "right"), rows=[["x" * 30, "y" * 30]])
    assert draw(fast, 40, False) == draw(fast.rich_table(), 40, False)
    assert "\n" in draw(fast, 40, False).rstrip("\n")  # wrapped, as rich wraps it
