"""The lesson panel's part in the browser: window.explorerApply (a step's or a link's command:
open the section, press its run button, show the step's link in the address bar), presenter mode
and the lesson keys."""

# The page's half of a step or a link: open the section, then press its run button once it is
# there and enabled (a run started by the button is the visitor's own, limits and all).
APPLY_JS = """(command) => { if (command) window.explorerApply(command); }"""


def with_page_language(inputs: int, at: int) -> str:
    """The js of a page-load event whose input `at` (of `inputs`) is the language: the page's own
    (the saved choice or the browser's: window.explorerLanguage, explorer/ui/page/shell.py) in
    its place. At load the language radio still holds its initial "en" (the header's load that
    sets it runs beside this one), so a Chinese visitor's link note, builder message or class
    message would be written in English."""
    names = [f"a{i}" for i in range(inputs)]
    values = list(names)
    values[at] = f"(window.explorerLanguage ? window.explorerLanguage() : {names[at]})"
    return f"({', '.join(names)}) => [{', '.join(values)}]"


PRESENT_JS = """(on) => {
  document.body.classList.toggle("explorer-present", Boolean(on));
  setTimeout(() => window.dispatchEvent(new Event("resize")), 100);
}"""

# window.explorerApply: a step's or a link's command on the page. Lesson keys: → / PageDown
# next step, ← / PageUp back, Escape leaves (not while typing in a field).
HEAD = r"""
<script>
(function () {
  const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
  let last = null;
  window.explorerApply = async function (raw) {
    let command;
    try { command = JSON.parse(raw); } catch (error) { return; }
    if (!command || command.nonce === last) return;
    last = command.nonce;
    if (command.address && /^\?lesson=[\w-]+&step=\d+(&custom=[\w-]+)?$/.test(command.address)) {
      // a class's page keeps its room in the address (explorer/ui/page/classroom.py)
      const room = new URLSearchParams(location.search).get("room");
      const keep = room && /^[A-Z2-9]{6}$/.test(room) ? "&room=" + room : "";
      history.replaceState(null, "", location.pathname + command.address + keep);
      const box = document.querySelector("#lesson-link textarea, #lesson-link input");
      if (box) box.value = location.origin + location.pathname + command.address;
    }
    // a newer command (the class moved on while this one's section opened) supersedes this
    // one: its press would start the step the page has left, and Gradio drops a press of the
    // same button while that run is pending (the newer step's own press would be lost)
    const current = () => last === command.nonce;
    if (command.target && window.explorerOpen) await window.explorerOpen(command.target);
    if (!current() || !command.run || !/^[\w-]+$/.test(command.run)) return;
    for (let waited = 0; waited < 20000; waited += 100) {
      const button = document.getElementById(command.run);
      if (button && !button.disabled && button.offsetParent !== null) {
        await sleep(150);   // the controls' new values reach the page before the press reads them
        if (current()) button.click();
        return;
      }
      await sleep(100);
      if (!current()) return;
    }
  };
  document.addEventListener("click", (event) => {
    const line = event.target.closest && event.target.closest("#lesson-progress");
    if (line) document.getElementById("lesson-panel").classList.toggle("folded");
  });
  document.addEventListener("keydown", (event) => {
    const panel = document.getElementById("lesson-panel");
    if (!panel || !panel.getClientRects().length || event.altKey || event.ctrlKey || event.metaKey) return;
    const target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    const press = (id) => { const b = document.getElementById(id); if (b && !b.disabled) { b.click(); event.preventDefault(); } };
    if (event.key === "ArrowRight" || event.key === "PageDown") press("lesson-next");
    else if (event.key === "ArrowLeft" || event.key === "PageUp") press("lesson-back");
    else if (event.key === "Escape") press("lesson-exit");
  });
})();
</script>
"""
