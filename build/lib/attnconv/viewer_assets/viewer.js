// The page side of attnconv.viewer: chooses the frame (or paints the maps) for the controls' current values.
// The viewer's element id is filled in by Python. The controls are read in order; the frame index is row-major.
(function () {
  var root = document.getElementById(ROOT_ID);
  if (!root || root.dataset.ready) return;
  root.dataset.ready = "1";
  var spec = JSON.parse(root.querySelector("script.av-spec").textContent);
  var inputs = Array.prototype.slice.call(root.querySelectorAll(".av-control"));
  function index() {
    var k = 0;
    inputs.forEach(function (el, i) { k = k * spec.sizes[i] + parseInt(el.value, 10); });
    return k;
  }
  function showValues() {
    inputs.forEach(function (el, i) {
      var out = root.querySelector(".av-value[data-i='" + i + "']");
      if (out) out.textContent = spec.labels[i][parseInt(el.value, 10)];
    });
  }
  var draw;
  if (spec.kind === "frames") {
    var img = root.querySelector("img.av-frame");
    draw = function () { img.src = "data:image/png;base64," + spec.frames[index()]; };
  } else {
    // The maps arrive deflated (zlib) and base64-encoded; they are painted once the browser has inflated them.
    var raw = atob(spec.data), packed = new Uint8Array(raw.length), bytes = null;
    for (var i = 0; i < raw.length; i++) packed[i] = raw.charCodeAt(i);
    if (spec.encoding !== "deflate") {
      bytes = packed;
    } else if (typeof DecompressionStream === "undefined") {
      root.insertAdjacentHTML("beforeend", "<p>This browser cannot unpack the maps (no DecompressionStream).</p>");
    } else {
      new Response(new Blob([packed]).stream().pipeThrough(new DecompressionStream("deflate"))).arrayBuffer()
        .then(function (buffer) { bytes = new Uint8Array(buffer); draw(); });
    }
    var lut = atob(spec.lut), panels = spec.shapes.length, per = 0;
    spec.shapes.forEach(function (sh) { per += sh[0] * sh[1]; });
    var canvases = Array.prototype.slice.call(root.querySelectorAll("canvas.av-map"));
    var vmax = root.querySelector(".av-vmax");
    function paint(canvas, offset, h, w, mark) {
      var box = canvas.parentNode.querySelector('.av-mark');
      if (box) {
        box.style.display = mark ? 'block' : 'none';
        if (mark) {
          box.style.left = (100 * mark[1] / w) + '%'; box.style.top = (100 * mark[0] / h) + '%';
          box.style.width = (100 / w) + '%'; box.style.height = (100 / h) + '%';
        }
      }
      var ctx = canvas.getContext("2d"), im = ctx.createImageData(w, h);
      for (var p = 0; p < h * w; p++) {
        var v = bytes[offset + p];
        im.data[4 * p] = lut.charCodeAt(3 * v); im.data[4 * p + 1] = lut.charCodeAt(3 * v + 1);
        im.data[4 * p + 2] = lut.charCodeAt(3 * v + 2); im.data[4 * p + 3] = 255;
      }
      ctx.putImageData(im, 0, 0);
    }
    draw = function () {
      if (!bytes) return;
      var k = index(), mark = null, offset = k * per;
      if (spec.mark) mark = spec.mark.map(function (i) { return spec.values[i][parseInt(inputs[i].value, 10)]; });
      canvases.forEach(function (c, p) {
        var sh = spec.shapes[p], vals = root.querySelector(".av-vals[data-panel='" + p + "']");
        paint(c, offset, sh[0], sh[1], mark);
        if (vals) {  // a kernel strip prints its weights under its cells
          var top = parseFloat(spec.vmax[k]), at = offset;
          Array.prototype.forEach.call(vals.children, function (span, i) {
            span.textContent = (bytes[at + i] / 255 * top).toFixed(2);
          });
        }
        offset += sh[0] * sh[1];
      });
      vmax.textContent = spec.vmax[k];
    };
    var cbar = root.querySelector("canvas.av-cbar").getContext("2d"), bar = cbar.createImageData(256, 1);
    for (var v = 0; v < 256; v++) {
      bar.data[4 * v] = lut.charCodeAt(3 * v); bar.data[4 * v + 1] = lut.charCodeAt(3 * v + 1);
      bar.data[4 * v + 2] = lut.charCodeAt(3 * v + 2); bar.data[4 * v + 3] = 255;
    }
    cbar.putImageData(bar, 0, 0);
    if (spec.mark) {
      canvases.forEach(function (c) {
        c.classList.add("av-clickable");
        c.addEventListener("click", function (ev) {
          var box = c.getBoundingClientRect();
          var rc = [Math.floor((ev.clientY - box.top) / box.height * c.height),
                    Math.floor((ev.clientX - box.left) / box.width * c.width)];
          spec.mark.forEach(function (i, j) {
            var best = 0;
            spec.values[i].forEach(function (val, n) {
              if (Math.abs(val - rc[j]) < Math.abs(spec.values[i][best] - rc[j])) best = n;
            });
            inputs[i].value = best;
          });
          showValues(); draw();
        });
      });
    }
  }
  // Every control's name as wide as the longest ("b₋₂" is wider than "b₀"), so that the sliders line up.
  function alignNames() {
    var names = Array.prototype.slice.call(root.querySelectorAll(".av-name")), widest = 0;
    names.forEach(function (n) { n.style.minWidth = ""; widest = Math.max(widest, n.getBoundingClientRect().width); });
    names.forEach(function (n) { n.style.minWidth = Math.ceil(widest) + "px"; });
  }
  // Maps wider than the screen scroll sideways in their row; a line above them says so.
  function markScroll() {
    var row = root.querySelector(".av-panels"), hint = root.querySelector(".av-scroll-hint");
    if (!row || !hint) return;
    var more = row.scrollWidth > row.clientWidth + 1;
    hint.hidden = !more;
    if (more) row.tabIndex = 0; else row.removeAttribute("tabindex");
  }
  alignNames(); markScroll();
  window.addEventListener("resize", function () { alignNames(); markScroll(); });
  inputs.forEach(function (el) {
    el.addEventListener("input", function () { showValues(); draw(); });
    el.addEventListener("change", function () { showValues(); draw(); });
  });
  showValues(); draw();
})();
