// Small DOM helpers: h builds elements, so that no markup is ever built
// from strings (no injection through ids, keys or documents).

// h returns a new element: attrs sets properties ("on…" functions become
// listeners, "class", "for", "aria-*", "data-*" and "role" set attributes);
// children are nodes, strings or arrays of them (null and false skipped).
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "style") el.style.cssText = v; // CSSOM, which the page's CSP allows (a style attribute it would not)
    else if (k === "class" || k === "for" || k === "role" || k.startsWith("aria-") || k.startsWith("data-") || k === "scope") el.setAttribute(k, v === true ? "" : String(v));
    else el[k] = v;
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// clear empties el and appends children.
export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// field returns a label and its control, tied by id.
export function field(label, control) {
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control);
}

// fmtBytes formats a byte count.
export function fmtBytes(n) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${u[i]}`;
}

// fmtNum formats a number with at most two decimals.
export function fmtNum(n) {
  return Number.isInteger(n) ? String(n) : n.toFixed(2);
}
