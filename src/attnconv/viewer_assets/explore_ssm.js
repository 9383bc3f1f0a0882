// Chapter 08's explorable: a scalar state-space model h_t = a h_(t-1) + b x_t, y_t = c h_t seen three ways
// (attnconv.explorables.ssm_duality): its kernel c a^k b, its semiseparable mask a^(t-s) and the masked attention
// (c b) a^(t-s), with the three outputs (recurrence, causal convolution, masked attention) on one signal.
(function () {
  var root = document.getElementById(ROOT_ID);
  if (!root || root.dataset.ready) return;
  root.dataset.ready = "1";
  var N = window.attnconvNumerics, spec = JSON.parse(root.querySelector("script.ax-spec").textContent);
  var MAX_STEPS = 512, CELL = 10;

  function defaults() { return {a: spec.a, b: spec.b, c: spec.c, x: spec.x.slice()}; }
  // inputs: a (the decay, from -1 to 1), b, c (finite), x (T,) with 1 <= T <= MAX_STEPS. Outputs: kernel (T,)
  // K_k = c a^k b; mask (T, T) L_ts = a^(t-s) for t >= s, else 0; attention (T, T) = (c b) L; recurrence,
  // convolution, masked (T,): the output by the recurrence, by the causal convolution with the kernel, and by
  // the masked attention applied to x.
  function check(inputs) {
    N.finiteIn("a", inputs.a, -1, 1);
    N.finiteIn("b", inputs.b, null, null);
    N.finiteIn("c", inputs.c, null, null);
    var x = inputs.x;
    if (!x || typeof x.length !== "number" || x.length < 1 || x.length > MAX_STEPS)
      N.refuse("x must hold from 1 to " + MAX_STEPS + " numbers, got " + (x && x.length));
    N.allFinite("x", x);
  }
  function compute(inputs) {
    check(inputs);
    var a = inputs.a, b = inputs.b, c = inputs.c, x = inputs.x, n = x.length, t, s;
    var kernel = [], mask = [], attention = [], recurrence = [], convolution = [], masked = [], power = 1, h = 0;
    for (t = 0; t < n; t++) { kernel.push(c * power * b); power *= a; }
    for (t = 0; t < n; t++) {
      var row = [], arow = [], y = 0;
      for (s = 0; s < n; s++) {
        var l = t >= s ? Math.pow(a, t - s) : 0;
        row.push(l); arow.push(c * b * l); y += c * b * l * x[s];
      }
      mask.push(row); attention.push(arow); masked.push(y);
      h = a * h + b * x[t]; recurrence.push(c * h);
      var z = 0;
      for (var k = 0; k <= t; k++) z += kernel[k] * x[t - k];
      convolution.push(z);
    }
    return {kernel: kernel, mask: mask, attention: attention, recurrence: recurrence, convolution: convolution,
            masked: masked};
  }
  window.attnconvExplorables[root.dataset.explorable] = {defaults: defaults, compute: compute};

  // ---- the page -----------------------------------------------------------------------------------------------
  var state = defaults(), body = root.querySelector(".ax-body"), n = state.x.length;
  var side = n * CELL;
  function panel(cls, title, h) {
    return '<div class="ax-panel"><div class="ax-caption">' + title + '</div><canvas class="' + cls + '" style="width: ' +
      side + "px; height: " + (h || side) + 'px"></canvas></div>';
  }
  body.innerHTML =
    '<div class="ax-controls"><label>decay a <input type="range" class="ax-a" min="-0.95" max="0.99" step="0.01"></label>' +
    '<input class="ax-a-in ax-typed" inputmode="decimal" aria-label="decay a"><span class="ax-number ax-a-val"></span></div>' +
    '<div class="ax-msg ax-warn ax-a-msg" role="alert" hidden></div>' +
    '<div class="ax-row">' + panel("ax-kernel", "kernel K<sub>k</sub> = c a<sup>k</sup> b, k = 0 … " + (n - 1), 90) +
    panel("ax-mask", "mask L<sub>ts</sub> = a<sup>t−s</sup> (t ≥ s): rows t, columns s") +
    panel("ax-attn", "masked attention (c b) L: rows t, columns s") + "</div>" +
    '<div class="ax-row">' + panel("ax-out", "y<sub>t</sub> three ways on the signal x (grey)", 110) +
    '<div class="ax-number ax-diff" style="max-width: 20em"></div></div>' +
    '<div class="ax-caption" style="max-width: none"><span style="color: #1f5fa8">■ recurrence</span> &nbsp; ' +
    '<span style="color: #d95f02">■ causal convolution</span> &nbsp; <span style="color: #2ca02c">■ masked attention</span> &nbsp; ' +
    'blue cells are negative, red positive</div>';
  var q = function (sel) { return root.querySelector(sel); };

  function bars(cv, values, scale) {
    cv.width = side * 2; cv.height = 180;
    var ctx = cv.getContext("2d");
    ctx.clearRect(0, 0, cv.width, cv.height);
    ctx.strokeStyle = "#999"; ctx.beginPath(); ctx.moveTo(0, 90); ctx.lineTo(cv.width, 90); ctx.stroke();
    values.forEach(function (v, i) {
      var y = 85 * v / scale;
      ctx.fillStyle = v >= 0 ? "#c0392b" : "#1f5fa8";
      ctx.fillRect(i * CELL * 2 + 3, Math.min(90, 90 - y), CELL * 2 - 6, Math.max(1, Math.abs(y)));
    });
  }
  function lines(cv, series, colours, widths, scale) {
    cv.width = side * 2; cv.height = 220;
    var ctx = cv.getContext("2d");
    ctx.clearRect(0, 0, cv.width, cv.height);
    ctx.strokeStyle = "#ddd"; ctx.beginPath(); ctx.moveTo(0, 110); ctx.lineTo(cv.width, 110); ctx.stroke();
    series.forEach(function (values, k) {
      ctx.strokeStyle = colours[k]; ctx.lineWidth = widths[k]; ctx.beginPath();
      values.forEach(function (v, i) { var px = (i + 0.5) * CELL * 2, py = 110 - 100 * v / scale; if (i) ctx.lineTo(px, py); else ctx.moveTo(px, py); });
      ctx.stroke();
    });
  }
  function flat(m) { var out = []; m.forEach(function (r) { out.push.apply(out, r); }); return out; }
  function maxAbs(a) { return a.reduce(function (m, v) { return Math.max(m, Math.abs(v)); }, 1e-12); }
  // A typed a that the page cannot take stops it computing (N.pendingFields), until the field or the slider gives one.
  var pending = N.pendingFields(), outputs = N.toArray(root.querySelectorAll("canvas"));
  function draw() {
    if (N.markStale(root, q(".ax-diff"), outputs, pending)) {
      q(".ax-a-val").textContent = "a: not computed";
      return;
    }
    var out = compute(state);
    q(".ax-a").value = state.a;
    if (document.activeElement !== q(".ax-a-in")) q(".ax-a-in").value = state.a;
    q(".ax-a-val").textContent = "a = " + state.a.toFixed(2).replace("-", "−");
    bars(q("canvas.ax-kernel"), out.kernel, maxAbs(out.kernel));
    var m = flat(out.mask), at = flat(out.attention), sm = maxAbs(m), sa = maxAbs(at);
    N.paint(q("canvas.ax-mask"), m, n, n, function (v) { return N.diverging(v / sm); });
    N.paint(q("canvas.ax-attn"), at, n, n, function (v) { return N.diverging(v / sa); });
    var scale = Math.max(maxAbs(out.recurrence), maxAbs(state.x));
    lines(q("canvas.ax-out"), [state.x, out.recurrence, out.convolution, out.masked], ["#bbb", "#1f5fa8", "#d95f02", "#2ca02c"],
          [2, 7, 4, 2], scale);
    var diff = 0;
    for (var t = 0; t < n; t++) diff = Math.max(diff, Math.abs(out.recurrence[t] - out.convolution[t]), Math.abs(out.recurrence[t] - out.masked[t]));
    q(".ax-diff").innerHTML = "largest difference between the three outputs: <b>" + diff.toExponential(1) + "</b>";
  }
  var dragged = N.coalesce(draw);
  q(".ax-a").addEventListener("input", function () {  // the slider replaces a refused a
    state.a = Number(q(".ax-a").value); pending.hold("a", false);
    var el = q(".ax-a-in"); el.classList.remove("ax-bad"); el.removeAttribute("aria-invalid"); q(".ax-a-msg").hidden = true;
    dragged();
  });
  N.guard(q(".ax-a-in"), q(".ax-a-msg"), function (text) {
    var v = N.number(text);
    if (!isFinite(v) || v < -1 || v > 1) {
      pending.hold("a", true); draw();
      return "a must be a number from −1 to 1: nothing is computed until it is one (or move the slider)";
    }
    pending.hold("a", false);
    state.a = v; draw();
  });
  draw();
})();
