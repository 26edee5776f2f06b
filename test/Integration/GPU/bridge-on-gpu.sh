#!/usr/bin/env bash
# Runs the PyTorch bridge on the GPU machine, with the libraries built on the
# development machine and staged into python/offload_mlir/_lib
# (scripts/stage-python.sh; carry that folder). Writes logs and results to
# $OUT (or ./bridge-gpu-out). Usage: bridge-on-gpu.sh [calibrate] [ops] [smoke] [csan] [stress] [bench] [peers] [paired]
# `peers` runs python -m benchmarks.peers (PEERS_CONFIG, PEERS_ROWS, PEERS_ARGS;
# carry bench-deps/ from scripts/fetch-bench-deps.sh for its torchtune row).
# `paired` runs its --paired mode (PEERS_CONFIG, PAIRED_ROWS, default
# compile,offload-mlir; PAIRED_ARGS, default --steps 60).
# `calibrate` writes $OUT/h100-calibrated.json, or h200-calibrated.json on an
# H200 (and its .details.json); a later `bench` plans its `<config>+calibrated`
# rows with it (with CALIBRATE_INSTALL=1, every row and every later stage: it
# replaces the packaged profile the bridge uses on that GPU). BENCH_DUMP=1 keeps the exported IR of each graph.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-$PWD/bridge-gpu-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUBLAS_WORKSPACE_CONFIG=:4096:8 CI=true
B=python/benchmarks/bridge_gpu.py
SMALL="--hidden 512 --heads 8 --kv-heads 4 --ffn 1536 --vocab 8192 --layers 2 --batch 4 --seq 512"
stages=${*:-smoke csan bench}
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name())"
# $OUT/NAME, or NAME-2, NAME-3, ... where an earlier stage of this call (a
# loop over PAIRED_ROWS, say) already wrote NAME.json.
fresh() { local n=$1 k=1; while [ -e "$OUT/$n.json" ]; do k=$((k + 1)); n=$1-$k; done
          echo "$OUT/$n"; }
for stage in $stages; do
  case $stage in
    calibrate) gpu=$(python3 -c "import torch; n = torch.cuda.get_device_name(); print('h200' if 'H200' in n else 'h100')")
               name=$([ "$gpu" = h100 ] && echo h100-sxm-calibrated || echo $gpu-calibrated)
               PYTHONPATH=python python3 -m offload_mlir.calibrate -o "$OUT/$gpu-calibrated.json" \
                 --name "$name" 2>&1 | tee "$OUT/calibrate.log"
               export BENCH_CALIBRATED_PROFILE="$OUT/$gpu-calibrated.json"
               # CALIBRATE_INSTALL=1: the bridge's default profile for this GPU
               # (python/offload_mlir/profiles/h100.json or h200.json) is this one.
               [ "${CALIBRATE_INSTALL:-0}" = 1 ] &&
                 cp "$OUT/$gpu-calibrated.json" "python/offload_mlir/profiles/$gpu.json" ;;
    ops)   python3 -m pytest -q python/tests/bridge/test_torch_ops.py 2>&1 | tail -5 ;;
    smoke) BRIDGE_DUMP_CODE=$OUT TORCHINDUCTOR_FX_GRAPH_CACHE=0 python3 $B $SMALL \
             --configs inductor,all --steps 4 --warmup 2 \
             --out "$OUT/bridge-small" 2>&1 | tee "$OUT/smoke.log" ;;
    csan)  # The bridge's plan under PyTorch's CUDA sanitizer: the rebuilt graphs
           # op by op, each copy as a PyTorch stream copy (csan_plan.py says what
           # that covers); exits non-zero on a report, or if the control with
           # the loads' waits dropped is not caught.
           PYTHONPATH=python python3 python/benchmarks/csan_plan.py \
             --out "$OUT/csan-plan-small.json" 2>&1 | tee "$OUT/csan.log"
           PYTHONPATH=python python3 python/benchmarks/csan_plan.py --hidden 4096 --heads 32 \
             --kv-heads 8 --ffn 14336 --vocab 128256 --batch 8 --seq 1024 --layers 2 \
             --out "$OUT/csan-plan-8b-2layers.json" 2>&1 | tee -a "$OUT/csan.log" ;;
    stress) # Every copy held on its stream (OFFLOAD_RT_COPY_DELAY_US) and every
            # loaded buffer poisoned first: bit-identical gradients mean no
            # consumer ran before its load's wait and no source was reused before
            # its offload's wait. The controls drop those waits and must differ.
           ( export OFFLOAD_MLIR_POISON=1 OFFLOAD_RT_COPY_DELAY_US=${STRESS_DELAY_US:-2000}
             python3 $B $SMALL --configs inductor,hidden,all --steps 3 --warmup 1 \
               --out "$OUT/stress-small" 2>&1 | tee "$OUT/stress.log"
             for w in load_wait offload_wait; do
               OFFLOAD_MLIR_SKIP_WAITS=$w python3 $B $SMALL --configs inductor,all --steps 3 \
                 --warmup 1 --out "$OUT/stress-small-skip-$w" 2>&1 | tee -a "$OUT/stress.log"
             done
             # Llama-3-8B-shaped layers: copies of 64-224 MiB, Inductor's real reuse.
             OFFLOAD_RT_COPY_DELAY_US=${STRESS_LARGE_DELAY_US:-10000} python3 $B \
               --layers 2 --configs inductor,hidden,all --steps 3 --warmup 1 \
               --out "$OUT/stress-2layers" 2>&1 | tee -a "$OUT/stress.log" )
           grep -E "vs inductor" "$OUT/stress.log" ;;
    bench) [ "${BENCH_DUMP:-0}" = 1 ] && export OFFLOAD_MLIR_DUMP_DIR="$OUT/ir"
           python3 $B --configs "${BENCH_CONFIGS:-inductor,hidden,all,budget=0.75}" \
             --layers "${BENCH_LAYERS:-2}" --out "$OUT/bridge-h100" 2>&1 | tee "$OUT/bench.log" ;;
    peers) export OFFLOAD_MLIR_TORCHTUNE=$(ls bench-deps/torchtune-*.whl 2>/dev/null | head -1)
           cfg=${PEERS_CONFIG:-bf16x8}
           [ "${BENCH_DUMP:-0}" = 1 ] && export OFFLOAD_MLIR_DUMP_DIR="$OUT/ir-$cfg"
           out=$(fresh "peers-$cfg")
           PYTHONPATH=python python3 -m benchmarks.peers --config "$cfg" \
             ${PEERS_ROWS:+--rows "$PEERS_ROWS"} ${PEERS_ARGS:-} --out "$out" \
             2>&1 | tee "$out.log" ;;
    paired) cfg=${PEERS_CONFIG:-bf16x8}
            out=$(fresh "paired-$cfg")
            PYTHONPATH=python python3 -m benchmarks.peers --config "$cfg" \
              --paired "${PAIRED_ROWS:-compile,offload-mlir}" ${PAIRED_ARGS:---steps 60} \
              --out "$out" 2>&1 | tee "$out.log" ;;
  esac
done
rm -f "$OUT"/*.md "$OUT"/smoke.log  # the .json files hold the same figures
