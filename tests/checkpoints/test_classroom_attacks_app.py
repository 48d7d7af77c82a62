"""A refused link value, in the whole app built on the real runtime (the other class attacks:
tests/unit/test_classroom_attacks.py)."""
from __future__ import annotations

CRAFTED = ("?view=[open the answers](http://evil.example/x)&model=![img](http://evil.example/i.png)"
           "&lesson=www.evil.example&x=<b>bold</b>")


def test_a_refused_link_value_is_quoted_as_text_not_markdown(full_page, runtime):
    """The attack: a crafted class link's refused values were quoted into the page's note as
    Markdown, so the note (in the app's own words) showed the link's own link or image. Now the
    note's Markdown renders as the very text of the sentence, and the toast is escaped HTML."""
    import html

    from markdown_it import MarkdownIt

    from explorer.ui.page.lessons import link_note, restore
    from explorer.ui.page.views import read_link
    from explorer.lessons import steps_of

    views = full_page.views
    plan = read_link(CRAFTED, views, runtime.names(), runtime.default_name,
                     lambda name: runtime.get(name).config, steps_of())
    assert plan.notes
    for lang in ("en", "zh"):
        out = restore(CRAFTED, lang, runtime.default_name, views, runtime.names(), runtime.default_name,
                      lambda name: runtime.get(name).config)
        note = out[2]["value"]
        rendered = MarkdownIt("commonmark").render(note)
        assert "<a " not in rendered and "<img" not in rendered and "<b>" not in rendered, rendered
        assert "http://" not in note and "www." not in note    # no GFM autolink either
        said = link_note(plan.notes, lang)
        text_of = html.unescape(rendered.replace("<p>", "").replace("</p>", "")).strip()
        assert text_of == "⚠ " + said, (text_of, said)
