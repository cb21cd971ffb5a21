#!/bin/sh
# On the GPU machine, from a checkout with a CUDA build of rlx in build/ (README, "GPU"; the lead's
# campaign links build/ to .gpubuild/build and .venv/bin/python to python3): the cost model's
# validation on both devices (bench/cost_model.py): `rlx calibrate --force` on the CPU and the GPU,
# then predicted vs measured time per run for the zoo models there (the classics BERT-base, GPT-2,
# ResNet-50 at batch 1 and 8 that bench/zoo/classics.py writes; packaged models that are not
# installed are skipped) and the op microbenchmarks, two interleaved rounds each; prints the table,
# the share predicted within 2x per device and whether the predicted faster device is the
# measured one (naming the models it got wrong); rows also in cost_model_gpu.json. No model starts
# after 400 s, so it ends within about 7 minutes (zoo first). Environment: RLX (default build/rlx),
# PY (Python with numpy and onnx; default .venv/bin/python). Arguments go to bench/cost_model.py
# (e.g. --rounds 3, --no-micro, --models bert,resnet50, --budget-s 0).
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
rlx=${RLX:-$root/build/rlx}
"$rlx" version
exec "${PY:-$root/.venv/bin/python}" "$root/bench/cost_model.py" "$rlx" --device both --rounds 2 --budget-s 400 \
  --json cost_model_gpu.json "$@"
