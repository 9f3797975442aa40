// The console's own script (served from the binary, like htmx; the page works without it).
// - Every <time class="local" datetime="…"> is shown in the browser's time zone, to the
//   millisecond, with the zone's name; its UTC text (the no-JavaScript fallback) stays as its
//   title, shown on hover. Run on load and on every part htmx swaps in.
// - "/" (outside a field) focuses the search box.
(function () {
  "use strict";
  function pad(n, w) {
    return String(n).padStart(w, "0");
  }
  function zone(d) {
    var parts = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" }).formatToParts(d);
    var z = parts.find(function (p) { return p.type === "timeZoneName"; });
    return z ? z.value : "";
  }
  function localize(root) {
    root.querySelectorAll("time.local[datetime]").forEach(function (t) {
      var d = new Date(t.getAttribute("datetime"));
      if (isNaN(d.getTime())) return;
      t.textContent =
        d.getFullYear() + "-" + pad(d.getMonth() + 1, 2) + "-" + pad(d.getDate(), 2) + " " +
        pad(d.getHours(), 2) + ":" + pad(d.getMinutes(), 2) + ":" + pad(d.getSeconds(), 2) +
        "." + pad(d.getMilliseconds(), 3) + " " + zone(d);
      t.dataset.localized = "1";
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    localize(document);
  });
  document.addEventListener("htmx:afterSettle", function (e) {
    localize(e.target || document);
  });
  document.addEventListener("keydown", function (e) {
    if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey) return;
    var active = document.activeElement;
    if (active && (active.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName))) return;
    var search = document.getElementById("search");
    if (!search) return;
    e.preventDefault();
    search.focus();
    search.select();
  });
})();
