// A live class on the page (explorer/ui/page/classroom.py).
//
// explorerClassPage(raw): the page's part of a class event (JSON from the server): the cookie
// of the room link contract (explorer_room=CODE, so that a load balancer routes every request
// of this page to the room's replica), the address (?room=CODE; a teacher link's key is taken
// out of the address bar, which a projector shows), a reload on ?room=CODE after a join by
// code, the Class tab opened.
//
// The page's member token (a student's, or the teacher page's watch token) comes in the same
// JSON and is kept for this tab only (sessionStorage): the revision poll sends it, so that the
// member counts as here, the room lives while the page is open, and a school behind one address
// is never throttled as a code guesser would be.
//
// explorerClassRevision(current): the class timer's tick: the room of the page's address (or
// of its cookie), its revision read from the plain route /class/revision (a long poll)
// (explorer/web/class_route.py; relative to the page, so under a Space's root path too). The
// hidden box changes, and the page calls the server's poll, only when the revision did; a room
// the server does not know reads "gone" (the poll then says so in words). A page that follows
// the class hands the move (the link the answer carries) to the hidden pending box as soon as
// the read says the teacher moved (classMoved below): the read is {revision, move}, move null
// when there is none to apply.
window.explorerClassPage = function (raw) {
  let c; try { c = JSON.parse(raw); } catch (e) { return; }
  if (!c) return;
  const room = typeof c.room === "string" && /^[A-Z2-9]{6}$/.test(c.room) ? c.room : null;
  if (room) document.cookie = "explorer_room=" + room + "; Path=/; SameSite=Lax";
  if (room && typeof c.member === "string" && /^[A-Za-z0-9_-]{16,64}$/.test(c.member)) {
    try { sessionStorage.setItem("explorer-class-member", room + ":" + c.member); } catch (e) {}
  }
  // the teacher's key: this tab only, never the browser's lasting storage (a shared PC)
  if (room && typeof c.teacher === "string" && /^[A-Za-z0-9_-]{16,64}$/.test(c.teacher)) {
    try { sessionStorage.setItem("explorer-class-teacher", JSON.stringify({code: room, secret: c.teacher})); } catch (e) {}
  }
  if (c.end) {      // the class ended: forget its key, its token, its cookie and its address
    try { sessionStorage.removeItem("explorer-class-teacher"); sessionStorage.removeItem("explorer-class-member"); } catch (e) {}
    document.cookie = "explorer_room=; Path=/; Max-Age=0; SameSite=Lax";
    history.replaceState(null, "", location.pathname);
    return;
  }
  const here = new URLSearchParams(location.search);
  if (room && c.reload && here.get("room") !== room) { location.replace(location.pathname + "?room=" + room); return; }
  if (room && c.address && here.get("key") !== null) history.replaceState(null, "", location.pathname + "?room=" + room);
  if (room && !here.get("room")) history.replaceState(null, "", location.pathname + "?room=" + room);
  if (c.open && window.explorerOpen) window.explorerOpen(c.open);
};

// What the tab kept of its teacher key (read at load, sent to the server's on_load).
window.explorerClassKept = function () {
  try { return sessionStorage.getItem("explorer-class-teacher") || ""; } catch (e) { return ""; }
};

// The read is a long poll (since=<the revision shown>): the server answers as soon as the
// teacher moves. One is in flight per page: the timer's ticks while it waits share its answer.
let classPoll = null;
window.explorerClassRevision = function (current) {
  if (classPoll) return classPoll;
  classPoll = classRevision(current).finally(() => { classPoll = null; });
  return classPoll;
};

async function classRevision(current) {
  const read = (revision, move) => ({revision: revision, move: move || null});
  let room = new URLSearchParams(location.search).get("room");
  if (!room) { const m = document.cookie.match(/(?:^|; )explorer_room=([A-Z2-9]{6})/); room = m && m[1]; }
  if (!room || !/^[A-Z2-9]{6}$/.test(room)) return read(current);
  const since = /^\d{1,12}$/.test(current || "") ? "&since=" + current : "";
  let member = "";
  try {
    const kept = (sessionStorage.getItem("explorer-class-member") || "").split(":");
    if (kept[0] === room && /^[A-Za-z0-9_-]{16,64}$/.test(kept[1] || "")) member = "&member=" + kept[1];
  } catch (e) {}
  // a long poll that ran out unchanged is asked again at once (up to LONG_POLLS in a row), not
  // at the timer's next tick: a page busy drawing a run's stream ticks late, and a move must
  // not wait for that tick
  for (let asked = 0; asked < LONG_POLLS; asked++) {
    try {
      const answer = await fetch("class/revision?room=" + room + member + since, {cache: "no-store"});
      if (answer.status === 404) return read("gone");
      if (!answer.ok) return read(current);
      const revision = (await answer.text()).trim();
      if (!/^\d{1,12}$/.test(revision)) return read(current);
      const move = classMoved(room, answer.headers.get("x-class-moves"), answer.headers.get("x-class-link"));
      if (revision !== current || !since) return read(revision, move);
    } catch (error) { return read(current); }
  }
  return read(current);
}
const LONG_POLLS = 6;

