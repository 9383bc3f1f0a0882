// attnconv's numerics in plain JavaScript, for the explorables that compute in the page (attnconv.explorables).
// Every function mirrors one of the Python library's, in float64, on flat row-major arrays:
//   softmax            torch.softmax over the last axis
//   quadraticLogit     -α(‖δ‖² - 2⟨δ, Δ⟩), attnconv.positional.quadratic (δ = key - query)
//   axisProbs          QuadraticEncoding.factorized_probs: the per-axis softmax of a quadratic head
//   attendGrid         attention of a quadratic head over an H x W grid: (P_rows ⊗ P_cols) X
//   conv2dZeros        a K x K cross-correlation with zero padding (K - 1) / 2, as nn.Conv2d(padding=(K-1)//2)
//   convAsAttention    conv_to_mhsa: K² quadratic heads on a zero-padded canvas, one head per tap
//   lightconv          LightweightConv1d with boundary "zeros" or "renormalize"
//   bandTaps/bandApply the same band stored as (N, 2k+1) taps, in time linear in N
//   visionForward      SelfAttentionNet with quadratic attention (attnconv.models.vision)
//   visionSteps        the same pass as a generator of small steps, for a page that must stay responsive
// Loaded once per page, whatever the number of explorables on it.
(function () {
  if (window.attnconvNumerics) return;

  function softmax(logits) {  // a 1-D array -> its softmax (the largest logit is subtracted first)
    var n = logits.length, top = -Infinity, out = new Float64Array(n), sum = 0, i;
    for (i = 0; i < n; i++) if (logits[i] > top) top = logits[i];
    for (i = 0; i < n; i++) { out[i] = top === -Infinity ? 0 : Math.exp(logits[i] - top); sum += out[i]; }
    for (i = 0; i < n; i++) out[i] = sum > 0 ? out[i] / sum : 0;
    return out;
  }

  function quadraticLogit(alpha, center, delta) {  // v · r_δ = -α(‖δ‖² - 2⟨δ, Δ⟩)
    var sq = 0, dot = 0;
    for (var a = 0; a < delta.length; a++) { sq += delta[a] * delta[a]; dot += delta[a] * center[a]; }
    return -alpha * (sq - 2 * dot);
  }

  function axisProbs(alpha, center, length) {  // (L, L): row i is softmax_j of -α(δ² - 2Δδ), δ = j - i
    var out = new Float64Array(length * length), row = new Float64Array(length);
    for (var i = 0; i < length; i++) {
      for (var j = 0; j < length; j++) { var d = j - i; row[j] = -alpha * (d * d - 2 * center * d); }
      out.set(softmax(row), i * length);
    }
    return out;
  }

  // One quadratic head's attention over a grid: the full (H W) x (H W) matrix is P_rows ⊗ P_cols, so the
  // attention of query (r, c) on key (a, b) is P_rows[r, a] P_cols[c, b].
  function headProbs(alpha, center, h, w) { return {rows: axisProbs(alpha, center[0], h), cols: axisProbs(alpha, center[1], w)}; }

  function queryMap(probs, h, w, r, c) {  // the (H, W) map of query (r, c)
    var out = new Float64Array(h * w);
    for (var a = 0; a < h; a++) for (var b = 0; b < w; b++) out[a * w + b] = probs.rows[r * h + a] * probs.cols[c * w + b];
    return out;
  }

  // (P_rows ⊗ P_cols) X for values X (H, W, C): one axis at a time, never forming the (H W) x (H W) matrix.
  function attendGrid(probs, x, h, w, ch) {
    var tmp = new Float64Array(h * w * ch), out = new Float64Array(h * w * ch), i, a, b, k;
    for (i = 0; i < h; i++) for (a = 0; a < h; a++) {
      var p = probs.rows[i * h + a]; if (p === 0) continue;
      for (b = 0; b < w * ch; b++) tmp[i * w * ch + b] += p * x[a * w * ch + b];
    }
    for (i = 0; i < h; i++) for (var j = 0; j < w; j++) for (b = 0; b < w; b++) {
      var q = probs.cols[j * w + b]; if (q === 0) continue;
      for (k = 0; k < ch; k++) out[(i * w + j) * ch + k] += q * tmp[(i * w + b) * ch + k];
    }
    return out;
  }

  function conv2dZeros(img, h, w, kernel, ks) {  // out[r, c] = Σ_{a,b} kernel[a, b] img[r + a - p, c + b - p]
    var p = (ks - 1) / 2, out = new Float64Array(h * w);
    for (var r = 0; r < h; r++) for (var c = 0; c < w; c++) {
      var s = 0;
      for (var a = 0; a < ks; a++) for (var b = 0; b < ks; b++) {
        var y = r + a - p, x = c + b - p;
        if (y >= 0 && y < h && x >= 0 && x < w) s += kernel[a * ks + b] * img[y * w + x];
      }
      out[r * w + c] = s;
    }
    return out;
  }

  function tapShifts(ks) {  // Δ of each tap, row-major: (a - p, b - p)
    var p = (ks - 1) / 2, out = [];
    for (var a = 0; a < ks; a++) for (var b = 0; b < ks; b++) out.push([a - p, b - p]);
    return out;
  }

  // Theorem 1 on a one-channel image: pad with zeros, let head h (centre centers[h], inverse width alpha) attend
  // over the padded canvas with values kernel[h] * x, sum the heads, crop. Returns the output (H, W) and each
  // head's probabilities (for queryMap on the canvas, of size (H + 2p, W + 2p)).
  function convAsAttention(img, h, w, kernel, ks, alpha, centers) {
    var p = (ks - 1) / 2, hh = h + 2 * p, ww = w + 2 * p, canvas = new Float64Array(hh * ww);
    for (var r = 0; r < h; r++) for (var c = 0; c < w; c++) canvas[(r + p) * ww + c + p] = img[r * w + c];
    var sum = new Float64Array(hh * ww), heads = [];
    for (var t = 0; t < ks * ks; t++) {
      var probs = headProbs(alpha, centers[t], hh, ww);
      heads.push(probs);
      var att = attendGrid(probs, canvas, hh, ww, 1);
      for (var i = 0; i < hh * ww; i++) sum[i] += kernel[t] * att[i];
    }
    var out = new Float64Array(h * w);
    for (r = 0; r < h; r++) for (c = 0; c < w; c++) out[r * w + c] = sum[(r + p) * ww + c + p];
    return {out: out, heads: heads, canvas: [hh, ww], offset: p};
  }

  // The kernel of a relative bias b_{-k..k} at token i of n, and the band it induces: with "renormalize" the
  // softmax runs over the taps inside the sentence (attention's softmax); with "zeros" over all 2k+1 taps.
  function band(bias, n, boundary) {
    var k = (bias.length - 1) / 2, out = new Float64Array(n * n), full = softmax(bias);
    for (var i = 0; i < n; i++) {
      var logits = new Float64Array(bias.length);
      for (var t = 0; t < bias.length; t++) {
        var j = i + t - k;
        logits[t] = (boundary === "zeros" || (j >= 0 && j < n)) ? bias[t] : -Infinity;
      }
      var kern = boundary === "zeros" ? full : softmax(logits);
      for (t = 0; t < bias.length; t++) { j = i + t - k; if (j >= 0 && j < n) out[i * n + j] = kern[t]; }
    }
    return out;
  }

  // The same band, stored by taps: row i, tap t is the weight of key i + t - k (0 where that key is outside the
  // sentence), (n, 2k + 1) numbers: the cost grows with n, not n².
  function bandTaps(bias, n, boundary) {
    var w = bias.length, k = (w - 1) / 2, out = new Float64Array(n * w), full = softmax(bias), logits = new Float64Array(w);
    for (var i = 0; i < n; i++) {
      var inside = i >= k && i + k < n, kern = full, t;
      if (!inside && boundary !== "zeros") {
        for (t = 0; t < w; t++) { var j = i + t - k; logits[t] = j >= 0 && j < n ? bias[t] : -Infinity; }
        kern = softmax(logits);
      }
      for (t = 0; t < w; t++) { j = i + t - k; if (j >= 0 && j < n) out[i * w + t] = kern[t]; }
    }
    return out;
  }
  function bandApply(taps, n, w, x, ch) {  // the banded (n, n) matrix of taps times x (n, ch)
    var k = (w - 1) / 2, out = new Float64Array(n * ch);
    for (var i = 0; i < n; i++) for (var t = 0; t < w; t++) {
      var j = i + t - k, v = taps[i * w + t]; if (v === 0 || j < 0 || j >= n) continue;
      for (var c = 0; c < ch; c++) out[i * ch + c] += v * x[j * ch + c];
    }
    return out;
  }

  function matmul(a, rows, inner, b, cols) {  // (rows, inner) @ (inner, cols)
    var out = new Float64Array(rows * cols);
    for (var i = 0; i < rows; i++) for (var k = 0; k < inner; k++) {
      var v = a[i * inner + k]; if (v === 0) continue;
      for (var j = 0; j < cols; j++) out[i * cols + j] += v * b[k * cols + j];
    }
    return out;
  }

  function lightconv(x, n, ch, bias, boundary) { return matmul(band(bias, n, boundary), n, n, x, ch); }

  // ---- the vision model -------------------------------------------------------------------------------------

  function linear(x, rows, lin, weight, bias, lout) {  // x (rows, in) @ Wᵀ + b, W (out, in) as nn.Linear stores it
    var out = new Float64Array(rows * lout);
    for (var i = 0; i < rows; i++) for (var o = 0; o < lout; o++) {
      var s = bias ? bias[o] : 0, wo = o * lin, xi = i * lin;
      for (var k = 0; k < lin; k++) s += x[xi + k] * weight[wo + k];
      out[i * lout + o] = s;
    }
    return out;
  }

  function layerNorm(x, rows, d, gamma, beta, eps) {  // nn.LayerNorm: biased variance, eps inside the root
    var out = new Float64Array(rows * d);
    for (var i = 0; i < rows; i++) {
      var mean = 0, v = 0, k;
      for (k = 0; k < d; k++) mean += x[i * d + k];
      mean /= d;
      for (k = 0; k < d; k++) { var z = x[i * d + k] - mean; v += z * z; }
      var inv = 1 / Math.sqrt(v / d + eps);
      for (k = 0; k < d; k++) out[i * d + k] = (x[i * d + k] - mean) * inv * gamma[k] + beta[k];
    }
    return out;
  }

  function erf(x) {  // to about 1e-9: its Taylor series below |x| = 4, the asymptotic series of erfc above
    var ax = Math.abs(x), s;
    if (ax < 4) {
      var term = ax, sum = ax, n = 0;
      while (Math.abs(term) > 1e-17 * Math.abs(sum)) { n++; term *= -ax * ax / n; sum += term / (2 * n + 1); }
      s = 2 / Math.sqrt(Math.PI) * sum;
    } else {
      var inv = 1 / (2 * ax * ax), series = 1, t = 1;
      for (var m = 1; m < 12; m++) { t *= -(2 * m - 1) * inv; series += t; }
      s = 1 - Math.exp(-ax * ax) / (ax * Math.sqrt(Math.PI)) * series;
    }
    return x < 0 ? -s : s;
  }

  function gelu(x) { return 0.5 * x * (1 + erf(x / Math.SQRT2)); }  // nn.GELU(): the exact (erf) form

  // SelfAttentionNet with quadratic attention. weights: plain arrays by the state_dict's names (see
  // attnconv.explorables.vision); config: {image_size, block, hidden_dim, depth, num_heads, head_dim, mlp_dim,
  // num_classes, mean, std}. image: (S, S, 3) uint8 pixels. Returns the logits and every layer's heads' probs.
  function visionForward(weights, config, image) {
    var steps = visionSteps(weights, config, image), r;
    do { r = steps.next(); } while (!r.done);
    return r.value;
  }

  // The same forward pass in small steps: a generator that yields after every few thousand multiply-adds and
  // returns visionForward's result, so that a page can run the network in slices and answer its reader between
  // them (no step is more than about 1% of the pass).
  function* linearSteps(x, rows, lin, weight, bias, lout) {
    var out = new Float64Array(rows * lout), chunk = Math.max(1, Math.floor(16384 / (lin * lout)));
    for (var i = 0; i < rows; i++) {
      for (var o = 0; o < lout; o++) {
        var s = bias ? bias[o] : 0, wo = o * lin, xi = i * lin;
        for (var k = 0; k < lin; k++) s += x[xi + k] * weight[wo + k];
        out[i * lout + o] = s;
      }
      if ((i + 1) % chunk === 0) yield;
    }
    return out;
  }
  function* visionSteps(weights, config, image) {
    var s = config.image_size, bl = config.block, g = s / bl, n = g * g, ch = 3, d = config.hidden_dim;
    var patch = new Float64Array(n * bl * bl * ch);  // space_to_depth: a token's channels are its patch, row-major
    for (var r = 0; r < g; r++) for (var c = 0; c < g; c++) for (var a = 0; a < bl; a++) for (var b = 0; b < bl; b++)
      for (var k = 0; k < ch; k++) {
        var px = image[((r * bl + a) * s + c * bl + b) * ch + k] / 255;
        patch[(r * g + c) * bl * bl * ch + (a * bl + b) * ch + k] = (px - config.mean[k]) / config.std[k];
      }
    var x = yield* linearSteps(patch, n, bl * bl * ch, weights["embed.weight"], weights["embed.bias"], d), layers = [];
    for (var l = 0; l < config.depth; l++) {
      var pre = "blocks." + l + ".", nh = config.num_heads, dh = config.head_dim;
      var v = yield* linearSteps(x, n, d, weights[pre + "attn.v_proj.weight"], weights[pre + "attn.v_proj.bias"], dh);
      var centers = weights[pre + "attn.positional.centers"], logAlpha = weights[pre + "attn.positional.log_alpha"];
      var merged = new Float64Array(n * nh * dh), heads = [];
      for (var h = 0; h < nh; h++) {
        var probs = headProbs(Math.exp(logAlpha[h]), [centers[2 * h], centers[2 * h + 1]], g, g);
        heads.push(probs);
        var att = attendGrid(probs, v, g, g, dh);
        for (var t = 0; t < n; t++) for (k = 0; k < dh; k++) merged[t * nh * dh + h * dh + k] = att[t * dh + k];
        yield;
      }
      layers.push(heads);
      var out = yield* linearSteps(merged, n, nh * dh, weights[pre + "attn.out_proj.weight"], weights[pre + "attn.out_proj.bias"], d);
      for (t = 0; t < n * d; t++) out[t] += x[t];
      x = layerNorm(out, n, d, weights[pre + "norm1.weight"], weights[pre + "norm1.bias"], 1e-5);
      var hid = yield* linearSteps(x, n, d, weights[pre + "mlp.0.weight"], weights[pre + "mlp.0.bias"], config.mlp_dim);
      for (t = 0; t < hid.length; t++) { hid[t] = gelu(hid[t]); if ((t + 1) % 2048 === 0) yield; }
      var mlp = yield* linearSteps(hid, n, config.mlp_dim, weights[pre + "mlp.2.weight"], weights[pre + "mlp.2.bias"], d);
      for (t = 0; t < n * d; t++) mlp[t] += x[t];
      x = layerNorm(mlp, n, d, weights[pre + "norm2.weight"], weights[pre + "norm2.bias"], 1e-5);
    }
    var pooled = new Float64Array(d);
    for (t = 0; t < n; t++) for (k = 0; k < d; k++) pooled[k] += x[t * d + k] / n;
    var logits = linear(pooled, 1, d, weights["head.weight"], weights["head.bias"], config.num_classes);
    return {logits: logits, probs: softmax(logits), layers: layers, grid: [g, g]};
  }

  // ---- shared page helpers -----------------------------------------------------------------------------------

  function bytes(b64) {  // base64 -> Uint8Array
    var raw = atob(b64), out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out;
  }

  function paint(canvas, values, h, w, color) {  // color(v) -> [r, g, b] for each value of a (H, W) map
    canvas.width = w; canvas.height = h;
    var ctx = canvas.getContext("2d"), im = ctx.createImageData(w, h);
    for (var i = 0; i < h * w; i++) {
      var rgb = color(values[i]);
      im.data[4 * i] = rgb[0]; im.data[4 * i + 1] = rgb[1]; im.data[4 * i + 2] = rgb[2]; im.data[4 * i + 3] = 255;
    }
    ctx.putImageData(im, 0, 0);
  }

  // A sequential colour ramp (dark blue -> teal -> yellow, like viridis) and a diverging one (blue - white - red).
  var RAMP = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  function ramp(t) {
    t = Math.max(0, Math.min(1, t)) * (RAMP.length - 1);
    var i = Math.min(Math.floor(t), RAMP.length - 2), f = t - i;
    return [0, 1, 2].map(function (k) { return Math.round(RAMP[i][k] + f * (RAMP[i + 1][k] - RAMP[i][k])); });
  }
  function diverging(t) {  // t in [-1, 1]
    t = Math.max(-1, Math.min(1, t));
    var a = Math.round(255 * (1 - Math.abs(t)));
    return t >= 0 ? [255, a, a] : [a, a, 255];
  }

  // The cell of a canvas under a mouse or touch event: [row, col], clamped to the map.
  function cellAt(canvas, ev, h, w) {
    var box = canvas.getBoundingClientRect(), pt = ev.touches && ev.touches.length ? ev.touches[0] :
      (ev.changedTouches && ev.changedTouches.length ? ev.changedTouches[0] : ev);
    var r = Math.floor((pt.clientY - box.top) / box.height * h), c = Math.floor((pt.clientX - box.left) / box.width * w);
    return [Math.max(0, Math.min(h - 1, r)), Math.max(0, Math.min(w - 1, c))];
  }
  // Where inside the canvas an event is, as fractions of its height and width.
  function fractionAt(canvas, ev) {
    var box = canvas.getBoundingClientRect(), pt = ev.touches && ev.touches.length ? ev.touches[0] :
      (ev.changedTouches && ev.changedTouches.length ? ev.changedTouches[0] : ev);
    return [(pt.clientY - box.top) / box.height, (pt.clientX - box.left) / box.width];
  }
  // Mouse and touch alike: fn(ev) on press and on every move while pressed; a touch drag does not scroll the page.
  // Only an element dragged on blocks the page's scrolling (touch-action: none, set here with the handlers); one that
  // only takes taps keeps touch-action: manipulation (explorable.css), so a finger on it still scrolls the page.
  function onDrag(el, fn) {
    var down = false;
    el.style.touchAction = "none";
    el.dataset.drag = "true";
    var typed = function (ev) { return ev.target && /^(INPUT|SELECT|BUTTON)$/.test(ev.target.tagName); };  // a control inside
    el.addEventListener("mousedown", function (ev) { if (typed(ev)) return; down = true; fn(ev); ev.preventDefault(); });
    window.addEventListener("mousemove", function (ev) { if (down) fn(ev); });
    window.addEventListener("mouseup", function () { down = false; });
    el.addEventListener("touchstart", function (ev) { if (typed(ev)) return; fn(ev); ev.preventDefault(); }, {passive: false});
    el.addEventListener("touchmove", function (ev) { if (typed(ev)) return; fn(ev); ev.preventDefault(); }, {passive: false});
  }

  function toArray(a) { return Array.prototype.slice.call(a); }

  // ---- odd input: refused with a message, never a NaN or a silent 0 ------------------------------------------

  // compute() checks: each throws a RangeError that says which input is wrong and what it may be.
  function refuse(text) { throw new RangeError(text); }
  function finiteIn(name, v, lo, hi) {  // a number lo <= v <= hi (either bound may be null)
    if (typeof v !== "number" || !isFinite(v) || (lo !== null && v < lo) || (hi !== null && v > hi))
      refuse(name + " must be a finite number" + (lo !== null && hi !== null ? " from " + lo + " to " + hi :
             lo !== null ? " of at least " + lo : hi !== null ? " of at most " + hi : "") + ", got " + v);
    return v;
  }
  function positive(name, v) {
    if (typeof v !== "number" || !isFinite(v) || !(v > 0)) refuse(name + " must be a finite number above 0, got " + v);
    return v;
  }
  function allFinite(name, a, lo, hi) {  // every number of a (nested arrays) is finite, and within [lo, hi] if given
    var bad = null;
    (function walk(x) {
      if (bad !== null) return;
      if (x && typeof x.length === "number" && typeof x !== "string") { for (var i = 0; i < x.length && bad === null; i++) walk(x[i]); return; }
      if (typeof x !== "number" || !isFinite(x) || (lo != null && x < lo) || (hi != null && x > hi)) bad = x;
    })(a);
    if (bad !== null) refuse(name + " must hold finite numbers" + (lo != null ? " from " + lo + " to " + hi : "") + ", found " + bad);
    return a;
  }
  function cell(name, q, h, w) {  // [row, col], integers inside an h x w grid
    if (!q || q.length !== 2 || !Number.isInteger(q[0]) || !Number.isInteger(q[1]) || q[0] < 0 || q[0] >= h || q[1] < 0 || q[1] >= w)
      refuse(name + " must be [row, col] with integers from 0 to " + (h - 1) + " and 0 to " + (w - 1) + ", got " + JSON.stringify(q));
    return q;
  }

  // A typed control: on every edit, parse(text) returns an error message (a string) or applies the value.
  // A refused value shows its message in msg, next to the control, and leaves the explorable as it was.
  function number(text) {  // a typed decimal number, or NaN (an empty field is not 0)
    var t = String(text).trim();
    return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t) ? Number(t) : NaN;
  }
  // With pending (N.pendingFields), a message shared by several fields stays while another of them is still wrong.
  function guard(input, msg, apply, pending) {
    function run() {
      var problem = apply(input.value);
      var bad = typeof problem === "string" && problem.length > 0;
      var other = !bad && pending && pending.any() ? pending.note() : "";
      msg.textContent = bad ? problem : other;
      msg.hidden = !bad && !other;
      input.classList.toggle("ax-bad", bad);
      if (bad) input.setAttribute("aria-invalid", "true"); else input.removeAttribute("aria-invalid");
    }
    input.addEventListener("input", run);
    input.addEventListener("change", run);
    return run;
  }

  // A drag's renders coalesced: request() asks for fn at the next animation frame (once, however many moves ask),
  // and a release (mouse up, touch end) runs a pending one at once, so the page shows the drag's end when it ends.
  function coalesce(fn) {
    var pending = false, frame = null;
    function flush() { if (!pending) return; pending = false; if (frame !== null) cancelAnimationFrame(frame); frame = null; fn(); }
    window.addEventListener("mouseup", flush);
    window.addEventListener("touchend", flush);
    window.addEventListener("touchcancel", flush);
    return function request() {
      if (pending) return;
      pending = true;
      frame = requestAnimationFrame(function () { frame = null; flush(); });
    };
  }

  // Long work in slices: sliced(steps, done) advances the generator steps for at most SLICE ms in each animation
  // frame, so that between slices the page takes its reader's input and paints, then calls done(result) with
  // the generator's return value. The page never waits on more than one slice, however long the work takes.
  var SLICE = 8;
  function sliced(steps, done) {
    (function slice() {
      var t0 = performance.now(), r;
      do { r = steps.next(); } while (!r.done && performance.now() - t0 < SLICE);
      if (r.done) done(r.value); else requestAnimationFrame(slice);
    })();
  }

  // Typed fields that hold a value they cannot take (chapter 03's rule, for every explorable): while any does, the
  // explorable computes nothing and its numbers read "not computed", rather than go on with a value the field no
  // longer shows. hold(key, bad) records a field; note() is the sentence the page shows meanwhile.
  function pendingFields() {
    var keys = {};
    return {
      hold: function (key, bad) { if (bad) keys[key] = true; else delete keys[key]; return bad; },
      any: function () { return Object.keys(keys).length > 0; },
      keys: function () { return Object.keys(keys); },
      note: function () {
        var k = Object.keys(keys);
        return "not computed: " + k.join(", ") + (k.length > 1 ? " hold values" : " holds a value") +
          " it cannot take (marked in red)";
      }
    };
  }
  // Dim what an explorable shows while it computes nothing (elements), or bring it back.
  function dim(elements, on) { elements.forEach(function (el) { el.style.opacity = on ? "0.25" : ""; }); }
  // An explorable's state while a typed field is wrong (pending, from pendingFields): the note in status, the
  // outputs dimmed and root.dataset.stale naming the fields; all cleared once none is. Returns whether it is stale.
  function markStale(root, status, outputs, pending) {
    var stale = pending.any();
    if (stale) { status.textContent = pending.note(); root.dataset.stale = pending.keys().join(" "); }
    else delete root.dataset.stale;
    status.classList.toggle("ax-warn", stale);
    dim(outputs, stale);
    return stale;
  }

  window.attnconvExplorables = window.attnconvExplorables || {};
  window.attnconvNumerics = {
    softmax: softmax, quadraticLogit: quadraticLogit, axisProbs: axisProbs, headProbs: headProbs, queryMap: queryMap,
    attendGrid: attendGrid, conv2dZeros: conv2dZeros, tapShifts: tapShifts, convAsAttention: convAsAttention,
    band: band, bandTaps: bandTaps, bandApply: bandApply, matmul: matmul, lightconv: lightconv, linear: linear, layerNorm: layerNorm, erf: erf, gelu: gelu,
    visionForward: visionForward, bytes: bytes, paint: paint, ramp: ramp, diverging: diverging, cellAt: cellAt,
    fractionAt: fractionAt, onDrag: onDrag, toArray: toArray, refuse: refuse, finiteIn: finiteIn, positive: positive,
    allFinite: allFinite, cell: cell, number: number, guard: guard, coalesce: coalesce, sliced: sliced,
    pendingFields: pendingFields, dim: dim, markStale: markStale, visionSteps: visionSteps
  };
})();
