"""Installs rlx into a temporary prefix (`cmake --install`) and builds a consumer of it twice: a
CMake project using find_package(rlx) (shared and static library) and a plain compiler command
from `pkg-config --cflags --libs rlx`. Each consumer is examples/embed.c (the README's program);
its output y = relu(x @ w + b) is checked against numpy, and the expected error it provokes
against its documented code. The installed `rlx` CLI must run too; built with RLX_DEPS_PREFIX
(scripts/bootstrap.sh's RLX_DEBS), it must load protobuf-c, cJSON and SLEEF from DEPS_LIBDIR (those there).
Usage: test_install.py BUILD_DIR SOURCE_DIR C_COMPILER CXX_COMPILER GENERATOR [DEPS_LIBDIR]"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

build, src, cc, cxx, generator = sys.argv[1:6]
deps_libdir = sys.argv[6] if len(sys.argv) > 6 else ""
failures = 0


def check(cond, what, detail=""):
    global failures
    print(("ok   " if cond else "FAIL ") + what + ("" if cond else "\n" + detail))
    failures += 0 if cond else 1


def sh(*cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        print(f"$ {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r


x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
w = np.array([[1, -1], [0, 1], [0.5, -0.5]], np.float32)
want = np.maximum(x @ w + np.array([0.5, -1], np.float32), 0).ravel()


def check_embed(exe, what):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "RLX_MLX_MODE")}
    r = subprocess.run([exe], capture_output=True, text=True, env=env)
    got = [float(v) for v in re.findall(r"^y\[\d+\] = (\S+)$", r.stdout, re.M)]
    check(r.returncode == 0 and len(got) == want.size and np.allclose(got, want), f"{what}: y matches numpy",
          r.stdout + r.stderr)
    check("expected error: INVALID_ARGUMENT" in r.stdout and "int32" in r.stdout and "float32" in r.stdout,
          f"{what}: the provoked error names its code and both types", r.stdout)


# the README's "Use rlx from C" program is examples/embed.c, verbatim
readme = open(os.path.join(src, "README.md")).read()
embed = open(os.path.join(src, "examples", "embed.c")).read()
check("```c\n" + embed + "```" in readme, "README shows examples/embed.c verbatim")

with tempfile.TemporaryDirectory() as d:
    prefix = os.path.join(d, "prefix")
    r = sh("cmake", "--install", build, "--prefix", prefix)
    check(r.returncode == 0, "cmake --install")
    lib = os.path.join(prefix, "lib")
    check(os.path.islink(os.path.join(lib, "librlx.so.0")) and os.path.exists(os.path.join(lib, "librlx.a")),
          "librlx.so.0 (SONAME link) and librlx.a installed")
    # the installed tree must not depend on the build tree
    for f in [os.path.join(lib, "librlx.so"), os.path.join(prefix, "bin", "rlx")]:
        rp = sh("readelf", "-d", f).stdout
        check(build not in rp, f"{os.path.basename(f)}: no run path into the build tree", rp)
    if os.path.isdir(os.path.join(lib, "rlx", "mlx")):  # libmlx.so bundled: relocatable, no venv path
        rp = sh("readelf", "-d", os.path.join(lib, "librlx.so")).stdout
        check(".venv" not in rp and "site-packages" not in rp, "librlx.so: no run path into the virtual environment", rp)
        moved = os.path.join(d, "moved")
        os.rename(prefix, moved)
        r = sh(os.path.join(moved, "bin", "rlx"), "version")
        check(r.returncode == 0 and r.stdout.startswith("rlx "), "the installed tree runs after a move", r.stdout + r.stderr)
        os.rename(moved, prefix)
    r = sh(os.path.join(prefix, "bin", "rlx"), "version")
    check(r.returncode == 0 and r.stdout.startswith("rlx "), "installed rlx CLI runs", r.stdout + r.stderr)
    if deps_libdir:
        env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        ldd = subprocess.run(["ldd", os.path.join(prefix, "bin", "rlx")], capture_output=True, text=True, env=env).stdout
        for name in [n for n in ("libprotobuf-c.so", "libcjson.so", "libsleef.so") if os.path.exists(os.path.join(deps_libdir, n))]:
            got = re.search(rf"^\s*{re.escape(name)}\S* => (\S+)", ldd, re.M)
            check(got is not None and os.path.dirname(got.group(1)) == deps_libdir,
                  f"installed rlx loads {name} from {deps_libdir}", ldd)

    # 1. find_package(rlx)
    cb = os.path.join(d, "consumer")
    r = sh("cmake", "-S", os.path.join(src, "tests", "install"), "-B", cb, "-G", generator, f"-DCMAKE_C_COMPILER={cc}", f"-DCMAKE_CXX_COMPILER={cxx}",
           f"-DCMAKE_PREFIX_PATH={prefix}", f"-DRLX_EXAMPLE={os.path.join(src, 'examples', 'embed.c')}")
    check(r.returncode == 0, "consumer configures with find_package(rlx)")
    r = sh("cmake", "--build", cb)
    check(r.returncode == 0, "consumer builds (C17 and C++17, -Wall -Wextra -Werror -pedantic)", r.stdout + r.stderr)
    if r.returncode == 0:
        check_embed(os.path.join(cb, "embed_shared"), "find_package, rlx::rlx")
        check_embed(os.path.join(cb, "embed_static"), "find_package, rlx::rlx_static")
        r = sh(os.path.join(cb, "api_cxx17"))
        check(r.returncode == 0 and "c++17 ok" in r.stdout, "C++17 program (RLX_ATTR_* macros, arrays without casts) runs")

    # 2. pkg-config
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(lib, "pkgconfig"))
    pc = sh("pkg-config", "--cflags", "--libs", "rlx", env=env)
    libdir = sh("pkg-config", "--variable=libdir", "rlx", env=env).stdout.strip()
    check(pc.returncode == 0 and "-lrlx" in pc.stdout, "pkg-config --cflags --libs rlx", pc.stdout + pc.stderr)
    # a dropped status is a compile-time warning (RLX_MUST_USE)
    drop = os.path.join(d, "drop.c")
    with open(drop, "w") as f:
        f.write("#include <rlx/rlx.h>\nint main(void) {\n  rlx_graph_create(NULL);\n  return 0;\n}\n")
    r = subprocess.run([cc, "-c", "-Wall", "-Werror", drop, "-o", os.devnull, *pc.stdout.split()], capture_output=True, text=True)
    check(r.returncode != 0 and "unused-result" in r.stderr, "a dropped status does not compile under -Werror", r.stderr)
    exe = os.path.join(d, "embed_pc")
    r = sh(cc, "-std=c17", "-Wall", "-Wextra", "-Werror", "-pedantic", os.path.join(src, "examples", "embed.c"), "-o", exe,
           *pc.stdout.split(), f"-Wl,-rpath,{libdir}")
    check(r.returncode == 0, "consumer builds with pkg-config's flags", r.stdout + r.stderr)
    if r.returncode == 0:
        check_embed(exe, "pkg-config")

print(f"{failures} failures")
sys.exit(1 if failures else 0)
