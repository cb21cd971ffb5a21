"""The GPU peer of bench_solve: torch.linalg.solve on the same batch sizes (random float32 systems
A = R + n I on the GPU; host-to-device copies of A and b included, as rlx's runs upload their
inputs), median ms per batch after a warm-up, synchronized. Run on the GPU host: python3 solve_torch.py"""
import statistics
import time

import torch

SIZES = [(1024, 8), (4096, 16), (1024, 32), (256, 64), (128, 128)]


def main(repeat=20):
    dev = torch.device("cuda")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}, median of {repeat} runs (ms per batch)")
    print(f"{'B':>6} {'n':>4} {'torch solve':>12} {'max|Ax-b|':>10}")
    g = torch.Generator().manual_seed(7)
    for B, n in SIZES:
        a = torch.rand(B, n, n, generator=g) - 0.5 + n * torch.eye(n)
        b = torch.rand(B, n, generator=g) - 0.5
        times = []
        for r in range(repeat + 1):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            x = torch.linalg.solve(a.to(dev), b.to(dev))
            xh = x.cpu()
            torch.cuda.synchronize()
            if r:
                times.append((time.perf_counter() - t0) * 1e3)
        res = (a @ xh.unsqueeze(-1)).squeeze(-1) - b
        print(f"{B:>6} {n:>4} {statistics.median(times):>12.3f} {res.abs().max().item():>10.2e}")


if __name__ == "__main__":
    main()
