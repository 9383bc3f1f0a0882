// Chapter 03's explorable: build a 3 x 3 convolution out of nine quadratic attention heads (attnconv.explorables
// .construction). compute() is the numbers; the rest draws them and wires the controls.
(function () {
  var root = document.getElementById(ROOT_ID);
  if (!root || root.dataset.ready) return;
  root.dataset.ready = "1";
  var N = window.attnconvNumerics, spec = JSON.parse(root.querySelector("script.ax-spec").textContent);
  var S = spec.size, K = 3, WIN = 7;
  var images = spec.images.map(function (im) {
    var px = N.bytes(im.pixels), out = [];
    for (var r = 0; r < S; r++) { var row = []; for (var c = 0; c < S; c++) row.push(px[r * S + c] / 255); out.push(row); }
    return out;
  });
  function flat(rows) { var out = []; rows.forEach(function (r) { out.push.apply(out, r); }); return out; }
  function nest(a, h, w) { var out = []; for (var r = 0; r < h; r++) out.push(N.toArray(a.subarray(r * w, (r + 1) * w))); return out; }

  function defaults() {
    return {image: images[0], kernel: spec.presets[spec.start].kernel, alpha: spec.alpha,
            centers: N.tapShifts(K), query: [Math.floor(S / 2), Math.floor(S / 2)]};
  }
  // inputs: image (H, W) in [0, 1]; kernel (3, 3); alpha > 0; centers (9, 2), head h = tap h row-major;
  // query [row, col]. Outputs: conv, mhsa, difference (H, W); attention (9, H + 2, W + 2), every head's map of
  // the query on the zero-padded canvas; max_difference; relative_difference, max_difference over the range of the
  // convolution's output (at least 1e-12), the number the verdict reads.
  function check(inputs) {  // odd input is refused with a message (a RangeError), never computed into NaN
    var img = inputs.image;
    if (!img || !img.length || !img[0] || !img[0].length || img.some(function (row) { return !row || row.length !== img[0].length; }))
      N.refuse("image must be a non-empty H x W array of grey levels");
    N.allFinite("image", img, 0, 1);
    if (!inputs.kernel || inputs.kernel.length !== K || inputs.kernel.some(function (r) { return !r || r.length !== K; }))
      N.refuse("kernel must be " + K + " x " + K + " numbers");
    N.allFinite("kernel", inputs.kernel);
    N.positive("alpha", inputs.alpha);
    if (!inputs.centers || inputs.centers.length !== K * K || inputs.centers.some(function (c) { return !c || c.length !== 2; }))
      N.refuse("centers must be " + K * K + " pairs");
    N.allFinite("centers", inputs.centers);
    N.cell("query", inputs.query, img.length, img[0].length);
  }
  function compute(inputs) {
    check(inputs);
    var img = inputs.image, h = img.length, w = img[0].length, kernel = flat(inputs.kernel);
    var conv = N.conv2dZeros(flat(img), h, w, kernel, K);
    var att = N.convAsAttention(flat(img), h, w, kernel, K, inputs.alpha, inputs.centers);
    var diff = new Float64Array(h * w), worst = 0;
    var lo = Infinity, hi = -Infinity;
    for (var i = 0; i < h * w; i++) {
      diff[i] = att.out[i] - conv[i]; worst = Math.max(worst, Math.abs(diff[i]));
      lo = Math.min(lo, conv[i]); hi = Math.max(hi, conv[i]);
    }
    if (!isFinite(worst)) N.refuse("these inputs overflow the computation (alpha " + inputs.alpha + ", kernel up to " +
                                   Math.max.apply(null, kernel.map(Math.abs)) + ")");
    var q = inputs.query, hh = att.canvas[0], ww = att.canvas[1];
    var maps = att.heads.map(function (p) { return nest(N.queryMap(p, hh, ww, q[0] + att.offset, q[1] + att.offset), hh, ww); });
    return {conv: nest(conv, h, w), mhsa: nest(att.out, h, w), difference: nest(diff, h, w), attention: maps,
            max_difference: worst, relative_difference: worst / Math.max(hi - lo, 1e-12)};
  }
  window.attnconvExplorables[root.dataset.explorable] = {defaults: defaults, compute: compute};

  // ---- the page -----------------------------------------------------------------------------------------------
  var state = defaults(), body = root.querySelector(".ax-body");
  var opts = spec.images.map(function (im, i) { return '<option value="' + i + '">' + im.label + "</option>"; }).join("");
  var presets = spec.presets.map(function (p, i) { return '<button type="button" data-preset="' + i + '">' + p.name + "</button>"; }).join("");
  var cells = ""; for (var t = 0; t < K * K; t++) cells += '<input inputmode="decimal" aria-label="kernel weight ' + t + '">';
  var heads = ""; for (t = 0; t < K * K; t++)
    heads += '<div class="ax-panel"><canvas class="ax-head av-clickable" width="' + WIN + '" height="' + WIN + '" style="width: 84px; height: 84px"></canvas>' +
             '<div class="ax-caption ax-head-label"></div></div>';
  var panel = function (cls, label) {
    return '<div class="ax-panel"><canvas class="' + cls + (cls === "ax-input" ? " av-clickable" : "") + '" style="width: 150px; height: 150px"></canvas><div class="ax-caption">' + label + "</div></div>";
  };
  body.innerHTML =
    '<div class="ax-controls"><label>image <select class="ax-image">' + opts + "</select></label>" +
    '<span class="ax-presets">' + presets + "</span></div>" +
    '<div class="ax-controls"><label>α <input type="range" class="ax-alpha" min="-1" max="2" step="0.01" aria-label="alpha"></label>' +
    '<span class="ax-alpha-value ax-number"></span><label>or type α <input class="ax-alpha-in ax-typed" inputmode="decimal" aria-label="alpha, typed"></label>' +
    '<span class="ax-msg ax-warn ax-alpha-msg" role="alert" hidden></span><button type="button" class="ax-reset">heads back on their taps</button></div>' +
    '<div class="ax-controls"><label>query row <input class="ax-qrow ax-typed" inputmode="numeric" aria-label="query row"></label>' +
    '<label>column <input class="ax-qcol ax-typed" inputmode="numeric" aria-label="query column"></label><span class="ax-msg ax-warn ax-query-msg" role="alert" hidden></span></div>' +
    '<div class="ax-row"><div><div class="ax-caption">kernel w (type a value)</div><div class="ax-kernel" style="grid-template-columns: repeat(3, auto)">' + cells + '</div><div class="ax-msg ax-warn ax-kernel-msg" role="alert" hidden></div></div>' +
    '<div class="ax-number">largest |MHSA − conv| = <b class="ax-max"></b><br>relative to the convolution\'s range: <b class="ax-rel"></b>' +
    '<div class="ax-caption ax-verdict" role="status"></div></div></div>' +
    '<div class="ax-row">' + panel("ax-input", "input: tap a pixel to query it") + panel("ax-conv", "convolution") +
    panel("ax-mhsa", "9-head MHSA, quadratic") + panel("ax-diff", "MHSA − conv (red +, blue −)") + "</div>" +
    '<div class="ax-caption">each head\'s attention around the query pixel (red square), 7×7 window; drag inside a head to move its centre Δ</div>' +
    '<div class="ax-heads">' + heads + "</div>";
  var q = function (s) { return root.querySelector(s); }, qa = function (s) { return N.toArray(root.querySelectorAll(s)); };
  var inputs = qa(".ax-kernel input"), headCanvases = qa("canvas.ax-head"), headLabels = qa(".ax-head-label");
  var alpha = q(".ax-alpha");
  alpha.value = Math.log10(state.alpha);

  function gray(lo, hi) { return function (v) { var g = Math.round(255 * Math.max(0, Math.min(1, (v - lo) / (hi - lo || 1)))); return [g, g, g]; }; }
  function markQuery(canvas, r, c, h, w) {
    var ctx = canvas.getContext("2d"); ctx.strokeStyle = "red"; ctx.lineWidth = Math.max(0.15, w / 100);
    ctx.strokeRect(c + 0.05, r + 0.05, 0.9, 0.9);
  }
  // A field that holds a value it cannot take (empty, not a number, out of range) is "pending": while any is, the
  // page computes nothing, rather than go on with the field's last good value, which the reader no longer sees.
  var pending = {}, outputs = qa("canvas").filter(function (c) { return !c.classList.contains("ax-input"); });
  function hold(key, problem) {
    if (problem) pending[key] = true; else delete pending[key];
    return problem;
  }
  function stale() {
    var keys = Object.keys(pending);
    q(".ax-max").textContent = "not computed"; q(".ax-rel").textContent = "—";
    q(".ax-verdict").textContent = "not computed: " + keys.join(", ") + (keys.length > 1 ? " hold values" : " holds a value") +
      " it cannot take (marked in red)";
    q(".ax-verdict").classList.add("ax-warn");
    outputs.concat(headLabels).forEach(function (c) { c.style.opacity = "0.25"; });
    root.dataset.stale = keys.join(" ");
  }
  function draw() {
    if (Object.keys(pending).length) { stale(); return; }
    delete root.dataset.stale;
    outputs.concat(headLabels).forEach(function (c) { c.style.opacity = ""; });
    var out = compute(state), h = S, w = S;
    var conv = flat(out.conv), lo = Math.min.apply(null, conv), hi = Math.max.apply(null, conv);
    N.paint(q("canvas.ax-input"), flat(state.image), h, w, gray(0, 1));
    markQuery(q("canvas.ax-input"), state.query[0], state.query[1], h, w);
    N.paint(q("canvas.ax-conv"), conv, h, w, gray(lo, hi));
    N.paint(q("canvas.ax-mhsa"), flat(out.mhsa), h, w, gray(lo, hi));
    var top = Math.max(out.max_difference, 1e-12);
    N.paint(q("canvas.ax-diff"), flat(out.difference), h, w, function (v) { return N.diverging(v / top); });
    q(".ax-max").textContent = out.max_difference.toPrecision(3);
    var rel = out.relative_difference;
    q(".ax-rel").textContent = rel.toPrecision(3);
    q(".ax-verdict").textContent = (rel < 1e-3 ? "the heads build the convolution" :
      (rel < 0.05 ? "close: raise α to sharpen the heads" : "the layer is not this convolution")) +
      (out.max_difference === 0 ? " (exactly: every leak is below the rounding of these outputs)" : "");
    q(".ax-verdict").classList.toggle("ax-warn", rel >= 0.05);
    q(".ax-alpha-value").textContent = "α = " + state.alpha.toPrecision(3);
    var kernel = flat(state.kernel), hw = WIN >> 1;
    headCanvases.forEach(function (cv, t) {
      var m = out.attention[t], win = new Float64Array(WIN * WIN), peak = 0;
      for (var a = 0; a < WIN; a++) for (var b = 0; b < WIN; b++) {
        var r = state.query[0] + 1 + a - hw, c = state.query[1] + 1 + b - hw;
        var v = (r >= 0 && r < m.length && c >= 0 && c < m[0].length) ? m[r][c] : NaN;
        win[a * WIN + b] = v; if (v > peak) peak = v;
      }
      N.paint(cv, win, WIN, WIN, function (v) { return isNaN(v) ? [200, 200, 200] : N.ramp(v / (peak || 1)); });
      markQuery(cv, hw, hw, WIN, WIN);
      var d = state.centers[t], ctx = cv.getContext("2d");
      ctx.fillStyle = "white"; ctx.beginPath(); ctx.arc(hw + 0.5 + d[1], hw + 0.5 + d[0], 0.22, 0, 2 * Math.PI); ctx.fill();
      var tap = N.tapShifts(K)[t], moved = Math.abs(d[0] - tap[0]) + Math.abs(d[1] - tap[1]) > 1e-9;
      headLabels[t].innerHTML = "Δ = (" + d[0].toFixed(2) + ", " + d[1].toFixed(2) + ")" + (moved ? " moved" : "") +
        "<br>w = " + (+kernel[t].toFixed(3)) + ", peak " + peak.toFixed(2);
      headLabels[t].classList.toggle("ax-warn", moved);
    });
    inputs.forEach(function (el, t) { if (document.activeElement !== el && !el.classList.contains("ax-bad")) el.value = +kernel[t].toFixed(4); });
    [[".ax-qrow", state.query[0]], [".ax-qcol", state.query[1]], [".ax-alpha-in", +state.alpha.toPrecision(3)]].forEach(function (f) {
      var el = q(f[0]); if (document.activeElement !== el && !el.classList.contains("ax-bad")) el.value = f[1];
    });
    qa(".ax-presets button").forEach(function (b, i) {
      b.classList.toggle("ax-on", JSON.stringify(spec.presets[i].kernel) === JSON.stringify(state.kernel));
    });
  }
  q(".ax-image").addEventListener("change", function (ev) { state.image = images[+ev.target.value]; draw(); });
  qa(".ax-presets button").forEach(function (b) {
    b.addEventListener("click", function () {
      state.kernel = spec.presets[+b.dataset.preset].kernel.map(function (r) { return r.slice(); });
      inputs.forEach(function (el, t) { settled(el); delete pending["kernel weight " + (t + 1)]; });
      q(".ax-kernel-msg").hidden = true; draw();
    });
  });
  function settled(el) { el.classList.remove("ax-bad"); el.removeAttribute("aria-invalid"); }
  var KMAX = 1000;
  inputs.forEach(function (el, t) {  // a weight typed: a number from -1000 to 1000, else a message under the kernel
    N.guard(el, q(".ax-kernel-msg"), function (text) {
      var v = N.number(text);
      if (!isFinite(v) || Math.abs(v) > KMAX) {
        hold("kernel weight " + (t + 1), true); draw();
        return "a kernel weight must be a number from −" + KMAX + " to " + KMAX + (text.trim() === "" ? "; this cell is empty" : "") +
          ": nothing is computed until it is one";
      }
      hold("kernel weight " + (t + 1), false);
      state.kernel = state.kernel.map(function (r) { return r.slice(); }); state.kernel[Math.floor(t / K)][t % K] = v; draw();
    });
  });
  alpha.addEventListener("input", function () {
    state.alpha = Math.pow(10, parseFloat(alpha.value)); settled(q(".ax-alpha-in")); q(".ax-alpha-msg").hidden = true;
    hold("α", false); draw();
  });
  N.guard(q(".ax-alpha-in"), q(".ax-alpha-msg"), function (text) {  // α typed: the slider's range, 0.1 to 100
    var v = N.number(text);
    if (!isFinite(v) || v < 0.1 || v > 100) {
      hold("α", true); draw();
      return "α must be a number from 0.1 to 100: nothing is computed until it is one (or move the slider)";
    }
    hold("α", false);
    state.alpha = v; alpha.value = Math.log10(v); draw();
  });
  [[".ax-qrow", 0, "query row"], [".ax-qcol", 1, "query column"]].forEach(function (f) {
    N.guard(q(f[0]), q(".ax-query-msg"), function (text) {
      var v = N.number(text);
      if (!Number.isInteger(v) || v < 0 || v >= S) {
        hold(f[2], true); draw();
        return "the query is a pixel of the " + S + "×" + S + " image: row and column are whole numbers from 0 to " + (S - 1) +
          "; nothing is computed until they are (or tap a pixel)";
      }
      hold(f[2], false);
      state.query = state.query.slice(); state.query[f[1]] = v; draw();
    });
  });
  q(".ax-reset").addEventListener("click", function () { state.centers = N.tapShifts(K); draw(); });
  var dragged = N.coalesce(function () { draw(); });  // a drag renders at most once per frame, and on release
  N.onDrag(q("canvas.ax-input"), function (ev) {
    state.query = N.cellAt(q("canvas.ax-input"), ev, S, S); settled(q(".ax-qrow")); settled(q(".ax-qcol")); q(".ax-query-msg").hidden = true;
    hold("query row", false); hold("query column", false); dragged();
  });
  headCanvases.forEach(function (cv, t) {
    N.onDrag(cv, function (ev) {
      var f = N.fractionAt(cv, ev), hw = WIN / 2;
      state.centers = state.centers.map(function (c) { return c.slice(); });
      state.centers[t] = [Math.round((f[0] * WIN - hw) * 20) / 20, Math.round((f[1] * WIN - hw) * 20) / 20].map(function (v) {
        return Math.max(-3, Math.min(3, v));
      });
      dragged();
    });
  });
  draw();
})();
