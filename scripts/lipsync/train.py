#!/usr/bin/env python3
"""Trains the lip-sync audio classifier (a small MLP over a context of log-mel frames) on the data that
scripts/lipsync/dataset.ts generated with espeak-ng, chooses its epoch on the `tune` voices, and writes
the weights as a TypeScript module (src/media/lipsync/model_weights.ts) that the service runs.

Needs python3 with numpy only (no deep-learning framework, nothing downloaded):

    OMP_NUM_THREADS=1 nice -n 10 python3 scripts/lipsync/train.py --data .data/lipsync

The feature normalisation below must stay identical to src/media/lipsync/features.ts (the parity test in
tests/media/lipsync_model_test.ts checks the exported model against reference outputs written here).
"""
import argparse
import base64
import json
import os
import struct
import sys
import time

import numpy as np

VISEMES = ["sil", "PP", "FF", "TH", "DD", "kk", "CH", "SS", "nn", "RR", "aa", "E", "ih", "oh", "ou"]
CLASS7 = [0, 1, 2, 6, 6, 6, 6, 6, 6, 6, 3, 5, 5, 3, 4]

# --- streaming normalisation (mirrors features.ts) ---
PEAK_DECAY = 0.02  # natural-log units per frame (≈ 8.7 dB/s)
PEAK_FLOOR = 9.0  # ln(power) of a quiet floor (RMS ≈ 90 on the PCM16 scale)
SPEECH_BELOW_PEAK = 4.6  # frames within ≈ 20 dB of the peak update the band means
ALPHA = 0.01  # band mean adaptation per speech frame (≈ 1 s)
OFFSETS = [-12, -9, -6, -4, -3, -2, -1, 0, 1, 2, 3, 4]


def load(path):
    with open(path, "rb") as f:
        magic, dim, count = struct.unpack("<III", f.read(12))
        utts = []
        for _ in range(count):
            hdr = f.read(4)
            if len(hdr) < 4:
                break
            (n,) = struct.unpack("<I", hdr)
            x = np.frombuffer(f.read(n * dim * 4), dtype=np.float32).reshape(n, dim)
            y = np.frombuffer(f.read(n), dtype=np.uint8)
            utts.append((x, y))
    return dim, utts


def normalise(x, mu0):
    """Streaming normalisation of one utterance's raw frames (bands…, energy) → model frames."""
    n, dim = x.shape
    nb = dim - 1
    out = np.zeros((n, nb + 2), dtype=np.float32)
    mu = mu0.astype(np.float64).copy()
    peak = PEAK_FLOOR
    bands = x[:, :nb].astype(np.float64)
    energy = x[:, nb].astype(np.float64)
    for t in range(n):
        e = energy[t]
        peak = max(e, peak - PEAK_DECAY, PEAK_FLOOR)
        if e > peak - SPEECH_BELOW_PEAK:
            mu += ALPHA * (bands[t] - mu)
        out[t, :nb] = (bands[t] - mu) / 3.0
        out[t, nb] = min(max((e - peak) / 4.0, -3.0), 0.5)
        out[t, nb + 1] = min(max((e - 14.0) / 4.0, -3.0), 3.0)
    return out


class Stacked:
    """Context windows of every frame of every utterance (edges repeat the first/last frame), gathered on
    demand from the concatenated frames."""

    def __init__(self, frames_list, offsets):
        self.frames = np.concatenate(frames_list, axis=0)
        idx = []
        base = 0
        for f in frames_list:
            n = f.shape[0]
            i = np.arange(n)[:, None] + np.array(offsets)[None, :]
            idx.append((np.clip(i, 0, n - 1) + base).astype(np.int32))
            base += n
        self.idx = np.concatenate(idx, axis=0)

    def __len__(self):
        return len(self.idx)

    def __getitem__(self, sel):
        return self.frames[self.idx[sel]]


# Centre frequencies of the mel bands (mirrors dsp.ts), for vocal-tract-length warping.
def _mel(f):
    return 2595 * np.log10(1 + f / 700)


def _mel_inv(m):
    return 700 * (10 ** (m / 2595) - 1)


