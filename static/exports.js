// Exports of every figure (explorer/web/exports.py): a toolbar "PNG · HTML · CSV" under each
// Plotly figure of the page, also under those drawn later. Each file is made here, from the
// figure the page shows, and names the model and the run's settings: the query string in the
// section's link box (#link-<section id>, filled after every run), or, without one, the model
// picker's shown value and the section's id.
(function () {
  const config = window.explorerExportConfig || {text: {en: {}}, plotly: "explorer/plotly.min.js"};
  const NOT_SETTINGS = ["view", "model", "lang", "run", "present", "lesson", "step"];

  function lang() {
    const checked = document.querySelector("#language-switch input:checked");
    if (checked && config.text[checked.value]) return checked.value;
    return (window.explorerLanguage && window.explorerLanguage()) || "en";
  }
  const say = (key, fields) => {
    const template = (config.text[lang()] || {})[key] || (config.text.en || {})[key] || key;
    return template.replace(/\{(\w+)\}/g, (_, name) => String((fields || {})[name] ?? ""));
  };

  // ---- what a figure's exports name ------------------------------------------------------
  function describe(gd) {
    const block = gd.parentElement;
    const section = gd.closest('[id^="section-"]') || gd.closest('[id^="tab-"]');
    const sectionId = section ? section.id : "";
    const box = sectionId && document.querySelector(
      "#link-" + sectionId + " textarea, #link-" + sectionId + " input");
    const raw = box && box.value ? box.value : "";
    const query = raw.includes("?") ? raw.slice(raw.indexOf("?")) : "";
    const params = new URLSearchParams(query);
    const picker = document.querySelector("#model-picker input");
    const model = params.get("model") || (picker && picker.value) || "";
    const settings = [];
    for (const [name, value] of params) if (!NOT_SETTINGS.includes(name)) settings.push([name, value]);
    const plots = section ? Array.from(section.querySelectorAll(".js-plotly-plot")) : [gd];
    const figure = (block && block.id) || (sectionId || "figure") + "-" + (plots.indexOf(gd) + 1);
    const title = plainText((gd.layout && gd.layout.title && (gd.layout.title.text ?? gd.layout.title)) || "");
    const link = query ? location.origin + location.pathname + query : "";
    return {model, view: params.get("view") || sectionId, settings, figure, title, link,
            when: new Date().toISOString()};
  }
  // Plotly's text markup (<b>, <br>) as plain text; parsed in an inert document, so a title
  // holding a visitor's tokens can neither run a handler nor load an image
  function plainText(value) {
    const html = String(value).replace(/<br\s*\/?>/gi, " ");
    return new DOMParser().parseFromString(html, "text/html").body.textContent.trim();
  }
  const settingsLine = (info) => info.settings.map(([k, v]) => k + "=" + v).join("; ");

  function fileName(info, ext) {
    const clean = (s) => String(s).replace(/[^\w.=-]+/g, "-").replace(/^-+|-+$/g, "");
    // a long value (a prompt) is in the file, not in its name
    const short = info.settings.filter(([, v]) => v.length <= 24).map(([k, v]) => clean(k + "-" + v));
    const name = [clean(info.model) || "model", clean(info.figure), ...short].filter(Boolean).join("_");
    return name.slice(0, 150) + "." + ext;
  }

  // ---- the figure's arrays -----------------------------------------------------------------
  // Plotly's JSON may hold an array as {dtype, bdata (base64), shape}: decoded here to numbers.
  const TYPED = {f8: Float64Array, f4: Float32Array, i4: Int32Array, u4: Uint32Array,
                 i2: Int16Array, u2: Uint16Array, i1: Int8Array, u1: Uint8Array, u1c: Uint8ClampedArray};
  function values(value) {
    if (value && typeof value === "object" && typeof value.bdata === "string" && TYPED[value.dtype]) {
      const bytes = Uint8Array.from(atob(value.bdata), (c) => c.charCodeAt(0));
      const flat = Array.from(new TYPED[value.dtype](bytes.buffer));
      const shape = String(value.shape || "").split(",").map(Number).filter((n) => n > 0);
      if (shape.length !== 2) return flat;
      return Array.from({length: shape[0]}, (_, r) => flat.slice(r * shape[1], (r + 1) * shape[1]));
    }
    if (ArrayBuffer.isView(value)) return Array.from(value);
    if (Array.isArray(value)) return value.map((item) => (ArrayBuffer.isView(item) ? Array.from(item) : item));
    return value;
  }
  const isList = (v) => Array.isArray(v);

  // A trace without a name, in a figure of several panels (one per head, say), is named by
  // its panel's title: the paper-placed annotation centred just above its axes.
  function panelTitle(gd, trace) {
    const full = gd._fullLayout || {};
    const axis = (ref, letter) => full[letter + "axis" + String(ref || letter).slice(1)];
    const xa = axis(trace.xaxis, "x"), ya = axis(trace.yaxis, "y");
    if (!xa || !ya || !full.xaxis2 || !xa.domain || !ya.domain) return "";
    const above = (full.annotations || []).filter((a) => a.xref === "paper" && a.yref === "paper" &&
      a.x >= xa.domain[0] && a.x <= xa.domain[1] && a.y >= ya.domain[1] - 0.01 && a.y <= ya.domain[1] + 0.12);
    above.sort((a, b) => a.y - b.y);
    return above.length ? plainText(above[0].text) : "";
  }

  function csvOf(gd, info) {
    const traces = (gd.data || []).map((trace) => ({
      trace: {...trace, name: trace.name || panelTitle(gd, trace)},
      x: values(trace.x), y: values(trace.y), z: values(trace.z), text: values(trace.text)}));
    const hasZ = traces.some((t) => isList(t.z));
    const hasText = traces.some((t) => isList(t.text));
    const rows = [["# figure", info.title], ["# model", info.model], ["# view", info.view],
                  ["# settings", settingsLine(info)], ["# link", info.link], ["# exported", info.when],
                  ["trace", "name", "type", "x", "y", ...(hasZ ? ["z"] : []), ...(hasText ? ["text"] : [])]];
    const at = (list, i) => (isList(list) ? list[i] : undefined);
    traces.forEach(({trace, x, y, z, text}, index) => {
      const head = [index, trace.name || "", trace.type || "scatter"];
      const tail = (zv, tv) => [...(hasZ ? [zv] : []), ...(hasText ? [tv] : [])];
      if (isList(z) && isList(z[0])) {            // a grid: one row per cell
        z.forEach((row, r) => row.forEach((cell, c) => rows.push(
          [...head, isList(x) ? x[c] : c, isList(y) ? y[r] : r, ...tail(cell, at(at(text, r), c))])));
        return;
      }
      const n = Math.max(isList(x) ? x.length : 0, isList(y) ? y.length : 0, isList(z) ? z.length : 0);
      for (let i = 0; i < n; i++) {
        rows.push([...head, isList(x) ? x[i] : i, isList(y) ? y[i] : i, ...tail(at(z, i), at(text, i))]);
      }
    });
    return rows.map((row) => row.map(cell).join(",")).join("\r\n") + "\r\n";
  }
  function cell(value) {
    if (value === null || value === undefined || (typeof value === "number" && !isFinite(value))) return "";
    const s = String(value);   // a number: the shortest text that reads back to the same double
    return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }

  // ---- the self-contained HTML file -------------------------------------------------------
  let plotlySource = null;
  function plotlyScript() {
    const root = ((window.gradio_config && window.gradio_config.root) || location.origin + location.pathname)
      .replace(/\/?$/, "/");
    plotlySource = plotlySource || fetch(new URL(config.plotly, root)).then((answer) => {
      if (!answer.ok) throw new Error("plotly.js: HTTP " + answer.status);
      return answer.text();
    });
    plotlySource.catch(() => { plotlySource = null; });
    return plotlySource;
  }
  const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;",
    ">": "&gt;", '"': "&quot;", "'": "&#39;"})[c]);
  // JSON of the figure: typed arrays as lists, Plotly's private keys ("_...") left out
  const figureJson = (gd) => JSON.stringify({data: gd.data, layout: {...gd.layout, autosize: true, width: undefined}},
    (key, value) => (key.startsWith("_") ? undefined : ArrayBuffer.isView(value) ? Array.from(value) : value))
    .replace(/</g, "\\u003c");

  // the page's head holds this script inline, so its text never spells a script tag itself
  const [OPEN, CLOSE] = ["<" + "script", "<" + "/script>"];

  async function htmlOf(gd, info) {
    const source = await plotlyScript();
    const height = (gd._fullLayout && gd._fullLayout.height) || 450;
    const heading = [info.title, info.model].filter(Boolean).join(" — ");
    const settings = settingsLine(info);
    const line = (key, value) => (value ? `<p><b>${escapeHtml(say(key))}:</b> ${value}</p>\n` : "");
    return `<!DOCTYPE html>
<html lang="${lang() === "zh" ? "zh-CN" : "en"}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data: blob:; font-src data:">
<title>${escapeHtml(heading || "Transformer Explorer")}</title>
<style>body{font-family:system-ui,sans-serif;margin:1rem 2rem;color:#222}h1{font-size:1.2rem}
p{margin:.3rem 0;font-size:.9rem}code{word-break:break-all}#figure{width:100%;height:${Number(height)}px}</style>
</head>
<body>
<h1>${escapeHtml(info.title || heading)}</h1>
${line("export.model", escapeHtml(info.model))}${line("export.settings", escapeHtml(settings))}${
  line("export.link", info.link ? "<code>" + escapeHtml(info.link) + "</code>" : "")}${
  line("export.exported", escapeHtml(info.when))}<p>${escapeHtml(say("export.source"))}</p>
<div id="figure"></div>
${OPEN}>${source.replace(/<\/(script)/gi, "<\\/$1")}${CLOSE}
${OPEN} type="application/json" id="figure-data">${figureJson(gd)}${CLOSE}
${OPEN}>
const figure = JSON.parse(document.getElementById("figure-data").textContent);
Plotly.newPlot("figure", figure.data, figure.layout, {responsive: true, displaylogo: false, showLink: false});
${CLOSE}
</body>
</html>
`;
  }

  // ---- PNG, with the model and settings written into it (iTXt chunks) ---------------------
  async function pngOf(gd, info) {
    const plotly = window.Plotly;   // Gradio's Plot component sets it when it draws a figure
    if (!plotly || !plotly.toImage) throw new Error("Plotly is not loaded");
    const layout = gd._fullLayout || {};
    const url = await plotly.toImage(gd, {format: "png", scale: 2,
      width: Math.round(layout.width || 800), height: Math.round(layout.height || 450)});
    const bytes = Uint8Array.from(atob(url.slice(url.indexOf(",") + 1)), (c) => c.charCodeAt(0));
    return withText(bytes, [["Title", [info.title, info.model].filter(Boolean).join(" — ")],
      ["Description", settingsLine(info)], ["Source", info.link || info.view],
      ["Software", "Transformer Explorer"], ["Creation Time", info.when]]);
  }
  const CRC = Array.from({length: 256}, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  function crc32(bytes) {
    let c = 0xffffffff;
    for (const b of bytes) c = CRC[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  }
  function withText(png, entries) {
    // iTXt: keyword, 0, compression flag 0, method 0, language "", 0, translated "", 0, UTF-8 text
    const encoder = new TextEncoder();
    const chunks = entries.filter(([, v]) => v).map(([key, value]) => {
      const body = new Uint8Array([...encoder.encode("iTXt" + key), 0, 0, 0, 0, 0, ...encoder.encode(value)]);
      const chunk = new Uint8Array(body.length + 8);
      const view = new DataView(chunk.buffer);
      view.setUint32(0, body.length - 4);
      chunk.set(body, 4);
      view.setUint32(body.length + 4, crc32(body));
      return chunk;
    });
    const end = 8 + 25;   // the signature and the IHDR chunk: the text goes right after them
    return new Blob([png.slice(0, end), ...chunks, png.slice(end)], {type: "image/png"});
  }

  // ---- the toolbar ----------------------------------------------------------------------------
  const KINDS = [["png", "PNG"], ["html", "HTML"], ["csv", "CSV"]];
  async function make(kind, gd) {
    const info = describe(gd);
    if (kind === "png") return [await pngOf(gd, info), fileName(info, "png")];
    if (kind === "html") return [new Blob([await htmlOf(gd, info)], {type: "text/html"}), fileName(info, "html")];
    // a byte order mark: spreadsheets then read the file as UTF-8
    return [new Blob(["\ufeff" + csvOf(gd, info)], {type: "text/csv"}), fileName(info, "csv")];
  }
  function save(blob, name) {
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = name;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 60000);
  }
  async function run(button) {
    const gd = button.closest(".explorer-export").previousElementSibling;
    if (!gd || !gd.classList.contains("js-plotly-plot") || button.ariaBusy === "true") return;
    button.ariaBusy = "true";   // not `disabled`: that would take the keyboard's focus away
    try {
      save(...(await make(button.dataset.kind, gd)));
    } catch (error) {
      console.warn("Transformer Explorer: export failed", error);
      button.title = say("export.failed", {error: error.message || error});
    } finally {
      button.ariaBusy = null;
    }
  }
  function label(bar) {
    bar.setAttribute("aria-label", say("export.toolbar"));
    for (const button of bar.querySelectorAll("button")) {
      button.title = say("export." + button.dataset.kind);
      button.setAttribute("aria-label", button.title);
    }
  }
  function toolbar() {
    const bar = document.createElement("div");
    bar.className = "explorer-export";
    bar.setAttribute("role", "group");
    KINDS.forEach(([kind, text], i) => {
      if (i) bar.appendChild(Object.assign(document.createElement("span"), {textContent: "·", ariaHidden: "true"}));
      const button = Object.assign(document.createElement("button"), {type: "button", textContent: text});
      button.dataset.kind = kind;
      button.addEventListener("click", () => run(button));
      bar.appendChild(button);
    });
    label(bar);
    return bar;
  }
  function attach() {
    // a toolbar whose figure went (an emptied plot, a plot drawn anew) goes with it
    for (const bar of document.querySelectorAll(".explorer-export")) {
      const before = bar.previousElementSibling;
      if (!(before && before.classList.contains("js-plotly-plot"))) bar.remove();
    }
    for (const gd of document.querySelectorAll(".js-plotly-plot")) {
      const next = gd.nextElementSibling;
      if (!(next && next.classList.contains("explorer-export"))) gd.after(toolbar());
    }
  }
  let pending = false;
  const soon = () => {
    if (pending) return;
    pending = true;
    setTimeout(() => { pending = false; attach(); }, 200);
  };
  function start() {
    new MutationObserver(soon).observe(document.body, {childList: true, subtree: true});
    attach();
    document.addEventListener("change", (event) => {
      if (event.target.closest && event.target.closest("#language-switch")) {
        document.querySelectorAll(".explorer-export").forEach(label);
      }
    });
  }
  if (document.body) start(); else document.addEventListener("DOMContentLoaded", start);
  window.explorerExport = {describe, csvOf, make};   // for tests and the console
})();
