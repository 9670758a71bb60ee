/* Lexboard: small progressive enhancements. Pages work without this file. */
(function () {
  "use strict";

  // Copy buttons: <button data-copy-target="ID" hidden> copies the text of #ID.
  // Shown only when the script runs, so no dead button without JavaScript.
  function selectText(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }

  function announce(button, text) {
    var status = button.parentNode.querySelector(".copy-status");
    if (status) {
      status.textContent = text;
      window.setTimeout(function () { status.textContent = ""; }, 4000);
    }
  }

  function copy(button) {
    var target = document.getElementById(button.getAttribute("data-copy-target"));
    if (!target) { return; }
    var text = target.textContent;
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(
        function () { announce(button, "Copied to the clipboard."); },
        function () { selectText(target); announce(button, "Selected: press Ctrl+C (⌘C) to copy."); }
      );
    } else {
      selectText(target);
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      announce(button, ok ? "Copied to the clipboard." : "Selected: press Ctrl+C (⌘C) to copy.");
    }
  }

  document.querySelectorAll("[data-copy-target]").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () { copy(button); });
  });
})();
