// The page's one watch over its Plotly charts. Charts are drawn and redrawn after the page loads
// (a run, the language switch redrawing every chart server-side, a tab shown for the first time,
// a resize), so one MutationObserver on the body asks, at most once per frame, that every
// `.js-plotly-plot` be visited, and each chart's own plotly_afterplot (hooked once per chart)
// visits it again after each of its draws. A visit does two jobs, each a no-op once done:
//  - label: a figure whose layout.meta.alt holds a sentence (explorer/plotting.py Fig.finish)
//    becomes role="img" with that sentence as its aria-label, so a screen reader says what the
//    chart shows;
//  - fit: a figure whose layout.meta.fit holds its first trace's cell texts cut for several
//    plot-area widths ({px: [ascending widths], text: [one matrix per width]}; the figure's own
//    text is the narrowest cut, a phone's: the logit lens, explorer/nexttoken/figures.py) shows
//    the cut for the widest width its drawn plot area holds: whole tokens on a wide or
//    projected page, short ones on a phone.
(function () {
  function metaOf(gd) {
    const full = gd._fullLayout && gd._fullLayout.meta;
    return full || (gd.layout && gd.layout.meta) || {};
  }
  function label(gd, meta) {
    if (typeof meta.alt !== "string" || !meta.alt) return;
    if (gd.getAttribute("aria-label") !== meta.alt) gd.setAttribute("aria-label", meta.alt);
    if (gd.getAttribute("role") !== "img") gd.setAttribute("role", "img");
  }
  function fit(gd) {
    const f = gd.layout && gd.layout.meta && gd.layout.meta.fit;
    const size = gd._fullLayout && gd._fullLayout._size;
    if (!f || !size || !window.Plotly || !Array.isArray(f.px) || !Array.isArray(f.text)) return;
    let pick = 0;
    f.px.forEach((px, i) => { if (typeof px === "number" && px <= size.w && i < f.text.length) pick = i; });
    // the same figure (a new draw brings a new meta object) at the same cut: nothing to do
    if (gd.explorerFit && gd.explorerFit.of === f && gd.explorerFit.pick === pick) return;
    gd.explorerFit = {of: f, pick: pick};
    window.Plotly.restyle(gd, {text: [f.text[pick]]}, [0]);    // draws again: visit() once more
  }
  function visit(gd) {
    if (!gd.explorerHooked && typeof gd.on === "function") {
      gd.explorerHooked = true;
      gd.on("plotly_afterplot", () => visit(gd));
    }
    label(gd, metaOf(gd));
    fit(gd);
  }
  let queued = false;
  function schedule() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      document.querySelectorAll(".js-plotly-plot").forEach(visit);
    });
  }
  function start() {
    new MutationObserver(schedule).observe(document.body, {childList: true, subtree: true});
    schedule();
  }
  if (document.body) start(); else document.addEventListener("DOMContentLoaded", start);
})();
