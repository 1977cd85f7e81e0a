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
    model first, m;
    checkpoint_state st;
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
    for (int i = 1; i < n; i++) {
        if (checkpoint_open_model(&m, &st, paths[i], err, sizeof err)) {
            fprintf(stderr, "frugal average: %s\n", err);
            goto out;
        }
        free(st.log);
        int same = same_model(&first, &m);
        if (same)
            add_model(sum, &m);
        model_free(&m);
        if (!same) {
            fprintf(stderr, "frugal average: %s is not a model of the same network as %s (its "
                    "layers or shapes differ)\n", paths[i], paths[0]);
            goto out;
        }
    }
    for (int l = 0; l < first.nlayers; l++)
        for (long i = 0; i < first.layers[l].nparams; i++) {
            first.layers[l].params[i] = (float)(sum[l][i] / n);
            first.layers[l].velocity[i] = (float)(sum[l][first.layers[l].nparams + i] / n);
        }
    checkpoint_state none = {0};
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
