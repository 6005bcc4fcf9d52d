#!/usr/bin/env bash
# Install the AutoML peers of benchmarks/vs_automl.py, each in its own venv under .bench/
# (gitignored). They are benchmark-only: nothing here touches mlguild's own .venv.
#
#   benchmarks/peers/setup.sh              # both peers
#   benchmarks/peers/setup.sh flaml        # one of them
#   PYTHON=python3.12 benchmarks/peers/setup.sh autogluon
#   BENCH_DIR=/somewhere/else benchmarks/peers/setup.sh
#
# Measured on a 2-core machine with a local wheel cache (Python 3.11):
#   .bench/flaml       ~30 s, ~420 MB  (FLAML 2.8.0, lightgbm, xgboost-cpu 2.1, scikit-learn, pandas 3)
#   .bench/autogluon   ~70-120 s, ~2.2 GB  (autogluon.tabular 1.6.3 with lightgbm, catboost, xgboost-cpu,
#                                       fastai and torch 2.13.0+cpu for its neural networks)
#
# Why these exact requirements:
# * FLAML's [automl] extra asks for plain `xgboost<3`, whose Linux wheel drags in several GB of
#   CUDA libraries. We install the extra's packages by hand with `xgboost-cpu<3` instead (same
#   `xgboost` module, same bound). catboost is not in that extra, so it is not installed either
#   (FLAML would add it to its search if it were: `pip install 'flaml[automl,catboost]'`).
# * AutoGluon's default install (`pip install autogluon`) is tabular[all] plus multimodal and
#   timeseries. For tabular, presets="medium_quality" trains LightGBM, CatBoost, XGBoost, random
#   forest, extra trees and two neural networks (its own torch MLP and fastai): the extras
#   below are exactly those. On Linux autogluon.tabular 1.6 already asks for xgboost-cpu.
#   torch is pinned to 2.13.0 so pip takes the CPU-only wheel (an unpinned torch pulls CUDA).
#   AutoGluon 1.6 requires pandas < 2.4, so this venv has pandas 2.3 while the FLAML venv has 3.x.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BENCH_DIR="${BENCH_DIR:-$ROOT/.bench}"
PYTHON="${PYTHON:-python3.11}"
FLAML_VERSION="${FLAML_VERSION:-2.8.0}"
AUTOGLUON_VERSION="${AUTOGLUON_VERSION:-1.6.3}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"

peers=("$@")
[ ${#peers[@]} -eq 0 ] && peers=(flaml autogluon)

fresh_venv() {   # $1 = name; (re)creates $BENCH_DIR/$1 with an up-to-date pip
    local dir="$BENCH_DIR/$1"
    rm -rf "$dir"
    mkdir -p "$BENCH_DIR"
    "$PYTHON" -m venv "$dir"
    "$dir/bin/python" -m pip install -q --upgrade pip
}

install_flaml() {
    fresh_venv flaml
    "$BENCH_DIR/flaml/bin/python" -m pip install -q "flaml==$FLAML_VERSION" \
        numpy pandas scipy scikit-learn lightgbm "xgboost-cpu<3.0.0" pyyaml
    "$BENCH_DIR/flaml/bin/python" -c "import flaml, lightgbm, xgboost, sklearn; print('flaml', flaml.__version__, 'ok')"
}

install_autogluon() {
    fresh_venv autogluon
    "$BENCH_DIR/autogluon/bin/python" -m pip install -q \
        "autogluon.tabular[lightgbm,catboost,xgboost,fastai]==$AUTOGLUON_VERSION" "torch==$TORCH_VERSION" pyyaml
    "$BENCH_DIR/autogluon/bin/python" -c "import autogluon.tabular, torch; print('autogluon', autogluon.tabular.__version__, 'torch', torch.__version__, 'ok')"
}

status=0
for peer in "${peers[@]}"; do
    start=$SECONDS
    echo "== installing $peer into $BENCH_DIR/$peer"
    case "$peer" in
        flaml) install_flaml || { echo "!! flaml install failed"; status=1; } ;;
        autogluon) install_autogluon || { echo "!! autogluon install failed; vs_automl.py will skip it"; rm -rf "$BENCH_DIR/autogluon"; status=1; } ;;
        *) echo "unknown peer '$peer' (choose flaml or autogluon)"; exit 2 ;;
    esac
    [ -d "$BENCH_DIR/$peer" ] && echo "   $peer: $((SECONDS - start)) s, $(du -sh "$BENCH_DIR/$peer" | cut -f1)"
done
exit $status
