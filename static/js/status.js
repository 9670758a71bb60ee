// Live status of a submission page: while the submission is queued or scoring it asks the status JSON with
// ?wait=WAIT (seconds), and the server holds each answer until the status or the progress changes, or WAIT
// seconds pass (lexboard/long_poll.py): a run scored in half a second shows within a few hundredths of a second of
// its score, and a long one costs a request every WAIT seconds, or per change of its progress (heartbeats).
// After an answer that brought a change, or that the server held its WAIT seconds, the next request goes at once;
// after one that came back at once with nothing new (the server holds as many answers as it allows, or cannot hold
// any), on the old schedule: not before a delay since the last request began (first 150 ms, then 1.5 times the
// last, at most 1.5 s). Errors back off up to 30 s. bench/bench_e2e.py models it (PAGE_WAIT_S, PAGE_POLL_MS; a
// test reads them from here). The page updates the text and the progress bar, and reloads once the run is scored
// or failed (to show scores or errors). No inline script: the URL comes from the data-status-url attribute.
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
  var WAIT = 5;
  var url = box.dataset.statusUrl + (box.dataset.statusUrl.indexOf("?") < 0 ? "?" : "&") + "wait=" + WAIT;
  var delay = FIRST;
  var failures = 0;
  var seen = initial + " " + (bar ? Number(bar.value) || 0 : 0);

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
    var began = Date.now();
    fetch(url, { headers: { "Accept": "application/json" }, credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (data) {
        failures = 0;
        var now = data.status + " " + (data.progress || 0);
        var changed = now !== seen;
        seen = now;
        show(data);
        if (data.is_final) { window.location.reload(); return; }
        var next = changed ? 0 : Math.max(0, delay - (Date.now() - began));
        delay = Math.min(CEILING, delay * GROWTH);
        window.setTimeout(poll, next);
      })
      .catch(function () {
        // The site may be restarting: back off, but keep trying.
        failures += 1;
        window.setTimeout(poll, Math.min(30000, CEILING * Math.pow(2, failures)));
      });
  }
  poll();
})();
