// The console's own script (served from the binary, like htmx; the page works without it).
// - Every <time class="local" datetime="…"> is shown in the browser's time zone, to the
//   millisecond, with the zone's name; its UTC text (the no-JavaScript fallback) stays as its
//   title, shown on hover. Run on load and on every part htmx swaps in.
//   A <time class="local ago"> also says how long ago it was, or how soon it is ("in 4 min"),
//   kept current while the page is open.
// - "/" (outside a field) focuses the search box.
// - The auto-refresh toggle (#live-toggle) pauses every poll of an element marked data-poll
//   (htmx's request is cancelled before it is sent); the choice is kept in localStorage, so it
//   holds on every page and after a reload. Each poll skipped while paused is counted on the
//   button (data-skipped).
// - A copy button (button.copy, data-copy=ID) copies the text of the element ID to the
//   clipboard. Buttons are rendered hidden and shown here: without JavaScript the values stay
//   plain selectable text.
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
        "." + pad(d.getMilliseconds(), 3) + " " + zone(d) +
        (t.classList.contains("ago") ? " (" + relative(d.getTime() - Date.now()) + ")" : "");
      t.dataset.localized = "1";
    });
  }
  function relative(ms) {
    var s = Math.round(Math.abs(ms) / 1000);
    var text;
    if (s < 1) return "now";
    if (s < 60) text = s + " s";
    else if (s < 3600) text = Math.floor(s / 60) + " min";
    else if (s < 86400) text = Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
    else text = Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
    return ms < 0 ? text + " ago" : "in " + text;
  }

  var LIVE_KEY = "inboxctl-console.auto-refresh";
  function paused() {
    try {
      return window.localStorage.getItem(LIVE_KEY) === "paused";
    } catch (e) {
      return false;
    }
  }
  function showToggle() {
    var b = document.getElementById("live-toggle");
    if (!b) return;
    var p = paused();
    b.hidden = false;
    b.textContent = p ? "Resume auto-refresh" : "Pause auto-refresh";
    b.setAttribute("aria-pressed", p ? "true" : "false");
    b.dataset.state = p ? "paused" : "live";
  }
  function toggleLive() {
    try {
      if (paused()) window.localStorage.removeItem(LIVE_KEY);
      else window.localStorage.setItem(LIVE_KEY, "paused");
    } catch (e) {
      return;
    }
    showToggle();
  }
  document.addEventListener("htmx:beforeRequest", function (e) {
    var elt = e.detail && e.detail.elt;
    if (!elt || !elt.hasAttribute("data-poll") || !paused()) return;
    e.preventDefault();
    var b = document.getElementById("live-toggle");
    if (b) b.dataset.skipped = String(Number(b.dataset.skipped || "0") + 1);
  });

  function copied(button, ok) {
    button.textContent = ok ? "Copied" : "Select and copy";
    button.dataset.copied = ok ? "1" : "0";
  }
  function copy(button) {
    var id = button.getAttribute("data-copy");
    var scope = button.parentElement || document;
    var source = scope.querySelector("#" + CSS.escape(id)) || document.getElementById(id);
    if (!source) return;
    var text = source.textContent;
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(
        function () { copied(button, true); },
        function () { copied(button, false); }
      );
      return;
    }
    var range = document.createRange();
    range.selectNodeContents(source);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    copied(button, document.execCommand("copy"));
  }
  function showCopies(root) {
    root.querySelectorAll("button.copy[data-copy]").forEach(function (b) {
      b.hidden = false;
    });
  }
  document.addEventListener("click", function (e) {
    var t = e.target;
    if (!(t instanceof Element)) return;
    if (t.id === "live-toggle") {
      toggleLive();
      return;
    }
    var b = t.closest("button.copy[data-copy]");
    if (b) copy(b);
  });

  document.addEventListener("DOMContentLoaded", function () {
    localize(document);
    showToggle();
    showCopies(document);
    window.setInterval(function () {
      localize(document);
    }, 10000);
  });
  document.addEventListener("htmx:afterSettle", function (e) {
    var root = e.target || document;
    localize(root);
    showCopies(root);
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