def band_centres(nb):
    lo, hi = _mel(80), _mel(7600)
    return _mel_inv(lo + (hi - lo) * np.arange(1, nb + 1) / (nb + 1))


def warp(x, alpha):
    """Vocal-tract-length perturbation of raw frames: the spectrum as if formants were scaled by alpha."""
    nb = x.shape[1] - 1
    c = band_centres(nb)
    src = np.interp(c / alpha, c, np.arange(nb))  # fractional band index to read from
    lo = np.clip(np.floor(src).astype(int), 0, nb - 1)
    hi = np.clip(lo + 1, 0, nb - 1)
    w = (src - lo)[None, :]
    out = x.copy()
    out[:, :nb] = (1 - w) * x[:, lo] + w * x[:, hi]
    return out


def stack(frames_list, offsets):
    return Stacked(frames_list, offsets)


class Mlp:
    """proj (per frame d→P, tanh) → dense (context·P → H1, relu) → dense (H1 → H2, relu) → 15."""

    def __init__(self, d, k, p, h1, h2, c, rng):
        def init(i, o):
            return (rng.standard_normal((i, o)) * np.sqrt(2.0 / i)).astype(np.float32)

        self.params = {
            "wp": init(d, p), "bp": np.zeros(p, np.float32),
            "w1": init(k * p, h1), "b1": np.zeros(h1, np.float32),
            "w2": init(h1, h2), "b2": np.zeros(h2, np.float32),
            "w3": init(h2, c), "b3": np.zeros(c, np.float32),
        }
        self.k, self.p = k, p
        self.m = {n: np.zeros_like(v) for n, v in self.params.items()}
        self.v = {n: np.zeros_like(v) for n, v in self.params.items()}
        self.t = 0

    def forward(self, x, train=False, drop=0.0, rng=None):
        P = self.params
        b, k, d = x.shape
        zp = x.reshape(b * k, d) @ P["wp"] + P["bp"]
        ap = np.tanh(zp)
        a0 = ap.reshape(b, k * self.p)
        if train and drop > 0:
            mask0 = (rng.random(a0.shape) > drop).astype(np.float32) / (1 - drop)
            a0 = a0 * mask0
        else:
            mask0 = None
        z1 = a0 @ P["w1"] + P["b1"]
        a1 = np.maximum(z1, 0)
        z2 = a1 @ P["w2"] + P["b2"]
        a2 = np.maximum(z2, 0)
        logits = a2 @ P["w3"] + P["b3"]
        cache = (x, ap, a0, mask0, z1, a1, z2, a2)
        return logits, cache

    def backward(self, dlogits, cache):
        P = self.params
        x, ap, a0, mask0, z1, a1, z2, a2 = cache
        b, k, d = x.shape
        g = {}
        g["w3"] = a2.T @ dlogits
        g["b3"] = dlogits.sum(0)
        da2 = dlogits @ P["w3"].T
        dz2 = da2 * (z2 > 0)
        g["w2"] = a1.T @ dz2
        g["b2"] = dz2.sum(0)
        da1 = dz2 @ P["w2"].T
        dz1 = da1 * (z1 > 0)
        g["w1"] = a0.T @ dz1
        g["b1"] = dz1.sum(0)
        da0 = dz1 @ P["w1"].T
        if mask0 is not None:
            da0 = da0 * mask0
        dap = da0.reshape(b * k, self.p)
        dzp = dap * (1 - ap * ap)
        g["wp"] = x.reshape(b * k, d).T @ dzp
        g["bp"] = dzp.sum(0)
        return g

    def step(self, g, lr, wd=1e-5, b1=0.9, b2=0.999):
        self.t += 1
        for n, p in self.params.items():
            gn = g[n] + wd * p
            self.m[n] = b1 * self.m[n] + (1 - b1) * gn
            self.v[n] = b2 * self.v[n] + (1 - b2) * gn * gn
            mh = self.m[n] / (1 - b1 ** self.t)
            vh = self.v[n] / (1 - b2 ** self.t)
            p -= (lr * mh / (np.sqrt(vh) + 1e-8)).astype(np.float32)


