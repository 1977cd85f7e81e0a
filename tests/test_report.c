/* What a run leaves to look at: the HTML report (its charts against metrics.csv, and rendered
 * by headless Chromium when it is installed), TensorBoard event files (read back by
 * TensorBoard's own reader when the tensorboard package is importable), the power timeline,
 * and the JSON and CSV readers the report uses. */
#include "common/json_parse.h"
#include "energy/history.h"
#include "engine/report/csv_table.h"
#include "engine/report/report.h"
#include "engine/report/svg_chart.h"
#include "engine/report/tensorboard.h"
#include "frugal_cli.h"
#include "common/clock.h"
#include "runtime/runtime.h"
#include "synthetic.h"
#include "test.h"
#include "trace_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *slurp(const char *path)
{
    static char *buf;
    buf = realloc(buf, 4 << 20);
    return test_read_text(path, buf, 4 << 20);
}

/* ---- readers ---- */

TEST(report_json_parser_reads_json_and_names_the_line_of_an_error)
{
    char err[256];
    const char *text = "{\"a\": [1, -2.5e3, true, null], \"b\": {\"c.d\": \"x\\u00e9\\ud83d\\ude00\\n\"},\n"
                       " \"e\": \"\"}";
    json_value *v = json_parse(text, strlen(text), err, sizeof err);
    CHECKF(v != NULL, "%s", err);
    const json_value *a = json_get(v, "a");
    CHECK(a && a->type == JSON_ARRAY && a->n == 4 && a->items[1].number == -2500 &&
          a->items[2].type == JSON_TRUE && a->items[3].type == JSON_NULL);
    CHECK(!strcmp(json_str(json_member(json_get(v, "b"), "c.d"), ""), "x\xc3\xa9\xf0\x9f\x98\x80\n"));
    CHECK(json_get(v, "b.c") == NULL && json_num(json_get(v, "e"), 7) == 7);
    json_free(v);
    const struct { const char *text, *error; } bad[] = {
        {"{\"a\": 1,\n\"b\" 2}", "line 2: expected ':'"},
        {"[1, 2", "line 1: expected ','"},
        {"{\"a\": 01}", "expected a value"},
        {"\"\\ud800\"", "lone surrogate"},
        {"\"a\tb\"", "control character"},
        {"[1] x", "text after the value"},
        {"{\"a\": tru}", "expected a value"},
        {"", "found the end"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        v = json_parse(bad[i].text, strlen(bad[i].text), err, sizeof err);
        CHECKF(!v && strstr(err, bad[i].error), "%s: got '%s'", bad[i].text, err);
        json_free(v);
    }
    char deep[200];
    memset(deep, '[', sizeof deep);
    v = json_parse(deep, sizeof deep, err, sizeof err);
    CHECKF(!v && strstr(err, "nested more than 64"), "%s", err);
}

TEST(report_csv_reader_skips_a_cut_last_row_and_refuses_a_short_one)
{
    char path[600], err[256];
    snprintf(path, sizeof path, "%s/t.csv", test_tmpdir());
    FILE *f = fopen(path, "w");
    fputs("epoch,loss,source\n1,0.5,measured\n2,0.25,estimated\n3,0.1", f);
    fclose(f);
    csv_table t;
    CHECKF(csv_read(&t, path, err, sizeof err) == 0, "%s", err);
    const double *loss = csv_values(&t, "loss"), *src = csv_values(&t, "source");
    CHECK(t.nrows == 2 && loss && loss[1] == 0.25 && src && isnan(src[0]) && !csv_values(&t, "x"));
    csv_free(&t);
    f = fopen(path, "w");
    fputs("epoch,loss\n1,0.5\n2\n", f);
    fclose(f);
    CHECK(csv_read(&t, path, err, sizeof err) == -1);
    CHECKF(strstr(err, "t.csv:3: not 2 cells"), "%s", err);
}

/* The timeline thins itself instead of growing, and a mean power between kept points is the
 * true mean (it comes from joules, however many points were dropped between them). */
TEST(report_power_history_stays_bounded_and_keeps_mean_power_exact)
{
    power_history h;
    CHECK(history_init(&h, 1) == 0);
    double joules = 0;
    for (int i = 0; i <= 200000; i++) {   /* 10000 s at 20 Hz; power 10 W, 30 W every 100 s */
        double t = 0.05 * i, w = fmod(t, 100) < 50 ? 10 : 30;
        history_point p = {.t = t, .total_j = joules};
        p.joules[0] = joules;
        history_offer(&h, &p);
        joules += w * 0.05;
    }
    CHECKF(h.n <= HISTORY_POINTS && h.n > HISTORY_POINTS / 2, "%d points", h.n);
    CHECKF(h.interval >= 10000.0 / HISTORY_POINTS, "interval %g", h.interval);
    const history_point *a = &h.points[0], *z = &h.points[h.n - 1];
    CHECK_NEAR((z->total_j - a->total_j) / (z->t - a->t), 20, 0.05, 0);
    for (int k = 1; k < h.n; k++)
        CHECK(h.points[k].t > h.points[k - 1].t);
    history_free(&h);
}

/* ---- a trained run's report, events and timeline ---- */

static const char *run_path(const char *name)
{
    static char path[4][700];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, 700, "%s/run/%s", test_tmpdir(), name);
    return p;
}

