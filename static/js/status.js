// Live status of a submission page: polls the status JSON while the
// submission is queued or scoring (first after 150 ms, then each delay 1.5
// times the last, at most 1.5 s: a run scored in half a second shows at once,
// a long one costs a request every 1.5 s; bench/bench_e2e.py's PAGE_POLL_MS), updates the text and the progress bar,
// and reloads the page once it is scored or failed (to show scores or errors).
// No inline script: the URL comes from the data-status-url attribute.
(function () {
  "use strict";
  var box = document.getElementById("status");
  if (!box || !box.dataset.statusUrl) { return; }
  var initial = box.dataset.status;
  if (initial === "scored" || initial === "failed") { return; }

  var text = box.querySelector("[data-status-text]");
  var bar = box.querySelector("[data-progress]");
  var hint = box.querySelector("[data-status-hint]");
  var FIRST = 150, GROWTH = 1.5, CEILING = 1500;
  var delay = FIRST;
  var failures = 0;

  function show(data) {
    if (text) { text.textContent = data.status; }
    box.dataset.status = data.status;
    box.className = box.className.replace(/status-\w+/, "status-" + data.status);
    if (bar) {
      bar.hidden = false;
      bar.value = data.progress || 0;
      bar.textContent = Math.round((data.progress || 0) * 100) + "%";
    }
    if (hint && data.status === "scoring") {
      hint.textContent = (box.dataset.scoringText || "A worker is scoring the run") + " (" + Math.round((data.progress || 0) * 100) + "%). This page updates by itself.";
    }
  }

  function poll() {
    fetch(box.dataset.statusUrl, { headers: { "Accept": "application/json" }, credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (data) {
        failures = 0;
        show(data);
        if (data.is_final) { window.location.reload(); return; }
        delay = Math.min(CEILING, delay * GROWTH);
        window.setTimeout(poll, delay);
      })
      .catch(function () {
        // The site may be restarting: back off, but keep trying.
        failures += 1;
        window.setTimeout(poll, Math.min(30000, CEILING * Math.pow(2, failures)));
      });
  }
  window.setTimeout(poll, delay);
})();
