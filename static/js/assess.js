// The assessor's keys on a document's page: 0-3 grade, n next, p previous, s skip, u undo.
// The page works without this file (the grades are submit buttons, the moves links);
// keys typed into a text field are left alone.
(function () {
  "use strict";
  function typing(el) {
    if (!el) return false;
    var tag = el.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable;
  }
  function follow(id) {
    var link = document.getElementById(id);
    if (link) { window.location.assign(link.href); return true; }
    return false;
  }
  function press(id) {
    var button = document.getElementById(id);
    if (button && !button.disabled) { button.click(); return true; }
    return false;
  }
  var busy = false;
  document.addEventListener("keydown", function (event) {
    if (busy || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var key = event.key;
    var done = false;
    if (key >= "0" && key <= "3") done = press("grade-" + key);
    else if (key === "n" || key === "ArrowRight") done = follow("next");
    else if (key === "p" || key === "ArrowLeft") done = follow("prev");
    else if (key === "s") done = follow("skip");
    else if (key === "u") done = press("undo");
    if (done) { event.preventDefault(); busy = true; }  // one action per page: no double grade on a held key
  });
})();