static void train_small(void)
{
    char out[8192];
    const char *job = make_job("");
    int rc = FRUGAL(out, "train", job, "--set", "energy.baseline_seconds=0");
    CHECKF(rc == 0, "frugal train: %d\n%s", rc, out);
}

/* Every point the report draws for series key: its x and y, in order. */
static int points_of(const char *html, const char *key, double *x, double *y, int max)
{
    char attr[128];
    snprintf(attr, sizeof attr, "data-series='%s' data-x='", key);
    int n = 0;
    for (const char *p = strstr(html, attr); p && n < max; p = strstr(p + 1, attr)) {
        p += strlen(attr);
        x[n] = strtod(p, NULL);
        const char *q = strstr(p, "data-y='");
        y[n++] = q ? strtod(q + 8, NULL) : NAN;
    }
    return n;
}

/* The charts' points are the rows of metrics.csv, figure by figure. */
static void check_points_match_metrics(const char *html, const char *metrics_path)
{
    csv_table t;
    char err[256];
    CHECKF(csv_read(&t, metrics_path, err, sizeof err) == 0, "%s", err);
    const char *keys[] = {"train_loss", "test_loss", "train_acc", "test_acc", "images_per_s",
                          "task_share", "energy_j", "mj_per_image", "gco2e"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        double x[64], y[64];
        const double *ep = csv_values(&t, "epoch"), *v = csv_values(&t, keys[k]);
        int n = points_of(html, keys[k], x, y, 64);
        CHECKF(n == t.nrows && v, "%s: %d points, %d rows", keys[k], n, t.nrows);
        for (int i = 0; i < n && i < t.nrows && v; i++)
            CHECKF(x[i] == ep[i] && fabs(y[i] - v[i]) <= 1e-9 * fabs(v[i]), "%s epoch %g: %g drawn, %g in metrics.csv",
                   keys[k], x[i], y[i], v[i]);
    }
    csv_free(&t);
}