// A move (the room's move counter, header X-Class-Moves, changed; a reveal or a join leaves it)
// on a page that follows the class: the move itself (header X-Class-Link, the class's link) is
// returned as the pending box's value, written exactly as the server's poll writes it
// (classroom.py move_value), so that the poll's later write of the same move changes nothing.
// The page's own runs of the step it leaves were already stopped by the server at the teacher's
// press (class_teacher.py, stop_sessions), each ending with its own last message; their streams
// are paced by what the page has drawn (static/pace.js), so no backlog of messages stands
// between this answer and the move. The teacher's page and a student exploring on her own
// ("Back to the class" shown) apply nothing.
let classMoves = null;   // {room, n}: the counter this page read last
function classMoved(room, moves, link) {
  if (!/^\d{1,12}$/.test(moves || "")) return null;
  const moved = classMoves !== null && classMoves.room === room && classMoves.n !== moves;
  classMoves = {room: room, n: moves};
  if (!moved || !classFollows(room)) return null;
  return /^\?[!#-\[\]-~]{1,8191}$/.test(link || "") ? JSON.stringify({link: link, moves: Number(moves)}) : null;
}

function classFollows(room) {
  try {
    const teacher = JSON.parse(sessionStorage.getItem("explorer-class-teacher") || "null");
    if (teacher && teacher.code === room) return false;
  } catch (e) {}
  const shown = (id) => {
    const element = document.getElementById(id);
    return !!element && !element.closest(".hidden") && getComputedStyle(element).display !== "none";
  };
  // a student's bar: "Explore on my own" while following, "Back to the class" while exploring;
  // the teacher's bar shows neither
  return shown("class-explore") && !shown("class-back");
}

// On a phone (static/classroom.css, up to 480 px) the class bar is one line: a tap on it opens
// its buttons and the revealed histogram (the bar's class "open"), a tap on its line closes it.
const PHONE = "(max-width: 480px)";
document.addEventListener("click", (event) => {
  const target = event.target;
  const bar = target && target.closest && target.closest("#class-bar");
  if (!bar || !window.matchMedia(PHONE).matches) return;
  const open = bar.classList.contains("open");
  if (open && !target.closest("#class-status")) return;   // a button or the chart in the open bar
  bar.classList.toggle("open", !open);
  const line = document.getElementById("class-status");
  if (line) { line.setAttribute("role", "button"); line.setAttribute("aria-expanded", String(!open)); }
  // a chart drawn while the bar was closed had no width: Plotly's responsive charts redraw on a resize
  if (!open) setTimeout(() => window.dispatchEvent(new Event("resize")), 50);
});

// Pacing: while the teacher holds the class on its step (the hidden box #class-pace reads
// "paused" on a following student's page), the lesson's Next, Back, Exit and picker, the →/←
// keys and Explore do nothing: the buttons are disabled (again after each re-render, as the
// lesson's moves redraw them) and a press or key is stopped before the page's handlers see it.
// The server holds the rest (explorer/ui/page/class_peer.py: a move is taken back; the store
// refuses to stop following).
const HELD = ["lesson-next", "lesson-back", "lesson-exit", "class-explore"];
const HELD_SELECTOR = HELD.map((id) => "#" + id).join(", ") + ", #lesson-pick";
let classHeld = null;
function holdButtons() {
  const held = document.body.classList.contains("class-paused");
  for (const id of HELD) {
    const el = document.getElementById(id);
    if (!el) continue;
    if (held) { el.disabled = true; el.setAttribute("aria-disabled", "true"); el.dataset.classHeld = "1"; }
    else if (el.dataset.classHeld) { el.disabled = false; el.removeAttribute("aria-disabled"); delete el.dataset.classHeld; }
  }
  const pick = document.querySelector("#lesson-pick input");
  if (pick) pick.disabled = held;
}
window.explorerClassPace = function (value) {
  const held = value === "paused";
  document.body.classList.toggle("class-paused", held);
  holdButtons();
  if (held && !classHeld) classHeld = setInterval(holdButtons, 400);
  if (!held && classHeld) { clearInterval(classHeld); classHeld = null; }
};
function stopHeld(event) {
  if (!document.body.classList.contains("class-paused")) return;
  const target = event.target;
  const key = event.type === "keydown" && (event.key === "ArrowRight" || event.key === "ArrowLeft");
  const typing = target && target.closest && target.closest("input, textarea, [contenteditable]");
  if ((key && !typing) || (event.type !== "keydown" && target && target.closest && target.closest(HELD_SELECTOR))) {
    event.preventDefault(); event.stopImmediatePropagation();
  }
}
for (const type of ["click", "mousedown", "keydown"]) document.addEventListener(type, stopHeld, true);
