/* cuda_smem: the fused kernels' dynamic shared memory, read from providers/common/host.c's own
 * host_fused_floats (not restated here), for tests/cuda_gate.sh. For each family with fused
 * kernels and each hidden size 1..HOST_FUSED, at frames of T samples: the bytes a training step
 * and an evaluation need, and the longest sequence each takes within LIMIT bytes.
 * Usage: cuda_smem T LIMIT; prints "family hidden train_bytes eval_bytes train_max_T eval_max_T". */
#include <stdio.h>
#include <stdlib.h>

#include "../providers/common/host.h"

/* The longest T whose need fits limit bytes (0: none), by bisection (the need grows with T). */
static long longest(const char *f, int h, int train, size_t limit) {
    long lo = 0, hi = 1 << 20;
    while (lo < hi) {
        long mid = (lo + hi + 1) / 2;
        if (host_fused_floats(f, h, (int)mid, train) * 4 <= limit) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

int main(int argc, char **argv) {
    static const char *const fam[] = {"gru", "lstm", "dgru", "tres_gru", "rvtdcnn"};
    if (argc != 3) return fprintf(stderr, "usage: cuda_smem T LIMIT\n"), 2;
    int T = atoi(argv[1]);
    size_t limit = (size_t)atol(argv[2]);
    for (size_t f = 0; f < sizeof fam / sizeof *fam; f++)
        for (int h = 1; h <= HOST_FUSED; h++) {
            size_t tr = host_fused_floats(fam[f], h, T, 1) * 4, ev = host_fused_floats(fam[f], h, T, 0) * 4;
            if (!tr || !ev) return fprintf(stderr, "cuda_smem: %s-%d has no fused kernels\n", fam[f], h), 1;
            printf("%s %d %zu %zu %ld %ld\n", fam[f], h, tr, ev, longest(fam[f], h, 1, limit), longest(fam[f], h, 0, limit));
        }
    return 0;
}
