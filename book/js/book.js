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
      box.setAttribute("title", "Wider than the page: scroll it sideways to see the rest.");
    }
  }

  function scrollerOf(box) {
    return box.querySelector(":scope > mjx-container") || box;
  }

  // Inline maths cannot wrap (MathJax 3 breaks no lines): a formula longer than its line on a phone becomes its own
  // small scroller, kept inside the paragraph, instead of running off the right edge.
  function markInline(container) {
    container.classList.remove("math-inline-scrolls");
    const block = container.closest("p, li, td, th, dd, dt, figcaption, .admonition-title") || container.parentElement;
    if (!block) return;
    const right = Math.min(block.getBoundingClientRect().right, document.documentElement.clientWidth);
    if (container.getBoundingClientRect().right > right + 1) {
      container.classList.add("math-inline-scrolls");
      markOverflow(container);
    }
  }

  function markAllEquations() {
    document.querySelectorAll("div.math").forEach((box) => markOverflow(scrollerOf(box)));
    document.querySelectorAll("mjx-container:not([display='true'])").forEach(markInline);
    // Code listings keep their lines and scroll; the same edge shadow says that a line goes on.
    document.querySelectorAll("div.highlight > pre").forEach(markOverflow);
  }

  // Checks, asserts and provenance are folded so that prose and figures lead (their cells carry hide-input or
  // hide-cell). One button under the title unfolds them all at once, and folds them again; solutions stay folded.
  function addUnfoldButton() {
    const folds = Array.from(document.querySelectorAll("article div.cell details.hide")).filter(
      (d) => !d.textContent.includes("BEGIN SOLUTION"),
    );
    const title = document.querySelector("article h1");
    if (!folds.length || !title) return;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "btn btn-sm btn-outline-secondary unfold-checks";
    const label = (open) => (open ? "Fold the checks and provenance again" : `Show all ${folds.length} folded checks and provenance`);
    button.textContent = label(false);
    button.addEventListener("click", () => {
      const open = !folds.every((d) => d.open);
      folds.forEach((d) => (d.open = open));
      button.textContent = label(open);
    });
    title.insertAdjacentElement("afterend", button);
  }

  function init() {
    addUnfoldButton();
    forwardToggle(".primary-toggle");
    forwardToggle(".secondary-toggle");
    // The scroll event does not bubble, so listen in the capture phase: MathJax adds its containers later.
    document.addEventListener(
      "scroll",
      (event) => {
        const el = event.target;
        if (el instanceof Element && el.classList.contains("math-scrolls")) markOverflow(el);  // display or inline
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
