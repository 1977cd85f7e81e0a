#!/usr/bin/env python3
"""Writes the fuzz targets' seed inputs into tests/fuzz/corpus/TARGET (run from the repository
root after ./build.sh): small valid files of every format frugal reads, which the fuzzer then
mutates. The checkpoint seed comes from a real run of ./frugal on a tiny job."""
import gzip, os, struct, subprocess, tempfile

root = "tests/fuzz/corpus"

def put(target, name, data):
    os.makedirs(f"{root}/{target}", exist_ok=True)
    with open(f"{root}/{target}/{name}", "wb") as f:
        f.write(data)

def idx(dims, payload, magic=8):
    return bytes([0, 0, magic, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + payload

# job files: the examples, and one of each layer with every key
for name in sorted(os.listdir("examples")):
    put("job_file", name, open(f"examples/{name}", "rb").read())
put("job_file", "every_key.cfg", b"""[job]\nepochs = 2\nbatch = 8\nseed = 3\noutput = "runs/a #b"
[data]\nformat = cifar10\ntrain_files = a.bin, b.bin\ntest_file = t.bin\nlimit = 10\ntest_limit = 5
resize = 12x14\nchannels = 3\n[conv]\nfilters = 4\nsize = 3\nstride = 1\npadding = 1\n[relu]
[maxpool]\nsize = 2\nstride = 2\n[flatten]\n[dense]\noutputs = 10\n[softmax_xent]
[optimizer]\ntype = sgd\nlr = 0.1\nmomentum = 0.9\nweight_decay = 0.0001
[execution]\nworkers = 2\ngrain = auto\nfilter_groups = 2\nfuse = off
[energy]\nrate_hz = 10\ncarbon_g_per_kwh = 56\ncarbon_file = grid.txt\nbaseline_seconds = 0\nbaseline_watts = 12
model_idle_watts = 9\nmodel_core_watts = 6\n""")

# IDX: the first byte picks gzip-wrapped (1), labelled (2), limited (4); then the file
images = idx([3, 4, 5], bytes(range(60)))
put("idx", "raw", b"\x00" + images)
put("idx", "raw_labelled", b"\x02" + images)
put("idx", "wrapped_limited", b"\x05" + images)
put("idx", "gzip_as_is", b"\x02" + gzip.compress(images))
put("idx", "labels", b"\x00" + idx([3], b"\x01\x02\x03"))

# CIFAR-10: two records
rec = lambda label, v: bytes([label]) + bytes([v]) * 3072
put("cifar", "two_records", rec(3, 7) + rec(9, 200))

# PGM and PPM, text and binary, 8 and 16 bits
put("pnm", "p2", b"P2\n# grey\n3 2\n15\n0 1 2\n3 4 15\n")
put("pnm", "p3", b"P3 2 1 255\n255 0 0  0 0 255\n")
put("pnm", "p5", b"P5 2 2 255\n" + bytes([0, 64, 128, 255]))
put("pnm", "p6_16bit", b"P6 1 2 65535\n" + bytes(range(12)))

# a checkpoint and its run log, from a real run
with tempfile.TemporaryDirectory() as tmp:
    put_px = idx([8, 6, 6], bytes((i * 37) % 256 for i in range(8 * 36)))
    open(f"{tmp}/img", "wb").write(put_px)
    open(f"{tmp}/lbl", "wb").write(idx([8], bytes(i % 3 for i in range(8))))
    open(f"{tmp}/job.cfg", "w").write(f"""[job]\nepochs = 2\nbatch = 4\noutput = {tmp}/run
[data]\ntrain_images = {tmp}/img\ntrain_labels = {tmp}/lbl
[conv]\nfilters = 2\nsize = 3\n[relu]\n[maxpool]\n[flatten]\n[dense]\noutputs = 10\n[softmax_xent]
[energy]\nbaseline_seconds = 0\n""")
    subprocess.run(["./frugal", "train", f"{tmp}/job.cfg"], check=True, stdout=subprocess.DEVNULL)
    ck = open(f"{tmp}/run/checkpoint.bin", "rb").read()
    put("checkpoint", "tiny.bin", ck)
    put("checkpoint_crc", "tiny.bin", ck)
    start = ck.index(b"frugal run log 1")
    put("run_log", "two_epochs", ck[start:-4])
    put("summary_json", "two_epochs.json", open(f"{tmp}/run/summary.json", "rb").read())

put("summary_json", "escapes.json", b'{"a": ["\\u00e9\\ud83d\\ude00\\n", -1.5e-3, true, false, null, {}, []]}')

# cluster messages as a peer's opened frame: which side receives it (1: the coordinator), then
# the frame header (type, version 1, length; big-endian) and the payload (little-endian fields)
def frame(to_coordinator, mtype, payload):
    return bytes([to_coordinator]) + struct.pack(">HHI", mtype, 1, len(payload)) + payload

u32 = lambda *v: struct.pack("<%dI" % len(v), *v)
u64 = lambda *v: struct.pack("<%dQ" % len(v), *v)
text = lambda b: u32(len(b)) + b
host, energy = b"node-a".ljust(64, b"\0"), b"estimated: model".ljust(160, b"\0")
put("cluster_message", "join", frame(1, 1, u32(4, 2, 3) + host + energy))
put("cluster_message", "job", frame(0, 2, u32(0xffffffff, 1) + text(b"train.idx") + u64(100) +
                                    bytes(32) + text(b"[job]\nepochs = 1\n#--set job.batch=4\n")))
put("cluster_message", "fetch", frame(1, 3, bytes(32) + u64(0)))
put("cluster_message", "file", frame(0, 4, bytes(32) + u64(0, 4) + b"abcd"))
put("cluster_message", "ready", frame(1, 5, u64(16) + b"cpu+opencl: Portable device".ljust(160, b"\0")))
put("cluster_message", "params", frame(0, 6, u64(7) + struct.pack("<16f", *range(16))))
put("cluster_message", "work", frame(0, 7, u64(7) + u32(1, 2, 3, 4, 0)))
put("cluster_message", "result", frame(1, 8, u64(7) + u32(3, 2, 4, 1, 2) +
                                       struct.pack("<5d", 1.5, 0.01, 2.0, 30.0, 400.0)))
put("cluster_message", "grad", frame(1, 12, u64(7) + u32(3, 2, 2) + struct.pack("<6f", *range(6))))
put("cluster_message", "layer", frame(0, 13, u64(7) + u32(0, 2, 1) + struct.pack("<6f", *range(6))))
put("cluster_message", "done", frame(0, 9, b"training finished"))
put("cluster_message", "round", frame(0, 10, u64(7) + u32(1, 0, 8, 2, 4, 3, 5)))
put("cluster_message", "model", frame(1, 11, u64(7) + u32(2, 20, 32, 1, 2) +
                                      struct.pack("<5d", 40.0, 0.5, 9.0, 30.0, 400.0) + struct.pack("<16f", *range(16))))
# a delta (compress = on) of the fuzz target's model, layers of 10, 0 and 6 parameters: per layer
# its scale, then a half per parameter
delta = struct.pack("<f10e", 1e-4, *range(10)) + struct.pack("<f6e", 2e-4, *range(6))
put("cluster_message", "delta", frame(0, 16, u64(7, 6) + delta))
put("cluster_message", "model_delta", frame(1, 11, u64(7) + u32(2, 20, 32, 1, 2) +
                                            struct.pack("<5d", 40.0, 0.5, 9.0, 30.0, 400.0) + delta))
put("cluster_message", "average", frame(0, 17, u64(7) + delta))   # overlap = on: a mean change
put("cluster_message", "recall", frame(0, 14, u64(7) + u32(3, 0)))
put("cluster_message", "recalled", frame(1, 15, u64(7) + u32(3, 1)))
put("cluster_message", "ping", frame(1, 0, b""))
