// Chapter 06's explorable: the attention-only CIFAR-10 classifier running in the page from int8 weights
// (attnconv.explorables.vision_model). compute() is the numbers; the rest draws them and wires the controls.
(function () {
  var root = document.getElementById(ROOT_ID);
  if (!root || root.dataset.ready) return;
  root.dataset.ready = "1";
  var N = window.attnconvNumerics, spec = JSON.parse(root.querySelector("script.ax-spec").textContent);
  var W = spec.weights, cfg = W.config, S = cfg.image_size, G = S / cfg.block;
  var config = {image_size: S, block: cfg.block, hidden_dim: cfg.hidden_dim, depth: cfg.depth, num_heads: cfg.num_heads,
                head_dim: cfg.head_dim, mlp_dim: cfg.mlp_dim, num_classes: cfg.num_classes, mean: spec.mean, std: spec.std};
  // The weights as the page computes with them: int8 times its row's scale, or float32.
  var ints = new Int8Array(N.bytes(W.int8).buffer), fb = N.bytes(W.float32);
  var floats = new Float32Array(fb.buffer, fb.byteOffset, fb.byteLength / 4), weights = {};
  W.tensors.forEach(function (t) {
    var size = t.shape.reduce(function (a, b) { return a * b; }, 1), out = new Float64Array(size);
    if (t.kind === "int8") {
      var cols = size / t.shape[0];
      for (var i = 0; i < size; i++) out[i] = ints[t.offset + i] * floats[t.scale_offset + Math.floor(i / cols)];
    } else {
      for (i = 0; i < size; i++) out[i] = floats[t.offset + i];
    }
    weights[t.name] = out;
  });
  var images = spec.images.map(function (im) { return N.toArray(N.bytes(im.pixels)); });
  function nestImage(px) {
    var out = [];
    for (var r = 0; r < S; r++) { var row = []; for (var c = 0; c < S; c++) row.push(px.slice((r * S + c) * 3, (r * S + c) * 3 + 3)); out.push(row); }
    return out;
  }
  function flat(a, out) { out = out || []; for (var i = 0; i < a.length; i++) { if (Array.isArray(a[i])) flat(a[i], out); else out.push(a[i]); } return out; }

  function defaults() { return {image: nestImage(images[0]), query: [G >> 1, G >> 1]}; }
  // inputs: image (32, 32, 3) pixel values 0..255; query [row, col] on the 16 x 16 token grid. Outputs: logits and
  // probs (10,); predicted, the class index; attention (L, N_h, 16, 16), every layer's heads' maps of the query.
  function check(inputs) {  // odd input is refused with a message (a RangeError), never computed into NaN
    var im = inputs.image;
    if (!im || im.length !== S || im.some(function (row) { return !row || row.length !== S || row.some(function (p) { return !p || p.length !== 3; }); }))
      N.refuse("image must be " + S + " x " + S + " x 3 pixel values");
    var px = flat(im);
    for (var i = 0; i < px.length; i++)
      if (!Number.isInteger(px[i]) || px[i] < 0 || px[i] > 255) N.refuse("image must hold whole pixel values from 0 to 255, found " + px[i]);
    N.cell("query", inputs.query, G, G);
    return px;
  }
  function compute(inputs) { return summarise(N.visionForward(weights, config, check(inputs)), inputs.query); }
  function summarise(res, query) {
    var best = 0;
    for (var k = 1; k < res.logits.length; k++) if (res.logits[k] > res.logits[best]) best = k;
    var att = res.layers.map(function (heads) {
      return heads.map(function (p) {
        var m = N.queryMap(p, G, G, query[0], query[1]), out = [];
        for (var r = 0; r < G; r++) out.push(N.toArray(m.subarray(r * G, (r + 1) * G)));
        return out;
      });
    });
    return {logits: N.toArray(res.logits), probs: N.toArray(res.probs), predicted: best, attention: att};
  }
  window.attnconvExplorables[root.dataset.explorable] = {defaults: defaults, compute: compute};

  // ---- the page -----------------------------------------------------------------------------------------------
  var state = defaults(), body = root.querySelector(".ax-body"), pen = [255, 255, 255], drawing = null;
  root.dataset.busy = "1"; root.classList.add("ax-busy");  // until the first run has been shown
  var thumbs = spec.images.map(function (im, i) {
    return '<button type="button" class="ax-thumb" data-i="' + i + '" title="' + im.label + '" style="padding: 2px">' +
      '<canvas width="' + S + '" height="' + S + '" style="width: 36px; height: 36px; display: block; image-rendering: pixelated"></canvas></button>';
  }).join("");
  var colours = [[255, 255, 255], [0, 0, 0], [200, 30, 30], [40, 140, 40], [40, 80, 200], [230, 200, 40], [120, 80, 40]];
  var palette = colours.map(function (c, i) {
    return '<button type="button" class="ax-pen" data-c="' + i + '" aria-label="pen colour ' + i + '" style="width: 32px; background: rgb(' + c.join(",") + ')"></button>';
  }).join("");
  var layers = "";
  for (var l = 0; l < cfg.depth; l++) {
    var heads = "";
    for (var h = 0; h < cfg.num_heads; h++) heads += '<canvas class="ax-att" data-l="' + l + '" style="width: 38px; height: 38px"></canvas>';
    layers += '<div class="ax-caption" style="max-width: none">layer ' + (l + 1) + '</div><div class="ax-panel" style="display: flex; flex-wrap: wrap; gap: 3px">' + heads + "</div>";
  }
  body.innerHTML =
    '<div class="ax-caption" style="max-width: none">pick a test image, or draw on the image with a colour</div>' +
    '<div class="ax-controls">' + thumbs + "</div>" +
    '<div class="ax-controls">' + palette + '<button type="button" class="ax-draw">draw</button><button type="button" class="ax-clear">clear</button></div>' +
    '<div class="ax-controls"><label>query row <input class="ax-qrow ax-typed" inputmode="numeric" aria-label="query row"></label>' +
    '<label>column <input class="ax-qcol ax-typed" inputmode="numeric" aria-label="query column"></label><span class="ax-msg ax-warn ax-query-msg" role="alert" hidden></span></div>' +
    '<div class="ax-row"><div class="ax-panel"><canvas class="ax-input av-clickable" style="width: 160px; height: 160px"></canvas>' +
    '<div class="ax-caption ax-mode"></div><div class="ax-caption ax-busy-note" aria-live="polite">computing…</div></div><div><div class="ax-number ax-pred"></div><div class="ax-classes"></div></div></div>' +
    '<div class="ax-caption" style="max-width: none">each layer\'s heads: attention of the query token (red square), 16×16 tokens, each from 0 to its peak</div>' + layers;
  var q = function (s) { return root.querySelector(s); }, qa = function (s) { return N.toArray(root.querySelectorAll(s)); };
  var rgb = function (v) { return v; };
  function pixels(px) { var out = []; for (var i = 0; i < S * S; i++) out.push([px[3 * i], px[3 * i + 1], px[3 * i + 2]]); return out; }
  qa(".ax-thumb canvas").forEach(function (cv, i) { N.paint(cv, pixels(images[i]), S, S, rgb); });

  // The network runs once per image (a query's maps reuse its run), in slices of a few ms (N.sliced), so the page
  // answers its reader while it computes: a stroke of hundreds of moves paints its pixels at once, and when a run
  // ends on an image the pen has since changed, the next run takes the latest image. "computing…" shows meanwhile.
  var last = null, lastImage = null, running = null, pending = N.pendingFields(), mapsAt = null;
  var outputs = qa("canvas.ax-att").concat([q(".ax-classes")]);
  function paintInput() {
    var px = flat(state.image), cv = q("canvas.ax-input");
    N.paint(cv, pixels(px), S, S, rgb);
    var ctx = cv.getContext("2d"), b = cfg.block; ctx.strokeStyle = "red"; ctx.lineWidth = 0.6;
    ctx.strokeRect(state.query[1] * b + 0.3, state.query[0] * b + 0.3, b - 0.6, b - 0.6);
  }
  function busy(on) {
    root.dataset.busy = on ? "1" : "";
    root.classList.toggle("ax-busy", on);
  }
  function run() {  // the network on the current image, unless it has run on it or a run is going on
    if (running || pending.any() || lastImage === state.image) return;
    var image = state.image;
    running = image; busy(true);
    root.dataset.evaluations = String(+(root.dataset.evaluations || 0) + 1);  // the network's runs, for the tests
    N.sliced(N.visionSteps(weights, config, flat(image)), function (res) {
      running = null; last = res; lastImage = image;
      show();
      run();  // the pen has changed the image meanwhile: once more, on the latest
    });
  }
  var shown = null;  // what the page shows: its inputs and compute's outputs for them (window...shown(), for tests)
  function show() { showNow(); busy(running !== null); }  // busy until what the page shows is the latest
  function showNow() {
    paintInput();
    q(".ax-mode").textContent = (drawing ? "drawing: drag on the image" : "tap a token: the query") +
      "; query token (" + state.query[0] + ", " + state.query[1] + ")";
    qa(".ax-thumb").forEach(function (bt, i) { bt.classList.toggle("ax-on", state.picked === i && !drawing); });
    q(".ax-draw").classList.toggle("ax-on", !!drawing);
    if (N.markStale(root, q(".ax-pred"), outputs, pending)) {  // a query field holds a value it cannot take:
      shown = null;                                              // nothing is computed with the old one
      return;
    }
    [[".ax-qrow", 0], [".ax-qcol", 1]].forEach(function (f) {
      var el = q(f[0]);
      if (document.activeElement !== el && !el.classList.contains("ax-bad")) el.value = state.query[f[1]];
    });
    if (!last) return;
    var out = summarise(last, state.query), p = out.probs;
    shown = {inputs: {image: lastImage, query: state.query.slice()}, outputs: out};
    q(".ax-pred").innerHTML = "the model says: <b>" + spec.classes[out.predicted] + "</b> (" + (100 * p[out.predicted]).toFixed(0) + "%)";
    q(".ax-classes").innerHTML = spec.classes.map(function (c, k) {
      return '<div style="display: flex; align-items: center; gap: 4px; font-size: 12px"><span style="width: 6.5em; text-align: right">' + c +
        '</span><span style="display: inline-block; height: 10px; width: ' + Math.round(120 * p[k]) + 'px; background: ' +
        (k === out.predicted ? "#1f5fa8" : "#9bb7d8") + '"></span><span>' + (100 * p[k]).toFixed(1) + "%</span></div>";
    }).join("");
    var at = state.query.join(",");
    if (at === mapsAt) return;  // a quadratic head's map depends on positions only: repainted when the query moves
    mapsAt = at;
    qa("canvas.ax-att").forEach(function (c, i) {
      var l = Math.floor(i / cfg.num_heads), h = i % cfg.num_heads, m = flat(out.attention[l][h]), top = Math.max.apply(null, m);
      N.paint(c, m, G, G, function (v) { return N.ramp(v / top); });
      var cx = c.getContext("2d"); cx.strokeStyle = "red"; cx.lineWidth = 0.3; cx.strokeRect(state.query[1] + 0.1, state.query[0] + 0.1, 0.8, 0.8);
    });
  }
  var shownFrame = N.coalesce(show), inputFrame = N.coalesce(paintInput);  // at most once per animation frame
  function draw() { busy(true); run(); shownFrame(); }  // busy first: a short run may end at once
  window.attnconvExplorables[root.dataset.explorable].shown = function () { return shown; };
  state.picked = 0;
  qa(".ax-thumb").forEach(function (bt, i) {
    bt.addEventListener("click", function () { state.image = nestImage(images[i]); state.picked = i; drawing = null; draw(); });
  });
  qa(".ax-pen").forEach(function (bt) { bt.addEventListener("click", function () { pen = colours[+bt.dataset.c]; drawing = true; draw(); }); });
  q(".ax-draw").addEventListener("click", function () { drawing = !drawing; draw(); });
  q(".ax-clear").addEventListener("click", function () {
    var px = []; for (var i = 0; i < S * S; i++) px.push(0, 0, 0);
    state.image = nestImage(px); state.picked = -1; drawing = true; draw();
  });
  function settled(sel) { var el = q(sel); el.classList.remove("ax-bad"); el.removeAttribute("aria-invalid"); }
  [[".ax-qrow", 0, "query row"], [".ax-qcol", 1, "query column"]].forEach(function (f) {
    N.guard(q(f[0]), q(".ax-query-msg"), function (text) {
      var v = N.number(text);
      if (!Number.isInteger(v) || v < 0 || v >= G) {
        pending.hold(f[2], true); show();
        return "the query is a token of the " + G + "×" + G + " grid: row and column are whole numbers from 0 to " + (G - 1) +
          "; nothing is computed until they are (or tap a token)";
      }
      pending.hold(f[2], false);
      state.query = state.query.slice(); state.query[f[1]] = v; draw();
    }, pending);
  });
  N.onDrag(q("canvas.ax-input"), function (ev) {
    var cv = q("canvas.ax-input");
    if (!drawing) {
      state.query = N.cellAt(cv, ev, G, G);
      settled(".ax-qrow"); settled(".ax-qcol"); pending.hold("query row", false); pending.hold("query column", false);
      q(".ax-query-msg").hidden = true;
      draw();
      return;
    }
    var rc = N.cellAt(cv, ev, S, S), img = state.image.map(function (row) { return row.map(function (p) { return p.slice(); }); });
    for (var a = -1; a <= 1; a++) for (var b = -1; b <= 1; b++) {  // a 3 x 3 brush
      var r = rc[0] + a, c = rc[1] + b;
      if (r >= 0 && r < S && c >= 0 && c < S) img[r][c] = pen.slice();
    }
    state.image = img; state.picked = -1;
    inputFrame(); run(); busy(running !== null);  // the pen's pixels at once; the network's answer when its run ends
  });
  draw();
})();
