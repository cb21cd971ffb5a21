"""`rlx launch` and rlx_dist_init errors: rank-prefixed output, exit statuses, and clear messages
for a bad hostfile, a world size that does not match, an unknown backend, a port in use, a rank
that never starts (init timeout), and strict init without a launcher.

usage: launch_test.py RLX DIST_COLLECTIVES TMPDIR
"""
import json
import os
import socket
import subprocess
import sys

bad = 0


def run(args, env=None, timeout=60):
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
    return r.returncode, r.stdout + r.stderr


def expect(name, got_rc, out, rc, text):
    global bad
    ok = (rc is None or got_rc == rc) and text in out
    print(f"{name}: {'ok' if ok else 'FAILED'} (status {got_rc})")
    if not ok:
        print(f"  expected status {rc} and '{text}' in:\n{out}")
        bad += 1


def main():
    rlx, prog, tmp = sys.argv[1:4]
    os.makedirs(tmp, exist_ok=True)
    sh = "/bin/sh"
    rc, out = run([rlx, "launch", "-n", "3", "--", sh, "-c", 'echo "hello $MLX_RANK of $MLX_WORLD_SIZE"; exit $MLX_RANK'])
    expect("prefixed output", rc, out, None, "[2] hello 2 of 3")
    expect("failing ranks reported", rc, out, None, "rank 1 exited with status 1")
    expect("status of the first failing rank", rc, out, rc if rc in (1, 2) else -1, "rank 2 exited with status 2")
    rc, out = run([rlx, "launch", "-n", "2", "--backend", "tcp", "--", sh])
    expect("unknown backend", rc, out, 2, "unknown backend 'tcp' (expected ring, mpi or nccl)")
    hf = os.path.join(tmp, "hosts.json")
    with open(hf, "w") as f:
        json.dump([["127.0.0.1:0"], ["127.0.0.1:0"]], f)
    rc, out = run([rlx, "launch", "-n", "3", "--hostfile", hf, "--", sh])
    expect("world size mismatch", rc, out, 2, "-n 3 does not match the 2 ranks of the hostfile")
    with open(hf, "w") as f:
        f.write('[["127.0.0.1:5000"], "x"]')
    rc, out = run([rlx, "launch", "--hostfile", hf, "--", sh])
    expect("bad hostfile", rc, out, 2, "rank 1 has no \"host:port\" address")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    with open(hf, "w") as f:
        json.dump([[f"127.0.0.1:{port}"], ["127.0.0.1:1"]], f)
    rc, out = run([rlx, "launch", "--hostfile", hf, "--", sh])
    expect("port in use", rc, out, 2, f"port of '127.0.0.1:{port}' (rank 0) is in use")
    busy.close()
    # the library's own checks, without the launcher
    with open(hf, "w") as f:
        json.dump([["127.0.0.1:1"], ["127.0.0.1:2"]], f)
    rc, out = run([prog, "--strict"], {"MLX_HOSTFILE": hf, "MLX_RANK": "2"})
    expect("rank outside the hostfile", rc, out, 1, "MLX_RANK='2' is not an integer in [0, 2)")
    with open(hf, "w") as f:
        f.write("[[1]]")
    rc, out = run([prog, "--strict"], {"MLX_HOSTFILE": hf, "MLX_RANK": "0"})
    expect("hostfile entry not a string", rc, out, 1, "is not \"host:port\"")
    rc, out = run([prog, "--strict"])
    expect("strict without a launcher", rc, out, 1, "strict distributed init: no launcher found")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    free = s.getsockname()[1]
    s.close()
    with open(hf, "w") as f:
        json.dump([[f"127.0.0.1:{free}"], ["127.0.0.1:1"]], f)
    rc, out = run([prog, "--strict"], {"MLX_HOSTFILE": hf, "MLX_RANK": "0", "RLX_DIST_TIMEOUT": "2"})
    expect("a rank that never starts", rc, out, 1, "no ring connection within 2 s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