def softmax(z):
    z = z - z.max(1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


def evaluate(model, X, Y, batch=8192):
    preds = []
    for i in range(0, len(X), batch):
        logits, _ = model.forward(X[np.arange(i, min(len(X), i + batch))])
        preds.append(logits.argmax(1))
    p = np.concatenate(preds)
    c7 = np.array(CLASS7)
    acc15 = float((p == Y).mean())
    acc7 = float((c7[p] == c7[Y]).mean())
    return acc15, acc7


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=".data/lipsync")
    ap.add_argument("--out", default="src/media/lipsync/model_weights.ts")
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--proj", type=int, default=24)
    ap.add_argument("--h1", type=int, default=64)
    ap.add_argument("--h2", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--drop", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--vtlp", type=float, default=0.12, help="vocal-tract-length warping, ± share")
    ap.add_argument("--bandmask", type=int, default=3, help="most adjacent mel bands masked per example")
    ap.add_argument("--reference", default="tests/media/lipsync_model_reference.json")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)

    t0 = time.time()
    dim, train = load(os.path.join(args.data, "train.bin"))
    _, tune = load(os.path.join(args.data, "tune.bin"))
    nb = dim - 1
    # Global band means of speech frames (the normaliser's starting point).
    allx = np.concatenate([x for x, _ in train])
    e = allx[:, nb]
    speech = e > np.percentile(e, 40)
    mu0 = allx[speech, :nb].mean(0)
    print(f"loaded {len(train)} train / {len(tune)} tune utterances, {len(allx)} frames, {time.time() - t0:.0f} s",
          file=sys.stderr)
    del allx

    def prep(utts, augment=False):
        frames = []
        for x, _ in utts:
            if augment and args.vtlp > 0:
                x = warp(x, float(rng.uniform(1 - args.vtlp, 1 + args.vtlp)))
            frames.append(normalise(x, mu0))
        X = stack(frames, OFFSETS)
        Y = np.concatenate([y for _, y in utts]).astype(np.int64)
        return X, Y

    Xtr, Ytr = prep(train, augment=True)
    Xtu, Ytu = prep(tune)
    print(f"features ready: {len(Xtr)}, {len(Xtu)} frames, {time.time() - t0:.0f} s", file=sys.stderr)
    counts = np.bincount(Ytr, minlength=15).astype(np.float64)
    prior = counts / counts.sum()
    print("priors:", " ".join(f"{v}:{p:.3f}" for v, p in zip(VISEMES, prior)), file=sys.stderr)
    # Mild class weights (inverse square root of frequency) so rare visemes are not ignored.
    cw = (1.0 / np.sqrt(prior + 1e-4))
    cw = (cw / (cw * prior).sum()).astype(np.float32)

    d = Xtr.frames.shape[1]
    model = Mlp(d, len(OFFSETS), args.proj, args.h1, args.h2, 15, rng)
    best = (-1.0, None, -1)
    batch = 512
    n = len(Xtr)
    for epoch in range(args.epochs):
        if epoch > 0 and args.vtlp > 0:
            Xtr, _ = prep(train, augment=True)
        lr = args.lr * (0.5 ** max(0, epoch - args.epochs // 2))
        order = rng.permutation(n)
        loss_sum = 0.0
        for i in range(0, n - batch + 1, batch):
            idx = order[i:i + batch]
            xb, yb = Xtr[idx], Ytr[idx]
            if args.bandmask > 0:
                # Frequency masking: a few adjacent bands of each example set to their running mean (0).
                nbands = xb.shape[2] - 2
                width = rng.integers(0, args.bandmask + 1, len(xb))
                start = rng.integers(0, nbands, len(xb))
                band = np.arange(nbands)[None, :]
                mask = (band >= start[:, None]) & (band < (start + width)[:, None])
                xb = xb.copy()
                xb[:, :, :nbands] *= ~mask[:, None, :]
            logits, cache = model.forward(xb, train=True, drop=args.drop, rng=rng)
            p = softmax(logits)
            w = cw[yb]
            loss_sum += float(-(w * np.log(p[np.arange(len(yb)), yb] + 1e-9)).sum())
            dl = p
            dl[np.arange(len(yb)), yb] -= 1
            dl *= (w / len(yb))[:, None]
            g = model.backward(dl.astype(np.float32), cache)
            model.step(g, lr)
        acc15, acc7 = evaluate(model, Xtu, Ytu)
        ntr = min(200000, len(Xtr))
        tr15, tr7 = evaluate(model, Xtr[np.arange(ntr)], Ytr[:ntr])
        print(f"epoch {epoch + 1}: loss {loss_sum / n:.4f} train {tr15:.3f}/{tr7:.3f} tune {acc15:.3f}/{acc7:.3f} "
              f"lr {lr:.1e} {time.time() - t0:.0f} s", file=sys.stderr)
        if acc7 > best[0]:
            best = (acc7, {k: v.copy() for k, v in model.params.items()}, epoch + 1)
    print(f"best tune 7-class accuracy {best[0]:.3f} at epoch {best[2]}", file=sys.stderr)
    model.params = best[1]

    # Tune-set confusion, for the record.
    logits, _ = model.forward(Xtu[np.arange(min(50000, len(Xtu)))])
    pred = logits.argmax(1)
    cm = np.zeros((15, 15), int)
    for a, b in zip(Ytu[:50000], pred):
        cm[a, b] += 1
    print("confusion (rows true, cols predicted):", file=sys.stderr)
    print("      " + " ".join(f"{v:>4}" for v in VISEMES), file=sys.stderr)
    for i, v in enumerate(VISEMES):
        print(f"{v:>5} " + " ".join(f"{c:4d}" for c in cm[i]), file=sys.stderr)

    export(args, model, mu0, prior, best)
    reference(args, model, mu0, tune)


def b64(a):
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode()


def export(args, model, mu0, prior, best):
    P = model.params
    meta = {
        "version": 1,
        "offsets": OFFSETS,
        "inputDim": int(P["wp"].shape[0]),
        "proj": int(P["wp"].shape[1]),
        "h1": int(P["w1"].shape[1]),
        "h2": int(P["w2"].shape[1]),
        "classes": 15,
        "peakDecay": PEAK_DECAY,
        "peakFloor": PEAK_FLOOR,
        "speechBelowPeak": SPEECH_BELOW_PEAK,
        "alpha": ALPHA,
        "tuneAccuracy7": round(best[0], 4),
        "epoch": best[2],
    }
    # Weights are stored transposed (out × in) so inference walks rows.
    tensors = {
        "mu0": mu0.astype(np.float32),
        "logPrior": np.log(prior + 1e-6).astype(np.float32),
        "wp": P["wp"].T, "bp": P["bp"],
        "w1": P["w1"].T, "b1": P["b1"],
        "w2": P["w2"].T, "b2": P["b2"],
        "w3": P["w3"].T, "b3": P["b3"],
    }
    lines = [
        "// Generated by scripts/lipsync/train.py from espeak-ng speech (see docs/lipsync.md). Do not edit.",
        "// deno-fmt-ignore-file",
        "",
        "/** Shape and normalisation settings of the trained classifier. */",
        f"export const MODEL_META = {json.dumps(meta)} as const;",
        "",
        "/** Float32 tensors (little-endian, base64), weights as rows of outputs. */",
        "export const MODEL_TENSORS: Record<string, string> = {",
    ]
    for k, v in tensors.items():
        lines.append(f'  {k}: "{b64(v)}",')
    lines.append("};")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


def reference(args, model, mu0, tune):
    """Raw frames and expected posteriors of two tune utterances, for the TypeScript parity test."""
    out = []
    for x, _ in tune[:2]:
        x = x[:150]
        f = normalise(x, mu0)
        X = stack([f], OFFSETS)
        logits, _ = model.forward(X[np.arange(len(X))])
        out.append({
            "raw": np.round(x.astype(np.float64), 5).tolist(),
            "logits": np.round(logits.astype(np.float64), 4).tolist(),
        })
    os.makedirs(os.path.dirname(args.reference), exist_ok=True)
    with open(args.reference, "w") as f:
        json.dump(out, f)
    print(f"wrote {args.reference}", file=sys.stderr)


if __name__ == "__main__":
    main()