TEST(report_html_draws_every_epoch_of_metrics_csv_offline)
{
    train_small();
    const char *html = slurp(run_path("report.html"));   /* frugal train wrote it */
    CHECK(strstr(html, "<!DOCTYPE html>") && strstr(html, "</html>"));
    check_points_match_metrics(html, run_path("metrics.csv"));
    CHECK(!strstr(html, "<script") && !strstr(html, "src=") && !strstr(html, "href="));
    CHECK(!strstr(html, "https:"));   /* nothing fetched: the one http: is SVG's namespace */
    CHECK(strstr(html, "data-line='power/total_w'") && strstr(html, "estimated: model"));
    CHECK(strstr(html, "[softmax_xent]"));   /* the job file */
    double x[4], y[4];
    CHECK(points_of(html, "device_joules/cpu model", x, y, 4) == 3);

    /* Two runs overlaid, each its own series. */
    char out[4096], dir2[700], page[700];
    snprintf(dir2, sizeof dir2, "%s/run2", test_tmpdir());
    CHECK(rename(run_path(""), dir2) == 0);
    train_small();
    snprintf(page, sizeof page, "%s/both.html", test_tmpdir());
    int rc = FRUGAL(out, "report", run_path(""), dir2, "-o", page);
    CHECKF(rc == 0, "%s", out);
    html = slurp(page);
    CHECK(strstr(html, "data-run='0' data-series='train_loss'") &&
          strstr(html, "data-run='1' data-series='train_loss'"));
    rc = FRUGAL(out, "report", test_tmpdir(), "-o", page);
    CHECKF(rc == 1 && strstr(out, "not a frugal run folder") && strstr(out, "metrics.csv"), "%s", out);
}

/* Headless Chromium loads the page with no console error, draws every point, and writes a PNG. */
TEST(report_html_renders_in_headless_chromium)
{
    const char *chromium = access("/usr/bin/chromium", X_OK) == 0 ? "/usr/bin/chromium" : NULL;
    if (!chromium) {
        printf("  (chromium is not installed: the rendering is not checked; ./build.sh deps installs it)\n");
        return;
    }
    train_small();
    char cmd[8192], png[700], dom[700], log[700];
    snprintf(png, sizeof png, "%s/report.png", test_tmpdir());
    snprintf(dom, sizeof dom, "%s/dom.html", test_tmpdir());
    snprintf(log, sizeof log, "%s/chromium.log", test_tmpdir());
    const char *flags = "--headless --no-sandbox --disable-gpu --hide-scrollbars --enable-logging=stderr "
                        "--v=0 --window-size=1300,4000 --user-data-dir=";
    snprintf(cmd, sizeof cmd, "timeout 120 %s %s%s/profile --screenshot=%s file://%s 2>%s && "
             "timeout 120 %s %s%s/profile --dump-dom file://%s >%s 2>>%s", chromium, flags,
             test_tmpdir(), png, run_path("report.html"), log, chromium, flags, test_tmpdir(),
             run_path("report.html"), dom, log);
    CHECKF(system(cmd) == 0, "%s", cmd);
    const char *errors = slurp(log);
    CHECKF(!strstr(errors, "CONSOLE") && !strstr(errors, "Uncaught"), "console:\n%s", errors);
    FILE *f = fopen(png, "rb");
    unsigned char sig[8] = {0};
    long size = 0;
    if (f) {
        CHECK(fread(sig, 1, 8, f) == 8);
        fseek(f, 0, SEEK_END);
        size = ftell(f);
        fclose(f);
    }
    CHECKF(!memcmp(sig, "\x89PNG\r\n\x1a\n", 8) && size > 20000, "%s: %ld bytes", png, size);
    /* The rendered document (after parsing, as the browser holds it) has the same points. */
    const char *rendered = slurp(dom);
    char *copy = strdup(rendered);
    for (char *p = copy; *p; p++)   /* Chromium quotes attributes with " */
        if (*p == '"')
            *p = '\'';
    check_points_match_metrics(copy, run_path("metrics.csv"));
    free(copy);
}

/* TFRecord framing: lengths and masked CRCs, record by record, as TensorBoard checks them. */
static int check_framing(const unsigned char *b, long n)
{
    int records = 0;
    for (long at = 0; at < n; records++) {
        if (n - at < 16)
            return -1;
        uint64_t len = 0;
        for (int i = 0; i < 8; i++)
            len |= (uint64_t)b[at + i] << 8 * i;
        uint32_t c = tensorboard_crc32c(b + at, 8), want = (c >> 15 | c << 17) + 0xa282ead8u, got = 0;
        for (int i = 0; i < 4; i++)
            got |= (uint32_t)b[at + 8 + i] << 8 * i;
        if (got != want || (long)len > n - at - 16)
            return -1;
        at += 16 + (long)len;
    }
    return records;
}

