/* write_run: writes the bundled dumps of one driver (dumps/ours) as a forensics run and prints a
   fingerprint line per buffer, the way a driver's test console would.

   Build (from the repository root):
     cc -std=c99 -O2 -Ic c/examples/write_run.c -o write_run
     x86_64-w64-mingw32-gcc -std=c99 -O2 -Ic c/examples/write_run.c -o write_run.exe
     cl /O2 /Ic c\examples\write_run.c
   Run:
     ./write_run dumps/ours runs/ours-from-c
     forensics compare runs/ours-from-c runs/ours      (a run ingested from the same files: every row MATCH)

   The shapes and quantization are those of the dumps' sidecar JSON files, written out here as a driver
   would know them from its model. Exit 0 when the run was written, 2 otherwise. */
#define FORENSICS_RUN_IMPLEMENTATION
#include "forensics_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole file in memory (the bundled dumps are small); NULL with a message on failure. */
static unsigned char *read_file(const char *dir, const char *name, size_t *size)
{
    char path[4096];
    unsigned char *data = NULL;
    long length;
    FILE *f;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
        fprintf(stderr, "write_run: path too long: %s/%s\n", dir, name);
        return NULL;
    }
    f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "write_run: %s: cannot open\n", path);
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (length = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        data = (unsigned char *)malloc(length > 0 ? (size_t)length : 1);
        if (data != NULL && fread(data, 1, (size_t)length, f) != (size_t)length) {
            free(data);
            data = NULL;
        }
        *size = (size_t)length;
    }
    fclose(f);
    if (data == NULL)
        fprintf(stderr, "write_run: %s: cannot read\n", path);
    return data;
}

typedef struct {
    const char *file;      /* in the dumps directory */
    const char *stage;
    const char *tensor;
    int64_t shape[4];
    int rank;              /* 0: no shape (a raw buffer's shape is the chip's, not the tensor's) */
    int has_quant;
    double scale;
    int zero_point;
    int record_size;
    int n_pad_lanes;       /* the chip pads z = 2 scores to a 4-byte lane: lanes 2 and 3 hold no data */
} buffer_spec;

static const int SCORE_PAD_LANES[2] = {2, 3};

static const buffer_spec BUFFERS[3] = {
    {"input.bin", "input", "input", {1, 320, 320, 3}, 4, 0, 0.0, 0, 960, 0},
    {"convert_scores.bin", "raw", "convert_scores", {0, 0, 0, 0}, 0, 1, 0.00390625, 0, 4, 2},
    {"Squeeze1.bin", "tensor", "Squeeze1", {1, 2034, 4, 0}, 3, 1, 0.10822763, 144, 4, 0},
};

int main(int argc, char **argv)
{
    fr_run *run = NULL;
    int i, rc;
    if (argc != 3) {
        fprintf(stderr, "usage: write_run DUMPS_DIR RUN_DIR   (e.g. write_run dumps/ours runs/ours-from-c)\n");
        return 2;
    }
    rc = fr_run_begin(&run, argv[2], "ours", "write_run example 1");
    if (rc != FR_OK) {
        fprintf(stderr, "write_run: %s: %s\n", argv[2], fr_strerror(rc));
        return 2;
    }
    for (i = 0; i < 3; i++) {
        const buffer_spec *b = &BUFFERS[i];
        char line[FR_FINGERPRINT_SIZE(64)];
        fr_meta meta;
        size_t size = 0;
        unsigned char *data = read_file(argv[1], b->file, &size);
        if (data == NULL) {
            fr_run_abort(run);
            return 2;
        }
        memset(&meta, 0, sizeof meta);
        meta.dtype = "uint8";
        meta.shape = b->rank ? b->shape : NULL;
        meta.rank = b->rank;
        meta.has_quant = b->has_quant;
        meta.scale = b->scale;
        meta.zero_point = b->zero_point;
        meta.record_size = b->record_size;
        meta.pad_lanes = b->n_pad_lanes ? SCORE_PAD_LANES : NULL;
        meta.n_pad_lanes = b->n_pad_lanes;
        rc = fr_run_add(run, b->stage, b->tensor, data, size, &meta);
        if (rc == FR_OK && fr_fingerprint_line(line, sizeof line, b->tensor, data, size) >= 0)
            printf("%s\n", line);  /* a driver would DbgPrint("%s\n", line) */
        free(data);
        if (rc != FR_OK) {
            fprintf(stderr, "write_run: %s: %s\n", b->file, fr_strerror(rc));
            fr_run_abort(run);
            return 2;
        }
    }
    rc = fr_run_commit(run);
    if (rc != FR_OK) {
        fprintf(stderr, "write_run: %s: %s\n", argv[2], fr_strerror(rc));
        return 2;
    }
    return 0;
}
