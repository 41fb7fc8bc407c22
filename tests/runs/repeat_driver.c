/* repeat_driver: a driver's test console that runs one job N times and writes each as a forensics run with
   c/forensics_run.h (tests/runs/test_repeat.py builds it). The "device" writes the job's output into one DMA
   buffer that lives across jobs, as a driver's output allocation does; the driver copies it into the run.

     repeat_driver DIR N MODE [K]

   Each run DIR/run-<i> (i = 1..N, not zero-padded) holds input (the same 320 bytes every job) and
   raw:convert_scores (2,034 anchors of 4 lanes: the value lane = (anchor * 7 + 3) % 251, lane 1 = 255 - that,
   lanes 2-3 the pad bytes 0x80 0x80). MODE:
     clean   every job right;
     cold    job 1 finds the device not started: the driver copies the DMA buffer still zero;
     stale   job K has its DMA cut short: anchors 1000.. keep what another user of the pages left there
             (an LCG's bytes); job K+1 is read before the device finished: anchors 1500.. still hold job K's
             bytes;
     period  every 4th job (4, 8, ...) the device swaps lanes 0 and 1 of anchors 200..299;
     input   job K's input has row 3 (bytes 96..127) written twice (input bytes 128..159 = 96..127).
   Exit 0 when every run was written. */
#define FORENSICS_RUN_IMPLEMENTATION
#define FORENSICS_RUN_NO_FSYNC
#include "forensics_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANCHORS 2034
#define LANES 4
#define INPUT 320

static unsigned char dma[ANCHORS * LANES]; /* zero until the device first writes it */

static void device(int job, const char *mode, int k)
{
    int a, stop = ANCHORS;
    if (strcmp(mode, "stale") == 0 && job == k) {
        unsigned int junk = 12345u;
        for (a = 0; a < ANCHORS * LANES; a++) {
            junk = junk * 1103515245u + 12345u; /* what another user of the pages left there */
            dma[a] = (unsigned char)(junk >> 16);
        }
        stop = 1000;       /* the DMA stopped early */
    }
    if (strcmp(mode, "stale") == 0 && job == k + 1)
        stop = 1500;       /* read before the device finished: the rest is the previous job's */
    for (a = 0; a < stop; a++) {
        unsigned char v = (unsigned char)((a * 7 + 3) % 251);
        dma[a * LANES + 0] = v;
        dma[a * LANES + 1] = (unsigned char)(255 - v);
        dma[a * LANES + 2] = 0x80;
        dma[a * LANES + 3] = 0x80;
        if (strcmp(mode, "period") == 0 && job % 4 == 0 && a >= 200 && a < 300) {
            dma[a * LANES + 0] = (unsigned char)(255 - v);
            dma[a * LANES + 1] = v;
        }
    }
}

int main(int argc, char **argv)
{
    int n, job, k, rc;
    if (argc < 4) {
        fprintf(stderr, "usage: repeat_driver DIR N MODE [K]\n");
        return 2;
    }
    n = atoi(argv[2]);
    k = argc > 4 ? atoi(argv[4]) : 0;
    for (job = 1; job <= n; job++) {
        char path[4096];
        unsigned char input[INPUT], raw[ANCHORS * LANES];
        fr_run *run = NULL;
        fr_meta meta;
        int64_t input_shape[4] = {1, 10, 32, 1};
        int i;
        for (i = 0; i < INPUT; i++)
            input[i] = (unsigned char)((i * 13 + 5) & 0xff);
        if (strcmp(argv[3], "input") == 0 && job == k)
            memcpy(input + 128, input + 96, 32);
        if (!(strcmp(argv[3], "cold") == 0 && job == 1))
            device(job, argv[3], k);
        memcpy(raw, dma, sizeof raw);
        snprintf(path, sizeof path, "%s/run-%d", argv[1], job);
        rc = fr_run_begin(&run, path, "ours", "repeat_driver 1");
        memset(&meta, 0, sizeof meta);
        meta.dtype = "uint8";
        meta.shape = input_shape;
        meta.rank = 4;
        if (rc == FR_OK)
            rc = fr_run_add(run, "input", "input", input, sizeof input, &meta);
        meta.shape = NULL;
        meta.rank = 0;
        meta.record_size = LANES;
        if (rc == FR_OK)
            rc = fr_run_add(run, "raw", "convert_scores", raw, sizeof raw, &meta);
        if (rc == FR_OK)
            rc = fr_run_commit(run);
        else
            fr_run_abort(run);
        if (rc != FR_OK) {
            fprintf(stderr, "repeat_driver: %s: %s\n", path, fr_strerror(rc));
            return 2;
        }
    }
    return 0;
}
