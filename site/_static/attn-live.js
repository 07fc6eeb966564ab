// The explorers of the website, live without a kernel (tools/live_states.py says how).
//
// This script does layout only. It computes no attention: every picture, readout and text
// alternative was drawn by the explorer itself, in Python, when the site was built. Here we
//   1. draw each control from the spec the page holds (a slider, a drop-down, toggle buttons,
//      a check box: each named, each value announced);
//   2. on a move, work out which state the controls name (mixed radix, the last control
//      fastest, as live_states.state_index) and show that state's picture, its text
//      alternative and its readout (a live region, so the change is announced).
// The states (readouts and the names of the pictures) are fetched on the first move, each
// picture when it is shown. Without JavaScript the page shows the notebook's setting.
// When a move cannot be shown (the states file missing, corrupt or short; a picture missing),
// the readout says so in the page's language, and the controls go back to the setting the
// picture shows; a failed states file is fetched again on the next move.

(() => {
  "use strict";

  // The number of the state in which control i shows its positions[i]-th value.
  const stateIndex = (controls, positions) =>
    controls.reduce((index, control, i) => index * control.labels.length + positions[i], 0);

  // The setting the explorer refuses (a null state, 04: heads that do not divide d_model)
  // becomes the nearest one it accepts: the moved control stays, each other one takes the
  // nearest value at or below its own that gives a state, else the nearest above (what
  // notebook 04's explorer does: the largest head count that divides the new d_model).
  function nearestValid(controls, states, positions, moved) {
    if (states[stateIndex(controls, positions)]) return positions;
    for (let i = controls.length - 1; i >= 0; i -= 1) {
      if (i === moved) continue;
      const n = controls[i].labels.length;
      const order = [];
      for (let k = positions[i]; k >= 0; k -= 1) order.push(k);
      for (let k = positions[i] + 1; k < n; k += 1) order.push(k);
      for (const k of order) {
        const tried = positions.slice();
        tried[i] = k;
        if (states[stateIndex(controls, tried)]) return tried;
      }
    }
    return positions;
  }

  let counter = 0;
  const uid = (what) => `attn-live-${what}-${(counter += 1)}`;

  function element(tag, attributes = {}, text = "") {
    const el = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) el.setAttribute(name, value);
    if (text) el.textContent = text;
    return el;
  }

  // One control, drawn for its kind; `moved(k)` is called with the index of the new value.
  // Returns {root, show(k), allow(k, yes)}: show a value, allow or refuse one.
  function drawControl(control, moved) {
    const root = element("div", {class: `attn-live-control attn-live-${control.kind}`});
    if (control.kind === "slider") {
      const id = uid("slider");
      const input = element("input", {type: "range", id, min: "0", max: String(control.labels.length - 1),
                                        step: "1"});
      const shown = element("output", {for: id, "aria-hidden": "true"});
      root.append(element("label", {for: id}, control.label), input, shown);
      input.addEventListener("input", () => moved(Number(input.value)));
      return {root, show(k) {
        input.value = String(k);
        shown.textContent = control.labels[k];
        input.setAttribute("aria-valuetext", `${control.label} = ${control.labels[k]}`);
      }, allow() {}};
    }
    if (control.kind === "select") {
      const id = uid("select");
      const select = element("select", {id});
      control.labels.forEach((label, k) => select.append(element("option", {value: String(k)}, label)));
      root.append(element("label", {for: id}, control.label), select);
      select.addEventListener("input", () => moved(Number(select.value)));
      return {root, show(k) { select.value = String(k); },
              allow(k, yes) { select.options[k].disabled = !yes; select.options[k].hidden = !yes; }};
    }
    if (control.kind === "toggle") {
      const group = element("div", {role: "group", "aria-label": control.label});
      const buttons = control.labels.map((label, k) => {
        const button = element("button", {type: "button", "aria-pressed": "false"}, label);
        button.addEventListener("click", () => moved(k));
        return button;
      });
      group.append(...buttons);
      root.append(element("span", {class: "attn-live-label", "aria-hidden": "true"}, control.label), group);
      return {root, show(k) { buttons.forEach((b, i) => b.setAttribute("aria-pressed", String(i === k))); },
              allow(k, yes) { buttons[k].disabled = !yes; }};
    }
    // a check box: its values are False, True
    const id = uid("check");
    const box = element("input", {type: "checkbox", id});
    root.append(box, element("label", {for: id}, control.label));
    box.addEventListener("change", () => moved(box.checked ? 1 : 0));
    return {root, show(k) { box.checked = k === 1; }, allow() {}};
  }

  function start(figure) {
    const spec = JSON.parse(figure.querySelector("script.attn-live-spec").textContent);
    const picture = figure.querySelector("img.attn-live-picture");
    const readout = figure.querySelector(".attn-live-readout");
    const row = figure.querySelector(".attn-live-controls");
    let positions = spec.controls.map((c) => c.start);
    let states = null;
    let loading = null;
    let asked = 0; // the latest move: an older picture that decodes late is not shown
    const count = spec.controls.reduce((n, control) => n * control.labels.length, 1);  // states named
    // The states, fetched once; a fetch that failed is forgotten, so that the next move tries again.
    const load = () => {
      loading = loading || fetch(spec.states).then((r) => {
        if (!r.ok) throw new Error(`${spec.states}: ${r.status}`);
        return r.json();
      }).then((s) => {
        if (!Array.isArray(s) || s.length !== count) {
          throw new Error(`${spec.states}: ${Array.isArray(s) ? s.length : "no list of"} states for ${count}`);
        }
        states = s;
        showControls();  // now it is known which values give no state
        figure.dataset.states = "loaded";
        return s;
      }).catch((error) => {
        loading = null;
        figure.dataset.states = "failed";
        throw error;
      });
      return loading;
    };

    const drawn = spec.controls.map((control, i) => drawControl(control, (k) => move(i, k)));
    row.append(...drawn.map((d) => d.root));
    const live = document.querySelector("a.attn-binder-lab");  // the page's link to the live notebook
    const liveLink = () => element("a", {href: live.getAttribute("href")}, spec.live_link);
    if (spec.note) {  // what the page leaves out of the notebook's explorer, and where it is
      const note = element("p", {class: "attn-live-note"});
      note.append(document.createTextNode(`${spec.note} `));
      if (live) note.append(liveLink());
      row.append(note);
    }
    const showControls = () => {
      drawn.forEach((d, i) => d.show(positions[i]));
      if (!states) return;
      spec.controls.forEach((control, i) => {  // refuse the values that give no state
        control.labels.forEach((_label, k) => {
          const tried = positions.slice();
          tried[i] = k;
          drawn[i].allow(k, Boolean(states[stateIndex(spec.controls, tried)]));
        });
      });
    };
    showControls();

    // What went wrong (spec.faults[kind]: "states" or "picture"), said below the shown state's
    // readout, in its live region; {live} in the sentence becomes the link to the live notebook
    // (its words alone on a page without one). The next picture shown takes it away.
    const say = (kind) => {
      readout.querySelector(".attn-live-fault")?.remove();
      const [first, ...rest] = spec.faults[kind].split("{live}");
      const fault = element("p", {class: "attn-live-fault"}, first);
      for (const part of rest) fault.append(live ? liveLink() : spec.live_link, part);
      readout.append(fault);
      figure.dataset.fault = kind;
      figure.dataset.faults = String(Number(figure.dataset.faults || 0) + 1);  // faults said so far
    };
    // A move that cannot be shown: the controls go back to the setting the picture shows.
    const cannotShow = (error) => {
      console.error(`attn-live: ${error.message}`);
      showControls();
      say("states");
    };

    // Moves under way: a move that a later one overtook ends without showing its picture.
    let pending = 0;
    async function move(i, k) {
      pending += 1;
      figure.dataset.pending = String(pending);
      try {
        await show(i, k);
      } finally {
        pending -= 1;
        figure.dataset.pending = String(pending);
      }
    }

    // The states file is fetched as soon as the learner reaches for a control. If that fails,
    // the readout says so; a move waiting for the same file says it instead (once).
    const fetchEarly = () => load().catch((error) => { if (pending === 0) cannotShow(error); });
    row.addEventListener("pointerdown", fetchEarly, {once: true});
    row.addEventListener("focusin", fetchEarly, {once: true});

    async function show(i, k) {
      const mine = (asked += 1);
      const wanted = positions.slice();
      wanted[i] = k;
      try {
        await load();
      } catch (error) {
        if (mine === asked) cannotShow(error);  // said once: the older moves leave it to the latest
        return;
      }
      if (mine !== asked) return;
      const named = nearestValid(spec.controls, states, wanted, i);
      const index = stateIndex(spec.controls, named);
      const state = states[index];
      if (!Array.isArray(state) || state.length !== 3) {
        cannotShow(new Error(`${spec.states}: no state ${index}`));
        return;
      }
      positions = named;
      showControls();
      const [name, html, alt] = state;
      const next = new Image();
      next.src = spec.pictures + name;
      let missing = false;  // the picture: shown as the browser's broken image with its text
      try { await next.decode(); } catch (error) { missing = true; }
      if (mine !== asked) return;
      picture.src = next.src;
      picture.alt = alt;
      readout.innerHTML = html;
      if (missing) say("picture");
      else delete figure.dataset.fault;
      figure.dataset.state = String(index);
      figure.dataset.shown = String(Number(figure.dataset.shown || 0) + 1);  // moves shown so far
      figure.dispatchEvent(new CustomEvent("attn-live-shown", {detail: {index}}));
    }
    figure.dataset.state = String(spec.start);
    figure.dataset.live = "ready";
  }

  const startAll = () => document.querySelectorAll("figure.attn-live:not([data-live])").forEach(start);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", startAll);
  else startAll();
})();
