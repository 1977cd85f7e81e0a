#!/usr/bin/python3
"""Reference values for frugal's kernel tests, computed by PyTorch in float64.

Inputs are drawn as float32 (so the C side sees exactly the same numbers), the reference runs in
float64, and everything is written as text to tests/fixtures/ops.txt:

    case NAME key=value ...
    NAME_OF_ARRAY d0 d1 ...
    v0 v1 v2 ...

Run: /usr/bin/python3 tools/gen_fixtures.py   (needs Debian's python3-torch; the tests do not)
"""
import os
import numpy as np
import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "ops.txt")
rng = np.random.default_rng(20261122)


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def t64(a, grad=False):
    return torch.tensor(a.astype(np.float64), requires_grad=grad)


def emit(out, name, params, arrays):
    out.write("case %s %s\n" % (name, " ".join("%s=%d" % kv for kv in params.items())))
    for key, a in arrays.items():
        a = np.asarray(a)
        out.write("%s %s\n" % (key, " ".join(str(d) for d in a.shape)))
        fmt = "%.9g" if a.dtype == np.float32 else "%.17g"
        out.write(" ".join(fmt % v for v in a.ravel()) + "\n")


def conv_cases(out):
    cases = [  # name, N, C, H, W, F, KH, KW, stride, pad
        ("dahl_28x28", 2, 1, 28, 28, 4, 3, 3, 1, 0),
        ("pointwise_1x1", 2, 3, 5, 4, 2, 1, 1, 1, 0),
        ("odd_stride2_pad1", 2, 3, 7, 9, 5, 3, 3, 2, 1),
        ("pad2_kernel3x2", 1, 2, 6, 5, 3, 3, 2, 1, 2),
        ("one_filter_batch1", 1, 4, 8, 8, 1, 5, 5, 1, 0),
        ("stride2_kernel2", 3, 2, 10, 6, 4, 2, 2, 2, 0),
        # Many channels and filters (the wide kernel), counts that are not multiples of any
        # register block, odd sizes, padding; and stride 2 with as many filters.
        ("wide_odd_pad1", 2, 37, 9, 7, 41, 3, 3, 1, 1),
        ("wide_pad2_kernel5x3", 1, 66, 6, 11, 19, 5, 3, 1, 2),
        ("wide_stride2_pad1", 2, 33, 9, 8, 35, 3, 3, 2, 1),
        # Winograd F(2x2, 3x3): odd outputs (half-empty tiles), padding 0 and 2, blocks of tile
        # rows that cross samples, and a tile row longer than a block.
        ("winograd_pad0_odd", 3, 5, 7, 6, 17, 3, 3, 1, 0),
        ("winograd_pad2", 2, 7, 13, 8, 19, 3, 3, 1, 2),
        ("winograd_many_blocks", 2, 2, 52, 5, 3, 3, 3, 1, 1),
        ("winograd_long_row", 1, 2, 3, 261, 3, 3, 3, 1, 1),
        # The same for F(4x4, 3x3)'s tiles (4 rows of outputs each): blocks across samples, a
        # tile row longer than a block, outputs 1 to 3 past a whole tile.
        ("winograd4_many_blocks", 2, 2, 141, 5, 3, 3, 3, 1, 1),
        ("winograd4_long_row", 1, 2, 5, 518, 3, 3, 3, 1, 1),
    ]
    for name, n, c, h, w, f, kh, kw, s, p in cases:
        x, wt, b = f32(n, c, h, w), f32(f, c, kh, kw, scale=0.3), f32(f, scale=0.1)
        X, W, B = t64(x, True), t64(wt, True), t64(b, True)
        Y = F.conv2d(X, W, B, stride=s, padding=p)
        dy = f32(*Y.shape)
        Y.backward(t64(dy))
        emit(out, "conv_" + name, dict(n=n, c=c, h=h, w=w, f=f, kh=kh, kw=kw, stride=s, pad=p),
             dict(x=x, w=wt, b=b, dy=dy, y=Y.detach().numpy(), dx=X.grad.numpy(),
                  dw=W.grad.numpy(), db=B.grad.numpy()))


def pool_cases(out):
    for name, n, c, h, w, size, s in [("2x2", 2, 3, 6, 6, 2, 2), ("3s2_odd", 1, 2, 7, 5, 3, 2),
                                      ("dahl_26", 2, 4, 26, 26, 2, 2), ("2s1", 1, 1, 5, 5, 2, 1)]:
        x = f32(n, c, h, w)
        X = t64(x, True)
        Y = F.max_pool2d(X, size, s)
        dy = f32(*Y.shape)
        Y.backward(t64(dy))
        emit(out, "pool_" + name, dict(n=n, c=c, h=h, w=w, size=size, stride=s),
             dict(x=x, dy=dy, y=Y.detach().numpy(), dx=X.grad.numpy()))


