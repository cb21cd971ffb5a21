"""Faults (dist_fault.c): a rank killed or stopped mid-run under `rlx launch`; every other rank
must return an error status from its run within a bound, never hang.

usage: fault_test.py RLX DIST_FAULT [--mpi]
Cases: 4 ring ranks, rank 2 killed (SIGKILL) at step 3: the survivors detect it through the closed
connections (bound 5 s); 2 ring ranks, rank 1 stopped (SIGSTOP) at step 3: the survivor's run
fails when the group timeout (3 s) expires (bound 3 + 5 s), once with runs and once with
asynchronous commits (the sync of the committed run is what waits). The survivors exit with status
3 ("detected in time"); the launcher kills the victim and reports every status.
With --mpi, the one MPI case instead: 2 ranks under mpirun, rank 1 killed at step 3. Open MPI's
mpirun, not rlx, decides what happens then: it terminates every other rank at once (they get no
error status to return) and exits non-zero; the case checks that the job ends within 15 s.
"""
import re
import subprocess
import sys
import time


def case(rlx, prog, n, how, timeout, victim, commit=False):
    t0 = time.monotonic()
    r = subprocess.run([rlx, "launch", "-n", str(n), "--grace", "1", "--", prog, "--victim", str(victim), "--at", "3",
                        "--how", how, "--timeout", str(timeout), "--commit", str(int(commit))], capture_output=True, text=True,
                       timeout=120)
    wall = time.monotonic() - t0
    out = r.stdout + r.stderr
    print("\n".join(l for l in out.splitlines() if "Socket" not in l))
    bad = []
    if r.returncode not in (3, 137):  # the first rank to end: the victim (killed) or a survivor
        bad.append(f"launcher exit status {r.returncode}, expected 137 (the victim's SIGKILL) or 3")
    if f"rank {victim} was killed by signal 9" not in out:
        bad.append("the victim was not killed")
    for rank in range(n):
        if rank == victim:
            continue
        m = re.search(rf"rank {rank}: detected after ([0-9.]+) s", out)
        if not m:
            bad.append(f"rank {rank} reported no error")
        elif float(m.group(1)) > timeout + 5:
            bad.append(f"rank {rank} detected after {m.group(1)} s")
        if f"rank {rank} exited with status 3" not in out:
            bad.append(f"rank {rank} did not exit with status 3")
    print(f"{n} ranks, victim {how}{', commits' if commit else ''}: {wall:.1f} s, {'ok' if not bad else 'FAILED: ' + '; '.join(bad)}")
    return not bad


def case_mpi(rlx, prog):
    t0 = time.monotonic()
    r = subprocess.run([rlx, "launch", "-n", "2", "--backend", "mpi", "--", prog, "--victim", "1", "--at", "3", "--how", "exit",
                        "--timeout", "5"], capture_output=True, text=True, timeout=120)
    wall = time.monotonic() - t0
    out = r.stdout + r.stderr
    print("\n".join(l for l in out.splitlines() if l.strip("-")))
    bad = []
    if "rank 1: killing itself" not in out:
        bad.append("the victim did not run")
    if r.returncode == 0:
        bad.append("the job exited with status 0")
    if wall > 15:
        bad.append(f"the job took {wall:.1f} s")
    print(f"mpi, 2 ranks, victim exit: {wall:.1f} s, status {r.returncode}, {'ok' if not bad else 'FAILED: ' + '; '.join(bad)}")
    return not bad


def main():
    rlx, prog = sys.argv[1:3]
    if sys.argv[3:] == ["--mpi"]:
        return 0 if case_mpi(rlx, prog) else 1
    ok = case(rlx, prog, 4, "exit", 30, 2)
    ok &= case(rlx, prog, 2, "stop", 3, 1)
    ok &= case(rlx, prog, 2, "stop", 3, 1, commit=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
