/* Lexboard: the dark-mode toggle. Loaded in <head> (not deferred) so a stored choice applies before the first
   paint. Without a stored choice the page follows prefers-color-scheme (the stylesheet's media query); the
   button stores "dark" or "light" in localStorage and sets html[data-theme]. Pages work without this file. */
(function () {
  "use strict";
  var KEY = "lexboard-theme";
  var root = document.documentElement;

  function stored() {
    try { return window.localStorage.getItem(KEY); } catch (e) { return null; }
  }

  function effective() {
    var chosen = root.getAttribute("data-theme");
    if (chosen === "dark" || chosen === "light") { return chosen; }
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }

  var choice = stored();
  if (choice === "dark" || choice === "light") { root.setAttribute("data-theme", choice); }

  function show(button) {
    var dark = effective() === "dark";
    button.setAttribute("aria-pressed", dark ? "true" : "false");
    button.title = dark ? "Dark mode is on: switch to light" : "Dark mode is off: switch to dark";
  }

  document.addEventListener("DOMContentLoaded", function () {
    var button = document.getElementById("theme-toggle");
    if (!button) { return; }
    button.hidden = false;
    show(button);
    button.addEventListener("click", function () {
      var next = effective() === "dark" ? "light" : "dark";
      root.setAttribute("data-theme", next);
      try { window.localStorage.setItem(KEY, next); } catch (e) { /* private mode: this page only */ }
      show(button);
    });
    if (window.matchMedia) {
      window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", function () { show(button); });
    }
  });
}());
