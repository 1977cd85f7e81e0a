#include "engine/report/step_log.h"

#include "common/clock.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STEP_LOG_HEADER "epoch,batch,step,epochs,samples,train_loss,train_acc,seconds\n"
#define POINTS_PER_EPOCH 25

/* Unix seconds, as TensorBoard's events carry them. */
static double wall_time(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

int step_log_every(int log_every, long per_epoch)
{
    if (log_every > 0)
        return log_every;
    long every = per_epoch / POINTS_PER_EPOCH;
    return every < 1 ? 1 : (int)every;
}

/* The rows of an earlier process up to `steps` (its third column), rewritten atomically. */
static int keep_rows(const char *path, long steps, char *err, size_t errlen)
{
    char tmp[720], line[512];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *in = fopen(path, "r"), *out = fopen(tmp, "w");
    int ok = out && fputs(STEP_LOG_HEADER, out) >= 0;
    long step;
    while (ok && in && fgets(line, sizeof line, in))
        if (sscanf(line, "%*d,%*d,%ld,", &step) == 1 && step <= steps)
            ok = fputs(line, out) >= 0;
    if (in)
        fclose(in);
    if (out && fclose(out))
        ok = 0;
    if (!ok || rename(tmp, path)) {
        snprintf(err, errlen, "%s: cannot write: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int step_log_open(step_log *s, const char *path, tb_writer *tb, int every, long per_epoch,
                  int resumed, long steps, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->tb = tb, s->every = every, s->per_epoch = per_epoch, s->start_s = clock_now_s();
    if (keep_rows(path, resumed ? steps : -1, err, errlen))
        return -1;
    if (!(s->f = fopen(path, "a"))) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (resumed && tb && tensorboard_restart(tb, steps + 1, wall_time())) {
        snprintf(err, errlen, "%s: cannot write", tb->path);
        return -1;
    }
    return 0;
}

void step_log_epoch(step_log *s, int epoch)
{
    s->epoch = epoch;
    s->pass_first = -1;
    s->window = (pass_result){0};
}

static pass_result minus(pass_result a, const pass_result *b)
{
    a.loss -= b->loss, a.correct -= b->correct, a.samples -= b->samples;
    return a;
}

/* The point that ends with batch b (from 0) of the epoch. */
static void write_point(step_log *s, long b)
{
    const pass_result *w = &s->window;
    double loss = w->loss / (double)w->samples, acc = (double)w->correct / (double)w->samples;
    long step = (long)(s->epoch - 1) * s->per_epoch + b + 1;
    double epochs = (double)step / (double)s->per_epoch;   /* 1.5: half of the second */
    fprintf(s->f, "%d,%ld,%ld,%.4f,%ld,%.6f,%.6f,%.3f\n", s->epoch, b + 1, step, epochs,
            w->samples, loss, acc, clock_now_s() - s->start_s);
    fflush(s->f);   /* a log read as it grows; rows past a checkpoint are dropped on resume */
    if (s->tb) {
        double wall = wall_time();
        tensorboard_scalar(s->tb, "loss/train_step", loss, step, wall);
        tensorboard_scalar(s->tb, "accuracy/train_step", acc, step, wall);
        fflush(s->tb->f);
    }
    s->window = (pass_result){0};
}

void step_log_follow(step_log *s, const trainer *t)
{
    long first, closed = trainer_batches_closed(t, &first);
    if (!s->f)
        return;
    if (first != s->pass_first)   /* a new pass (a resume, a round of averaging) */
        s->pass_first = first, s->fed = first, s->prev = (pass_result){0};
    for (; s->fed < closed; s->fed++) {
        pass_result through = trainer_totals_through(t, s->fed);
        pass_result batch = minus(through, &s->prev);
        s->prev = through;
        s->window.loss += batch.loss, s->window.correct += batch.correct;
        s->window.samples += batch.samples;
        int last = s->fed == s->per_epoch - 1;
        if (((s->fed + 1) % s->every == 0 || last) && s->window.samples > 0)
            write_point(s, s->fed);
    }
}

void step_log_stopped(step_log *s)
{
    if (s->f && s->window.samples > 0)
        write_point(s, s->fed - 1);
}

void step_log_close(step_log *s)
{
    if (s->f)
        fclose(s->f);
    s->f = NULL;
}