def dense_cases(out):
    for name, n, i, o in [("small", 3, 20, 7), ("dahl_676", 1, 676, 10), ("scalar", 5, 1, 1)]:
        x, wt, b = f32(n, i), f32(o, i, scale=0.2), f32(o, scale=0.1)
        X, W, B = t64(x, True), t64(wt, True), t64(b, True)
        Y = F.linear(X, W, B)
        dy = f32(n, o)
        Y.backward(t64(dy))
        emit(out, "dense_" + name, dict(n=n, i=i, o=o),
             dict(x=x, w=wt, b=b, dy=dy, y=Y.detach().numpy(), dx=X.grad.numpy(),
                  dw=W.grad.numpy(), db=B.grad.numpy()))


def xent_cases(out):
    for name, n, k, scale in [("ten", 5, 10, 3.0), ("three", 1, 3, 1.0), ("large", 4, 10, 40.0)]:
        z = f32(n, k, scale=scale)
        labels = rng.integers(0, k, n)
        Z = t64(z, True)
        loss = F.cross_entropy(Z, torch.tensor(labels))   # mean over the batch
        loss.backward()
        emit(out, "xent_" + name, dict(n=n, k=k),
             dict(z=z, labels=labels.astype(np.float32), loss=np.array([loss.item()]),
                  dz=Z.grad.numpy()))


def relu_case(out):
    x = f32(50)
    x[3] = 0.0
    X = t64(x, True)
    Y = F.relu(X)
    dy = f32(50)
    Y.backward(t64(dy))
    emit(out, "relu", dict(n=50), dict(x=x, dy=dy, y=Y.detach().numpy(), dx=X.grad.numpy()))


def sgd_case(out):
    w, grads = f32(40), [f32(40) for _ in range(3)]
    lr, mom, wd = 0.05, 0.9, 0.01
    p = torch.nn.Parameter(t64(w))
    opt = torch.optim.SGD([p], lr=lr, momentum=mom, weight_decay=wd)
    for g in grads:
        opt.zero_grad()
        p.grad = t64(g)
        opt.step()
    # lr, momentum, weight decay in thousandths
    emit(out, "sgd", dict(n=40, lr_milli=50, momentum_milli=900, wd_milli=10),
         dict(w=w, g0=grads[0], g1=grads[1], g2=grads[2], w3=p.detach().numpy()))


def dahl_step_case(out):
    """One SGD step of DAHL's CNN on a batch of 4 byte images: what frugal's whole training graph
    (loading, forward, backward, gradient reduction, update) must reproduce."""
    pixels = rng.integers(0, 256, (4, 1, 28, 28)).astype(np.uint8)
    labels = np.array([3, 0, 9, 3])
    conv_w, conv_b = f32(4, 1, 3, 3, scale=0.3), f32(4, scale=0.1)
    dense_w, dense_b = f32(10, 4 * 13 * 13, scale=0.05), f32(10, scale=0.1)
    params = [t64(a, True) for a in (conv_w, conv_b, dense_w, dense_b)]
    x = t64(pixels.astype(np.float32) / np.float32(255.0))
    h = F.max_pool2d(F.relu(F.conv2d(x, params[0], params[1])), 2)
    logits = F.linear(h.flatten(1), params[2], params[3])
    loss = F.cross_entropy(logits, torch.tensor(labels))
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    loss.backward()
    opt.step()
    emit(out, "dahl_step", dict(n=4, lr_milli=100, momentum_milli=900),
         dict(pixels=pixels.astype(np.float32), labels=labels.astype(np.float32),
              conv_w=conv_w, conv_b=conv_b, dense_w=dense_w, dense_b=dense_b,
              loss=np.array([loss.item()]),
              conv_w1=params[0].detach().numpy(), conv_b1=params[1].detach().numpy(),
              dense_w1=params[2].detach().numpy(), dense_b1=params[3].detach().numpy()))


def main():
    torch.set_default_dtype(torch.float64)
    with open(OUT, "w") as out:
        out.write("# frugal kernel fixtures: PyTorch %s, float64 reference, tools/gen_fixtures.py\n"
                  % torch.__version__)
        conv_cases(out)
        pool_cases(out)
        dense_cases(out)
        xent_cases(out)
        relu_case(out)
        sgd_case(out)
        dahl_step_case(out)
    print("wrote", os.path.relpath(OUT), os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    main()
