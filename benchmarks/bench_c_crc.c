/* The C side of benchmarks/bench_c_crc.py: fr_crc32 (c/forensics_run.h) against zlib's crc32() on the
   same buffer, in the same process; best of R passes each. Also the whole fingerprint line (one pass), and
   the same line streamed a 4 KiB page at a time as a driver would. Prints "name bytes seconds" lines. */
#define FORENSICS_RUN_IMPLEMENTATION
#include "forensics_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

static double now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    size_t size = (size_t)(argc > 1 ? atol(argv[1]) : 64) << 20, i;
    int rounds = argc > 2 ? atoi(argv[2]) : 5, r;
    unsigned char *data = (unsigned char *)malloc(size);
    uint64_t x = 0x9e3779b97f4a7c15u;
    double best_fr = 1e9, best_zlib = 1e9, best_xor = 1e9, best_fp = 1e9, best_pages = 1e9;
    char line[FR_FP_LINE_MAX + 1], paged[FR_FP_LINE_MAX + 1];
    uint32_t crc_fr = 0, crc_zlib = 0;
    uint64_t fold = 0;
    if (data == NULL)
        return 3;
    for (i = 0; i < size; i++) {  /* xorshift64: incompressible, not all one value */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data[i] = (unsigned char)x;
    }
    for (r = 0; r < rounds; r++) {
        double t0 = now(), t1, t2, t3, t4, t5;
        fr_fp fp;
        size_t off;
        crc_fr = fr_crc32(0, data, size);
        t1 = now();
        crc_zlib = (uint32_t)crc32(0L, data, (uInt)size);
        t2 = now();
        fold ^= fr_xorfold64(data, size);
        t3 = now();
        if (fr_fingerprint_line(line, sizeof line, "bench", data, size) < 0)
            return 1;
        t4 = now();
        fr_fp_begin(&fp, size);
        for (off = 0; off < size; off += 4096)
            fr_fp_update(&fp, data + off, size - off < 4096 ? size - off : 4096);
        if (fr_fp_final(&fp, paged, sizeof paged, "bench") < 0)
            return 1;
        t5 = now();
        if (t1 - t0 < best_fr) best_fr = t1 - t0;
        if (t2 - t1 < best_zlib) best_zlib = t2 - t1;
        if (t3 - t2 < best_xor) best_xor = t3 - t2;
        if (t4 - t3 < best_fp) best_fp = t4 - t3;
        if (t5 - t4 < best_pages) best_pages = t5 - t4;
    }
    if (crc_fr != crc_zlib) {
        fprintf(stderr, "fr_crc32 0x%08lx != zlib 0x%08lx\n", (unsigned long)crc_fr, (unsigned long)crc_zlib);
        return 1;
    }
    if (strcmp(line, paged) != 0) {
        fprintf(stderr, "streamed line differs:\n%s\n%s\n", line, paged);
        return 1;
    }
    printf("fr_fingerprint_line %lu %.6f\nfr_fp_pages %lu %.6f\n", (unsigned long)size, best_fp,
           (unsigned long)size, best_pages);
    printf("fr_crc32 %lu %.6f\nzlib_crc32 %lu %.6f\nfr_xorfold64 %lu %.6f\ncheck 0x%08lx %016llx\n",
           (unsigned long)size, best_fr, (unsigned long)size, best_zlib, (unsigned long)size, best_xor,
           (unsigned long)crc_fr, (unsigned long long)fold);
    return 0;
}
