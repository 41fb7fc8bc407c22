/* fr_check: drives c/forensics_run.h for tests/c/test_c_header.py (POSIX; built as C99 and as C++).

   fr_check crc BLOB CASES          for each "offset length" line of CASES: the CRC32 of that slice of BLOB
                                    (whole, and fed in two pieces), its xor-fold-64 and its fingerprint line
   fr_check errors BASE             every refused input; prints "case got WANT_NAME want" lines
   fr_check write TARGET N MODE [K] writes N buffers; MODE commit | abort K (fr_run_abort after K buffers)
                                    | kill K (SIGKILL on itself after K buffers, as a crash would)
   fr_check io BASE                 the file system refusing: a missing parent, then a disk that fills up
                                    (RLIMIT_FSIZE) in the middle of a buffer; prints lines like errors
   fr_check errno BASE              a manifest write that fails (RLIMIT_FSIZE): prints "name got WANT want"
                                    lines for the code and for errno after the cleanup
   fr_check stream BLOB CHUNKS      for each "tag offset length c1 c2 ..." line: the streamed line (chunks c1,
                                    c2, ... then the rest) and the one-shot line of that slice of BLOB
   fr_check dtype BASE NAMES        for each line of NAMES (hex-encoded bytes): "hex code" of fr_run_add
   fr_check source BASE NAMES       for each line of NAMES (hex-encoded UTF-8): "hex code" of fr_run_begin
   fr_check link CASES              for each "hexbytes offset_bit value" line: "code hexbytes" after
                                    fr_link_u32 */
#define FORENSICS_RUN_IMPLEMENTATION
#include "forensics_run.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/resource.h>
#include <sys/stat.h>

static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *data;
    long n;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
        exit(3);
    data = (unsigned char *)malloc((size_t)n + 1);
    if (data == NULL || fread(data, 1, (size_t)n, f) != (size_t)n)
        exit(3);
    fclose(f);
    *size = (size_t)n;
    return data;
}

static int crc_cases(const char *blob_path, const char *cases_path)
{
    size_t blob_size, offset, length;
    unsigned char *blob = slurp(blob_path, &blob_size);
    FILE *cases = fopen(cases_path, "r");
    char line[FR_FINGERPRINT_SIZE(16)];
    int i = 0;
    if (cases == NULL)
        return 3;
    while (fscanf(cases, "%zu %zu", &offset, &length) == 2) {
        const unsigned char *p = blob + offset;
        size_t cut = length / 3;
        uint32_t whole, pieces;
        int n;
        char tag[16];
        if (offset + length > blob_size)
            return 3;
        whole = fr_crc32(0, p, length);
        pieces = fr_crc32(fr_crc32(0, p, cut), p + cut, length - cut);
        snprintf(tag, sizeof tag, "case%d", i);
        n = fr_fingerprint_line(line, sizeof line, tag, p, length);
        if (n < 0 || (size_t)n != strlen(line))
            return 4;
        printf("R %d %08lx %08lx %016llx\n%s\n", i, (unsigned long)whole, (unsigned long)pieces,
               (unsigned long long)fr_xorfold64(p, length), line);
        i++;
    }
    fclose(cases);
    free(blob);
    return 0;
}

static void report(const char *name, int got, const char *want_name, int want)
{
    printf("%s %d %s %d\n", name, got, want_name, want);
}
#define CHECK(name, expr, want) report(name, (expr), #want, want)

