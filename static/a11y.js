// Text alternatives of the charts: every Plotly chart whose figure carries a sentence in
// layout.meta.alt (explorer/plotting.py Fig.finish) becomes role="img" with that sentence as
// its aria-label, so a screen reader says what the chart shows. Charts are drawn and redrawn
// after the page loads (a run, the language switch redrawing every chart server-side, a tab
// shown for the first time), so a MutationObserver labels them again whenever the page changes.
(function () {
  function alternative(chart) {
    const layout = chart._fullLayout || chart.layout || {};
    const meta = layout.meta || (chart.layout && chart.layout.meta);
    return meta && typeof meta.alt === "string" ? meta.alt : "";
  }
  function label(chart) {
    const alt = alternative(chart);
    if (!alt) return;
    if (chart.getAttribute("aria-label") !== alt) chart.setAttribute("aria-label", alt);
    if (chart.getAttribute("role") !== "img") chart.setAttribute("role", "img");
    if (!chart.explorerAltHooked && typeof chart.on === "function") {
      chart.explorerAltHooked = true;
      chart.on("plotly_afterplot", () => label(chart));
    }
  }
  let queued = false;
  function labelAll() {
    queued = false;
    document.querySelectorAll(".js-plotly-plot").forEach(label);
  }
  function schedule() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(labelAll);
  }
  function start() {
    new MutationObserver(schedule).observe(document.body, {childList: true, subtree: true});
    schedule();
  }
  if (document.body) start(); else document.addEventListener("DOMContentLoaded", start);
})();
