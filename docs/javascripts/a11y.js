// The Material theme's search box is a dialog without a name; screen readers announce one.
document.querySelectorAll(".md-search[role=dialog]").forEach((dialog) => {
  dialog.setAttribute("aria-label", "Search the documentation");
});
