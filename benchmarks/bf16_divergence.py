"""Why the learned-encoding model diverges in bfloat16: one epoch replayed from the same state in several arms.

Usage: python benchmarks/bf16_divergence.py [--model sa-learned] [--config cpu-long] [--seed 0]
                                            [--start-epochs 2] [--arms bf16 fp32 bf16-fp32-logits bf16-half-lr]
                                            [--record results/benchmarks/bf16_divergence] [--data DATA]

The ``cpu-long`` ``sa-learned`` run diverged in bfloat16 in its third epoch (three runs out of three), where float32
does not. This script trains the run's first ``--start-epochs`` epochs exactly as that run did (the trainer's own
epoch function, data order, crops, dropout streams and learning-rate schedule, and the residual stream in bfloat16,
as the model then kept it), keeps that state (``--state``: in a file, reused when the script runs again), and
replays the next epoch from it once per arm:

- ``bf16-stream``: as the run did: bfloat16 autocast, and the residual stream in bfloat16 (the embedding's
  bfloat16 product carried through every block's sums and LayerNorms, which autocast runs in their input's dtype);
- ``bf16``: the model as it is now, whose residual stream stays float32 (only the products run in bfloat16);
- ``bf16-fp32-outputs``: bfloat16 products, every linear layer handing its output on in float32, so that the GELUs
  run in float32 as well as the stream;
- ``bf16-stream-fp32-logits``: the stream in bfloat16, but the positional logits ``u · R_δ`` in float32 (the other
  product a learned encoding adds);
- ``bf16-stream-half-lr``: the stream in bfloat16 at half the schedule's learning rate;
- ``fp32``: the same epoch in float32.

Each arm records, every step: the loss, the gradient norm, the largest |logit| of each layer's positional table, the
largest |output| of every linear layer, and how many gradient entries are exactly zero. bfloat16 keeps float32's
8-bit exponent, so an overflow (beyond 3.4e38) or a loss-scale problem (gradients flushed to zero) would show in
the last two columns; a precision problem shows in neither and goes away when the affected product runs in float32.

Writes ``RECORD.json`` (every arm's per-step trace) and ``RECORD.md`` (one row per arm).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import torch
from _measure import cpu_model, machine, write_record
from torch import nn

from attnconv.data import load_cifar10
from attnconv.positional.learned import LearnedRelativeEncoding2d
from attnconv.train import named_config
from attnconv.train.distributed import init_distributed
from attnconv.train.provenance import git_commit
from attnconv.train.threads import set_threads
from attnconv.train.vision import _Data, _evaluate, _Model, _train_epoch

ARMS = ("bf16-stream", "bf16", "bf16-fp32-outputs", "bf16-stream-fp32-logits", "bf16-stream-half-lr", "fp32")


@contextlib.contextmanager
def fp32_positional_logits(net: nn.Module):
    """Inside: every learned table's ``axis_logits`` runs with autocast off, its product in float32."""
    tables = [m for m in net.modules() if isinstance(m, LearnedRelativeEncoding2d)]
    for table in tables:
        plain = table.axis_logits

        def in_fp32(grid, _plain=plain):
            with torch.autocast("cpu", enabled=False):
                return _plain(grid)
        table.axis_logits = in_fp32
    try:
        yield
    finally:
        for table in tables:
            del table.axis_logits  # the class's method again


@contextlib.contextmanager
def bf16_stream(net: nn.Module):
    """Inside and under bfloat16 autocast: the embedding hands its product on in bfloat16, so that the residual
    stream runs in bfloat16, as the model kept it before its stream was made float32."""
    plain = net.tokens

    def tokens(images):
        out = plain(images)  # float32 now; bf16 -> fp32 -> bf16 gives back the product exactly
        return out.to(torch.bfloat16) if torch.is_autocast_enabled("cpu") else out
    net.tokens = tokens
    try:
        yield
    finally:
        del net.tokens  # the class's method again


