"""The generated tokens as a strip of pieces, each with the five most likely tokens of its step:
what the model weighed when it chose it, with their probabilities, from the distribution the
token was drawn from (temperature, top-k and top-p as the run applied them; greedy: the
softmax of the logits), the chosen token marked, also when it is not among them.

Every number is the run's own (models.generate.next_step computed them at that step, kept on
the StepRecord); nothing here runs the model. The strip is HTML: each piece is focusable and
its tooltip shows on hover and on keyboard focus (one tab stop, the arrow keys move between
pieces: STRIP_JS), so a keyboard reaches every step's alternatives too. The pieces are the
visitor's own run's, escaped: a token is text, never markup.
"""
from __future__ import annotations

from html import escape

from explorer.generate.session import Session
from explorer.locales import text
from explorer.prompts import piece_text


def percent(p: float) -> str:
    """A probability as a percentage a reader can compare: two decimals, "<0.01%" under them."""
    if 0 < p < 5e-5:
        return "<0.01%"
    return f"{100 * p:.2f}%"


def sampling_basis(request, lang: str) -> str:
    """Which distribution the probabilities are: the run's sampling, in words."""
    if request.temperature == 0.0:
        return text("generate.tok.greedy", lang)
    cuts = ""
    if request.top_k:
        cuts += text("generate.tok.cut_k", lang, k=request.top_k)
    if request.top_p < 1.0:
        cuts += text("generate.tok.cut_p", lang, p=request.top_p)
    return text("generate.tok.sampled", lang, t=request.temperature, cuts=cuts)


def _row(label: str, p: float, token_id: int, chosen: bool, lang: str, outside: bool = False) -> str:
    mark = ""
    if chosen:
        mark = (f'<span class="gen-mark">✓ '
                f'{escape(text("generate.tok.outside" if outside else "generate.tok.chosen", lang))}</span>')
    classes = "gen-alt" + (" gen-chosen" if chosen else "") + (" gen-outside" if outside else "")
    return (f'<span class="{classes}" data-id="{token_id}" data-p="{p!r}">'
            f'<span class="gen-label">{escape(label)}</span>'
            f'<span class="gen-bar" style="width:{min(max(p, 0.0), 1.0) * 100:.1f}%"></span>'
            f'<span class="gen-p">{percent(p)}</span>{mark}</span>')


def token_html(record, index: int, basis: str, lang: str) -> str:
    """One generated token: its piece, focusable, and its tooltip (step, position, the basis of
    the probabilities, the alternatives with the chosen one marked)."""
    piece = escape(piece_text(record.piece))
    alternatives, labels = record.alternatives, record.alternative_labels
    tab = "0" if index == 0 else "-1"
    tip_id = f"gen-tip-{index}"
    head = escape(text("generate.tok.step", lang, i=record.index, pos=record.position))
    rows = []
    if alternatives is not None and labels:
        for token_id, p, label in zip(alternatives.ids, alternatives.probs, labels):
            rows.append(_row(label, p, token_id, token_id == record.token_id, lang))
        if record.token_id not in alternatives.ids:
            rows.append(_row(labels[-1], alternatives.chosen_prob, record.token_id, True, lang,
                             outside=True))
    else:
        rows.append(f'<span class="gen-none">{escape(text("generate.tok.none", lang))}</span>')
    return (f'<span class="gen-tok" tabindex="{tab}" data-index="{index}" '
            f'aria-describedby="{tip_id}">{piece}'
            f'<span class="gen-tip" role="tooltip" id="{tip_id}">'
            f'<span class="gen-tip-head">{head}</span>'
            f'<span class="gen-basis">{escape(basis)}</span>{"".join(rows)}</span></span>')


def strip_html(session: Session | None, lang: str = "en") -> str:
    """The run's tokens, in order: each later token only appends to the string (a streamed
    update is sent as the new tail)."""
    if session is None or not session.records:
        return ""
    basis = sampling_basis(session.request, lang)
    return "".join(token_html(r, i, basis, lang) for i, r in enumerate(session.records))


# The strip's style (gr.HTML css_template): a tooltip under its piece, shown on hover and focus.
STRIP_CSS = """
.gen-tok { position: relative; display: inline-block; white-space: pre; margin: 1px;
  padding: 0 3px; border: 1px solid var(--border-color-primary); border-radius: 4px;
  font-family: var(--font-mono); font-size: var(--text-md); cursor: help; }
.gen-tok:hover, .gen-tok:focus { background: var(--color-accent-soft); outline: 2px solid var(--color-accent); }
.gen-tip { display: none; position: absolute; z-index: 60; left: 0; top: calc(100% + 4px);
  width: max-content; min-width: 17em; max-width: 26em; white-space: normal; padding: 6px 8px;
  background: var(--background-fill-primary); color: var(--body-text-color);
  border: 1px solid var(--border-color-primary); border-radius: 6px;
  box-shadow: 0 4px 14px rgba(0, 0, 0, 0.25); font-family: var(--font); font-size: var(--text-sm); }
.gen-tok:hover:not(.gen-tip-off) > .gen-tip, .gen-tok:focus:not(.gen-tip-off) > .gen-tip { display: block; }
.gen-tip-head { display: block; font-weight: 600; }
.gen-basis { display: block; margin-bottom: 4px; font-style: italic; }
.gen-alt { position: relative; display: flex; gap: 0.6em; align-items: baseline; padding: 1px 4px;
  white-space: pre; font-family: var(--font-mono); }
.gen-label { flex: 1; overflow: hidden; text-overflow: ellipsis; }
.gen-bar { position: absolute; left: 0; bottom: 0; height: 3px; background: #21918c; }
.gen-p { font-variant-numeric: tabular-nums; }
.gen-chosen { font-weight: 700; background: var(--color-accent-soft); }
.gen-outside { margin-top: 4px; border-top: 1px dashed var(--border-color-primary); }
.gen-mark { font-family: var(--font); }
"""

# One tab stop for the strip: the arrow keys (and Home, End) move between pieces; Escape hides
# the focused piece's tooltip until focus or the pointer leaves it; a tooltip that would pass
# the window's right edge is moved left (gr.HTML js_on_load).
STRIP_JS = """
element.addEventListener('keydown', (event) => {
  const tok = event.target.closest && event.target.closest('.gen-tok');
  if (!tok) return;
  if (event.key === 'Escape') { tok.classList.add('gen-tip-off'); return; }
  const all = Array.from(element.querySelectorAll('.gen-tok'));
  let i = all.indexOf(tok);
  if (event.key === 'ArrowRight') i += 1;
  else if (event.key === 'ArrowLeft') i -= 1;
  else if (event.key === 'Home') i = 0;
  else if (event.key === 'End') i = all.length - 1;
  else return;
  event.preventDefault();
  i = Math.max(0, Math.min(all.length - 1, i));
  all.forEach((t) => { t.tabIndex = -1; });
  all[i].tabIndex = 0;
  all[i].focus();
});
const release = (event) => {
  const tok = event.target.closest && event.target.closest('.gen-tok');
  if (tok) tok.classList.remove('gen-tip-off');
};
element.addEventListener('focusout', release);
element.addEventListener('mouseout', release);
const place = (event) => {
  const tok = event.target.closest && event.target.closest('.gen-tok');
  const tip = tok && tok.querySelector('.gen-tip');
  if (!tip) return;
  tip.style.left = '0px';
  const over = tip.getBoundingClientRect().right - document.documentElement.clientWidth + 8;
  if (over > 0) tip.style.left = (-over) + 'px';
};
element.addEventListener('mouseover', place);
element.addEventListener('focusin', place);
"""
