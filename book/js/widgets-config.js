// Serve the ipywidgets html-manager's chunks and fonts from this book, not from a CDN.
// The manager finds them relative to its own module path, so point that path at our copy.
(function () {
  var here = document.currentScript.src.replace(/[^/]*$/, "");
  require.config({ paths: { "@jupyter-widgets/html-manager/dist": here + "html-manager" } });
})();