static const char *tensorboard_python(void)
{
    static char path[700];
    const char *candidates[] = {getenv("FRUGAL_TENSORBOARD_PYTHON"), "build/pyenv/bin/python3",
                                "/usr/bin/python3"};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        if (!candidates[i] || access(candidates[i], X_OK))
            continue;
        snprintf(path, sizeof path, "%s -c 'import tensorboard' 2>/dev/null", candidates[i]);
        if (system(path) == 0)
            return snprintf(path, sizeof path, "%s", candidates[i]), path;
    }
    return NULL;
}

/* Runs TensorBoard's reader on the run's events: `body` is Python with `a` (the accumulator of
 * run/tb), `rows` (metrics.csv), `steps` (steps.csv), check(tag, [(step, value)], n) and
 * check_steps(n) (the points every few batches against steps.csv), and counts mismatches in
 * `bad`. Without the tensorboard package, says so and checks nothing. */
static void tensorboard_check(const char *body)
{
    const char *python = tensorboard_python();
    if (!python) {
        printf("  (the tensorboard package is not importable: TensorBoard's reader is not run; "
               "./build.sh deps installs it into build/pyenv)\n");
        return;
    }
    char script[700], out[700], cmd[4096];
    snprintf(script, sizeof script, "%s/read.py", test_tmpdir());
    snprintf(out, sizeof out, "%s/read.out", test_tmpdir());
    FILE *f = fopen(script, "w");
    CHECK(f && fprintf(f, "import csv, sys, math\n"
        "from tensorboard.backend.event_processing import event_accumulator as ea\n"
        "a = ea.EventAccumulator(sys.argv[1]); a.Reload()\n"
        "rows = list(csv.DictReader(open(sys.argv[2])))\n"
        "steps = list(csv.DictReader(open(sys.argv[3])))\n"
        "bad = 0\n"
        "def check(tag, want, n):\n"
        "    global bad\n"
        "    got = [(e.step, e.value) for e in a.Scalars(tag)]\n"
        "    ok = len(got) == len(want) == n and all(g[0] == w[0] and abs(g[1] - w[1]) <= 1e-6 * max(1, abs(w[1])) for g, w in zip(got, want))\n"
        "    if not ok: bad += 1; print('MISMATCH', tag, got, want)\n"
        "def check_steps(n):\n"
        "    check('loss/train_step', [(int(r['step']), float(r['train_loss'])) for r in steps], n)\n"
        "    check('accuracy/train_step', [(int(r['step']), float(r['train_acc'])) for r in steps], n)\n"
        "%s"
        "print(bad, 'mismatches')\n"
        "sys.exit(1 if bad else 0)\n", body) > 0 && fclose(f) == 0);
    snprintf(cmd, sizeof cmd, "%s %s %s/tb %s %s > %s 2>&1", python, script, run_path(""),
             run_path("metrics.csv"), run_path("steps.csv"), out);
    int rc = system(cmd);
    CHECKF(rc == 0, "%s", slurp(out));
}

