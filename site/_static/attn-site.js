// The course website's own script (from the site itself). The explorers' script is attn-live.js.
//
// Accessible names that axe-core finds missing or mismatched, for screen-reader users:
//   - the theme's search button: its name is "Search" while it shows "Search Ctrl+K";
//   - the theme's colour-mode button: its icons carry titles that differ from its name.
function attnNameControls(root) {
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
