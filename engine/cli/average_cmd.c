/* frugal average (average_cmd.h): the models read one at a time, their parameters and
 * momentum summed in doubles, the mean written as a checkpoint. */
#include "engine/cli/average_cmd.h"

#include "engine/model/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AVERAGE_MAX_MODELS 256

/* Whether b has a's layers, shapes and input: the models of one job. */
static int same_model(const model *a, const model *b)
{
    if (a->nlayers != b->nlayers || a->nparams != b->nparams || a->classes != b->classes)
        return 0;
    for (int l = 0; l < a->nlayers; l++) {
        layer_config x = a->layers[l].cfg, y = b->layers[l].cfg;
        x.line = y.line = 0;
        const layer *p = &a->layers[l], *q = &b->layers[l];
        if (memcmp(&x, &y, sizeof x) || p->nparams != q->nparams || p->in_c != q->in_c ||
            p->in_h != q->in_h || p->in_w != q->in_w)
            return 0;
    }
    return 1;
}

/* sum[l] += the model's parameters and momentum, layer by layer, in doubles. */
static void add_model(double **sum, const model *m)
{
    for (int l = 0; l < m->nlayers; l++) {
        const layer *y = &m->layers[l];
        for (long i = 0; i < y->nparams; i++)
            sum[l][i] += y->params[i], sum[l][y->nparams + i] += y->velocity[i];
    }
}

static int usage(void)
{
    fprintf(stderr, "usage: frugal average MODEL.bin MODEL.bin... -o OUT.bin\n");
    return 2;
}

/* Adds the models at paths[1..n-1] to sum, each checked to be of first's network: 0, or -1
 * having said why not. */
static int add_others(const model *first, const char *const *paths, int n, double **sum)
{
    char err[1024];
    for (int i = 1; i < n; i++) {
        model m;
        checkpoint_state st;
        if (checkpoint_open_model(&m, &st, paths[i], err, sizeof err)) {
            fprintf(stderr, "frugal average: %s\n", err);
            return -1;
        }
        free(st.log);
        int same = same_model(first, &m);
        if (same)
            add_model(sum, &m);
        model_free(&m);
        if (!same) {
            fprintf(stderr, "frugal average: %s is not a model of the same network as %s (its "
                    "layers or shapes differ)\n", paths[i], paths[0]);
            return -1;
        }
    }
    return 0;
}

/* m's parameters and momentum: the sums over n models, divided by n. */
static void take_mean(model *m, double *const *sum, int n)
{
    for (int l = 0; l < m->nlayers; l++) {
        layer *y = &m->layers[l];
        for (long i = 0; i < y->nparams; i++) {
            y->params[i] = (float)(sum[l][i] / n);
            y->velocity[i] = (float)(sum[l][y->nparams + i] / n);
        }
    }
}

int average_cmd_main(int argc, char **argv)
{
    const char *out = NULL, *paths[AVERAGE_MAX_MODELS];
    int n = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (argv[i][0] == '-' || n == AVERAGE_MAX_MODELS)
            return usage();
        else
            paths[n++] = argv[i];
    }
    if (!out || n < 1)
        return usage();
    model first;
    checkpoint_state st, none = {0};
    char err[1024];
    double *sum[CONFIG_MAX_LAYERS] = {0};
    int rc = 1;
    if (checkpoint_open_model(&first, &st, paths[0], err, sizeof err)) {
        fprintf(stderr, "frugal average: %s\n", err);
        return 1;
    }
    free(st.log);
    for (int l = 0; l < first.nlayers; l++)
        if (!(sum[l] = calloc(2 * (size_t)first.layers[l].nparams + 1, sizeof(double)))) {
            fprintf(stderr, "frugal average: out of memory for %ld parameters\n", first.nparams);
            goto out;
        }
    add_model(sum, &first);
    if (add_others(&first, paths, n, sum))
        goto out;
    take_mean(&first, sum, n);
    if (checkpoint_save(&first, &none, out, err, sizeof err)) {
        fprintf(stderr, "frugal average: %s\n", err);
        goto out;
    }
    printf("averaged %d model%s (%ld parameters each) into %s\n", n, n > 1 ? "s" : "",
           first.nparams, out);
    rc = 0;
out:
    for (int l = 0; l < first.nlayers; l++)
        free(sum[l]);
    model_free(&first);
    return rc;
}
