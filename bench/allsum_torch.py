"""PyTorch's NCCL all_reduce bus bandwidth, the peer of bench_allsum on GPUs (scripts/gpu/allsum.sh).

usage: allsum_torch.py [--ranks 2] [--min-mib 1] [--max-mib 1024] [--rounds 7] [--rlx FILE] [--uploaded FILE]

Spawns one process per GPU (torch.multiprocessing), joins a torch.distributed NCCL group over
127.0.0.1, and times dist.all_reduce (SUM, in place) of float32 tensors from --min-mib to --max-mib
by factors of 4: per size, --rounds rounds of max(5, min(50, 256 MiB / bytes)) calls each (one
torch.cuda.synchronize after them; bench_allsum --device gpu uses the same count), median per
call, busbw = bytes / time * 2 (n - 1) / n (the NCCL tests' convention). With --rlx FILE (the
output of bench_allsum --pipelined run on the same GPUs) it adds rlx's graph AllReduce and MLX's
all_sum and their ratios to PyTorch's busbw; with --uploaded FILE (bench_allsum --variants mlx
--peer-input uploaded) MLX's all_sum on an input uploaded from the host as well.
NCCL_NVLS_ENABLE=0 is forced.
"""
import argparse
import os
import re
import socket
import statistics
import time

os.environ["NCCL_NVLS_ENABLE"] = "0"
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402


def worker(rank, n, port, sizes, rounds, q):
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n)
    res = []
    for nbytes in sizes:
        x = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda")
        iters = max(5, min(50, (256 << 20) // nbytes))
        for _ in range(3):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(rounds):
            dist.barrier()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(x)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) / iters)
        res.append((nbytes, statistics.median(times)))
    if rank == 0:
        q.put(res)
    dist.destroy_process_group()


def rlx_table(path):
    """bytes -> (graph, mlx) seconds per call from bench_allsum's rank-0 table (None: not run)."""
    out = {}
    for line in open(path):
        f = re.sub(r"^\[0\]\s*", "", line).split()
        if len(f) >= 4 and f[0].isdigit():
            out[int(f[0])] = tuple(None if v == "-" else float(v) * 1e-6 for v in f[2:4])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--min-mib", type=int, default=1)
    ap.add_argument("--max-mib", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--rlx")
    ap.add_argument("--uploaded")
    a = ap.parse_args()
    sizes = []
    s = a.min_mib << 20
    while s <= a.max_mib << 20:
        sizes.append(s)
        s *= 4
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    q = mp.get_context("spawn").SimpleQueue()
    mp.spawn(worker, args=(a.ranks, port, sizes, a.rounds, q), nprocs=a.ranks, join=True)
    res = q.get()
    rlx = rlx_table(a.rlx) if a.rlx else {}
    up = rlx_table(a.uploaded) if a.uploaded else {}
    f = 2.0 * (a.ranks - 1) / a.ranks
    print(f"all_reduce SUM float32 over {a.ranks} GPUs ({torch.cuda.get_device_name(0)}), torch {torch.__version__} NCCL "
          f"{'.'.join(map(str, torch.cuda.nccl.version()))}, NCCL_NVLS_ENABLE=0; median of {a.rounds} rounds; busbw GB/s")
    print(f"{'bytes':>12} {'torch us':>10} {'torch':>8} {'rlx graph':>10} {'MLX':>8} {'MLX upl.':>9} {'graph/torch':>12} "
          f"{'MLX/torch':>10} {'upl./torch':>11}")

    def bw(nbytes, t):
        return nbytes / t * f / 1e9 if t else float("nan")

    for nbytes, t in res:
        tb = bw(nbytes, t)
        g, m = rlx.get(nbytes, (None, None))
        u = up.get(nbytes, (None, None))[1]
        gb, mb, ub = bw(nbytes, g), bw(nbytes, m), bw(nbytes, u)
        print(f"{nbytes:>12} {t * 1e6:>10.1f} {tb:>8.1f} {gb:>10.1f} {mb:>8.1f} {ub:>9.1f} {gb / tb:>12.2f} {mb / tb:>10.2f} "
              f"{ub / tb:>11.2f}")


if __name__ == "__main__":
    main()
