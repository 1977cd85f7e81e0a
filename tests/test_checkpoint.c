/* Checkpoints read as if a stranger wrote them: each field damaged on its own, with the CRC
 * repaired so that the structure checks (not the checksum) must catch it, gives an error that
 * names the problem, never a crash, a huge allocation or a model that runs wrong. */
#include "engine/job/config.h"
#include "engine/model/checkpoint.h"
#include "engine/job/run_log.h"
#include "synthetic.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* A real checkpoint of the synthetic job's model after one epoch. */
static const char LOG[] = "frugal run log 1\nepoch 1\ncsv 1,2\njson {\"epoch\": 1}\n";

static uint8_t *good_checkpoint(size_t *len, model *m)
{
    static job_config cfg;
    char err[512], path[600];
    CHECK(config_load(&cfg, make_job(""), NULL, err, sizeof err) == 0);
    CHECK(model_build(m, cfg.path, cfg.layers, cfg.nlayers, 1, SYN_SIDE, SYN_SIDE, 10, 1, err, sizeof err) == 0);
    model_init(m, 7);
    snprintf(path, sizeof path, "%s/ck.bin", test_tmpdir());
    char log[sizeof LOG];
    memcpy(log, LOG, sizeof LOG);
    CHECK(checkpoint_save(m, &(checkpoint_state){1, 0, log, strlen(log)}, path, err, sizeof err) == 0);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    uint8_t *buf = malloc(*len);
    CHECK(fread(buf, 1, *len, f) == *len);
    fclose(f);
    return buf;
}

static void repair_crc(uint8_t *buf, size_t len)
{
    uint32_t c = (uint32_t)crc32(crc32(0, NULL, 0), buf, (uInt)(len - 4));
    memcpy(buf + len - 4, &c, 4);
}

/* Offsets in the format (engine/model/checkpoint.c): the header, then 32-byte layer records. */
enum { EPOCH_AT = 12, NLAYERS_AT = 20, C_AT = 24, CLASSES_AT = 36, RECORDS_AT = 48,
       RECORD = 32 };

static void put32(uint8_t *buf, size_t at, uint32_t v) { memcpy(buf + at, &v, 4); }

/* Damages a copy at `at` with v, repairs the CRC, decodes both ways; the error must say `says`. */
static void expect_refused(const uint8_t *good, size_t len, size_t at, uint32_t v, const char *says)
{
    uint8_t *bad = malloc(len);
    memcpy(bad, good, len);
    put32(bad, at, v);
    repair_crc(bad, len);
    char err[512] = "";
    model m;
    checkpoint_state st;
    int rc = checkpoint_decode(bad, len, "ck.bin", &m, 1, &st, err, sizeof err);
    CHECKF(rc == -1 && strstr(err, says), "byte %zu = %u: rc %d, '%s'", at, v, rc, err);
    if (!rc) {
        model_free(&m);
        free(st.log);
    }
    free(bad);
}

TEST(checkpoint_fields_are_checked_one_by_one)
{
    size_t len;
    model m;
    uint8_t *good = good_checkpoint(&len, &m);
    model back;
    checkpoint_state st;
    char err[512];
    CHECKF(checkpoint_decode(good, len, "ck.bin", &back, 1, &st, err, sizeof err) == 0, "%s", err);
    CHECK(st.epoch == 1 && st.log_len > 0 && back.nparams == m.nparams);
    CHECK(!memcmp(back.layers[0].params, m.layers[0].params, sizeof(float) * (size_t)m.layers[0].nparams));
    model_free(&back);
    free(st.log);

    expect_refused(good, len, EPOCH_AT, 0xffffffffu, "not possible");        /* an absurd epoch */
    expect_refused(good, len, NLAYERS_AT, 0, "0 layers");
    expect_refused(good, len, NLAYERS_AT, 4000000000u, "layers (1 to 32)");
    expect_refused(good, len, C_AT, (uint32_t)-3, "not possible");          /* negative channels */
    expect_refused(good, len, CLASSES_AT, 100000, "not possible");
    expect_refused(good, len, RECORDS_AT + 3 * RECORD, 77, "not a layer type");   /* a later layer */
    expect_refused(good, len, RECORDS_AT + 4, 1 << 20, "out of range");     /* conv filters */
    expect_refused(good, len, RECORDS_AT + 2 * RECORD + 4, 3, "out of range");   /* relu has no filters */
    expect_refused(good, len, RECORDS_AT + 24, 5, "parameters");            /* a wrong count */
    expect_refused(good, len, RECORDS_AT + 6 * RECORD + 20, 65536 * 64, "cannot build");
    size_t params_at = RECORDS_AT + 8 * RECORD;
    expect_refused(good, len, params_at + 8, 0x7fc00000u, "not finite");   /* a NaN weight */
    size_t log_at = len - 4 - strlen(LOG) - 4;
    expect_refused(good, len, log_at, 0xffffff, "the run's log claims");
    /* and the load into a job's model refuses a different model */
    uint8_t *other = malloc(len);
    memcpy(other, good, len);
    put32(other, RECORDS_AT + 4, 5);   /* 5 filters where the job has 4 */
    repair_crc(other, len);
    CHECK(checkpoint_decode(other, len, "ck.bin", &m, 0, &st, err, sizeof err) == -1);
    CHECKF(strstr(err, "in the job"), "%s", err);
    free(other);
    free(good);
    model_free(&m);
}

TEST(checkpoint_run_log_is_decoded_strictly)
{
    run_log l;
    char err[256];
    const char *good = "frugal run log 1\nepoch 1\ncsv 1,2\njson {\"a\": 1}\n"
                       "partial 3 1.5 2 12 0.5 7\n";
    CHECKF(run_log_decode(&l, good, strlen(good), err, sizeof err) == 0, "%s", err);
    CHECK(l.nepochs == 1 && l.partial.batches == 3 && l.partial.samples == 12);
    size_t n;
    char *again = run_log_encode(&l, &n);
    CHECK(again && n == strlen(good) && !memcmp(again, good, n));
    free(again);
    run_log_free(&l);
    const char *bad[] = {"frugal run log 2\n", "frugal run log 1\nepoch 2\ncsv a\njson {}\n",
                         "frugal run log 1\nepoch 1\njson {}\n", "frugal run log 1\nepoch 1\ncsv a\n",
                         "frugal run log 1\npartial 1 nan 0 0 0 0\n",
                         "frugal run log 1\npartial 1 1 5 2 0 0\n", "frugal run log 1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECKF(run_log_decode(&l, bad[i], strlen(bad[i]), err, sizeof err) == -1, "accepted: %s",
               bad[i]);
        CHECK(strstr(err, "run log is corrupt") != NULL);
    }
}