TEST(report_tensorboard_events_read_back_by_tensorboard)
{
    CHECK(tensorboard_crc32c("123456789", 9) == 0xe3069283u);   /* the CRC-32C check value */
    train_small();
    char cmd[2000], list[700];
    snprintf(list, sizeof list, "%s/events.txt", test_tmpdir());
    snprintf(cmd, sizeof cmd, "ls %s/tb/events.out.tfevents.* > %s", run_path(""), list);
    CHECK(system(cmd) == 0);
    char file[700];
    snprintf(file, sizeof file, "%s", slurp(list));
    file[strcspn(file, "\n")] = 0;
    FILE *f = fopen(file, "rb");
    unsigned char *b = malloc(1 << 20);
    long n = f ? (long)fread(b, 1, 1 << 20, f) : 0;
    if (f)
        fclose(f);
    int records = check_framing(b, n);
    free(b);
    /* the version, 12 scalars x 3 epochs, 2 x 15 points every batch x 3 epochs */
    CHECKF(records >= 1 + 3 * 12 + 2 * 15 * 3, "%s: %d records", file, records);
    /* TensorBoard's reader against metrics.csv (every epoch, every figure, at the global batch
     * that ends it: 15 batches an epoch) and steps.csv (every point). */
    tensorboard_check(
        "pairs = {'loss/train': 'train_loss', 'loss/test': 'test_loss', 'accuracy/train': 'train_acc',\n"
        "         'accuracy/test': 'test_acc', 'speed/images_per_s': 'images_per_s',\n"
        "         'speed/task_share': 'task_share', 'energy/joules_train': 'energy_j',\n"
        "         'energy/joules_test': 'test_energy_j', 'energy/watts': 'power_w',\n"
        "         'energy/millijoules_per_image': 'mj_per_image', 'energy/gco2e': 'gco2e'}\n"
        "def tol(text):  # half a unit of the last digit metrics.csv printed\n"
        "    return 0.5 * 10 ** -len(text.split('.')[1]) if '.' in text else 0.5\n"
        "for tag, col in pairs.items():\n"
        "    got = [(e.step, e.value) for e in a.Scalars(tag)]\n"
        "    want = [(15 * int(r['epoch']), float(r[col]), tol(r[col])) for r in rows]\n"
        "    ok = len(got) == len(want) and all(g[0] == w[0] and abs(g[1] - w[1]) <= w[2] + 1e-6 * abs(w[1]) for g, w in zip(got, want))\n"
        "    if not ok: bad += 1; print('MISMATCH', tag, got, want)\n"
        "check('epoch', [(15 * int(r['epoch']), float(r['epoch'])) for r in rows], 3)\n"
        "check_steps(45)\n"
        "dev = a.Scalars('energy_by_device/cpu model')\n"
        "if len(dev) != len(rows): bad += 1; print('device points', len(dev))\n");
}

/* A run resumed from a checkpoint older than its last events (as after a kill -9 between an
 * epoch's points and its checkpoint): TensorBoard's reader drops the later points, so each step
 * is there once, as steps.csv has it. */
/* TensorBoard reads a folder's event files in the order of their names, so a resumed run's file
 * must sort after the earlier ones, even when both came within a second (a test's runs do). */
TEST(report_tensorboard_files_sort_in_the_order_they_were_opened)
{
    char dir[700], err[256], names[2][1024];
    snprintf(dir, sizeof dir, "%s/tb_order", test_tmpdir());
    CHECK(mkdir(dir, 0777) == 0);
    for (int i = 0; i < 2; i++) {
        tb_writer w;
        CHECKF(tensorboard_open(&w, dir, i, err, sizeof err) == 0, "%s", err);
        snprintf(names[i], sizeof names[i], "%s", w.path);
        tensorboard_close(&w);
    }
    char cmd[1600], list[800];
    snprintf(list, sizeof list, "%s/tb_order.txt", test_tmpdir());
    snprintf(cmd, sizeof cmd, "ls %s/tb | grep -c tfevents > %s", dir, list);
    CHECK(system(cmd) == 0);
    CHECKF(atoi(slurp(list)) == 2 && strcmp(names[0], names[1]) < 0, "%s then %s", names[0],
           names[1]);
}

