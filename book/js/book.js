// The book's own page script: sidebar toggles that open, long display equations that say they scroll, figures
// that keep their text legible on a phone, and solution titles whose link opens the solution.
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
      box.setAttribute("title", SCROLL_TITLE);
      box.dataset.bookMarked = "1";
    } else if (box.dataset.bookMarked) {  // it fits now (a wider window): take back what the mark added
      box.removeAttribute("tabindex");
      box.removeAttribute("title");
      delete box.dataset.bookMarked;
    }
  }

  // Every mark book.js puts on a scroller, so that a box that fits again (after a resize) loses all of them.
  const MARKS = ["math-scrolls", "math-more-right", "math-more-left"];
  const SCROLL_TITLE = "Wider than the page: scroll it sideways to see the rest.";

  function unmark(box) {
    box.classList.remove(...MARKS);
    if (box.dataset.bookMarked) {
      box.removeAttribute("tabindex");
      box.removeAttribute("title");
      delete box.dataset.bookMarked;
    }
  }

  function scrollerOf(box) {
    return box.querySelector(":scope > mjx-container") || box;
  }

  // Inline maths cannot wrap (MathJax 3 breaks no lines): a formula longer than its line on a phone becomes its own
  // small scroller, kept inside the paragraph, instead of running off the right edge.
  function markInline(container) {
    // Measured as plain inline maths: the marks of an earlier, narrower window are taken off first, or a formula
    // that fits again would keep its edge shadow over its last glyph.
    container.classList.remove("math-inline-scrolls");
    unmark(container);
    const block = container.closest("p, li, td, th, dd, dt, figcaption, .admonition-title") || container.parentElement;
    if (!block) return;
    const right = Math.min(block.getBoundingClientRect().right, document.documentElement.clientWidth);
    if (container.getBoundingClientRect().right > right + 1) {
      container.classList.add("math-inline-scrolls");
      markOverflow(container);
    }
  }

  function markAllEquations() {
    document.querySelectorAll("div.math").forEach((box) => {
      const scroller = scrollerOf(box);
      // Marked before MathJax typeset it, the div itself would keep its marks once MathJax's container scrolls in
      // its place: its edge shadow then lies over the formula's last glyph, on every window size.
      if (scroller !== box) unmark(box);
      markOverflow(scroller);
    });
    document.querySelectorAll("mjx-container:not([display='true'])").forEach(markInline);
    // Code listings keep their lines and scroll; the same edge shadow says that a line goes on.
    document.querySelectorAll("div.highlight > pre").forEach(markOverflow);
    document.querySelectorAll("div.figure-scroll").forEach(markOverflow);
    // So does chapter 05's attention matrix, in a column narrower than the matrix and its tokens (book.css).
    document.querySelectorAll(".attnconv-explorable .ax-panel").forEach((panel) => {
      if (panel.querySelector("canvas.ax-matrix")) markOverflow(panel);
    });
    // So do tables wider than their column (the theme's wrapper, and the one attnconv.display writes).
    document.querySelectorAll("div.pst-scrollable-table-container, div.attnconv-table-wrap").forEach(markOverflow);
  }

  // A figure's smallest text, as attnconv.figures.legibility writes it into the PNG (a tEXt chunk, before the
  // image data). A figure shown narrower than its own width shrinks its text with it; on a phone that can fall
  // below what anyone reads without zooming. Such a figure keeps the width at which its smallest text is
  // MIN_TEXT_PX and scrolls sideways in its own box, with the same edge shadow as a long equation.
  const MIN_TEXT_PX = 9;
  const TEXT_KEY = "attnconv-min-text-px";

  function declaredTextPx(bytes) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const ascii = (from, to) => String.fromCharCode.apply(null, bytes.subarray(from, to));
    if (bytes.length < 8 || ascii(1, 4) !== "PNG") return null;
    for (let at = 8; at + 8 <= bytes.length; ) {
      const length = view.getUint32(at), type = ascii(at + 4, at + 8);
      if (type === "IDAT" || type === "IEND") return null;
      if (type === "tEXt" && at + 8 + length <= bytes.length) {
        const text = ascii(at + 8, at + 8 + length), nul = text.indexOf("\0");
        if (text.slice(0, nul) === TEXT_KEY) return parseFloat(text.slice(nul + 1)) || null;
      }
      at += 12 + length;
    }
    return null;
  }

  function pngHead(img) {
    const src = img.currentSrc || img.src;
    if (src.startsWith("data:image/png;base64,")) {
      const b64 = src.slice(22, 22 + 8192);  // the chunks before the image data
      const raw = atob(b64.slice(0, b64.length - (b64.length % 4)));
      return Promise.resolve(Uint8Array.from(raw, (c) => c.charCodeAt(0)));
    }
    if (!/\.png($|\?)/i.test(src)) return Promise.resolve(null);
    return fetch(src).then((r) => (r.ok ? r.arrayBuffer() : null)).then((b) => b && new Uint8Array(b), () => null);
  }

  // A phone-ready figure (attnconv.figures.phone) is a <picture> of a wide and a narrow image: the box goes round
  // the picture, and the width is set again whenever the window's size makes it show the other image.
  function keepLegible(img, textPx) {
    if (!textPx || !img.naturalWidth) return;
    const need = Math.min(img.naturalWidth, Math.ceil((img.naturalWidth * MIN_TEXT_PX) / textPx));
    const target = img.parentElement && img.parentElement.tagName === "PICTURE" ? img.parentElement : img;
    let box = target.parentElement;
    if (!box.classList.contains("figure-scroll")) {
      box = document.createElement("div");
      box.className = "figure-scroll";
      target.replaceWith(box);
      box.appendChild(target);
    }
    img.style.minWidth = `${need}px`;
    img.classList.add("figure-legible");
    markOverflow(box);
  }

  // Viewers (av-*) lay out their own frames. When every figure is done, <html data-figures-legible> says so.
  function legibleFigures() {
    const figures = Array.from(document.querySelectorAll("article img")).filter(
      (img) => !img.closest("[class^='av-'], [class*=' av-']") && !img.classList.contains("figure-legible"),
    );
    const loaded = (img) => new Promise((done) => {
      if (img.complete) return done();
      img.addEventListener("load", done, { once: true });
      img.addEventListener("error", done, { once: true });
    });
    const size = (img) => pngHead(img).then((bytes) => bytes && keepLegible(img, declaredTextPx(bytes))).catch(() => null);
    figures.forEach((img) => {
      if (img.parentElement && img.parentElement.tagName === "PICTURE") {
        img.addEventListener("load", () => size(img));  // the other image of the picture, after a resize
      }
    });
    const jobs = figures.map((img) => loaded(img).then(() => size(img)));
    Promise.all(jobs).then(() => document.documentElement.setAttribute("data-figures-legible", "done"));
  }

  // "Show the 1 folded check and its provenance", "Show all 3 folded checks and provenance": the count agrees.
  function unfoldLabel(count) {
    return count === 1 ? "Show the 1 folded check and its provenance" : `Show all ${count} folded checks and provenance`;
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
    const label = (open) => (open ? "Fold the checks and provenance again" : unfoldLabel(folds.length));
    button.textContent = label(false);
    button.addEventListener("click", () => {
      const open = !folds.every((d) => d.open);
      folds.forEach((d) => (d.open = open));
      button.textContent = label(open);
    });
    title.insertAdjacentElement("afterend", button);
  }

  // A solution's title links to its exercise ("Solution to Exercise 5.1"), and sphinx-togglebutton makes the whole
  // title the solution's toggle. A tap on the link found no toggle button in togglebutton.js ("ReferenceError:
  // button is not defined") and then jumped to the exercise. Caught first (capture phase), a tap on the link now
  // opens or closes the solution, as a tap anywhere else on its title does.
  function solutionTitleLinks() {
    document.addEventListener(
      "click",
      (event) => {
        const link = event.target instanceof Element && event.target.closest(".admonition > .admonition-title a");
        const box = link && link.closest(".admonition");
        const button = box && box.querySelector(":scope > .admonition-title > .toggle-button");
        if (!button) return;
        event.preventDefault();
        event.stopPropagation();
        button.click();
      },
      true,
    );
  }

  // The theme's "Back to top" button floats at 90% of the window's height, centred, whenever the reader scrolls
  // up. On a phone it landed on an explorable's controls and took their taps. While an explorable or a viewer
  // crosses the band the button would take, html.back-to-top-clear hides it (book.css).
  const PANELS = ".attnconv-explorable, .attnconv-viewer";

  function clearBackToTop() {
    const button = document.getElementById("pst-back-to-top");
    if (!button) return;
    const shown = button.getBoundingClientRect();
    const height = shown.height || 48, width = shown.width || 160, margin = 8;
    const top = window.innerHeight * 0.9 - margin, bottom = window.innerHeight * 0.9 + height + margin;
    const left = window.innerWidth / 2 - width / 2 - margin, right = window.innerWidth / 2 + width / 2 + margin;
    const covered = Array.from(document.querySelectorAll(PANELS)).some((panel) => {
      const r = panel.getBoundingClientRect();
      return r.width > 0 && r.bottom > top && r.top < bottom && r.right > left && r.left < right;
    });
    document.documentElement.classList.toggle("back-to-top-clear", covered);
  }

  function watchBackToTop() {
    if (!document.querySelector(PANELS)) return;
    let frame = null;
    const later = () => {
      if (frame === null) frame = requestAnimationFrame(() => { frame = null; clearBackToTop(); });
    };
    window.addEventListener("scroll", () => { clearBackToTop(); later(); }, { passive: true });
    window.addEventListener("resize", later);
    clearBackToTop();
  }

  // MathJax typesets lazily (ui/lazy in _config.yml): its first pass leaves each formula as a placeholder
  // (<mjx-lazy>) and draws the ones near the window as they come into view, so that a chapter's first screen does
  // not wait for its 250 formulas. The others are then drawn in the background, a few at a time when the page is
  // idle, in the order of the page: every formula gets its place in its line and the MathML that screen readers
  // read (a11y/assistive-mml) without the reader having to scroll to it. When none is left, <html> gets
  // data-maths-typeset.
  const MATHS_PER_STEP = 20;

  function typesetTheRest() {
    const doc = window.MathJax && window.MathJax.startup && window.MathJax.startup.document;
    const finish = () => {
      markAllEquations();
      document.documentElement.setAttribute("data-maths-typeset", "");
    };
    if (!doc || typeof doc.lazyHandleSet !== "function" || !doc.lazySet) {
      finish();
      return;
    }
    const idle = window.requestIdleCallback
      ? (f) => window.requestIdleCallback(f, { timeout: 250 })
      : (f) => setTimeout(f, 20);
    const step = () => {
      const waiting = Array.from(document.querySelectorAll("mjx-lazy[data-mjx-lazy]")).slice(0, MATHS_PER_STEP);
      if (!waiting.length) {
        finish();
        return;
      }
      waiting.forEach((marker) => doc.lazySet.add(marker.getAttribute("data-mjx-lazy")));
      doc.lazyHandleSet();  // draws every formula in the set, then resolves doc.lazyPromise
      doc.lazyPromise.then(() => {
        markAllEquations();
        idle(step);
      }, finish);
    };
    idle(step);
  }

  function init() {
    watchBackToTop();
    solutionTitleLinks();
    addUnfoldButton();
    legibleFigures();
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
    (typeset || Promise.resolve()).then(() => {
      markAllEquations();
      typesetTheRest();
    });
    markAllEquations();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
