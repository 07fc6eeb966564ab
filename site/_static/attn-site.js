// The course website's own script (loaded before the widget manager, from the site itself).

// 1. ipywidgets 8's widgets typeset their text with MathJax 2's API (MathJax.Hub.Queue); the
//    site runs MathJax 3, which has no MathJax.Hub. Before the widget manager renders the
//    saved explorers (at the page's load event), pass those calls on to MathJax 3.
window.addEventListener("load", () => {
  const mj = window.MathJax;
  if (mj && mj.typesetPromise && !mj.Hub) {
    mj.Hub = {
      Queue: (command) => {
        const element = Array.isArray(command) ? command[2] : undefined;
        mj.startup.promise.then(() => mj.typesetPromise(element ? [element] : undefined));
      },
    };
  }
});

// 2. Accessible names that axe-core finds missing or mismatched, for screen-reader users:
//    - a slider of a saved explorer: ipywidgets gives its handle (role=slider) no name; name
//      it after the slider's visible label ("d_k", "length", ...);
//    - the theme's search button: its name is "Search" while it shows "Search Ctrl+K";
//    - the theme's colour-mode button: its icons carry titles that differ from its name.
function attnNameControls(root) {
  for (const slider of root.querySelectorAll(".widget-slider")) {
    const label = slider.querySelector(":scope > label.widget-label");
    const name = label ? label.textContent.replace(/\u200b/g, "").trim() : "";
    for (const handle of slider.querySelectorAll(".noUi-handle:not([aria-label])")) {
      handle.setAttribute("aria-label", name || "slider");
    }
  }
  for (const button of root.querySelectorAll(".search-button-field[aria-label]")) {
    const shown = button.textContent.replace(/\s+/g, " ").trim();
    if (shown && button.getAttribute("aria-label") !== shown) button.setAttribute("aria-label", shown);
  }
  for (const icon of root.querySelectorAll(".theme-switch-button .theme-switch")) {
    // decorative: the button is named "Color mode"; the icon's own title would be read as text
    icon.querySelectorAll("title").forEach((t) => t.remove());
    icon.removeAttribute("aria-labelledby");
    icon.removeAttribute("title");
    icon.setAttribute("aria-hidden", "true");
  }
}
new MutationObserver(() => attnNameControls(document)).observe(document.documentElement,
  {childList: true, subtree: true});
document.addEventListener("DOMContentLoaded", () => attnNameControls(document));