TEST(report_resume_from_an_older_checkpoint_drops_the_points_after_it)
{
    char out[8192], older[700], keep[1500], put_back[1500];
    const char *job = make_job("");
    int rc = FRUGAL(out, "train", job, "--set", "energy.baseline_seconds=0", "--set", "job.epochs=2");
    CHECKF(rc == 0, "%s", out);
    snprintf(older, sizeof older, "%s/epoch2.bin", test_tmpdir());
    snprintf(keep, sizeof keep, "cp %s %s", run_path("checkpoint.bin"), older);
    snprintf(put_back, sizeof put_back, "cp %s %s", older, run_path("checkpoint.bin"));
    CHECK(system(keep) == 0);
    rc = FRUGAL(out, "train", job, "--set", "energy.baseline_seconds=0", "--resume");
    CHECKF(rc == 0, "%s", out);
    CHECK(system(put_back) == 0);   /* epoch 3's points are past it now */
    rc = FRUGAL(out, "train", job, "--set", "energy.baseline_seconds=0", "--resume");
    CHECKF(rc == 0, "%s", out);
    tensorboard_check("check_steps(45)\n"
                      "check('epoch', [(15 * int(r['epoch']), float(r['epoch'])) for r in rows], 3)\n");
}

/* A resumed run keeps the earlier processes' power rows and event files; a fresh one in the
 * same folder starts both afresh. */
TEST(report_resume_keeps_the_power_timeline_and_events)
{
    char out[8192];
    const char *job = make_job("");
    int rc = FRUGAL(out, "train", job, "--set", "energy.baseline_seconds=0.3", "--set", "job.epochs=2");
    CHECKF(rc == 0, "%s", out);
    csv_table first, after;
    char err[256];
    CHECKF(csv_read(&first, run_path("power.csv"), err, sizeof err) == 0, "%s", err);
    CHECK(first.nrows >= 3);   /* at least the 0.3 s of baseline at 20 Hz */
    rc = FRUGAL(out, "train", job, "--set", "energy.baseline_seconds=0.3", "--resume");
    CHECKF(rc == 0, "%s", out);
    CHECKF(csv_read(&after, run_path("power.csv"), err, sizeof err) == 0, "%s", err);
    const double *t0 = csv_values(&first, "unix_s"), *t1 = csv_values(&after, "unix_s");
    CHECKF(after.nrows > first.nrows && t0 && t1 && t1[0] == t0[0] &&
           t1[after.nrows - 1] > t0[first.nrows - 1], "%d rows, then %d", first.nrows, after.nrows);
    csv_free(&first), csv_free(&after);
    char cmd[800], list[700];
    snprintf(list, sizeof list, "%s/n.txt", test_tmpdir());
    snprintf(cmd, sizeof cmd, "ls %s/tb | grep -c tfevents > %s", run_path(""), list);
    CHECK(system(cmd) == 0 && atoi(slurp(list)) == 2);
    rc = FRUGAL(out, "train", job, "--set", "energy.baseline_seconds=0");   /* not over it */
    CHECKF(rc == 1 && strstr(out, "holds a run already: --resume continues it, --overwrite"),
           "%s", out);
    rc = FRUGAL(out, "train", job, "--set", "energy.baseline_seconds=0", "--overwrite");
    CHECKF(rc == 0 && strstr(out, "(--overwrite)"), "%s", out);
    CHECK(system(cmd) == 0 && atoi(slurp(list)) == 1);
}

/* ---- traces ---- */

static int nothing(const rt_ctx *ctx, void *args)
{
    (void)ctx, (void)args;
    return 0;
}
static rt_kind nothing_kind = {.name = "nothing", .cpu = nothing};

/* A long run's trace stops growing at its cap and says how much it left out; what the caller
 * adds (tracks, spans, counters) follows the same format, from any thread. */
