"""bench/cost_model.py end to end on two op microbenchmarks (100 runs each: CPU-time differences of
two processes need some 100 ms of work to stay clear of the processes' own variation): the wall-clock mode and --cpu-time (one
thread, CPU-time calibration and timings), each writing its JSON rows with positive predicted and
measured times; and --budget-s, which starts no model once the budget is spent. Quick calibrations
(RLX_CALIBRATE_QUICK) in a temporary cache. usage: test_cost_model_bench.py RLX"""
import json
import os
import subprocess
import sys
import tempfile

RLX = sys.argv[1]
BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "cost_model.py")
failures = 0


def check(ok, what):
    global failures
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {what}")


with tempfile.TemporaryDirectory() as d:
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(d, "xdg"), RLX_CALIBRATE_QUICK="1")
    for mode in ([], ["--cpu-time"]):
        out = os.path.join(d, "rows.json")
        r = subprocess.run([sys.executable, BENCH, RLX, "--no-zoo", "--models", "add_1M,matmul_128x512x512", "--rounds", "1",
                            "--repeat", "100", "--json", out, *mode], capture_output=True, text=True, env=env)
        check(r.returncode == 0, f"cost_model.py {' '.join(mode)} exits 0 ({r.stderr.strip()[-300:]})")
        rows = json.load(open(out)) if os.path.exists(out) else []
        check(sorted(x["model"] for x in rows) == ["add_1M", "matmul_128x512x512"], f"{' '.join(mode)}: a row per model: {rows}")
        check(all(x["cpu_pred_ms"] > 0 and x["cpu_meas_ms"] > 0 for x in rows), "predicted and measured times are positive")
        check("micro on cpu: " in r.stdout and "predicted within 2x of measured" in r.stdout, "the summary line")
        if mode:
            check(", 1 threads" in r.stdout, "--cpu-time calibrates one thread")
    r = subprocess.run([sys.executable, BENCH, RLX, "--no-zoo", "--models", "add_1M", "--budget-s", "0.001"],
                       capture_output=True, text=True, env=env)
    check(r.returncode == 0 and "skipped add_1M" in r.stdout, f"--budget-s: nothing starts past the budget ({r.stdout[-200:]})")

sys.exit(1 if failures else 0)
