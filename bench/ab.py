"""Two rlx builds against each other on the zoo models by CPU time per run, for a change's before/after
on a machine that other processes load (where wall-clock times move 2-10x and CPU time far less).

Each round runs, per model, build A then build B (the order swapped every other round) as
`rlx run MODEL --repeat 1+R` and `--repeat 1` (cost_model.py's measure with cpu_time: the difference
over R is one run's CPU time, import and first run excluded); the median over the rounds is printed
per build with B / A. --threads sets RLX_NUM_THREADS for both (default 1: one thread's work, which is
what an idle machine's wall clock shows for one thread); --mode picks rlx's mode (lazy or compiled).
--wall: `rlx run`'s own mean wall-clock time per run instead (an idle machine whose kernel time
varies from process to process: on one, BERT's CPU-time difference gave 150 or 250 ms a run for one
build, its sys time 0.9-2.1 s a process, while `rlx run` reported 245-247 ms each time).

usage: ab.py BUILD_A BUILD_B [--models a,b] [--rounds 3] [--repeat 10] [--threads 1] [--mode lazy]
       [--wall] [--cache DIR]   (BUILD_*: build folders holding rlx, e.g. /work/main/build build)
"""
import argparse
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cost_model import measure, shape_args, zoo_models  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--models", default="")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--mode", default="lazy", choices=["lazy", "compiled", "eager"])
    ap.add_argument("--wall", action="store_true", help="rlx run's wall-clock mean per run, not CPU time")
    ap.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "rlx", "zoo"))
    args = ap.parse_args()
    os.environ["RLX_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ["RLX_MLX_MODE"] = args.mode
    builds = [os.path.join(b, "rlx") for b in (args.a, args.b)]
    only = set(filter(None, args.models.split(",")))
    print(f"A = {builds[0]}, B = {builds[1]}; {args.mode}, {args.threads} thread(s), "
          f"{'wall-clock' if args.wall else 'CPU'} ms per run, "
          f"median of {args.rounds} rounds of {args.repeat} runs; load average {os.getloadavg()[0]:.1f}")
    print("| model | A | B | B / A |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for name, path, feeds in zoo_models(args.cache, only):
            inputs = shape_args(feeds, d, name)
            ms = [[], []]
            for r in range(args.rounds):
                for i in ((0, 1) if r % 2 == 0 else (1, 0)):
                    ms[i].append(measure(builds[i], path, inputs, "cpu", args.repeat, cpu_time=not args.wall))
            a, b = statistics.median(ms[0]), statistics.median(ms[1])
            print(f"| {name} | {a:.3g} | {b:.3g} | {b / a:.2f} |", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
