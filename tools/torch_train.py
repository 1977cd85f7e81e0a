#!/usr/bin/python3
"""The PyTorch side of ./build.sh bench train: the network of a frugal job file (its [conv],
[relu], [maxpool], [flatten], [dense] and [softmax_xent] sections), its optimizer (SGD, lr,
momentum) and batch, float32, on the first N Fashion-MNIST images, resized and channel-replicated
as the job's [data] says, like frugal does. Initialisation is PyTorch's default, which frugal's
follows (kaiming_uniform with a = sqrt(5)).

The same training runs in each mode asked for (--modes, default all): `eager`, `channels_last`
(the images and weights in NHWC, which oneDNN prefers) and `compile` (torch.compile, inductor;
its first epoch includes compiling, so it needs two or more). A mode this PyTorch lacks, or that
fails, is skipped and said why on stderr, with each mode's figure.

Prints one line: `img_per_s=X mode=M flops_per_image=F torch=VERSION`, the images per second of
the fastest epoch of the best mode (the machine's speed drifts; frugal's side takes its fastest
epoch too) and the model's training FLOPs per image (3 x forward: forward, input gradient, weight
gradient). With --test it trains on the first N images in eager mode, then prints also
`test_acc=A` on the 10,000 test images after the last epoch.

With --device cuda (./build.sh bench gpu) the model, the images and the shuffles live on the GPU,
as frugal's do on an OpenCL device, and each epoch is timed from a synchronised start to a
synchronised end.

Usage: torch_train.py JOB.cfg N [EPOCHS] [THREADS] [--test] [--modes eager,channels_last,compile]
                      [--device cpu|cuda]
"""
import gzip
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = "/usr/share/datasets/fashion-mnist/"


def idx(path, dims):
    with gzip.open(path, "rb") as f:
        data = f.read()
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def read_job(path):
    """The job file as a list of (section, {key: value}), in order."""
    sections = []
    for line in open(path):
        line = line.split("#")[0].strip()
        if line.startswith("["):
            sections.append((line.strip("[]"), {}))
        elif "=" in line:
            key, value = (s.strip() for s in line.split("=", 1))
            sections[-1][1][key] = value
    return sections


def build(sections, c, h, w):
    """The network and its forward FLOPs per image."""
    layers, flops, flat = [], 0, None
    for name, keys in sections:
        if name == "conv":
            f, k = int(keys["filters"]), int(keys.get("size", 3))
            s, p = int(keys.get("stride", 1)), int(keys.get("padding", 0))
            layers.append(nn.Conv2d(c, f, k, stride=s, padding=p))
            h, w = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
            flops += 2 * c * k * k * f * h * w
            c = f
        elif name == "relu":
            layers.append(nn.ReLU())
        elif name == "maxpool":
            k = int(keys.get("size", 2))
            s = int(keys.get("stride", k))
            layers.append(nn.MaxPool2d(k, s))
            h, w = (h - k) // s + 1, (w - k) // s + 1
        elif name == "flatten":
            layers.append(nn.Flatten())
            flat = c * h * w
        elif name == "dense":
            out = int(keys["outputs"])
            layers.append(nn.Linear(flat, out))
            flops += 2 * flat * out
            flat = out
    return nn.Sequential(*layers), flops


MODES = ("eager", "channels_last", "compile")
# On a GPU also torch.compile's CUDA graphs (mode="reduce-overhead"): one launch replays the whole
# forward and backward, which is what small batches need there.
CUDA_MODES = MODES + ("compile_cudagraphs",)


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def train(model, x, y, n, batch, epochs, opt, mode, device):
    """The images per second of the fastest epoch of `epochs`, in `mode`."""
    if mode == "channels_last":
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    step_model = (torch.compile(model) if mode == "compile" else
                  torch.compile(model, mode="reduce-overhead") if mode == "compile_cudagraphs" else
                  model)
    sgd = torch.optim.SGD(model.parameters(), lr=float(opt.get("lr", 0.01)),
                          momentum=float(opt.get("momentum", 0)))
    best = 0.0
    for _ in range(epochs):
        perm = torch.randperm(n, device=device)
        sync(device)
        start = time.perf_counter()
        for b in range(0, n, batch):
            i = perm[b:b + batch]
            if len(i) < batch and mode.startswith("compile"):
                continue   # a last short batch would compile the graph again
            sgd.zero_grad()
            F.cross_entropy(step_model(x[i]), y[i]).backward()
            sgd.step()
        sync(device)
        best = max(best, n / (time.perf_counter() - start))
    return best


