"""The agent's Markdown as the HTML subset Telegram renders, cut into messages.

Telegram's HTML mode is chosen over MarkdownV2 because its escaping is simple
and total (``&``, ``<``, ``>``), so any text becomes a valid message. The agent
writes CommonMark-ish Markdown; what Telegram can show is kept (bold, italic,
strikethrough, inline code, code blocks, links, quotes), what it cannot is
rendered plainly (headings become bold lines, list markers become bullets,
tables stay as text). A message is at most 4096 characters; a long answer is
cut between paragraphs, lines or words (``notify.senders.split_text``) *before*
conversion, and a code block cut in two is closed and reopened, so every part
is valid HTML on its own.
"""

from __future__ import annotations

import html
import re

from famulus.notify.senders import TELEGRAM_LIMIT, split_text

_FENCE = re.compile(r"^\s*(```|~~~)\s*([\w+#.-]*)\s*$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_QUOTE = re.compile(r"^\s{0,3}>\s?(.*)$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^\s)]+|tg://[^\s)]+|mailto:[^\s)]+)\)")
_INLINE = (
    (re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*"), "b"),
    (re.compile(r"(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)"), "b"),
    (re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"), "s"),
    (re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])"), "i"),
    (re.compile(r"(?<![\w_])_(?=[^\s_])(.+?)(?<=[^\s_])_(?![\w_])"), "i"),
)


def to_html(markdown: str) -> str:
    """Telegram HTML for ``markdown``; an unclosed code block runs to the end."""
    out: list[str] = []
    code: list[str] | None = None
    language = ""
    quote: list[str] = []
    for line in markdown.split("\n"):
        fence = _FENCE.match(line)
        if code is not None:
            if fence and not fence.group(2):
                out.append(_pre(code, language))
                code = None
            else:
                code.append(line)
            continue
        quoted = _QUOTE.match(line)
        if quoted:
            quote.append(_line(quoted.group(1)))
            continue
        if quote:
            out.append("<blockquote>" + "\n".join(quote) + "</blockquote>")
            quote = []
        if fence:
            code, language = [], fence.group(2)
            continue
        out.append(_line(line))
    if quote:
        out.append("<blockquote>" + "\n".join(quote) + "</blockquote>")
    if code is not None:
        out.append(_pre(code, language))
    return "\n".join(out)


def _pre(lines: list[str], language: str) -> str:
    body = html.escape("\n".join(lines), quote=False)
    if language:
        lang = html.escape(language, quote=True)
        return f'<pre><code class="language-{lang}">{body}</code></pre>'
    return f"<pre>{body}</pre>"


def _line(line: str) -> str:
    heading = _HEADING.match(line)
    if heading:
        return f"<b>{inline(heading.group(1))}</b>"
    if _RULE.match(line):
        return "———"
    bullet = _BULLET.match(line)
    if bullet:
        return f"{bullet.group(1)}• {inline(bullet.group(2))}"
    return inline(line)


def inline(text: str) -> str:
    """Escape ``text`` and turn its inline Markdown into tags; code spans are
    taken out first so nothing inside them is interpreted."""
    out: list[str] = []
    at = 0
    for span in _CODE_SPAN.finditer(text):
        out.append(_styled(text[at : span.start()]))
        out.append(f"<code>{html.escape(span.group(2).strip(), quote=False)}</code>")
        at = span.end()
    out.append(_styled(text[at:]))
    return "".join(out)


def _styled(text: str) -> str:
    """Links first (their address set aside, so no ``_`` or ``*`` in it is
    read as emphasis), then the emphasis pairs, then the addresses back."""
    escaped = html.escape(text, quote=False)
    hrefs: list[str] = []

    def link(m: re.Match[str]) -> str:
        hrefs.append(m.group(2).replace('"', "&quot;"))
        return f'<a href="\x00{len(hrefs) - 1}\x00">{m.group(1)}</a>'

    escaped = _LINK.sub(link, escaped.replace("\x00", ""))
    for pattern, tag in _INLINE:
        escaped = pattern.sub(rf"<{tag}>\1</{tag}>", escaped)
    return re.sub("\x00(\\d+)\x00", lambda m: hrefs[int(m.group(1))], escaped)


def split_markdown(markdown: str, limit: int = TELEGRAM_LIMIT) -> list[str]:
    """``markdown`` in parts of at most ``limit`` characters; a code block cut
    between two parts is closed at the end of the first and reopened (with its
    language) at the start of the next."""
    # Telegram counts the rendered text, which is never longer than the source
    # (markers and fences are dropped), so cutting the source is enough.
    parts = split_text(markdown, limit)
    fixed: list[str] = []
    carry = ""
    for part in parts:
        text = carry + part
        carry = ""
        language = _open_fence(text)
        if language is not None:
            text += "\n```"
            carry = f"```{language}\n"
        fixed.append(text)
    return fixed


def _open_fence(text: str) -> str | None:
    """The language of a code block still open at the end of ``text`` (``""``
    for none given), or None when every block is closed."""
    language: str | None = None
    for line in text.split("\n"):
        fence = _FENCE.match(line)
        if fence is None:
            continue
        if language is None:
            language = fence.group(2)
        elif not fence.group(2):
            language = None
    return language
