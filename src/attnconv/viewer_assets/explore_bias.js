// Chapter 05's explorable: a relative-bias kernel b_{-k..k} drawn by the reader over a sentence (attnconv
// .explorables.bias_kernel). compute() is the numbers; the rest draws them and wires the controls.
(function () {
  var root = document.getElementById(ROOT_ID);
  if (!root || root.dataset.ready) return;
  root.dataset.ready = "1";
  var N = window.attnconvNumerics, spec = JSON.parse(root.querySelector("script.ax-spec").textContent);
  var LIMIT = 4, CELL = 13, words = spec.words, n = words.length;
  function flat(a) { var out = []; a.forEach(function (r) { out.push.apply(out, r); }); return out; }
  function nest(a, rows, cols) {  // a flat (rows, cols) array as rows of plain numbers
    var out = new Array(rows);
    for (var r = 0; r < rows; r++) { var row = new Array(cols); for (var c = 0; c < cols; c++) row[c] = a[r * cols + c]; out[r] = row; }
    return out;
  }

  function defaults() { return {bias: spec.bias.slice(), features: spec.features.map(function (r) { return r.slice(); })}; }
  // inputs: bias b (2k + 1, k = 1..4), offsets δ = -k..k; features (N, C), N at most MAX_TOKENS. Outputs: kernel
  // softmax(b) (2k + 1); attention_taps and zero_taps (N, 2k + 1), row i tap t the weight of key i + t - k: the
  // renormalised band (softmax over keys j of b_{j-i}, -inf beyond |j - i| > k) and the zero-padded convolution's;
  // renormalized, zero_padded (N, C), the two outputs; and, for N up to DENSE_LIMIT, the same bands as (N, N)
  // matrices, attention and zero_band. Every step costs O(N k C): 10,000 tokens take milliseconds.
  var MAX_TOKENS = 100000, DENSE_LIMIT = 512;
  function check(inputs) {  // odd input is refused with a message (a RangeError), never computed into NaN
    var b = inputs.bias, f = inputs.features;
    if (!b || typeof b.length !== "number" || b.length % 2 === 0 || b.length < 3 || b.length > 9)
      N.refuse("bias must hold 2k + 1 numbers with k from 1 to 4, got " + (b && b.length) + " numbers");
    N.allFinite("bias", b);
    if (!f || !f.length || !f[0] || !f[0].length) N.refuse("features must hold at least one token with at least one channel");
    if (f.length > MAX_TOKENS) N.refuse("at most " + MAX_TOKENS + " tokens, got " + f.length);
    var ch = f[0].length;
    for (var i = 0; i < f.length; i++) {
      if (!f[i] || f[i].length !== ch) N.refuse("every token must have " + ch + " features; token " + i + " has " + (f[i] && f[i].length));
      for (var c = 0; c < ch; c++) if (typeof f[i][c] !== "number" || !isFinite(f[i][c])) N.refuse("features must be finite numbers, found " + f[i][c] + " at token " + i);
    }
  }
  function dense(taps, n, w) {
    var out = new Float64Array(n * n), k = (w - 1) / 2;
    for (var i = 0; i < n; i++) for (var t = 0; t < w; t++) { var j = i + t - k; if (j >= 0 && j < n) out[i * n + j] = taps[i * w + t]; }
    return nest(out, n, n);
  }
  function compute(inputs) {
    check(inputs);
    var b = inputs.bias, w = b.length, x = flat(inputs.features), rows = inputs.features.length, ch = inputs.features[0].length;
    var att = N.bandTaps(b, rows, "renormalize"), zb = N.bandTaps(b, rows, "zeros");
    var out = {kernel: N.toArray(N.softmax(b)), attention_taps: nest(att, rows, w), zero_taps: nest(zb, rows, w),
               renormalized: nest(N.bandApply(att, rows, w, x, ch), rows, ch),
               zero_padded: nest(N.bandApply(zb, rows, w, x, ch), rows, ch)};
    if (rows <= DENSE_LIMIT) { out.attention = dense(att, rows, w); out.zero_band = dense(zb, rows, w); }
    return out;
  }
  window.attnconvExplorables[root.dataset.explorable] = {defaults: defaults, compute: compute};

  // ---- the page -----------------------------------------------------------------------------------------------
  var state = defaults(), body = root.querySelector(".ax-body"), BAR_H = 110;
  var ks = [1, 2, 3, 4].map(function (k) { return '<button type="button" data-k="' + k + '">k = ' + k + "</button>"; }).join("");
  var labels = words.map(function (w) { return '<div style="height: ' + CELL + 'px; line-height: ' + CELL + 'px">' + w + "</div>"; }).join("");
  var chart = function (cls, title) {
    return '<div class="ax-panel" style="text-align: left"><div class="ax-caption" style="max-width: none">' + title + '</div><canvas class="' + cls +
      '" width="' + (n * CELL * 2) + '" height="160" style="width: ' + (n * CELL) + 'px; height: 80px"></canvas></div>';
  };
  body.innerHTML =
    '<div class="ax-controls">' + ks + '<button type="button" class="ax-flat">flat kernel</button></div>' +
    '<div class="ax-row"><div style="min-width: 0; max-width: 100%"><div class="ax-caption" style="max-width: none">drag the bars or type the biases b(δ), from −4 to 4; under each bar its offset δ = key − query, b(δ) and the kernel β(δ) = softmax(b)(δ)</div>' +
    '<div class="ax-bars"></div><div class="ax-msg ax-warn ax-bias-msg" role="alert" hidden></div></div>' +
    '<div class="ax-number ax-mass"></div></div>' +
    '<div class="ax-row"><div class="ax-panel" style="text-align: left"><div class="ax-caption" style="max-width: none">attention softmax_j b(j − i): query i (rows), key j (columns)</div>' +
    '<div style="display: flex"><div class="ax-tokens" style="text-align: right; padding-right: 4px; white-space: nowrap">' + labels + "</div>" +
    '<canvas class="ax-matrix" style="width: ' + n * CELL + "px; height: " + n * CELL + 'px"></canvas></div></div></div>' +
    '<div class="ax-row">' + chart("ax-ones", "on a sequence of ones") + chart("ax-len", "on the words' lengths (scaled to 1)") + "</div>" +
    '<div class="ax-caption" style="max-width: none"><span style="color: #1f5fa8">■ attention = renormalised lightconv</span> &nbsp; ' +
    '<span style="color: #d95f02">■ zero-padded lightconv</span> &nbsp; <span style="color: #888">■ input</span></div>';
  var q = function (s) { return root.querySelector(s); }, qa = function (s) { return N.toArray(root.querySelectorAll(s)); };

  function bars() {
    var k = (state.bias.length - 1) / 2, html = "";
    state.bias.forEach(function (v, t) {
      var sub = String(t - k).replace("-", "−");
      // Each bar's column is 38 px wide, and narrower when nine do not fit the column (k = 4 on a phone).
      html += '<div class="ax-panel" style="flex: 0 1 38px; min-width: 0; white-space: nowrap"><div class="ax-bar-box" style="position: relative; width: 30px; max-width: 100%; height: ' + BAR_H +
        'px; background: #f3f3f3; margin: auto"><div class="ax-bar" style="position: absolute; left: 10%; width: 80%; background: #1f5fa8"></div>' +
        '<div style="position: absolute; left: 0; right: 0; top: ' + BAR_H / 2 + 'px; border-top: 1px solid #999"></div></div>' +
        '<div class="ax-caption">' + sub + '</div><div class="ax-caption ax-bval"></div><div class="ax-caption ax-kval"></div>' +
        '<input class="ax-bin ax-typed" inputmode="decimal" aria-label="b(' + sub + ')" style="width: 36px; max-width: 100%; padding: 1px; font-size: 12px"></div>';
    });
    q(".ax-bars").innerHTML = html;
    qa(".ax-bin").forEach(function (el, t) {
      el.value = state.bias[t];
      N.guard(el, q(".ax-bias-msg"), function (text) {
        var v = N.number(text), name = "b(" + String(t - k).replace("-", "−") + ")";
        if (!isFinite(v) || v < -LIMIT || v > LIMIT) {
          pending.hold(name, true); draw();
          return name + " must be a number from −" + LIMIT + " to " + LIMIT + ": nothing is computed until it is one (or drag its bar)";
        }
        pending.hold(name, false);
        state.bias = state.bias.slice(); state.bias[t] = v; draw();
      }, pending);
    });
  }
  function line(ctx, values, color, w) {
    ctx.strokeStyle = color; ctx.lineWidth = w; ctx.beginPath();
    values.forEach(function (v, i) { var x = (i + 0.5) * CELL * 2, y = 150 - 140 * v; if (i) ctx.lineTo(x, y); else ctx.moveTo(x, y); });
    ctx.stroke();
  }
  function plot(cls, out, c) {
    var cv = q("canvas." + cls), ctx = cv.getContext("2d");
    ctx.clearRect(0, 0, cv.width, cv.height);
    ctx.strokeStyle = "#ddd"; ctx.lineWidth = 1; ctx.strokeRect(0.5, 10, cv.width - 1, 140);
    line(ctx, state.features.map(function (r) { return r[c]; }), "#888", 2);
    line(ctx, out.renormalized.map(function (r) { return r[c]; }), "#1f5fa8", 4);
    line(ctx, out.zero_padded.map(function (r) { return r[c]; }), "#d95f02", 3);
  }
  // A typed bias the page cannot take stops it computing (N.pendingFields), until that field, its bar, a k button
  // or the flat kernel gives one: it never goes on with a value the field no longer shows.
  var pending = N.pendingFields(), outputs = qa("canvas");
  function name(t) { return "b(" + String(t - (state.bias.length - 1) / 2).replace("-", "−") + ")"; }
  function settle(t) {  // field t holds its bias again
    var el = qa(".ax-bin")[t];
    pending.hold(name(t), false);
    if (el) { el.value = state.bias[t]; el.classList.remove("ax-bad"); el.removeAttribute("aria-invalid"); }
    if (!pending.any()) q(".ax-bias-msg").hidden = true;
  }
  function draw() {
    if (N.markStale(root, q(".ax-mass"), outputs, pending)) return;
    var out = compute(state), k = (state.bias.length - 1) / 2;
    qa(".ax-bar").forEach(function (el, t) {
      var v = state.bias[t], y = BAR_H / 2 * (1 - v / LIMIT);
      el.style.top = Math.min(y, BAR_H / 2) + "px"; el.style.height = Math.max(1, Math.abs(BAR_H / 2 - y)) + "px";
    });
    qa(".ax-bval").forEach(function (el, t) { el.textContent = state.bias[t].toFixed(1).replace("-", "−"); });
    qa(".ax-bin").forEach(function (el, t) { if (document.activeElement !== el) el.value = state.bias[t]; });
    q(".ax-bias-msg").hidden = true;
    qa(".ax-kval").forEach(function (el, t) { el.textContent = out.kernel[t].toFixed(2); });
    var m = flat(out.attention), cv = q("canvas.ax-matrix");
    N.paint(cv, m, n, n, function (v) { return v === 0 ? [255, 255, 255] : N.ramp(v); });
    plot("ax-ones", out, 0); plot("ax-len", out, 1);
    var kept = out.zero_padded[0][0];
    q(".ax-mass").innerHTML = "first word: zero padding keeps <b>" + (100 * kept).toFixed(0) + "%</b> of the kernel's mass; " +
      "attention renormalises to <b>" + (100 * out.renormalized[0][0]).toFixed(0) + "%</b>";
    qa("button[data-k]").forEach(function (b) { b.classList.toggle("ax-on", +b.dataset.k === k); });
  }
  function setK(k) {  // new bars and fields: every refused value is replaced
    pending = N.pendingFields(); q(".ax-bias-msg").hidden = true;
    var old = state.bias, ok = (old.length - 1) / 2, next = [];
    for (var d = -k; d <= k; d++) next.push(Math.abs(d) <= ok ? old[d + ok] : -1);
    state.bias = next; bars(); draw();
  }
  var dragged = N.coalesce(function () { draw(); });  // a drag renders at most once per frame, and on release
  function wire() {
    N.onDrag(q(".ax-bars"), function (ev) {
      var boxes = qa(".ax-bar-box"), pt = ev.touches && ev.touches.length ? ev.touches[0] : ev;
      boxes.forEach(function (box, t) {
        var r = box.getBoundingClientRect();
        if (pt.clientX < r.left - 2 || pt.clientX > r.right + 2) return;
        var v = LIMIT * (1 - 2 * (pt.clientY - r.top) / r.height);
        state.bias = state.bias.slice(); state.bias[t] = Math.round(Math.max(-LIMIT, Math.min(LIMIT, v)) * 10) / 10;
        settle(t);  // the bar replaces a refused value in its field
      });
      dragged();
    });
  }
  qa("button[data-k]").forEach(function (b) { b.addEventListener("click", function () { setK(+b.dataset.k); }); });
  q(".ax-flat").addEventListener("click", function () {
    state.bias = state.bias.map(function () { return 0; }); state.bias.forEach(function (v, t) { settle(t); }); draw();
  });
  bars(); wire(); draw();
})();
