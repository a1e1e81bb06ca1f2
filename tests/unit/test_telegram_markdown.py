"""The agent's Markdown as Telegram HTML, and long answers cut into messages."""

from __future__ import annotations

import pytest
from tests.support.fake_telegram import visible_text

from famulus.channels.telegram.conversation import command
from famulus.channels.telegram.markdown import split_markdown, to_html


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("**bold** and __bold__", "<b>bold</b> and <b>bold</b>"),
        ("*it* and _it_ and ~~gone~~", "<i>it</i> and <i>it</i> and <s>gone</s>"),
        ("snake_case_name and 2*3*4", "snake_case_name and 2*3*4"),
        ("a < b & c > d", "a &lt; b &amp; c &gt; d"),
        ("`x < **y**`", "<code>x &lt; **y**</code>"),
        ("# Title", "<b>Title</b>"),
        ("- one\n* two\n  + three", "• one\n• two\n  • three"),
        ("> said\n> twice\nafter", "<blockquote>said\ntwice</blockquote>\nafter"),
        ("```python\nif a < b:\n    **x**\n```", '<pre><code class="language-python">if a &lt; b:\n    **x**</code></pre>'),
        ("```\nopen to the end", "<pre>open to the end</pre>"),
        ("[site](https://x.org/_a_/?q=1&r=2)", '<a href="https://x.org/_a_/?q=1&amp;r=2">site</a>'),
        ('[x](https://x.org/"onclick)', '<a href="https://x.org/&quot;onclick">x</a>'),
        ("[x](javascript:alert(1))", "[x](javascript:alert(1))"),
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ],
)  # fmt: skip
def test_to_html(markdown: str, expected: str) -> None:
    assert to_html(markdown) == expected
    assert visible_text(expected, "HTML")[1] is None  # Telegram would parse it


def test_short_text_is_one_part() -> None:
    assert split_markdown("hello") == ["hello"]


def test_long_text_is_cut_between_paragraphs() -> None:
    paragraphs = [f"paragraph {n} " + "x" * 1000 for n in range(9)]
    parts = split_markdown("\n\n".join(paragraphs))
    assert len(parts) == 3 and all(len(p) <= 4096 for p in parts)
    assert "\n\n".join(parts) == "\n\n".join(paragraphs)


def test_a_code_block_cut_in_two_is_closed_and_reopened() -> None:
    code = "```python\n" + "print('line')\n" * 600 + "```\nafter"
    parts = split_markdown(code)
    assert len(parts) == 3
    assert parts[0].endswith("\n```") and parts[1].startswith("```python\n")
    for part in parts:
        rendered = to_html(part)
        visible, error = visible_text(rendered, "HTML")
        assert error is None and len(visible) <= 4096
    assert to_html(parts[2]).endswith("</code></pre>\nafter")


def test_commands() -> None:
    assert command("/new", "bot") == ("new", "")
    assert command("/Sessions 2", "bot") == ("sessions", "2")
    assert command("/new@Bot", "bot") == ("new", "")
    assert command("/new@otherbot", "bot") is None
    assert command("/greet Bob and Alice", "bot") == ("greet", "Bob and Alice")
    assert command("hello /new", "bot") is None
