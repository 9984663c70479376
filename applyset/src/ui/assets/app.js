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
  // A page replaced between a button's press and its release loses the click (they land on
  // different elements): a page that comes while a pointer is down waits for its release.
  let pressed = false;
  let waiting = null;
  main.addEventListener("pointerdown", () => (pressed = true));
  function released() {
    pressed = false;
    if (waiting === null) return;
    // After the click this release makes (dispatched in the same task).
    setTimeout(() => {
      const content = waiting;
      waiting = null;
      if (content !== null) show(content);
    }, 0);
  }
  document.addEventListener("pointerup", released);
  // A press the browser takes over (a touch that scrolls) ends without pointerup.
  document.addEventListener("pointercancel", released);
  function show(content) {
    const next = document.createElement("template");
    next.innerHTML = content;
    // The same content is left as it is (and the selection, and the focus, with it).
    if (next.innerHTML !== main.innerHTML) {
      // Keep the keyboard where it was: a replaced button would drop the focus.
      const focused = document.activeElement && document.activeElement.closest("form[action]");
      const focusedAction = focused && focused.getAttribute("action");
      main.replaceChildren(next.content);
      applyFilter();
      if (focusedAction) {
        const again = main.querySelector(`form[action="${CSS.escape(focusedAction)}"] button`);
        if (again) again.focus();
      }
    }
    main.dataset.updated = String(Number(main.dataset.updated || "0") + 1);
  }
  source.addEventListener("page", (event) => {
    main.dataset.received = String(Number(main.dataset.received || "0") + 1);
    if (pressed) waiting = event.data;
    else show(event.data);
    state("live", true);
  });
  source.addEventListener("problem", (event) => state("cannot refresh: " + event.data, false));
})();
