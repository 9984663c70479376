// applyset ui: follows the page's live stream (server-sent events) and filters the list.
"use strict";
(function () {
  const main = document.getElementById("content");
  const live = document.getElementById("live");
  const filter = document.getElementById("filter");

  function applyFilter() {
    if (!filter) return;
    const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    for (const row of main.querySelectorAll("tr[data-search]")) {
      const text = row.dataset.search.toLowerCase();
      row.hidden = !words.every((w) => text.includes(w));
    }
  }
  if (filter) {
    filter.value = sessionStorage.getItem("applyset-filter") || "";
    filter.addEventListener("input", () => {
      sessionStorage.setItem("applyset-filter", filter.value);
      applyFilter();
    });
    applyFilter();
  }

  function state(text, open) {
    live.textContent = text;
    live.className = "live " + (open ? "open" : "closed");
  }
  const url = main && main.dataset.live;
  if (!url || !window.EventSource) {
    if (live) live.textContent = "";
    return;
  }
  const source = new EventSource(url);
  source.addEventListener("open", () => state("live", true));
  source.addEventListener("error", () => state("reconnecting…", false));
  source.addEventListener("page", (event) => {
    // Keep the keyboard where it was: a replaced button would drop the focus.
    const focused = document.activeElement && document.activeElement.closest("form[action]");
    const focusedAction = focused && focused.getAttribute("action");
    main.innerHTML = event.data;
    applyFilter();
    if (focusedAction) {
      const again = main.querySelector(`form[action="${CSS.escape(focusedAction)}"] button`);
      if (again) again.focus();
    }
    main.dataset.updated = String(Number(main.dataset.updated || "0") + 1);
    state("live", true);
  });
  source.addEventListener("problem", (event) => state("cannot refresh: " + event.data, false));
})();
