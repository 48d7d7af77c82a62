"""The text of a licence shipped as a saved web page (Gemma's GEMMA_TERMS.html).

The page is a whole saved Google developer page (scripts, styles, navigation); only the
element with class ``devsite-article-body`` is the terms. Standard-library parser, so no new
dependency.
"""
from __future__ import annotations

import html.parser
import re


class _ArticleText(html.parser.HTMLParser):
    """Collects the text inside the first ``div.devsite-article-body``."""

    _BLOCK = {"p", "div", "h1", "h2", "h3", "h4", "li", "br", "tr", "section", "ol", "ul"}
    _VOID = {"br", "img", "hr", "meta", "link", "input", "wbr", "source"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0  # nesting depth inside the article; 0 = outside
        self.skip = 0  # inside <script>/<style> within the article
        self.chunks: list[str] = []

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if self.depth == 0:
            if tag == "div" and "devsite-article-body" in classes:
                self.depth = 1
            return
        if tag in self._VOID:
            if tag == "br":
                self.chunks.append("\n")
            return
        self.depth += 1
        if tag in ("script", "style"):
            self.skip += 1
        if tag in self._BLOCK:
            self.chunks.append("\n\n- " if tag == "li" else "\n\n")

    def handle_endtag(self, tag):
        if self.depth == 0 or tag in self._VOID:
            return
        self.depth -= 1
        if tag in ("script", "style"):
            self.skip = max(0, self.skip - 1)

    def handle_data(self, data):
        if self.depth and not self.skip:
            self.chunks.append(re.sub(r"\s+", " ", data))


def article_text(page: str) -> str:
    """Plain text of the page's article: paragraphs separated by blank lines, list items as
    "- " lines, no markup."""
    parser = _ArticleText()
    parser.feed(page)
    text = "".join(parser.chunks)
    text = re.sub(r"[ \t]*\n[ \t]*", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