@contextlib.contextmanager
def patches(net: nn.Module, arm: str):
    """The arm's changes to ``net``, for as long as the context lasts."""
    with contextlib.ExitStack() as stack:
        if "stream" in arm:
            stack.enter_context(bf16_stream(net))
        if "fp32-logits" in arm:
            stack.enter_context(fp32_positional_logits(net))
        if "fp32-outputs" in arm:
            stack.enter_context(fp32_between_products(net))
        yield


@contextlib.contextmanager
def fp32_between_products(net: nn.Module):
    """Inside: every ``nn.Linear`` of ``net`` returns its (bfloat16) product as float32."""
    handles = [m.register_forward_hook(lambda _m, _i, out: out.float()) for m in net.modules()
               if isinstance(m, nn.Linear)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


class Trace:
    """Per-step statistics of one arm: forward hooks on the linear layers and the positional tables."""

    def __init__(self, net: nn.Module) -> None:
        self.net, self.steps, self.current = net, [], {}
        self.handles = []
        for name, module in net.named_modules():
            if isinstance(module, nn.Linear):
                self.handles.append(module.register_forward_hook(self._linear(name)))
        stream = dict(net.named_modules())["blocks.0.norm1"]
        self.handles.append(stream.register_forward_hook(self._stream))
        self.tables = [(n, m) for n, m in net.named_modules() if isinstance(m, LearnedRelativeEncoding2d)]

    def _linear(self, name):
        def hook(_module, _inputs, output):
            if torch.is_grad_enabled():  # training steps only
                self.current[f"max|{name}|"] = float(output.detach().abs().amax())
                self.current["activation_dtype"] = str(output.dtype).replace("torch.", "")
        return hook

    def _stream(self, _module, _inputs, output):
        if torch.is_grad_enabled():
            self.current["stream_dtype"] = str(output.dtype).replace("torch.", "")

    def on_step(self, step: int) -> None:
        grads = [p.grad for p in self.net.parameters() if p.grad is not None]
        row = {"step": step, **self.current,
               "grad_norm": float(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads]))),
               "zero_grad_fraction": float(sum(int((g == 0).sum()) for g in grads) / sum(g.numel() for g in grads))}
        with torch.no_grad():
            for name, table in self.tables:
                half = table.dim // 2
                row[f"max|logit {name}|"] = float(max((table.query[:, :half] @ table.rows.T).abs().max(),
                                                      (table.query[:, half:] @ table.cols.T).abs().max()))
        self.steps.append({k: float(f"{v:.4g}") if isinstance(v, float) else v for k, v in row.items()})
        self.current = {}

    def close(self) -> None:
        for h in self.handles:
            h.remove()


def replay(arm: str, state: dict, config, tensors, info, epoch: int) -> dict:
    """One epoch of ``arm`` from ``state``: its trace and its test accuracy."""
    arm_config = dataclasses.replace(config, lr=config.lr / 2) if arm.endswith("half-lr") else config
    m = _Model(arm_config, info)
    m.net.load_state_dict(state["model"])
    # a copy: the optimiser adopts the momentum buffers it is given and updates them in place, which would hand the
    # next arm this arm's momentum
    m.optimizer.load_state_dict(copy.deepcopy(state["optimizer"]))
    m.set_precision({"used": "fp32" if arm == "fp32" else "bf16"}, info.device)
    trace = Trace(m.net)
    t0 = time.process_time()
    with patches(m.net, arm):
        train = _train_epoch(epoch, m, tensors, arm_config, info, [], trace.on_step,
                             Path(os.devnull))
        test = _evaluate(m.model, tensors.test_x, tensors.test_y, arm_config, info, m.autocast)
    trace.close()
    return {"arm": arm, "epoch": epoch + 1, **train, **test, "cpu_s": time.process_time() - t0,
            "steps": trace.steps}


