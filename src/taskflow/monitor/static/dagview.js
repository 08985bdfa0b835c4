// taskflow monitor: the graph panel's view. The SVG (laid out by the server for the
// panel's shape) fills its panel; its viewBox is the camera: fit (the whole graph), zoom
// (wheel, buttons) and pan (drag) move it, and "follow" moves it so the running tasks stay
// in view. Levels of detail: where the boxes' labels would be drawn under LABEL_MIN px the
// boxes become coloured cells without text (class "cells" on the svg), a box's label shows
// on hover, and zooming in brings the labels back.
"use strict";

const DagView = (() => {
  const LABEL_MIN = 9;        // px: smaller labels are not drawn
  const FIT_MAX = 2.4;        // px per point at fit: a small graph is not blown up past this
  let svg = null, full = null, vb = null, drag = null;
  const wrap = () => document.getElementById("dag-wrap");
  const followBox = () => document.getElementById("dag-follow");
  const tip = () => document.getElementById("dag-tip");

  function apply() {
    svg.setAttribute("viewBox", vb.x + " " + vb.y + " " + vb.w + " " + vb.h);
    detail();
  }

  // the size in px the boxes' labels are drawn at now (Infinity: no labels)
  function labelPx() {
    const t = svg && svg.querySelector("g.node text");
    if (!t) return Infinity;
    const m = t.getScreenCTM();
    return m ? parseFloat(t.getAttribute("font-size") || "10") * Math.hypot(m.a, m.b) : Infinity;
  }

  function detail() {
    const px = labelPx(), cells = px < LABEL_MIN;
    svg.classList.toggle("cells", cells);
    wrap().dataset.lod = cells ? "cells" : "labels";
    wrap().dataset.labelPx = isFinite(px) ? px.toFixed(1) : "";
    if (!cells) hideTip();
  }

  function hideTip() { const d = tip(); if (d) d.hidden = true; }

  // a cell's label, beside the pointer
  function hover(e) {
    const d = tip();
    if (!svg || !d || drag) return;
    const g = e.target.closest ? e.target.closest("g.node") : null;
    if (!g || !svg.classList.contains("cells")) { hideTip(); return; }
    const lines = [...g.querySelectorAll("text")].map((t) => t.textContent).filter((x) => x);
    d.textContent = lines.join("  ");
    const r = wrap().getBoundingClientRect();
    d.style.left = Math.min(e.clientX - r.left + 12, r.width - 160) + "px";
    d.style.top = (e.clientY - r.top + 12) + "px";
    d.hidden = false;
  }

  // the user-space rectangle the panel shows (meet: one side may show more than vb)
  function visible() {
    const r = wrap().getBoundingClientRect();
    const a = toUser(r.left, r.top), b = toUser(r.right, r.bottom);
    return {x: a.x, y: a.y, w: b.x - a.x, h: b.y - a.y};
  }

  function toUser(cx, cy) {
    const pt = svg.createSVGPoint(); pt.x = cx; pt.y = cy;
    return pt.matrixTransform(svg.getScreenCTM().inverse());
  }

  // an element's box in the svg's user space (dot wraps everything in a transformed <g>)
  function boxOf(el) {
    const b = el.getBBox();
    const m = svg.getScreenCTM().inverse().multiply(el.getScreenCTM());
    const p = (x, y) => { const q = svg.createSVGPoint(); q.x = x; q.y = y; return q.matrixTransform(m); };
    const a = p(b.x, b.y), c = p(b.x + b.width, b.y + b.height);
    return {x: Math.min(a.x, c.x), y: Math.min(a.y, c.y), w: Math.abs(c.x - a.x), h: Math.abs(c.y - a.y)};
  }

  function fit() {
    if (!svg) return;
    const m = Math.max(full.w, full.h) * 0.02;
    vb = {x: full.x - m, y: full.y - m, w: full.w + 2 * m, h: full.h + 2 * m};
    const r = wrap().getBoundingClientRect();
    const k = Math.min(r.width / vb.w, r.height / vb.h) / FIT_MAX;
    if (k > 1) vb = {x: vb.x - vb.w * (k - 1) / 2, y: vb.y - vb.h * (k - 1) / 2, w: vb.w * k, h: vb.h * k};
    apply();
  }

  // zoom by f (< 1: in) about the user point (cx, cy); never beyond 4x the whole graph out,
  // nor closer than 1/8 of the panel's width in user units (boxes four times their size)
  function zoom(f, cx, cy) {
    if (!svg) return;
    const minW = Math.min(full.w, wrap().clientWidth / 4);
    const w = Math.max(minW, Math.min(vb.w * f, full.w * 4));
    const k = w / vb.w;
    if (cx === undefined) { cx = vb.x + vb.w / 2; cy = vb.y + vb.h / 2; }
    vb = {x: cx - (cx - vb.x) * k, y: cy - (cy - vb.y) * k, w: vb.w * k, h: vb.h * k};
    apply();
  }

  function setFollow(on) { const b = followBox(); if (b) b.checked = on; }

  // keep the running tasks in view: pan to them, and zoom out when they do not fit; the
  // view never zooms in by itself
  function follow() {
    if (!svg || !followBox() || !followBox().checked) return;
    const running = svg.querySelectorAll('g.task[data-state="RUNNING"], g.name[data-state="RUNNING"]');
    if (!running.length) return;
    const v = visible();
    let u = null, out = false;
    for (const g of running) {
      const b = boxOf(g);
      if (b.x < v.x || b.y < v.y || b.x + b.w > v.x + v.w || b.y + b.h > v.y + v.h) out = true;
      u = u ? {x: Math.min(u.x, b.x), y: Math.min(u.y, b.y),
               x2: Math.max(u.x2, b.x + b.w), y2: Math.max(u.y2, b.y + b.h)}
            : {x: b.x, y: b.y, x2: b.x + b.w, y2: b.y + b.h};
    }
    if (!out) return;
    const uw = (u.x2 - u.x) * 1.15 + 20, uh = (u.y2 - u.y) * 1.15 + 20;
    const k = Math.max(1, uw / v.w, uh / v.h);          // zoom out only
    const cx = (u.x + u.x2) / 2, cy = (u.y + u.y2) / 2;
    vb = {x: cx - vb.w * k / 2, y: cy - vb.h * k / 2, w: vb.w * k, h: vb.h * k};
    apply();
  }

  function attach(el) {
    svg = el;
    const b = svg.viewBox.baseVal;
    full = b && b.width ? {x: b.x, y: b.y, w: b.width, h: b.height}
                        : {x: 0, y: 0, w: svg.width.baseVal.value, h: svg.height.baseVal.value};
    svg.removeAttribute("width"); svg.removeAttribute("height");
    svg.setAttribute("preserveAspectRatio", "xMidYMid meet");
    fit();
  }

  function init() {
    const w = wrap();
    document.getElementById("dag-fit").addEventListener("click", () => { fit(); });
    document.getElementById("dag-in").addEventListener("click", () => { setFollow(false); zoom(1 / 1.5); });
    document.getElementById("dag-out").addEventListener("click", () => { zoom(1.5); });
    followBox().addEventListener("change", () => follow());
    w.addEventListener("wheel", (e) => {
      if (!svg) return;
      e.preventDefault();
      const p = toUser(e.clientX, e.clientY);
      if (e.deltaY < 0) setFollow(false);
      zoom(e.deltaY < 0 ? 1 / 1.2 : 1.2, p.x, p.y);
    }, {passive: false});
    w.addEventListener("pointerdown", (e) => {
      if (!svg || e.button !== 0) return;
      drag = {x: e.clientX, y: e.clientY, vb: Object.assign({}, vb), moved: false};
    });
    window.addEventListener("pointermove", (e) => {
      if (!drag) return;
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;   // a click, not a drag
      if (!drag.moved) { drag.moved = true; setFollow(false); w.classList.add("dragging"); }
      const v = visible(), r = w.getBoundingClientRect();
      const sx = v.w / r.width, sy = v.h / r.height;
      vb = Object.assign({}, drag.vb, {x: drag.vb.x - dx * sx, y: drag.vb.y - dy * sy});
      apply();
    });
    window.addEventListener("pointerup", () => {
      if (drag && drag.moved) {              // the click that ends a drag selects nothing
        const stop = (ev) => { ev.stopPropagation(); ev.preventDefault(); };
        w.addEventListener("click", stop, {capture: true, once: true});
        setTimeout(() => w.removeEventListener("click", stop, {capture: true}), 0);
      }
      drag = null; w.classList.remove("dragging");
    });
    w.addEventListener("dblclick", (e) => { e.preventDefault(); fit(); });
    w.addEventListener("mousemove", hover);
    w.addEventListener("mouseleave", hideTip);
    window.addEventListener("resize", () => { if (svg) apply(); });
  }

  return {attach, fit, zoom, follow, init, visible, boxOf, labelPx};
})();
