#!/usr/bin/python3
"""The PyTorch side of ./build.sh bench train: DAHL's CNN (Conv2d(C,4,3), ReLU, MaxPool2d(2),
Linear, cross-entropy, SGD lr 0.001, batch 32, float32) on the first N Fashion-MNIST images,
resized and channel-replicated like frugal does. Prints the images per second of the fastest
epoch (the machine's speed drifts; frugal's side takes its fastest epoch too).

Usage: torch_train.py N HEIGHT WIDTH CHANNELS [EPOCHS] [THREADS]
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


def main():
    n, h, w, c = (int(a) for a in sys.argv[1:5])
    epochs = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    torch.set_num_threads(int(sys.argv[6]) if len(sys.argv) > 6 else 2)
    torch.manual_seed(42)
    x = torch.tensor(idx(ROOT + "train-images-idx3-ubyte.gz", 3)[:n], dtype=torch.float32)
    y = torch.tensor(idx(ROOT + "train-labels-idx1-ubyte.gz", 1)[:n], dtype=torch.int64)
    x = x.unsqueeze(1) / 255.0
    if (h, w) != (28, 28):
        x = F.interpolate(x, size=(h, w), mode="bilinear", align_corners=False)
    x = x.expand(-1, c, -1, -1).contiguous()
    oh, ow = (h - 2) // 2, (w - 2) // 2
    model = nn.Sequential(nn.Conv2d(c, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(4 * oh * ow, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    best = 0.0
    for _ in range(epochs):
        perm = torch.randperm(n)
        start = time.perf_counter()
        for b in range(0, n, 32):
            i = perm[b:b + 32]
            opt.zero_grad()
            loss = F.cross_entropy(model(x[i]), y[i])
            loss.backward()
            opt.step()
        best = max(best, n / (time.perf_counter() - start))
    print("%.1f" % best)


if __name__ == "__main__":
    main()