def main():
    args = [a for a in sys.argv[1:] if a != "--test"]
    modes = None
    if "--modes" in args:
        at = args.index("--modes")
        modes = args[at + 1].split(",")
        del args[at:at + 2]
    device = "cpu"
    if "--device" in args:
        at = args.index("--device")
        device = args[at + 1]
        del args[at:at + 2]
    modes = modes or list(CUDA_MODES if device == "cuda" else MODES)
    sections = read_job(args[0])
    n = int(args[1])
    epochs = int(args[2]) if len(args) > 2 else 2
    torch.set_num_threads(int(args[3]) if len(args) > 3 else 2)
    conf = {}
    for name, keys in sections:
        conf.setdefault(name, keys)
    h, w = (int(v) for v in conf["data"].get("resize", "28x28").split("x"))
    c = int(conf["data"].get("channels", 1))
    batch = int(conf["job"].get("batch", 32))
    torch.manual_seed(int(conf["job"].get("seed", 42)))

    def images(kind, limit):
        x = torch.tensor(idx(ROOT + kind + "-images-idx3-ubyte.gz", 3)[:limit], dtype=torch.float32)
        y = torch.tensor(idx(ROOT + kind + "-labels-idx1-ubyte.gz", 1)[:limit], dtype=torch.int64)
        x = x.unsqueeze(1) / 255.0
        if (h, w) != (28, 28):
            x = F.interpolate(x, size=(h, w), mode="bilinear", align_corners=False)
        return x.expand(-1, c, -1, -1).contiguous(), y

    x, y = images("train", n)
    x, y = x.to(device), y.to(device)
    if "--test" in sys.argv:
        modes = ["eager"]
    best, best_mode, model = 0.0, None, None
    for mode in modes:
        torch.manual_seed(int(conf["job"].get("seed", 42)))
        model, flops = build(sections, c, h, w)
        model = model.to(device)
        if mode.startswith("compile") and (not hasattr(torch, "compile") or epochs < 2):
            print("torch_train: compile skipped: %s" % ("this PyTorch has no torch.compile"
                  if not hasattr(torch, "compile") else "it needs two epochs or more"),
                  file=sys.stderr)
            continue
        try:
            rate = train(model, x, y, n, batch, epochs, conf["optimizer"], mode, device)
        except Exception as e:   # a mode that fails here is a mode this machine cannot use
            print("torch_train: %s failed: %s" % (mode, str(e).splitlines()[0][:200]), file=sys.stderr)
            continue
        print("torch_train: %s img_per_s=%.1f" % (mode, rate), file=sys.stderr)
        if rate > best:
            best, best_mode = rate, mode
    line = "img_per_s=%.1f mode=%s flops_per_image=%d torch=%s" % (best, best_mode, 3 * flops,
                                                                   torch.__version__)
    if device == "cuda":
        line += " device=%s" % torch.cuda.get_device_name().replace(" ", "_")
    if "--test" in sys.argv:
        tx, ty = images("t10k", 10000)
        tx, ty = tx.to(device), ty.to(device)
        with torch.no_grad():
            right = sum((model(tx[b:b + 500]).argmax(1) == ty[b:b + 500]).sum().item()
                        for b in range(0, len(ty), 500))
        line += " test_acc=%.4f" % (right / len(ty))
    print(line)


if __name__ == "__main__":
    main()
