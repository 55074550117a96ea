#!/bin/sh
# The one device run: builds the CUDA check when nvcc is there (else uses the one carried in
# build/cuda), runs the parity tests of the CUDA GRU against dpd's CPU reference kernels, and
# times GRU training steps, eager and as a CUDA graph. Prints a short table. Must finish well
# under 8 minutes on one GPU.
set -u
cd "$(dirname "$0")/.."
echo "== host: $(uname -m), $(nproc) CPUs"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: unavailable"
if [ ! -x build/cuda/check ] && command -v nvcc >/dev/null 2>&1; then
    make -s all cuda >/dev/null 2>&1 || echo "build failed"
fi
if [ ! -x build/cuda/check ]; then
    echo "no build/cuda/check: build it with 'make cuda' and carry build/cuda"
    exit 1
fi
timeout 420 build/cuda/check