TEST(trace_is_bounded_and_says_how_many_events_it_left_out)
{
    rt_runtime *rt = rt_create(&(rt_config){.workers = 2, .trace = 1, .trace_max_events = 400});
    int track = rt_trace_track(rt, "node 127.0.0.1:1 (test)");
    double t0 = clock_now_s();
    for (int i = 0; i < 3000; i++)
        rt_submit(rt, &(rt_task_desc){.kind = &nothing_kind});
    CHECK(rt_wait_all(rt) == 0);
    rt_trace_span(rt, track, "received RESULT", t0, t0 + 0.001);
    rt_trace_counter(rt, "power: total (W)", t0 + 0.002, 12.5);
    char path[600], why[256];
    snprintf(path, sizeof path, "%s/trace.json", test_tmpdir());
    CHECK(rt_trace_write(rt, path) == 0);
    json_value *t = trace_load_checked(path, why, sizeof why);
    CHECKF(t != NULL, "%s", why);
    int kept = trace_spans(t, "worker", "nothing");
    double dropped = json_num(json_get(t, "otherData.events_dropped"), -1);
    CHECKF(kept > 0 && kept <= 400 && kept + dropped == 3000, "%d kept, %g dropped", kept, dropped);
    CHECK(dropped == (double)rt_trace_dropped(rt));
    CHECK(trace_spans(t, "node 127.0.0.1:1", "received RESULT") == 1);
    CHECK(trace_counters(t, "power: total (W)") == 1);
    json_free(t);
    rt_destroy(rt);
    /* Without a trace, what the caller adds is ignored. */
    rt = rt_create(&(rt_config){.workers = 1});
    CHECK(rt_trace_track(rt, "x") == -1);
    rt_trace_span(rt, 0, "x", 0, 1);
    rt_trace_counter(rt, "x", 0, 1);
    rt_destroy(rt);
}

/* A training run's trace: every worker, the energy sampler's power as counters, in the format
 * Perfetto reads; the trace checker itself refuses what breaks the rules. */
