/* The command workload of scripts/sensitivity.sh: a loop of WORK_ITERS steps
 * (default 2,000,000) that times itself and prints `ns=N`; an env= variant
 * asking for 2% more steps is the planted change. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(void) {
    const char *e = getenv("WORK_ITERS");
    long n = e ? atol(e) : 2000000;
    volatile unsigned long x = 1;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("steps=%ld ns=%ld\n", n, (long)(b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec));
    return 0;
}
