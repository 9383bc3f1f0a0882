// The book's own page script: sidebar toggles that open, and long display equations that say they scroll.
// Served from the book itself (html_js_files in _config.yml); it needs no network and no kernel.
(function () {
  "use strict";

  // The page has two buttons for each sidebar: the pydata-sphinx-theme header's (hidden by sphinx-book-theme) and
  // sphinx-book-theme's own in the article header. Both themes bind their handlers to the *first* one they find,
  // the hidden one, so the visible buttons did nothing. Each other button now passes its click to the bound one.
  function forwardToggle(selector) {
    const buttons = Array.from(document.querySelectorAll(selector));
    const bound = buttons[0];
    buttons.slice(1).forEach((button) => {
      button.addEventListener(
        "click",
        (event) => {
          event.preventDefault();
          event.stopImmediatePropagation();
          bound.click();
          button.blur();
        },
        true,
      );
    });
  }

  // A display equation wider than its column scrolls sideways. Mark those that overflow so the CSS can show a
  // shadow at the edge that has more, and keep the marks right as the reader scrolls or resizes.
  function markOverflow(box) {
    const more = box.scrollWidth - box.clientWidth > 1;
    box.classList.toggle("math-scrolls", more);
    box.classList.toggle("math-more-right", more && box.scrollLeft + box.clientWidth < box.scrollWidth - 1);
    box.classList.toggle("math-more-left", more && box.scrollLeft > 1);
    if (more) {
      box.tabIndex = 0; // reachable and scrollable by keyboard
      box.setAttribute("title", "This equation is wider than the page: scroll it sideways.");
    }
  }

  function scrollerOf(box) {
    return box.querySelector(":scope > mjx-container") || box;
  }

  function markAllEquations() {
    document.querySelectorAll("div.math").forEach((box) => markOverflow(scrollerOf(box)));
  }

  function init() {
    forwardToggle(".primary-toggle");
    forwardToggle(".secondary-toggle");
    // The scroll event does not bubble, so listen in the capture phase: MathJax adds its containers later.
    document.addEventListener(
      "scroll",
      (event) => {
        const el = event.target;
        if (el instanceof Element && el.classList.contains("math-scrolls")) markOverflow(el);
      },
      { capture: true, passive: true },
    );
    window.addEventListener("resize", markAllEquations);
    const typeset = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
    (typeset || Promise.resolve()).then(markAllEquations);
    markAllEquations();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
