// A stream paced by what the page has drawn (explorer/serving/pacing.py, explorer/web/drawn_route.py).
//
// A paced stream's status line carries a hidden mark, <span class="pace" title="TOKEN.SEQ">,
// message SEQ of the run TOKEN. When a new mark is in the page, its report (POST drawn?run=&seq=)
// is sent from a task queued now: Gradio hands each stream message to its own task, so that task
// runs after every message the page had already received, and the report means "drawn, with
// nothing left behind it". The server sends the run's next decode step only after that report,
// so a page that draws slowly gets fewer, fresher messages instead of a backlog that holds up
// whatever it must do next (a teacher's move, Stop, a click).
(function () {
  // this browser's pages report: their runs wait for the first report too (explorer/web/drawn_route.py)
  document.cookie = "explorer_paced=1; Path=/; SameSite=Lax";
  const MARK = /^([A-Za-z0-9_-]{22})\.(\d{1,9})$/;
  const reported = new Map();   // run token -> the last message reported

  function report(token, seq) {
    setTimeout(() => {
      fetch("drawn?run=" + token + "&seq=" + seq, {method: "POST", cache: "no-store"}).catch(() => {});
    }, 0);
  }

  function look() {
    for (const mark of document.querySelectorAll("span.pace[title]")) {
      const m = MARK.exec(mark.getAttribute("title") || "");
      if (!m) continue;
      const seq = Number(m[2]);
      if ((reported.get(m[1]) || 0) >= seq) continue;
      if (reported.size > 64) reported.clear();   // old runs' tokens: nothing to keep
      reported.set(m[1], seq);
      report(m[1], seq);
    }
  }

  // one look per task that added or removed nodes (the observer's callback gets all its
  // mutations; a new mark comes as new nodes, the status line's HTML redrawn, so text edits
  // elsewhere are not watched); not static/charts.js's frame batch: a hidden tab runs no
  // animation frame, and its streams would then wait the longest for every message
  new MutationObserver(look).observe(document.documentElement, {childList: true, subtree: true});
})();
