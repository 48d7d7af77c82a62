// Cell texts that fit the chart as it is drawn. A figure whose layout.meta.fit holds its first
// trace's cell texts cut for several plot-area widths ({px: [ascending widths], text: [one
// matrix per width]}; the figure's own text is the narrowest cut, a phone's: the logit lens,
// explorer/nexttoken/figures.py) shows, once drawn, the cut for the widest width its plot area
// holds: whole tokens on a wide or projected page, short ones on a phone. Charts are drawn
// again after each run and on a resize, so the choice is made after every draw.
(function () {
  function fit(gd) {
    const f = gd.layout && gd.layout.meta && gd.layout.meta.fit;
    const size = gd._fullLayout && gd._fullLayout._size;
    if (!f || !size || !window.Plotly || !Array.isArray(f.px) || !Array.isArray(f.text)) return;
    let pick = 0;
    f.px.forEach((px, i) => { if (typeof px === "number" && px <= size.w && i < f.text.length) pick = i; });
    // the same figure (a new draw brings a new meta object) at the same cut: nothing to do
    if (gd.explorerFit && gd.explorerFit.of === f && gd.explorerFit.pick === pick) return;
    gd.explorerFit = {of: f, pick: pick};
    window.Plotly.restyle(gd, {text: [f.text[pick]]}, [0]);
  }
  function hook(gd) {
    if (!gd.explorerFitHooked && typeof gd.on === "function") {
      gd.explorerFitHooked = true;
      gd.on("plotly_afterplot", () => fit(gd));
    }
    fit(gd);
  }
  let queued = false;
  function schedule() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      document.querySelectorAll(".js-plotly-plot").forEach((gd) => {
        if (gd.layout && gd.layout.meta && gd.layout.meta.fit) hook(gd);
      });
    });
  }
  function start() {
    new MutationObserver(schedule).observe(document.body, {childList: true, subtree: true});
    schedule();
  }
  if (document.body) start(); else document.addEventListener("DOMContentLoaded", start);
})();
