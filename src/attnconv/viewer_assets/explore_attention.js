// Chapter 02's explorable: one content-based head's attention from a query pixel (attnconv.explorables
// .attention_map). compute() is the numbers; the rest draws them and wires the controls.
(function () {
  var root = document.getElementById(ROOT_ID);
  if (!root || root.dataset.ready) return;
  root.dataset.ready = "1";
  var N = window.attnconvNumerics, spec = JSON.parse(root.querySelector("script.ax-spec").textContent);
  var S = spec.size, B = spec.block, G = S / B, C = B * B * 3, NH = spec.num_heads, DH = C / NH;
  function unflat(a, rows, cols) { var out = []; for (var r = 0; r < rows; r++) out.push(N.toArray(a.slice(r * cols, (r + 1) * cols))); return out; }
  var images = spec.images.map(function (im) {
    var px = N.bytes(im.pixels), out = [];
    for (var r = 0; r < S; r++) { var row = []; for (var c = 0; c < S; c++) row.push([0, 1, 2].map(function (k) { return px[(r * S + c) * 3 + k] / 255; })); out.push(row); }
    return out;
  });
  function flat(a, out) {  // nested arrays -> one flat array, in row-major order
    out = out || [];
    for (var i = 0; i < a.length; i++) { if (Array.isArray(a[i])) flat(a[i], out); else out.push(a[i]); }
    return out;
  }

  function defaults() {
    return {image: images[0], wq: spec.wq, bq: spec.bq, wk: spec.wk, bk: spec.bk, head: 0, temperature: 1,
            query: [G >> 1, G >> 1]};
  }
  // inputs: image (32, 32, 3) in [0, 1]; wq, wk (12, 12) and bq, bk (12,), the query and key projections as
  // nn.Linear stores them; head h; temperature τ > 0; query [row, col] on the 16 x 16 token grid.
  // Outputs: attention (16, 16), head h's softmax over keys of q·k / (√D_h τ) for the query; heads (N_h, 16, 16),
  // every head's; tokens (256, 12), the 2 x 2 space-to-depth tokens.
  function check(inputs) {  // odd input is refused with a message (a RangeError), never computed into NaN
    var im = inputs.image;
    if (!im || im.length !== S || im.some(function (row) { return !row || row.length !== S || row.some(function (p) { return !p || p.length !== 3; }); }))
      N.refuse("image must be " + S + " x " + S + " x 3 values");
    N.allFinite("image", im, 0, 1);
    [["wq", C * C], ["wk", C * C], ["bq", C], ["bk", C]].forEach(function (w) {
      if (!inputs[w[0]] || flat(inputs[w[0]]).length !== w[1]) N.refuse(w[0] + " must hold " + w[1] + " numbers");
      N.allFinite(w[0], inputs[w[0]]);
    });
    if (!Number.isInteger(inputs.head) || inputs.head < 0 || inputs.head >= NH) N.refuse("head must be a whole number from 0 to " + (NH - 1) + ", got " + inputs.head);
    N.positive("temperature", inputs.temperature);
    N.cell("query", inputs.query, G, G);
  }
  function compute(inputs) {
    check(inputs);
    var img = flat(inputs.image), tokens = new Float64Array(G * G * C);
    for (var r = 0; r < G; r++) for (var c = 0; c < G; c++) for (var a = 0; a < B; a++) for (var b = 0; b < B; b++)
      for (var k = 0; k < 3; k++) tokens[(r * G + c) * C + (a * B + b) * 3 + k] = img[((r * B + a) * S + c * B + b) * 3 + k];
    var q = N.linear(tokens, G * G, C, flat(inputs.wq), flat(inputs.bq), C);
    var key = N.linear(tokens, G * G, C, flat(inputs.wk), flat(inputs.bk), C);
    var at = inputs.query[0] * G + inputs.query[1], heads = [];
    for (var h = 0; h < NH; h++) {
      var logits = new Float64Array(G * G);
      for (var j = 0; j < G * G; j++) {
        var s = 0;
        for (k = 0; k < DH; k++) s += q[at * C + h * DH + k] * key[j * C + h * DH + k];
        logits[j] = s / Math.sqrt(DH) / inputs.temperature;
        if (!isFinite(logits[j])) N.refuse("temperature " + inputs.temperature + " is too small for these inputs: the logits overflow");
      }
      heads.push(unflat(N.softmax(logits), G, G));
    }
    return {attention: heads[inputs.head], heads: heads, tokens: unflat(tokens, G * G, C)};
  }
  window.attnconvExplorables[root.dataset.explorable] = {defaults: defaults, compute: compute};

  // ---- the page -----------------------------------------------------------------------------------------------
  var state = defaults(), body = root.querySelector(".ax-body"), log = false;
  var opts = spec.images.map(function (im, i) { return '<option value="' + i + '">' + im.label + "</option>"; }).join("");
  var headButtons = "", small = "";
  for (var h = 0; h < NH; h++) {
    headButtons += '<button type="button" data-head="' + h + '">head ' + (h + 1) + "</button>";
    small += '<div class="ax-panel"><canvas class="ax-small av-clickable" style="width: 72px; height: 72px"></canvas><div class="ax-caption">head ' + (h + 1) + "</div></div>";
  }
  body.innerHTML =
    '<div class="ax-controls"><label>image <select class="ax-image">' + opts + "</select></label>" + headButtons + "</div>" +
    '<div class="ax-controls"><label>temperature τ <input type="range" class="ax-temp" min="-1" max="2" step="0.01" value="0" aria-label="temperature"></label>' +
    '<span class="ax-temp-value ax-number"></span><label>or type τ <input class="ax-temp-in ax-typed" inputmode="decimal" aria-label="temperature, typed"></label>' +
    '<span class="ax-msg ax-warn ax-temp-msg" role="alert" hidden></span><label><input type="checkbox" class="ax-log"> log colour scale</label></div>' +
    '<div class="ax-controls"><label>query row <input class="ax-qrow ax-typed" inputmode="numeric" aria-label="query row"></label>' +
    '<label>column <input class="ax-qcol ax-typed" inputmode="numeric" aria-label="query column"></label><span class="ax-msg ax-warn ax-query-msg" role="alert" hidden></span></div>' +
    '<div class="ax-row"><div class="ax-panel"><canvas class="ax-input av-clickable" style="width: 160px; height: 160px"></canvas><div class="ax-caption">tap a pixel: the query</div></div>' +
    '<div class="ax-panel"><canvas class="ax-map av-clickable" style="width: 160px; height: 160px"></canvas><div class="ax-caption ax-map-label"></div></div>' +
    '<div class="ax-panel"><canvas class="ax-overlay av-clickable" style="width: 160px; height: 160px"></canvas><div class="ax-caption">the image, lit by the attention</div></div></div>' +
    '<div class="ax-scale"><span class="ax-lo"></span><canvas class="ax-bar" width="64" height="1"></canvas><span class="ax-hi"></span></div>' +
    '<div class="ax-number ax-summary"></div><div class="ax-row">' + small + "</div>";
  var q = function (s) { return root.querySelector(s); }, qa = function (s) { return N.toArray(root.querySelectorAll(s)); };

  // The colour of a probability: linear from the map's lowest to its highest value, or logarithmic over that range,
  // so that a nearly uniform map still shows its pattern (the bar under the map gives the two ends).
  function scaled(lo, top) {
    return function (v) {
      if (log) return N.ramp(Math.log(Math.max(v, 1e-300) / lo) / Math.log(top / lo || 1));
      return N.ramp((v - lo) / (top - lo || 1));
    };
  }
  function mark(canvas, r, c) { var ctx = canvas.getContext("2d"); ctx.strokeStyle = "red"; ctx.lineWidth = 0.25; ctx.strokeRect(c + 0.1, r + 0.1, 0.8, 0.8); }
  // A typed field holding a value it cannot take stops the page computing (N.pendingFields), until it holds one.
  var pending = N.pendingFields(), outputs = qa("canvas").filter(function (c) { return !c.classList.contains("ax-input"); });
  function draw() {
    if (N.markStale(root, q(".ax-summary"), outputs, pending)) return;
    var out = compute(state), m = flat(out.attention), top = Math.max.apply(null, m), img = flat(state.image);
    var lo = Math.min.apply(null, m);
    var rgb = function (v) { return [Math.round(255 * v[0]), Math.round(255 * v[1]), Math.round(255 * v[2])]; };
    var pix = []; for (var i = 0; i < S * S; i++) pix.push([img[3 * i], img[3 * i + 1], img[3 * i + 2]]);
    N.paint(q("canvas.ax-input"), pix, S, S, rgb);
    var ctx = q("canvas.ax-input").getContext("2d"); ctx.strokeStyle = "red"; ctx.lineWidth = 0.6;
    ctx.strokeRect(state.query[1] * B + 0.3, state.query[0] * B + 0.3, B - 0.6, B - 0.6);
    N.paint(q("canvas.ax-map"), m, G, G, scaled(lo, top));
    mark(q("canvas.ax-map"), state.query[0], state.query[1]);
    var lit = []; for (i = 0; i < S * S; i++) {
      var p = m[Math.floor(Math.floor(i / S) / B) * G + Math.floor((i % S) / B)];
      var a = log ? Math.log(Math.max(p, 1e-300) / lo) / Math.log(top / lo || 1) : (p - lo) / (top - lo || 1);
      lit.push(pix[i].map(function (v) { return v * (0.12 + 0.88 * a); }));
    }
    N.paint(q("canvas.ax-overlay"), lit, S, S, rgb);
    q(".ax-map-label").textContent = "head " + (state.head + 1) + ": attention over 16×16 tokens";
    var bar = []; for (i = 0; i < 64; i++) bar.push(log ? lo * Math.pow(top / lo, i / 63) : lo + (top - lo) * i / 63);
    N.paint(q("canvas.ax-bar"), bar, 1, 64, scaled(lo, top));
    q(".ax-lo").textContent = lo.toPrecision(2);
    q(".ax-hi").textContent = top.toPrecision(2);
    var uniform = 1 / (G * G), entropy = 0;
    m.forEach(function (p) { if (p > 0) entropy -= p * Math.log(p); });
    q(".ax-summary").innerHTML = "peak " + top.toPrecision(2) + " = <b>" + (top / uniform).toFixed(1) + "×</b> the uniform 1/256; " +
      "it spreads like " + Math.exp(entropy).toFixed(0) + " equal keys";
    q(".ax-temp-value").textContent = "τ = " + state.temperature.toPrecision(2);
    qa("canvas.ax-small").forEach(function (cv, h) {
      var hm = flat(out.heads[h]);
      N.paint(cv, hm, G, G, scaled(Math.min.apply(null, hm), Math.max.apply(null, hm))); mark(cv, state.query[0], state.query[1]);
      cv.style.outline = h === state.head ? "2px solid #1f5fa8" : "";
    });
    qa("button[data-head]").forEach(function (b, h) { b.classList.toggle("ax-on", h === state.head); });
    [[".ax-qrow", state.query[0]], [".ax-qcol", state.query[1]], [".ax-temp-in", +state.temperature.toPrecision(3)]].forEach(function (f) {
      var el = q(f[0]); if (document.activeElement !== el && !el.classList.contains("ax-bad")) el.value = f[1];
    });
  }
  function settled(sel) { var el = q(sel); el.classList.remove("ax-bad"); el.removeAttribute("aria-invalid"); }
  q(".ax-image").addEventListener("change", function (ev) { state.image = images[+ev.target.value]; draw(); });
  qa("button[data-head]").forEach(function (b, h) { b.addEventListener("click", function () { state.head = h; draw(); }); });
  qa("canvas.ax-small").forEach(function (cv, h) { cv.addEventListener("click", function () { state.head = h; draw(); }); });
  q(".ax-temp").addEventListener("input", function (ev) {  // the slider replaces a refused τ
    state.temperature = Math.pow(10, parseFloat(ev.target.value)); settled(".ax-temp-in"); q(".ax-temp-msg").hidden = true;
    pending.hold("τ", false); draw();
  });
  N.guard(q(".ax-temp-in"), q(".ax-temp-msg"), function (text) {  // τ typed: 0.001 to 1000 (the slider spans 0.1 to 100)
    var v = N.number(text);
    if (!isFinite(v) || v < 1e-3 || v > 1e3) {
      pending.hold("τ", true); draw();
      return "τ must be a number from 0.001 to 1000: nothing is computed until it is one (or move the slider)";
    }
    pending.hold("τ", false);
    state.temperature = v; q(".ax-temp").value = Math.max(-1, Math.min(2, Math.log10(v))); draw();
  });
  [[".ax-qrow", 0, "query row"], [".ax-qcol", 1, "query column"]].forEach(function (f) {
    N.guard(q(f[0]), q(".ax-query-msg"), function (text) {
      var v = N.number(text);
      if (!Number.isInteger(v) || v < 0 || v >= G) {
        pending.hold(f[2], true); draw();
        return "the query is a token of the " + G + "×" + G + " grid: row and column are whole numbers from 0 to " + (G - 1) +
          "; nothing is computed until they are (or tap a token)";
      }
      pending.hold(f[2], false);
      state.query = state.query.slice(); state.query[f[1]] = v; draw();
    }, pending);
  });
  q(".ax-log").addEventListener("change", function (ev) { log = ev.target.checked; draw(); });
  var dragged = N.coalesce(function () { draw(); });  // a drag renders at most once per frame, and on release
  ["canvas.ax-input", "canvas.ax-map", "canvas.ax-overlay"].forEach(function (sel) {
    N.onDrag(q(sel), function (ev) {
      state.query = N.cellAt(q(sel), ev, G, G); settled(".ax-qrow"); settled(".ax-qcol"); q(".ax-query-msg").hidden = true;
      pending.hold("query row", false); pending.hold("query column", false); dragged();
    });
  });
  draw();
})();