TEST(trace_of_a_training_run_shows_workers_and_power)
{
    char out[8192], trace[600], why[256];
    snprintf(trace, sizeof trace, "%s/train-trace.json", test_tmpdir());
    const char *job = make_job("");
    int rc = FRUGAL(out, "train", job, "--set", "energy.baseline_seconds=0.2", "--set",
                    "execution.workers=2", "--trace", trace);
    CHECKF(rc == 0 && strstr(out, "trace: "), "%s", out);
    json_value *t = trace_load_checked(trace, why, sizeof why);
    CHECKF(t != NULL, "%s", why);
    /* A track per worker; a worker may have run no task of so small a job (it slept). */
    CHECK(trace_has_track(t, "worker 0 (main)") && trace_has_track(t, "worker 1"));
    CHECK(trace_spans(t, "worker", NULL) > 0);
    CHECK(trace_spans(t, "worker", "conv_forward") > 0);
    CHECKF(trace_counters(t, "power: total (W)") >= 2 && trace_counters(t, "power: cpu model (W)") >= 2,
           "%d power counters", trace_counters(t, "power: total (W)"));
    CHECK(json_num(json_get(t, "otherData.events_dropped"), -1) == 0);
    json_free(t);
    const struct { const char *text, *error; } bad[] = {
        {"{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"pid\":0,\"tid\":0,\"ts\":-1,\"dur\":1}]}", "negative"},
        {"{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"pid\":0,\"tid\":3,\"ts\":1,\"dur\":1}]}", "thread_name"},
        {"{\"traceEvents\":[{\"ph\":\"C\",\"name\":\"a\",\"pid\":0,\"ts\":1,\"args\":{\"v\":\"x\"}}]}", "not a number"},
        {"{\"events\":[]}", "no traceEvents"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen(trace, "w");
        fputs(bad[i].text, f);
        fclose(f);
        t = trace_load_checked(trace, why, sizeof why);
        CHECKF(!t && strstr(why, bad[i].error), "%s: %s", bad[i].text, why);
        json_free(t);
    }
}

/* Folders the report did not write itself: a power.csv with no rows, a summary.json cut short. */
static void put(const char *dir, const char *name, const char *text)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

TEST(report_of_odd_folders_draws_what_there_is_or_names_the_broken_file)
{
    char dir[600], page[700], out[4096];
    snprintf(dir, sizeof dir, "%s/odd", test_tmpdir());
    snprintf(page, sizeof page, "%s/odd.html", test_tmpdir());
    CHECK(mkdir(dir, 0777) == 0);
    put(dir, "metrics.csv", "epoch,train_loss,test_acc\n1,0.5,nan\n");
    put(dir, "power.csv", "unix_s,seconds,total_w,cpu w\n");
    put(dir, "summary.json", "{\"energy\": {\"idle_baseline_watts\": 10, \"source\": \"measured: rapl\"}}");
    int rc = FRUGAL(out, "report", dir, "-o", page);
    CHECKF(rc == 0, "%s", out);
    const char *html = slurp(page);
    CHECK(strstr(html, "no data recorded") && strstr(html, "measured: rapl") && strstr(html, "no test set"));
    put(dir, "summary.json", "{\"energy\": {\n\"source\": ");
    rc = FRUGAL(out, "report", dir, "-o", page);
    CHECKF(rc == 1 && strstr(out, "summary.json: line 2: expected a value"), "%s", out);
    rc = FRUGAL(out, "report", "-x");
    CHECKF(rc == 2 && strstr(out, "unknown option -x"), "%s", out);
}

/* summary.json's cluster section stays JSON whatever a node reported: every figure infinite
 * or NaN (a RESULT's joules passed a `>= 0` check as inf before, and summary.json stopped
 * being JSON) is written null; the counts stay. */
TEST(report_cluster_section_is_json_whatever_the_figures)
{
    cluster_summary s;
    memset(&s, 0, sizeof s);
    double *doubles[] = {&s.joules_every_machine, &s.joules_here, &s.joules_nodes, &s.timeout_s,
                         &s.coordinator_share, &s.power_budget_watts, &s.max_slowdown,
                         &s.coordinator_img_per_s, &s.coordinator_watts,
                         &s.coordinator_carbon_g_per_kwh};
    for (size_t i = 0; i < sizeof doubles / sizeof *doubles; i++)
        *doubles[i] = i % 2 ? INFINITY : NAN;
    s.joules_how = "estimated", s.mode = "synchronous", s.policy = "time";
    s.nnodes = 1, s.chunks_late = 3, s.ndecisions = 1;
    cluster_node_summary *n = &s.nodes[0];
    n->kernel_path = "avx2";
    double *node_doubles[] = {&n->joined_after_s, &n->share, &n->img_per_s, &n->network_wait_s,
                              &n->compute_s, &n->chunk_cost_ms, &n->round_trip_lag_ms,
                              &n->joules, &n->watts_computing, &n->carbon_g_per_kwh};
    for (size_t i = 0; i < sizeof node_doubles / sizeof *node_doubles; i++)
        *node_doubles[i] = i % 2 ? -INFINITY : NAN;
    s.decisions[0].t = INFINITY;
    char *text = NULL, err[200] = "";
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fputc('{', f);
    report_cluster_json(f, &s);
    fputc('}', f);
    fclose(f);
    json_value *v = json_parse(text, len, err, sizeof err);
    CHECKF(v, "%s\n%s", err, text);
    CHECK(v && json_get(v, "joules_every_machine")->type == JSON_NULL);
    CHECK(v && json_num(json_get(v, "chunks_late"), -1) == 3);
    json_free(v);
    free(text);
}

/* A rate's axis starts at zero (a 3% change filled the chart before); another figure's keeps to
 * its data's range. */
TEST(report_rate_charts_start_at_zero)
{
    double x[2] = {1, 2}, y[2] = {100, 103};
    for (int from_zero = 0; from_zero < 2; from_zero++) {
        chart c;
        svg_chart_init(&c, "Images per second", "epoch", "images/s");
        c.from_zero = from_zero;
        svg_chart_add(&c, "img/s", "images_per_s", 0, 2, x, y);
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        svg_chart_draw(f, &c);
        fclose(f);
        CHECKF((strstr(text, "font-size='11'>0</text>") != NULL) == from_zero, "from_zero %d:\n%s",
               from_zero, text);
        free(text);
    }
}