static int errors(const char *base)
{
    char existing[4096], fresh[4096], late[4096], line[FR_FINGERPRINT_SIZE(8)];
    unsigned char data[64];
    int64_t shape[2] = {2, 32}, negative[2] = {2, -32};
    fr_run *run = NULL, *other = NULL;
    fr_meta m;
    int n, i;
    for (i = 0; i < 64; i++)
        data[i] = (unsigned char)(i * 7);
    snprintf(existing, sizeof existing, "%s/existing", base);
    snprintf(fresh, sizeof fresh, "%s/fresh", base);
    snprintf(late, sizeof late, "%s/late", base);

    CHECK("begin_null_run", fr_run_begin(NULL, fresh, "ours", NULL), FR_E_NULL);
    CHECK("begin_null_dir", fr_run_begin(&run, NULL, "ours", NULL), FR_E_NULL);
    CHECK("begin_null_source", fr_run_begin(&run, fresh, NULL, NULL), FR_E_NULL);
    CHECK("begin_empty_dir", fr_run_begin(&run, "", "ours", NULL), FR_E_ARG);
    CHECK("begin_blank_source", fr_run_begin(&run, fresh, " \t", NULL), FR_E_ARG);
    CHECK("begin_source_not_utf8", fr_run_begin(&run, fresh, "ours\xff", NULL), FR_E_ARG);
    CHECK("begin_tool_surrogate", fr_run_begin(&run, fresh, "ours", "\xed\xa0\x80"), FR_E_ARG);
    CHECK("begin_existing", fr_run_begin(&run, existing, "ours", NULL), FR_E_EXISTS);
    CHECK("begin_existing_slash", fr_run_begin(&run, strcat(strcpy(late, existing), "/"), "ours", NULL),
          FR_E_EXISTS);
    CHECK("begin_run_null_after_failure", run == NULL ? 0 : 1, FR_OK);
    snprintf(late, sizeof late, "%s/late", base);

    CHECK("begin_ok", fr_run_begin(&run, fresh, "ours", NULL), FR_OK);
    CHECK("add_null_run", fr_run_add(NULL, "raw", "t", data, 4, NULL), FR_E_NULL);
    CHECK("add_null_stage", fr_run_add(run, NULL, "t", data, 4, NULL), FR_E_NULL);
    CHECK("add_null_tensor", fr_run_add(run, "raw", NULL, data, 4, NULL), FR_E_NULL);
    CHECK("add_null_data", fr_run_add(run, "raw", "t", NULL, 4, NULL), FR_E_NULL);
    {
        /* Refused names: (case, stage, tensor, expected code). */
#define NAME_CASE(name, stage, tensor, want) {name, stage, tensor, want, #want}
        static const struct {
            const char *name, *stage, *tensor;
            int want;
            const char *want_name;
        } cases[] = {
            NAME_CASE("add_stage_unknown", "output", "t", FR_E_STAGE),
            NAME_CASE("add_stage_case", "Raw", "t", FR_E_STAGE),
            NAME_CASE("add_stage_empty", "", "t", FR_E_STAGE),
            NAME_CASE("add_tensor_empty", "raw", "", FR_E_TENSOR),
            NAME_CASE("add_tensor_slash", "raw", "a/b", FR_E_TENSOR),
            NAME_CASE("add_tensor_backslash", "raw", "a\\b", FR_E_TENSOR),
            NAME_CASE("add_tensor_dotdot", "raw", "..", FR_E_TENSOR),
            NAME_CASE("add_tensor_inner_dotdot", "raw", "a..b", FR_E_TENSOR),
            NAME_CASE("add_tensor_newline", "raw", "a\nb", FR_E_TENSOR),
            NAME_CASE("add_tensor_del", "raw", "a\x7f", FR_E_TENSOR),
            NAME_CASE("add_tensor_overlong_utf8", "raw", "a\xc0\xaf", FR_E_TENSOR),
            NAME_CASE("add_tensor_truncated_utf8", "raw", "a\xe2\x82", FR_E_TENSOR),
        };
#undef NAME_CASE
        for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
            report(cases[i].name, fr_run_add(run, cases[i].stage, cases[i].tensor, data, 4, NULL), cases[i].want_name,
                   cases[i].want);
    }
    memset(&m, 0, sizeof m);
    m.has_quant = 1;
    m.scale = nan("");
    CHECK("add_scale_nan", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
    m.scale = HUGE_VAL;
    CHECK("add_scale_inf", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
    m.scale = 0.0;
    CHECK("add_scale_zero", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
    m.scale = -0.5;
    CHECK("add_scale_negative", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
    memset(&m, 0, sizeof m);
    m.rank = 2;
    CHECK("add_rank_without_shape", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
    m.shape = shape;
    m.rank = -1;
    CHECK("add_rank_negative", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
    m.shape = negative;
    m.rank = 2;
    CHECK("add_shape_negative", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
    memset(&m, 0, sizeof m);
    m.record_size = -4;
    CHECK("add_record_size_negative", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
    memset(&m, 0, sizeof m);
    m.role = "logits";
    CHECK("add_role_unknown", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
    {
        static const int lanes[3] = {2, 3, 2}, outside[1] = {4}, below[1] = {-1};
        memset(&m, 0, sizeof m);
        m.pad_lanes = lanes;
        m.n_pad_lanes = 2;
        CHECK("add_pad_lanes_without_record_size", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
        m.record_size = 4;
        m.n_pad_lanes = 3;
        CHECK("add_pad_lanes_repeated", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
        m.pad_lanes = outside;
        m.n_pad_lanes = 1;
        CHECK("add_pad_lane_outside_record", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
        m.pad_lanes = below;
        CHECK("add_pad_lane_negative", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
        m.pad_lanes = NULL;
        CHECK("add_pad_lanes_null", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
        m.n_pad_lanes = 65;
        m.pad_lanes = lanes;
        CHECK("add_pad_lanes_too_many", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
        m.n_pad_lanes = -1;
        CHECK("add_pad_lanes_negative_count", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_META);
    }
    memset(&m, 0, sizeof m);
    m.dtype = "";
    CHECK("add_dtype_empty", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_DTYPE);
    m.dtype = "u8";
    CHECK("add_dtype_shorthand", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_DTYPE);
    m.dtype = "uint8_t";
    CHECK("add_dtype_c_spelling", fr_run_add(run, "raw", "t", data, 4, &m), FR_E_DTYPE);
    m.dtype = "uint8";
    CHECK("add_dtype_uint8_ok", fr_run_add(run, "raw", "dtype_ok", data, 4, &m), FR_OK);

    CHECK("add_ok", fr_run_add(run, "raw", "t", data, 64, NULL), FR_OK);
    CHECK("add_duplicate", fr_run_add(run, "raw", "t", data, 8, NULL), FR_E_DUPLICATE);
    CHECK("add_same_tensor_other_stage", fr_run_add(run, "tensor", "t", data, 8, NULL), FR_OK);
    CHECK("begin_target_taken_by_live_run_ok", fr_run_begin(&other, fresh, "ours", NULL), FR_OK);
    fr_run_abort(other);
    fr_run_abort(run);  /* nothing of `fresh` may remain */
    fr_run_abort(NULL);

    /* The target appears while the run is being written: commit refuses and removes its temporary dir. */
    CHECK("begin_late_ok", fr_run_begin(&run, late, "ours", NULL), FR_OK);
    CHECK("add_late_ok", fr_run_add(run, "input", "input", data, 64, NULL), FR_OK);
    CHECK("mkdir_late", mkdir(late, 0777), 0);
    CHECK("commit_target_appeared", fr_run_commit(run), FR_E_EXISTS);
    CHECK("commit_null", fr_run_commit(NULL), FR_E_NULL);

    CHECK("fp_null_buf", fr_fingerprint_line(NULL, 10, "t", data, 4), FR_E_NULL);
    CHECK("fp_null_tag", fr_fingerprint_line(line, sizeof line, NULL, data, 4), FR_E_NULL);
    CHECK("fp_null_data", fr_fingerprint_line(line, sizeof line, "t", NULL, 4), FR_E_NULL);
    CHECK("fp_null_data_empty_ok", fr_fingerprint_line(line, sizeof line, "t", NULL, 0) > 0 ? 0 : -99, FR_OK);
    CHECK("fp_tag_empty", fr_fingerprint_line(line, sizeof line, "", data, 4), FR_E_TAG);
    CHECK("fp_tag_space", fr_fingerprint_line(line, sizeof line, "a b", data, 4), FR_E_TAG);
    CHECK("fp_tag_slash", fr_fingerprint_line(line, sizeof line, "a/b", data, 4), FR_E_TAG);
    CHECK("fp_tag_utf8", fr_fingerprint_line(line, sizeof line, "\xc3\xa9", data, 4), FR_E_TAG);
    n = fr_fingerprint_line(line, sizeof line, "t", data, 64);
    CHECK("fp_fits_bound", n >= 0 && (size_t)n < FR_FINGERPRINT_SIZE(1) ? 0 : -99, FR_OK);
    CHECK("fp_exact_size", fr_fingerprint_line(line, (size_t)n + 1, "t", data, 64), n);
    CHECK("fp_one_short", fr_fingerprint_line(line, (size_t)n, "t", data, 64), FR_E_BUFFER);
    CHECK("fp_one_short_empty_string", line[0] == '\0' ? 0 : -99, FR_OK);
    CHECK("fp_zero_size_buffer", fr_fingerprint_line(line, 0, "t", data, 64), FR_E_BUFFER);
    {
        /* The tag limit: 238 characters fit a 511-character line whatever the size; 239 are refused. */
        char tag[FR_TAG_MAX + 2], big[FR_FP_LINE_MAX + 1];
        fr_fp fp;
        memset(tag, 'x', sizeof tag);
        tag[FR_TAG_MAX] = '\0';
        CHECK("fp_tag_at_limit_fits", fr_fingerprint_line(big, sizeof big, tag, data, 64) > 0 ? 0 : -99, FR_OK);
        tag[FR_TAG_MAX] = 'x';
        tag[FR_TAG_MAX + 1] = '\0';
        CHECK("fp_tag_over_limit", fr_fingerprint_line(big, sizeof big, tag, data, 64), FR_E_TAG);
        CHECK("fp_line_max_is_511", FR_FP_LINE_MAX, 511);
        CHECK("fp_size_bound_is_512", (int)FR_FINGERPRINT_SIZE(FR_TAG_MAX), 512);
        /* The streaming calls: misuse is refused, nothing is taken past total_size. */
        fr_fp_begin(&fp, 10);
        CHECK("fp_update_null", fr_fp_update(NULL, data, 4), FR_E_NULL);
        CHECK("fp_update_null_data", fr_fp_update(&fp, NULL, 4), FR_E_NULL);
        CHECK("fp_update_ok", fr_fp_update(&fp, data, 4), FR_OK);
        CHECK("fp_final_early", fr_fp_final(&fp, big, sizeof big, "t"), FR_E_SIZE);
        CHECK("fp_update_past_total", fr_fp_update(&fp, data, 7), FR_E_SIZE);
        CHECK("fp_update_rest_ok", fr_fp_update(&fp, data + 4, 6), FR_OK);
        CHECK("fp_update_past_end", fr_fp_update(&fp, data, 1), FR_E_SIZE);
        CHECK("fp_final_null_tag", fr_fp_final(&fp, big, sizeof big, NULL), FR_E_NULL);
        CHECK("fp_final_bad_tag", fr_fp_final(&fp, big, sizeof big, "a b"), FR_E_TAG);
        CHECK("fp_final_small", fr_fp_final(&fp, big, 8, "t"), FR_E_BUFFER);
        n = fr_fp_final(&fp, big, sizeof big, "t");
        CHECK("fp_final_equals_one_shot", n > 0 && fr_fingerprint_line(line, sizeof line, "t", data, 10) == n &&
              strcmp(line, big) == 0 ? 0 : -99, FR_OK);
        memset(&fp, 0, sizeof fp);
        CHECK("fp_update_not_begun", fr_fp_update(&fp, data, 1), FR_E_NULL);
    }
    CHECK("link_null", fr_link_u32(NULL, 8, 0, 1u), FR_E_NULL);
    CHECK("link_short", fr_link_u32(data, 3, 0, 1u), FR_E_RANGE);
    CHECK("link_last_fit", fr_link_u32(data, 8, 32, 1u), FR_OK);
    CHECK("link_one_past", fr_link_u32(data, 8, 33, 1u), FR_E_RANGE);
    CHECK("link_huge_offset", fr_link_u32(data, 8, ~(uint64_t)0 - 7, 1u), FR_E_RANGE);
    return 0;
}

static int io_errors(const char *base)
{
    static unsigned char data[8192];
    char missing[4096], target[4096];
    fr_run *run = NULL;
    struct rlimit limit;
    snprintf(missing, sizeof missing, "%s/no/such/parent/run", base);
    snprintf(target, sizeof target, "%s/full", base);
    CHECK("begin_parent_missing", fr_run_begin(&run, missing, "ours", NULL), FR_E_IO);
    CHECK("begin_full_ok", fr_run_begin(&run, target, "ours", NULL), FR_OK);
    CHECK("add_before_full_ok", fr_run_add(run, "input", "input", data, 1000, NULL), FR_OK);
    /* From here on no file may grow past 4096 bytes: write() fails with EFBIG (SIGXFSZ ignored). */
    signal(SIGXFSZ, SIG_IGN);
    limit.rlim_cur = limit.rlim_max = 4096;
    CHECK("setrlimit", setrlimit(RLIMIT_FSIZE, &limit), 0);
    CHECK("add_disk_full", fr_run_add(run, "raw", "scores", data, sizeof data, NULL), FR_E_IO);
    CHECK("add_after_failure", fr_run_add(run, "raw", "boxes", data, 10, NULL), FR_E_FAILED);
    CHECK("commit_after_failure", fr_run_commit(run), FR_E_FAILED);
    return 0;
}

/* errno after a failed commit is the failed step's (EFBIG), not the cleanup's (ENOENT, ...). */
static int errno_kept(const char *base)
{
    static unsigned char data[64];
    char target[4096];
    fr_run *run = NULL;
    struct rlimit limit;
    int rc, i;
    snprintf(target, sizeof target, "%s/run", base);
    CHECK("begin_ok", fr_run_begin(&run, target, "ours", NULL), FR_OK);
    for (i = 0; i < 40; i++) {  /* 40 entries: a manifest of several KiB */
        char tensor[32];
        snprintf(tensor, sizeof tensor, "tensor_%d", i);
        CHECK("add_ok", fr_run_add(run, "raw", tensor, data, sizeof data, NULL), FR_OK);
    }
    signal(SIGXFSZ, SIG_IGN);
    limit.rlim_cur = limit.rlim_max = 1024;  /* every buffer fits, the manifest does not */
    CHECK("setrlimit", setrlimit(RLIMIT_FSIZE, &limit), 0);
    errno = 0;
    rc = fr_run_commit(run);
    CHECK("commit_manifest_too_big", rc, FR_E_IO);
    CHECK("errno_after_commit", errno, EFBIG);
    return 0;
}

static int hex_value(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* One line of hex into bytes (NUL-terminated); the count, or -1. */
static long unhex(const char *text, unsigned char *out, size_t cap)
{
    size_t n = 0;
    while (text[0] != '\0' && text[0] != '\n' && text[0] != ' ') {
        int hi = hex_value(text[0]), lo = hex_value(text[1]);
        if (hi < 0 || lo < 0 || n + 1 >= cap)
            return -1;
        out[n++] = (unsigned char)(hi * 16 + lo);
        text += 2;
    }
    out[n] = '\0';
    return (long)n;
}

static void print_hex(const unsigned char *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        printf("%02x", p[i]);
}

static int stream_cases(const char *blob_path, const char *cases_path)
{
    size_t blob_size, offset, length;
    unsigned char *blob = slurp(blob_path, &blob_size);
    FILE *cases = fopen(cases_path, "r");
    char tag[256], streamed[FR_FP_LINE_MAX + 1], whole[FR_FP_LINE_MAX + 1];
    if (cases == NULL)
        return 3;
    while (fscanf(cases, "%255s %zu %zu", tag, &offset, &length) == 3) {
        fr_fp fp;
        size_t done = 0, chunk;
        int c, n;
        if (offset + length > blob_size)
            return 3;
        fr_fp_begin(&fp, length);
        while ((c = fgetc(cases)) == ' ') {
            if (fscanf(cases, "%zu", &chunk) != 1 || done + chunk > length)
                return 3;
            if (fr_fp_update(&fp, blob + offset + done, chunk) != FR_OK)
                return 4;
            done += chunk;
        }
        if (fr_fp_update(&fp, blob + offset + done, length - done) != FR_OK)
            return 4;
        n = fr_fp_final(&fp, streamed, sizeof streamed, tag);
        if (n < 0 || fr_fingerprint_line(whole, sizeof whole, tag, blob + offset, length) != n)
            return 5;
        printf("%s\n%s\n", streamed, whole);
    }
    fclose(cases);
    free(blob);
    return 0;
}

static int dtype_cases(const char *base, const char *names_path)
{
    FILE *names = fopen(names_path, "r");
    char text[1024], target[4096], tensor[32];
    unsigned char name[512];
    static unsigned char data[4];
    fr_run *run = NULL;
    int i = 0;
    snprintf(target, sizeof target, "%s/run", base);
    if (names == NULL || fr_run_begin(&run, target, "ours", NULL) != FR_OK)
        return 3;
    while (fgets(text, sizeof text, names) != NULL) {
        fr_meta m;
        int rc;
        if (unhex(text, name, sizeof name) < 0)
            return 3;
        memset(&m, 0, sizeof m);
        m.dtype = (const char *)name;
        snprintf(tensor, sizeof tensor, "t%d", i++);
        rc = fr_run_add(run, "raw", tensor, data, sizeof data, &m);
        text[strcspn(text, "\n")] = '\0';
        printf("%s %d\n", text[0] ? text : "-", rc);
    }
    fclose(names);
    fr_run_abort(run);
    return 0;
}

static int source_cases(const char *base, const char *names_path)
{
    FILE *names = fopen(names_path, "r");
    char text[1024], target[4096];
    unsigned char source[512];
    int i = 0;
    if (names == NULL)
        return 3;
    while (fgets(text, sizeof text, names) != NULL) {
        fr_run *run = NULL;
        int rc;
        if (unhex(text, source, sizeof source) < 0)
            return 3;
        snprintf(target, sizeof target, "%s/run%d", base, i++);
        rc = fr_run_begin(&run, target, (const char *)source, NULL);
        fr_run_abort(run);
        text[strcspn(text, "\n")] = '\0';
        printf("%s %d\n", text, rc);
    }
    fclose(names);
    return 0;
}

static int link_cases(const char *cases_path)
{
    FILE *cases = fopen(cases_path, "r");
    char text[4096];
    unsigned char bits[1024];
    while (cases != NULL && fgets(text, sizeof text, cases) != NULL) {
        unsigned long long offset;
        unsigned long value;
        long n = unhex(text, bits, sizeof bits);
        const char *rest = strchr(text, ' ');
        if (n < 0 || rest == NULL || sscanf(rest, "%llu %lu", &offset, &value) != 2)
            return 3;
        printf("%d ", fr_link_u32(bits, (size_t)n, (uint64_t)offset, (uint32_t)value));
        print_hex(bits, (size_t)n);
        printf("\n");
    }
    if (cases == NULL)
        return 3;
    fclose(cases);
    return 0;
}

static int write_run(const char *target, int count, const char *mode, int after)
{
    /* Names and values that need care in JSON and in file names. */
    static const char *const tensors[6] = {"input", "TFLite_Detection_PostProcess:1", "q\"uote",
                                           "pipe|star*?<>", "caf\xc3\xa9 \xe2\x82\xac", "CON"};
    static const double scales[6] = {0.10822763, 0.00390625, 0.1, 3.0000000000000004, 1e-300, 12345678.9};
    fr_run *run = NULL;
    int i, rc;
    rc = fr_run_begin(&run, target, "ours \"C\" \\ \xc3\xb6\x02", "fr_check 1");
    if (rc != FR_OK)
        return 10 - rc;
    for (i = 0; i < count; i++) {
        size_t size = (size_t)(i * 1031 + (i % 2));  /* 0, 1032, 2062, ... odd and even */
        unsigned char *data = (unsigned char *)malloc(size + 1);
        int64_t shape[3];
        fr_meta m;
        size_t k;
        for (k = 0; k < size; k++)
            data[k] = (unsigned char)(k * 31 + (size_t)i);
        memset(&m, 0, sizeof m);
        m.dtype = i % 2 ? "uint8" : "float32";
        shape[0] = 1;
        shape[1] = (int64_t)size;
        shape[2] = (int64_t)1 << 40;
        m.shape = shape;
        m.rank = i % 4;
        m.has_quant = i % 3 != 2;
        m.scale = scales[i % 6];
        m.zero_point = i % 2 ? -128 : 144;
        m.record_size = i % 5;
        m.role = i == 1 ? "scores" : NULL;
        {
            static const int lanes[2] = {3, 2};  /* written in the order given */
            m.pad_lanes = m.record_size == 4 ? lanes : NULL;
            m.n_pad_lanes = m.record_size == 4 ? 2 : 0;
        }
        rc = fr_run_add(run, i % 2 ? "raw" : "detections", tensors[i % 6], data, size, &m);
        free(data);
        if (rc != FR_OK)
            return 20 - rc;
        if (i + 1 == after && strcmp(mode, "kill") == 0) {
            fflush(stdout);
            raise(SIGKILL);
        }
        if (i + 1 == after && strcmp(mode, "abort") == 0) {
            fr_run_abort(run);
            return 0;
        }
    }
    rc = fr_run_commit(run);
    return rc == FR_OK ? 0 : 30 - rc;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "crc") == 0)
        return crc_cases(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "errors") == 0)
        return errors(argv[2]);
    if (argc == 3 && strcmp(argv[1], "io") == 0)
        return io_errors(argv[2]);
    if (argc == 3 && strcmp(argv[1], "errno") == 0)
        return errno_kept(argv[2]);
    if (argc == 4 && strcmp(argv[1], "stream") == 0)
        return stream_cases(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "dtype") == 0)
        return dtype_cases(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "source") == 0)
        return source_cases(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "link") == 0)
        return link_cases(argv[2]);
    if (argc >= 5 && strcmp(argv[1], "write") == 0)
        return write_run(argv[2], atoi(argv[3]), argv[4], argc > 5 ? atoi(argv[5]) : 0);
    fprintf(stderr, "usage: fr_check crc BLOB CASES | errors BASE | io BASE | errno BASE | stream BLOB CHUNKS | "
                    "dtype BASE NAMES | source BASE NAMES | link CASES | write TARGET N commit|abort K|kill K\n");
    return 2;
}