def first_departure(steps: list[dict], reference: list[dict], factor: float = 2.0) -> dict | None:
    """The first step at which a linear layer's largest output exceeds ``factor`` times the largest it reached in
    ``reference`` (the float32 arm) up to that step: ``{"step", "layer", "value", "reference"}``, or None."""
    keys = [k for k in steps[0] if k.startswith("max|") and not k.startswith("max|logit")]
    peak = dict.fromkeys(keys, 0.0)
    for mine, theirs in zip(steps, reference):
        for k in keys:
            peak[k] = max(peak[k], theirs[k])
        grown = [k for k in keys if mine[k] > factor * peak[k]]
        if grown:
            k = max(grown, key=lambda k: mine[k] / peak[k])
            return {"step": mine["step"], "layer": k[len("max|"):-1], "value": mine[k], "reference": peak[k]}
    return None


def summarise(result: dict, spe: int, reference: dict | None = None) -> dict:
    """The arm's row: its epoch's loss and accuracy, its largest statistics, and (against ``reference``, the float32
    arm) the first step at which a layer's output grew past twice float32's (:func:`first_departure`)."""
    steps = result["steps"]
    logit_keys = [k for k in steps[0] if k.startswith("max|logit")]
    act_keys = [k for k in steps[0] if k.startswith("max|") and not k.startswith("max|logit")]
    return {"arm": result["arm"], "train_loss": result["train_loss"], "test_acc": 100 * result["test_acc"],
            "max_logit": max(s[k] for s in steps for k in logit_keys) if logit_keys else float("nan"),
            "max_activation": max(s[k] for s in steps for k in act_keys),
            "max_grad_norm": max(s["grad_norm"] for s in steps),
            "zero_grads": 100 * max(s["zero_grad_fraction"] for s in steps),
            "cpu_s": result["cpu_s"], "steps_per_epoch": spe,
            "departure": first_departure(steps, reference["steps"]) if reference is not None else None}


def write(record: dict, out: str) -> str:
    """Write ``OUT.json`` and ``OUT.md`` from ``record`` (``meta`` and the ``arms``' traces); the rows are computed
    here, so that ``--render`` can make them again from a record alone."""
    meta = record["meta"]
    results = [{**r, "steps": step_rows(r)} for r in record["arms"]]
    reference = next((r for r in results if r["arm"] == "fp32"), None)
    rows = [summarise(r, meta["steps_per_epoch"], reference) for r in results]
    for row in rows:
        d = row["departure"]
        row["departs"] = "never" if d is None else f"step {d['step']}: {d['layer']} ({d['value']:.0f} vs {d['reference']:.0f})"
    text = write_record(out, {"meta": meta, "rows": rows, "arms": results},
                        title="Why the learned-encoding model diverged in bfloat16",
                        note=(f"The `{meta['config']}` `{meta['model']}` run (seed {meta['seed']}) trained for "
                              f"{meta['start_epochs']} epochs in bfloat16 as it did (the residual stream in "
                              f"bfloat16), then epoch {meta['start_epochs'] + 1} replayed from that one state per arm, "
                              f"on {meta['train_images']:,} training images and {meta['test_images']:,} test images, "
                              "one thread. `departs`: the first step (global) at which a linear layer's largest "
                              "output exceeded twice the largest the float32 arm's had reached by then."),
                        columns=[("arm", "{arm}"), ("train loss", "{train_loss:.3f}"),
                                 ("test acc (%)", "{test_acc:.1f}"), ("max abs positional logit", "{max_logit:.1f}"),
                                 ("max abs linear output", "{max_activation:.1f}"),
                                 ("max grad norm", "{max_grad_norm:.2f}"), ("zero grads (max %)", "{zero_grads:.3f}"),
                                 ("departs", "{departs}"), ("CPU (s)", "{cpu_s:.0f}")],
                        rows=rows)
    # the per-step traces (about 17 numbers a step) make the record large: stored by column, without spaces
    json_path = Path(out).with_suffix(".json")
    data = json.loads(json_path.read_text())
    for arm in data["arms"]:
        arm["steps"] = {k: [step.get(k) for step in arm["steps"]] for k in arm["steps"][0]}
    json_path.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    return text


def step_rows(arm: dict) -> list[dict]:
    """An arm's per-step trace as a list of dicts, whether it is stored by column (a record) or by step."""
    steps = arm["steps"]
    if isinstance(steps, list):
        return steps
    return [dict(zip(steps, values)) for values in zip(*steps.values())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="sa-learned")
    parser.add_argument("--config", default="cpu-long")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start-epochs", type=int, default=2)
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--train-images", type=int, default=None, help="a subset, for a quick try")
    parser.add_argument("--state", default=None, help="file for the state after the start epochs (reused if there)")
    parser.add_argument("--record", default="results/benchmarks/bf16_divergence")
    parser.add_argument("--data", default=os.environ.get("ATTNCONV_DATA"))
    parser.add_argument("--render", action="store_true", help="only write RECORD.md (and the rows) from RECORD.json")
    args = parser.parse_args()
    if args.render:
        print(write(json.loads(Path(args.record).with_suffix(".json").read_text()), args.record))
        return
    if args.start_epochs < 0:
        sys.exit(f"--start-epochs must be >= 0, got {args.start_epochs}")
    config = dataclasses.replace(named_config(args.config), model=args.model, seed=args.seed, precision="bf16", threads=1,
                          train_images=args.train_images, progress=False)
    info = init_distributed("cpu")
    set_threads(1, 1)
    data = load_cifar10(args.data)
    tensors = _Data(data, config, info)
    state_file = Path(args.state) if args.state else None
    if state_file is not None and state_file.is_file():
        state = torch.load(state_file, weights_only=False)
        if state["key"] != [args.model, args.config, args.seed, args.start_epochs, len(tensors.train_x)]:
            sys.exit(f"--state {state_file} holds another start: {state['key']}")
        history = state["history"]
    else:
        m = _Model(config, info)
        m.set_precision({"used": "bf16"}, info.device)
        history = []
        with bf16_stream(m.net):  # the run as it trained, up to the replayed epoch
            for epoch in range(args.start_epochs):
                train = _train_epoch(epoch, m, tensors, config, info, [], None, Path(os.devnull))
                history.append({"epoch": epoch + 1, **train,
                                **_evaluate(m.model, tensors.test_x, tensors.test_y, config, info, m.autocast)})
                print(f"epoch {epoch + 1}: loss {train['train_loss']:.4f}, test {history[-1]['test_acc']:.4f}",
                      flush=True)
        state = {"model": copy.deepcopy(m.net.state_dict()), "optimizer": copy.deepcopy(m.optimizer.state_dict()),
                 "history": history, "key": [args.model, args.config, args.seed, args.start_epochs,
                                             len(tensors.train_x)]}
        if state_file is not None:
            tmp = state_file.with_suffix(".tmp")
            torch.save(state, tmp)
            os.replace(tmp, state_file)
    results = []
    for arm in args.arms:
        results.append(replay(arm, state, config, tensors, info, args.start_epochs))
        r = results[-1]
        print(f"{arm}: loss {r['train_loss']:.4f}, test {r['test_acc']:.4f}, {r['cpu_s']:.0f} s CPU", flush=True)
    meta = {**machine(), "cpu": cpu_model(), **git_commit(), "model": args.model, "config": args.config, "seed": args.seed,
            "start_epochs": args.start_epochs, "train_images": len(tensors.train_x), "test_images": len(tensors.test_x),
            "steps_per_epoch": tensors.steps_per_epoch, "data": data.description, "history": history}
    print(write({"meta": meta, "arms": results}, args.record))

if __name__ == "__main__":
    main()
